/* The trainer's numerics on a tiny BERT with both heads, for each golden
 * file given (tests/golden/train_reference.py, float64: the single-label,
 * multi-label (BCE) and regression (MSE) classification losses, and the
 * causal model: is_decoder, next-token labels, last-token classifier):
 *  - gradients and the AdamW step against PyTorch autograd: every gradient
 *    tensor within 1e-4 of the reference relative to its largest element,
 *    every parameter after clipping + AdamW within 1e-6;
 *  - central finite differences for every parameter tensor (the element
 *    with the largest gradient and two others): |fd - grad| <= 2e-3 |grad|
 *    + four float32 ulps of the loss / step (step 1e-2);
 *  - the same gradients with a compute team of 2. */
#include <float.h>
#include <jansson.h>
#include <stdint.h>

#include "check.h"
#include "train_mask.h"
#include "train_optim.h"
#include "train_step.h"

#define MAX_TOKENS 64

struct golden {
    json_t *root;
    struct bert_config cfg;
    int32_t ids[MAX_TOKENS], types[MAX_TOKENS], mlm[MAX_TOKENS], cls[8], tags[MAX_TOKENS];
    bool token_task;          /* token classification (train-step-token.json) */
    float targets[8 * 8]; /* (n_seqs, labels) multi-label sets or regression scores */
    size_t seq_start[9], n_seqs, n_tokens;
};

static size_t geo(json_t *root, const char *key)
{
    return (size_t)json_integer_value(json_object_get(json_object_get(root, "geometry"), key));
}

static double num(json_t *obj, const char *key) { return json_number_value(json_object_get(obj, key)); }

static bool load_golden(const char *path, struct golden *g)
{
    json_error_t je;
    memset(g, 0, sizeof *g);
    g->root = json_load_file(path, 0, &je);
    if (g->root == NULL) {
        fprintf(stderr, "%s: %s\n", path, je.text);
        return false;
    }
    struct bert_config *c = &g->cfg;
    c->vocab_size = geo(g->root, "vocab");
    c->hidden_size = geo(g->root, "hidden");
    c->num_heads = geo(g->root, "heads");
    c->num_layers = geo(g->root, "layers");
    c->intermediate_size = geo(g->root, "intermediate");
    c->max_position_embeddings = geo(g->root, "positions");
    c->type_vocab_size = geo(g->root, "types");
    c->num_labels = geo(g->root, "labels");
    c->layer_norm_eps = (float)num(json_object_get(g->root, "geometry"), "eps");
    c->activation = BERT_ACTIVATION_GELU;
    const char *problem = json_string_value(json_object_get(g->root, "problem"));
    c->problem_type = problem == NULL                      ? BERT_PROBLEM_SINGLE_LABEL
                      : strcmp(problem, "multi") == 0      ? BERT_PROBLEM_MULTI_LABEL
                      : strcmp(problem, "regression") == 0 ? BERT_PROBLEM_REGRESSION
                                                           : BERT_PROBLEM_UNSET;
    if (c->problem_type == BERT_PROBLEM_UNSET || c->num_labels > 8) {
        fprintf(stderr, "%s: unknown problem or too many labels\n", path);
        return false;
    }
    c->is_decoder = json_is_true(json_object_get(g->root, "is_decoder"));
    const char *task = json_string_value(json_object_get(g->root, "task"));
    g->token_task = task != NULL && strcmp(task, "token-classification") == 0;
    if (g->token_task)
        c->token_head = BERT_TOKEN_HEAD_CLASSIFICATION;
    json_t *seqs = json_object_get(g->root, "sequences"), *s;
    size_t i;
    json_array_foreach(seqs, i, s) {
        json_t *ids = json_object_get(s, "ids");
        g->seq_start[i] = g->n_tokens;
        for (size_t k = 0; k < json_array_size(ids); k++) {
            g->ids[g->n_tokens] = (int32_t)json_integer_value(json_array_get(ids, k));
            g->types[g->n_tokens] =
                (int32_t)json_integer_value(json_array_get(json_object_get(s, "types"), k));
            json_t *tag = json_array_get(json_object_get(s, "token_labels"), k);
            g->tags[g->n_tokens] = tag ? (int32_t)json_integer_value(tag) : -100;
            g->mlm[g->n_tokens++] =
                (int32_t)json_integer_value(json_array_get(json_object_get(s, "mlm_labels"), k));
        }
        g->cls[i] = (int32_t)json_integer_value(json_object_get(s, "label"));
        json_t *set = json_object_get(s, "targets");
        for (size_t k = 0; k < json_array_size(set) && k < 8; k++)
            g->targets[i * c->num_labels + k] = (float)json_number_value(json_array_get(set, k));
        if (json_object_get(s, "target") != NULL)
            g->targets[i] = (float)num(s, "target");
    }
    g->n_seqs = json_array_size(seqs);
    g->seq_start[g->n_seqs] = g->n_tokens;
    if (c->is_decoder) /* the causal golden's labels are the trainer's next-token rule */
        for (i = 0; i < g->n_seqs; i++) {
            int32_t want[MAX_TOKENS];
            const size_t n = g->seq_start[i + 1] - g->seq_start[i];
            train_next_token_labels(g->ids + g->seq_start[i], n, want);
            CHECK(memcmp(want, g->mlm + g->seq_start[i], n * sizeof *want) == 0);
        }
    return true;
}

static bool build(struct train_model *m, const struct golden *g)
{
    struct bert_error err;
    if (train_model_init(m, &g->cfg, !g->token_task, true, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", err.message);
        return false;
    }
    json_t *init = json_object_get(g->root, "init");
    train_model_synth(m, (uint64_t)json_integer_value(json_object_get(init, "seed")),
                      num(init, "weight_std"), num(init, "bias_range"), num(init, "ln_range"));
    return true;
}

static struct train_batch batch_of(const struct golden *g)
{
    if (g->token_task)
        return (struct train_batch){
            .b = {g->n_seqs, g->n_tokens, g->ids, g->types, g->seq_start},
            .token_labels = g->tags,
        };
    return (struct train_batch){
        .b = {g->n_seqs, g->n_tokens, g->ids, g->types, g->seq_start},
        .mlm_labels = g->mlm,
        .cls_labels = g->cfg.problem_type == BERT_PROBLEM_SINGLE_LABEL ? g->cls : NULL,
        .cls_targets = g->cfg.problem_type == BERT_PROBLEM_SINGLE_LABEL ? NULL : g->targets,
    };
}

/* Dropout of the batches loss_of runs (0: none, as in the PyTorch golden). */
static float test_dropout;

static double loss_of(struct train_model *m, struct train_work *w, const struct golden *g,
                      bool backward)
{
    struct train_batch b = batch_of(g);
    b.dropout = test_dropout;
    b.dropout_seed = 12345;
    struct train_stats st;
    struct bert_error err;
    if (backward)
        memset(m->grads, 0, m->n_params * sizeof(float));
    if (train_step(m, w, &b, backward, false, &st, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", err.message);
        return NAN;
    }
    return st.loss;
}

/* max |a - ref| / max |ref| over a tensor. */
static double rel_error(const float *a, json_t *ref, size_t n, double *max_ref)
{
    double worst = 0.0, big = 0.0;
    for (size_t k = 0; k < n; k++) {
        double r = json_number_value(json_array_get(ref, k));
        worst = fmax(worst, fabs(a[k] - r));
        big = fmax(big, fabs(r));
    }
    *max_ref = big;
    /* A gradient that is 0 in exact arithmetic (the key bias: softmax
     * cancels it) is compared absolutely. */
    return big > 1e-12 ? worst / big : worst;
}

static void check_against_torch(struct train_model *m, struct train_work *w,
                                const struct golden *g, const char *label)
{
    double loss = loss_of(m, w, g, true);
    CHECK_NEAR(loss, num(g->root, "loss"), 1e-5);
    json_t *tensors = json_object_get(g->root, "tensors");
    CHECK_INT_EQ(json_array_size(tensors), m->n_tensors);
    double worst = 0.0;
    for (size_t i = 0; i < m->n_tensors && i < json_array_size(tensors); i++) {
        json_t *t = json_array_get(tensors, i);
        const struct train_tensor *mt = &m->tensors[i];
        CHECK_STR_EQ(mt->name, json_string_value(json_object_get(t, "name")));
        double big, e = rel_error(m->grads + mt->offset, json_object_get(t, "grad"), mt->count,
                                  &big);
        worst = fmax(worst, e);
        if (!(e <= 1e-4))
            fprintf(stderr, "%s: gradient of %s off by %.3g relative (max %.3g)\n", label,
                    mt->name, e, big);
        CHECK(e <= 1e-4);
    }
    printf("%s: loss %.7f (torch %.7f), worst gradient error %.3g relative\n", label, loss,
           num(g->root, "loss"), worst);
}

static void check_adamw(struct train_model *m, const struct golden *g)
{
    json_t *o = json_object_get(g->root, "optim");
    struct train_adamw opt;
    struct bert_error err;
    CHECK(train_adamw_init(&opt, m, num(o, "weight_decay"), &err) == BERT_OK);
    double norm = train_clip_grads(m, num(o, "max_norm"), TRAIN_PART_ALL);
    CHECK_NEAR(norm, num(g->root, "grad_norm"), 1e-5 * norm);
    train_adamw_update(&opt, m, num(o, "lr"), TRAIN_PART_ALL);
    json_t *tensors = json_object_get(g->root, "tensors");
    double worst = 0.0;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const struct train_tensor *mt = &m->tensors[i];
        json_t *after = json_object_get(json_array_get(tensors, i), "after");
        for (size_t k = 0; k < mt->count; k++)
            worst = fmax(worst, fabs(m->params[mt->offset + k] -
                                     json_number_value(json_array_get(after, k))));
    }
    printf("AdamW: grad norm %.6f, worst parameter error after the step %.3g\n", norm, worst);
    CHECK(worst <= 1e-6);
    train_adamw_free(&opt);
}

static void check_finite_differences(struct train_model *m, struct train_work *w,
                                     const struct golden *g)
{
    const double loss = loss_of(m, w, g, true);
    float *grads = malloc(m->n_params * sizeof *grads);
    memcpy(grads, m->grads, m->n_params * sizeof *grads);
    const float h = 1e-2f;
    /* The loss is float arithmetic: each evaluation is off by a few ulps of
     * the loss, which the central difference divides by 2h. Four ulps
     * (3e-4 at loss 6) leave room for other CPUs' kernels and -O0 builds. */
    const double noise = 4.0 * fabs(loss) * FLT_EPSILON / h;
    double worst = 0.0;
    size_t checked = 0;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const struct train_tensor *t = &m->tensors[i];
        size_t picks[3] = {0, t->count / 3, (2 * t->count) / 3 + 1};
        for (size_t k = 0; k < t->count; k++)
            if (fabsf(grads[t->offset + k]) > fabsf(grads[t->offset + picks[0]]))
                picks[0] = k;
        for (size_t j = 0; j < 3; j++) {
            size_t k = picks[j] < t->count ? picks[j] : t->count - 1;
            float *p = m->params + t->offset + k, saved = *p;
            *p = saved + h;
            double up = loss_of(m, w, g, false);
            *p = saved - h;
            double down = loss_of(m, w, g, false);
            *p = saved;
            double fd = (up - down) / (2.0 * h), an = grads[t->offset + k];
            double err = fabs(fd - an), tol = noise + 2e-3 * fabs(an);
            worst = fmax(worst, err / tol);
            checked++;
            if (!(err <= tol))
                fprintf(stderr, "FD %s[%zu]: fd %.6g analytic %.6g\n", t->name, k, fd, an);
            CHECK(err <= tol);
        }
    }
    printf("finite differences: %zu elements in %zu tensors, worst error %.2f of tolerance\n",
           checked, m->n_tensors, worst);
    free(grads);
}

/* Dropout masks are a function of the seed, so the loss is still a
 * deterministic function of the parameters and finite differences check
 * the masked backward pass; the masks must also change the loss. */
static void check_dropout(struct train_model *m, struct train_work *w, const struct golden *g)
{
    double plain = loss_of(m, w, g, false);
    test_dropout = 0.3f;
    double dropped = loss_of(m, w, g, false), again = loss_of(m, w, g, false);
    CHECK(dropped != plain);
    CHECK(dropped == again);
    printf("dropout 0.3: loss %.6f (without %.6f)\n", dropped, plain);
    check_finite_differences(m, w, g);
    test_dropout = 0.0f;
}

static void check_file(const char *path)
{
    struct golden g;
    if (!load_golden(path, &g)) {
        CHECK(false);
        return;
    }
    printf("%s (%s)\n", path, g.token_task ? "token classification"
                              : g.cfg.is_decoder ? "causal" : "masked LM");
    struct bert_error err;
    for (size_t threads = 1; threads <= 2; threads++) {
        struct train_model m;
        if (!build(&m, &g))
            break;
        struct train_work *w = train_work_new(&m, MAX_TOKENS, 16, threads, &err);
        CHECK(w != NULL);
        if (w == NULL) {
            train_model_free(&m);
            break;
        }
        check_against_torch(&m, w, &g, threads == 1 ? "1 thread" : "2 threads");
        if (threads == 1) {
            check_adamw(&m, &g);
            train_model_free(&m);
            build(&m, &g);
            check_finite_differences(&m, w, &g);
            check_dropout(&m, w, &g);
        }
        train_work_free(w);
        train_model_free(&m);
    }
    json_decref(g.root);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s GOLDEN_JSON...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++)
        check_file(argv[i]);
    return check_exit();
}
