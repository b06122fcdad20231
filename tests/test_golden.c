/* Golden numerics: the engine against the float64 PyTorch reference
 * (tests/golden/reference.py) on deterministic synthetic checkpoints.
 *
 * usage: test_golden GOLDEN_DIR WORK_DIR [NAME...]
 *
 * For each GOLDEN_DIR/NAME.json (every file when no NAME is given) and each
 * dtype variant in it: rebuild the checkpoint with bert_synth_write under
 * WORK_DIR, check the generator against the recorded per-tensor checksums,
 * load it, check our tokenizer gives the recorded ids, run every input
 * alone and all inputs packed into single batches, and compare with the
 * tolerances of tests/golden/README.md. The worst measured errors are
 * printed per checkpoint and dtype. */
#include <errno.h>
#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include <jansson.h>

#include "bert.h"
#include "check.h"
#include "golden_init.h"
#include "engine.h"
#include "linear_bf16.h"
#include "synth.h"

#define TOP_K 5
#define N_POOLINGS 3
/* Packing may change BLAS blocking, hence float rounding (seen: 8e-6), but
 * a leak between sequences or a wrong position would be far larger. */
#define PACKED_ABS 1e-4

/* Bounds for one comparison; see tests/golden/README.md for why. */
struct tolerance {
    double hidden_abs; /* hidden states, pooler output, pooled vectors: max |C - expected| */
    double cosine_min; /* pooled embeddings */
    double prob_abs;   /* MLM top-k and classifier probabilities, max |C - expected| */
    bool all_top_ids;  /* all top-k ids identical; false: only the top-1 */
    size_t top1_slack; /* top-1 ids that may differ (int8 only) */
};

/* `same`: against the reference run on the same (rounded) weights.
 * `vs_f32`: a BF16/F16 checkpoint against the F32 golden. */
static const struct {
    const char *dtype;
    struct tolerance same, vs_f32;
} tolerances[] = {
    {"f32", {1e-4, 0.99999, 1e-5, true, 0}, {0, 0, 0, false, 0}},
    {"bf16", {1e-4, 0.99999, 1e-5, true, 0}, {0.1, 0.999, 5e-3, false, 0}},
    {"f16", {1e-4, 0.99999, 1e-5, true, 0}, {0.02, 0.99999, 1e-3, false, 0}},
};

/* An F32 checkpoint with its dense layers computed in bf16 (oneDNN on AMX,
 * linear_bf16_avx512.c on AVX512_BF16 alone): every product rounds its
 * inputs to 8 mantissa bits, so outputs move by about a percent; the
 * contract is cosine >= 0.999 and the same top-1. The hidden-state bound
 * is loose for these small random models, whose LayerNorm outputs reach
 * several units: with Q, K and V in bf16 too RoBERTa's MLM model moves by
 * up to 0.253. */
static const struct tolerance bf16_compute = {0.3, 0.999, 2e-2, false, 0};

/* The same checkpoint with its dense layers in int8 (per-channel weights,
 * per-row activations): the contract is pooled embeddings with cosine >=
 * 0.99 to the F32 golden (issue 23); hidden states and probabilities move
 * by several percent, and one MLM top-1 whose lead is small may flip
 * (bounds: measured worst x ~1.5-2, tests/golden/README.md). The MLM
 * stress checkpoints (weight-std >= 0.2, far wider than trained weights,
 * so that random logits separate) amplify the rounding layer by layer:
 * 1 - cosine up to 0.0124 there, held to 0.985. */
static const struct tolerance int8_compute = {1.0, 0.99, 0.1, false, 1};
static const struct tolerance int8_stress = {1.0, 0.985, 0.1, false, 1};
#define INT8_STRESS_STD 0.2

/* Worst errors seen in one comparison. */
struct errors {
    double hidden, pooler, pooled, cosine, prob, logits;
    size_t top_id_mismatches;
    size_t n_hidden, n_pooled, n_masks, n_classified;
};

static void errors_init(struct errors *e)
{
    memset(e, 0, sizeof *e);
    e->cosine = 1.0;
}

/* What the engine produced for one input. */
struct result {
    size_t n;                      /* tokens */
    float *hidden;                 /* (n, H) */
    float *pooled[N_POOLINGS];     /* (H) each, BERT_POOLING_* order, not normalised */
    float *embedding;              /* (H) the checkpoint's pooling and normalisation */
    float *pooler;                 /* (H) or NULL */
    float *logits;                 /* (num_labels) or NULL */
    float *probs;                  /* (num_labels) or NULL, computed in double */
    size_t n_masks;
    uint32_t *mask_positions;      /* (n_masks) */
    int32_t *top_ids;              /* (n_masks, TOP_K) */
    float *top_probs;              /* (n_masks, TOP_K) */
    float *replaced;               /* (n) ELECTRA discriminator probabilities, or NULL */
};

static void result_free(struct result *r)
{
    free(r->hidden);
    for (int p = 0; p < N_POOLINGS; p++)
        free(r->pooled[p]);
    free(r->embedding);
    free(r->pooler);
    free(r->logits);
    free(r->probs);
    free(r->mask_positions);
    free(r->top_ids);
    free(r->top_probs);
    free(r->replaced);
    memset(r, 0, sizeof *r);
}

/* One input's token ids, from the golden file. */
struct input {
    int32_t *ids, *type_ids;
    size_t n;
};

struct run {
    const char *name;
    const struct bert_model *model;
    struct bert_scratch *scratch;
    struct input *inputs;
    size_t n_inputs, total_tokens, longest;
    size_t H;
};

/* ---- scratch folders ---- */

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* ---- running the engine ---- */

/* The text-classification pipeline's default function, as reference.py. */
static void class_probabilities(const struct bert_config *c, const float *logits, float *out)
{
    const size_t n = c->num_labels;
    double p[64];
    if (n > 64) {
        CHECK(n <= 64);
        return;
    }
    if (c->problem_type == BERT_PROBLEM_REGRESSION) {
        for (size_t i = 0; i < n; i++)
            p[i] = logits[i];
    } else if (c->problem_type == BERT_PROBLEM_MULTI_LABEL || n == 1) {
        for (size_t i = 0; i < n; i++)
            p[i] = 1.0 / (1.0 + exp(-(double)logits[i]));
    } else {
        double max = logits[0], sum = 0.0;
        for (size_t i = 1; i < n; i++)
            max = logits[i] > max ? logits[i] : max;
        for (size_t i = 0; i < n; i++)
            sum += p[i] = exp(logits[i] - max);
        for (size_t i = 0; i < n; i++)
            p[i] /= sum;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = (float)p[i];
}

/* The pooler (BertPooler, DistilBERT pre_classifier, RoBERTa / ELECTRA
 * classifier.dense) on the first row, in double: checks the binding of the
 * pooler weights and the family's activation, which only the classifier
 * uses inside the engine. */
static float *pooler_output(const struct bert_model *m, const float *cls)
{
    const struct bert_weights *w = &m->engine->weights;
    /* ModernBERT's head is checked through the classifier and the MLM. */
    if (w->pooler_w == NULL || m->config.family == BERT_FAMILY_MODERNBERT)
        return NULL;
    const size_t H = m->config.hidden_size;
    float *out = golden_xcalloc(H, sizeof *out);
    for (size_t o = 0; o < H; o++) {
        double acc = w->pooler_b[o];
        for (size_t k = 0; k < H; k++)
            acc += (double)w->pooler_w[o * H + k] * cls[k];
        switch (m->config.pooler_activation) {
        case BERT_ACTIVATION_TANH:
            out[o] = (float)tanh(acc);
            break;
        case BERT_ACTIVATION_RELU:
            out[o] = (float)(acc > 0 ? acc : 0);
            break;
        case BERT_ACTIVATION_GELU:
            out[o] = (float)(0.5 * acc * (1.0 + erf(acc / sqrt(2.0))));
            break;
        default:
            out[o] = NAN; /* no family uses another: fail the comparison */
        }
    }
    return out;
}

/* Sequences [first, first + count) of the inputs as one packed batch. */
struct packed {
    struct bert_batch batch;
    int32_t *ids, *type_ids;
    size_t *seq_start;
};

static void packed_init(struct packed *p, const struct run *r, size_t first, size_t count)
{
    p->ids = golden_xcalloc(r->total_tokens, sizeof *p->ids);
    p->type_ids = golden_xcalloc(r->total_tokens, sizeof *p->type_ids);
    p->seq_start = golden_xcalloc(count + 1, sizeof *p->seq_start);
    size_t t = 0;
    for (size_t i = 0; i < count; i++) {
        const struct input *in = &r->inputs[first + i];
        memcpy(p->ids + t, in->ids, in->n * sizeof *p->ids);
        memcpy(p->type_ids + t, in->type_ids, in->n * sizeof *p->type_ids);
        p->seq_start[i] = t;
        t += in->n;
    }
    p->seq_start[count] = t;
    p->batch = (struct bert_batch){.n_seqs = count, .n_tokens = t, .ids = p->ids,
                                   .type_ids = p->type_ids, .seq_start = p->seq_start};
}

static void packed_free(struct packed *p)
{
    free(p->ids);
    free(p->type_ids);
    free(p->seq_start);
}

static bool run_tasks(const struct run *r, const struct packed *p, struct bert_seq_task *tasks)
{
    struct bert_error err = {0};
    enum bert_status st = bert_run(r->model, r->scratch, &p->batch, tasks, &err);
    if (st != BERT_OK)
        fprintf(stderr, "%s: bert_run: %s\n", r->name, err.message);
    CHECK_INT_EQ(st, BERT_OK);
    return st == BERT_OK;
}

static void alloc_outputs(const struct run *r, const struct packed *p, struct result *res)
{
    const struct bert_model *m = r->model;
    for (size_t i = 0; i < p->batch.n_seqs; i++) {
        struct result *x = &res[i];
        x->n = p->seq_start[i + 1] - p->seq_start[i];
        x->hidden = golden_xcalloc(x->n * r->H, sizeof(float));
        for (int k = 0; k < N_POOLINGS; k++)
            x->pooled[k] = golden_xcalloc(r->H, sizeof(float));
        x->embedding = golden_xcalloc(r->H, sizeof(float));
        if (m->can_classify) {
            x->logits = golden_xcalloc(m->config.num_labels, sizeof(float));
            x->probs = golden_xcalloc(m->config.num_labels, sizeof(float));
        }
        x->mask_positions = golden_xcalloc(x->n, sizeof(uint32_t));
        const int32_t *ids = p->batch.ids + p->seq_start[i];
        for (size_t t = 0; m->can_fill_mask && t < x->n; t++)
            if (ids[t] == bert_tokenizer_mask_id(m->tokenizer))
                x->mask_positions[x->n_masks++] = (uint32_t)t;
        x->top_ids = golden_xcalloc(x->n_masks * TOP_K, sizeof(int32_t));
        x->top_probs = golden_xcalloc(x->n_masks * TOP_K, sizeof(float));
        if (m->can_detect_replaced)
            x->replaced = golden_xcalloc(x->n, sizeof(float));
    }
}

/* Run sequences [first, first + count) as one batch and fill res[0..count):
 * encode once, then one bert_run per pooling slot with the slots rotated
 * across sequences (so each batch mixes poolings), then the heads. Called
 * with count 1 for every input, and with all inputs at once. */
static bool run_batch(const struct run *r, size_t first, size_t count, struct result *res)
{
    const struct bert_model *m = r->model;
    const size_t H = r->H;
    struct packed p;
    packed_init(&p, r, first, count);
    alloc_outputs(r, &p, res);
    struct bert_seq_task *tasks = golden_xcalloc(count, sizeof *tasks);
    bool ok = true;

    const float *hidden;
    struct bert_error err = {0};
    enum bert_status st = bert_encode(m, r->scratch, &p.batch, &hidden, &err);
    CHECK_INT_EQ(st, BERT_OK);
    if (st != BERT_OK) {
        fprintf(stderr, "%s: bert_encode: %s\n", r->name, err.message);
        ok = false;
        goto done;
    }
    for (size_t i = 0; i < count; i++) {
        memcpy(res[i].hidden, hidden + p.seq_start[i] * H, res[i].n * H * sizeof(float));
        res[i].pooler = pooler_output(m, res[i].hidden);
    }

    /* Slots 0..2 are cls/mean/max unnormalised; slot 3 is the checkpoint's
     * own pooling and normalisation. */
    for (size_t round = 0; ok && round < N_POOLINGS + 1; round++) {
        for (size_t i = 0; i < count; i++) {
            size_t slot = (i + round) % (N_POOLINGS + 1);
            tasks[i] = (struct bert_seq_task){.task = BERT_TASK_EMBED};
            if (slot < N_POOLINGS) {
                tasks[i].pooling = (enum bert_pooling)slot;
                tasks[i].embedding = res[i].pooled[slot];
            } else {
                tasks[i].pooling = m->config.pooling;
                tasks[i].normalize = m->config.normalize;
                tasks[i].embedding = res[i].embedding;
            }
        }
        ok = run_tasks(r, &p, tasks);
    }

    /* Heads: fill-mask where there are masks, classification otherwise. */
    bool any = false;
    for (size_t i = 0; ok && i < count; i++) {
        tasks[i] = (struct bert_seq_task){.task = BERT_TASK_EMBED, .embedding = res[i].embedding,
                                          .pooling = m->config.pooling,
                                          .normalize = m->config.normalize};
        if (res[i].n_masks > 0) {
            tasks[i] = (struct bert_seq_task){.task = BERT_TASK_FILL_MASK, .top_k = TOP_K,
                                              .mask_positions = res[i].mask_positions,
                                              .n_masks = (uint32_t)res[i].n_masks,
                                              .top_ids = res[i].top_ids,
                                              .top_probs = res[i].top_probs};
            any = true;
        } else if (m->can_classify) {
            tasks[i] = (struct bert_seq_task){.task = BERT_TASK_CLASSIFY,
                                              .logits = res[i].logits};
            any = true;
        }
    }
    if (ok && any)
        ok = run_tasks(r, &p, tasks);
    if (ok && m->can_detect_replaced) {
        for (size_t i = 0; i < count; i++)
            tasks[i] = (struct bert_seq_task){.task = BERT_TASK_REPLACED,
                                              .replaced = res[i].replaced};
        ok = run_tasks(r, &p, tasks);
    }
    for (size_t i = 0; ok && i < count; i++)
        if (res[i].logits != NULL)
            class_probabilities(&m->config, res[i].logits, res[i].probs);
done:
    free(tasks);
    packed_free(&p);
    return ok;
}

/* ---- comparisons ---- */

static double max_abs_json(const float *x, size_t n, json_t *want)
{
    CHECK_INT_EQ(json_array_size(want), n);
    double worst = 0.0;
    for (size_t i = 0; i < n && i < json_array_size(want); i++) {
        double d = fabs((double)x[i] - json_number_value(json_array_get(want, i)));
        worst = d > worst || isnan(d) ? d : worst;
    }
    return worst;
}

static double cosine_json(const float *x, size_t n, json_t *want)
{
    CHECK_INT_EQ(json_array_size(want), n);
    double dot = 0.0, xx = 0.0, yy = 0.0;
    for (size_t i = 0; i < n && i < json_array_size(want); i++) {
        double y = json_number_value(json_array_get(want, i));
        dot += x[i] * y;
        xx += (double)x[i] * x[i];
        yy += y * y;
    }
    return dot / sqrt(xx * yy);
}

static double max_of(double a, double b)
{
    return a > b || isnan(a) ? a : b;
}

static const char *const pooling_keys[N_POOLINGS] = {
    [BERT_POOLING_CLS] = "cls", [BERT_POOLING_MEAN] = "mean", [BERT_POOLING_MAX] = "max"};

/* Compare one input's result with a golden output object. */
static void compare_golden(const struct run *r, const struct result *x, json_t *want,
                           bool all_top_ids, struct errors *e)
{
    const size_t H = r->H;
    json_t *hidden = json_object_get(want, "hidden");
    if (hidden != NULL) {
        CHECK_INT_EQ(json_array_size(hidden), x->n);
        for (size_t t = 0; t < x->n && t < json_array_size(hidden); t++)
            e->hidden = max_of(e->hidden, max_abs_json(x->hidden + t * H, H,
                                                       json_array_get(hidden, t)));
        e->n_hidden++;
    }
    /* Cosine is the contract; max abs also catches a wrong norm. */
    for (int k = 0; k <= N_POOLINGS; k++) {
        json_t *v = json_object_get(want, k < N_POOLINGS ? pooling_keys[k] : "embedding");
        const float *got = k < N_POOLINGS ? x->pooled[k] : x->embedding;
        if (v == NULL)
            continue;
        double c = cosine_json(got, H, v);
        e->cosine = c < e->cosine || isnan(c) ? c : e->cosine;
        e->pooled = max_of(e->pooled, max_abs_json(got, H, v));
    }
    e->n_pooled++;
    json_t *pooler = json_object_get(want, "pooler");
    CHECK((pooler != NULL) == (x->pooler != NULL));
    if (pooler != NULL && x->pooler != NULL)
        e->pooler = max_of(e->pooler, max_abs_json(x->pooler, H, pooler));
    json_t *replaced = json_object_get(want, "replaced");
    CHECK((replaced != NULL) == (x->replaced != NULL));
    if (replaced != NULL && x->replaced != NULL)
        e->prob = max_of(e->prob, max_abs_json(x->replaced, x->n, replaced));
    json_t *probs = json_object_get(want, "probabilities");
    CHECK((probs != NULL) == (x->logits != NULL));
    if (probs != NULL && x->logits != NULL) {
        size_t C = r->model->config.num_labels;
        e->prob = max_of(e->prob, max_abs_json(x->probs, C, probs));
        e->logits = max_of(e->logits, max_abs_json(x->logits, C, json_object_get(want, "logits")));
        e->n_classified++;
    }
    json_t *masks = json_object_get(want, "masks");
    CHECK(masks != NULL || x->n_masks == 0);
    if (masks != NULL) {
        CHECK_INT_EQ(json_array_size(masks), x->n_masks);
        for (size_t k = 0; k < x->n_masks && k < json_array_size(masks); k++) {
            json_t *mk = json_array_get(masks, k);
            json_t *ids = json_object_get(mk, "top_ids");
            const int32_t *got = x->top_ids + k * TOP_K;
            size_t check = all_top_ids ? TOP_K : 1;
            bool same = json_array_size(ids) == TOP_K;
            for (size_t j = 0; same && j < check; j++)
                same = got[j] == json_integer_value(json_array_get(ids, j));
            if (!same)
                e->top_id_mismatches++;
            e->prob = max_of(e->prob, max_abs_json(x->top_probs + k * TOP_K, TOP_K,
                                                   json_object_get(mk, "top_probs")));
            e->n_masks++;
        }
    }
}

/* Packed against single: the same numbers up to float reassociation. */
static double compare_results(const struct run *r, const struct result *a,
                              const struct result *b, size_t *id_mismatches)
{
    const size_t H = r->H;
    double worst = 0.0;
    for (size_t i = 0; i < a->n * H; i++)
        worst = max_of(worst, fabs(a->hidden[i] - b->hidden[i]));
    for (size_t i = 0; i < H; i++) {
        for (int k = 0; k < N_POOLINGS; k++)
            worst = max_of(worst, fabs(a->pooled[k][i] - b->pooled[k][i]));
        worst = max_of(worst, fabs(a->embedding[i] - b->embedding[i]));
    }
    for (size_t i = 0; a->logits && i < r->model->config.num_labels; i++)
        worst = max_of(worst, fabs(a->logits[i] - b->logits[i]));
    for (size_t i = 0; a->replaced && i < a->n; i++)
        worst = max_of(worst, fabs(a->replaced[i] - b->replaced[i]));
    for (size_t i = 0; i < a->n_masks * TOP_K; i++) {
        worst = max_of(worst, fabs(a->top_probs[i] - b->top_probs[i]));
        *id_mismatches += a->top_ids[i] != b->top_ids[i];
    }
    return worst;
}

static void print_errors(const char *label, const char *what, const struct errors *e)
{
    printf("%-24s %-14s hidden %.3g (%zu inputs), pooler %.3g, pooled %.3g and 1-cosine %.3g "
           "(%zu), probabilities %.3g (%zu masks, %zu classified, %zu top-k id mismatches), "
           "logits %.3g\n",
           label, what, e->hidden, e->n_hidden, e->pooler, e->pooled, 1.0 - e->cosine,
           e->n_pooled, e->prob, e->n_masks, e->n_classified, e->top_id_mismatches, e->logits);
}

static void check_errors(const char *label, const char *what, const struct errors *e,
                         const struct tolerance *tol)
{
    print_errors(label, what, e);
    if (!(e->hidden <= tol->hidden_abs && e->pooler <= tol->hidden_abs &&
          e->pooled <= tol->hidden_abs && e->cosine >= tol->cosine_min && e->prob <= tol->prob_abs &&
          e->top_id_mismatches <= tol->top1_slack))
        fprintf(stderr, "%s %s: outside tolerance (hidden %g, cosine %g, probabilities %g, %s)\n",
                label, what, tol->hidden_abs, tol->cosine_min, tol->prob_abs,
                tol->all_top_ids ? "all top-k ids" : "top-1 id");
    CHECK(e->hidden <= tol->hidden_abs);
    CHECK(e->pooler <= tol->hidden_abs);
    CHECK(e->pooled <= tol->hidden_abs);
    CHECK(e->cosine >= tol->cosine_min);
    CHECK(e->prob <= tol->prob_abs);
    CHECK(e->top_id_mismatches <= tol->top1_slack);
}

/* ---- one checkpoint ---- */

static void check_tokenizer(const struct run *r, json_t *inputs)
{
    struct bert_encode_options opts = bert_encode_options_default();
    struct bert_encoding enc = {0};
    size_t mismatches = 0;
    for (size_t i = 0; i < r->n_inputs; i++) {
        json_t *in = json_array_get(inputs, i);
        const char *text = json_string_value(json_object_get(in, "text"));
        const char *pair = json_string_value(json_object_get(in, "pair"));
        struct bert_error err = {0};
        enum bert_status st = bert_tokenizer_encode(r->model->tokenizer, text, strlen(text),
                                                    pair, pair ? strlen(pair) : 0, &opts, &enc,
                                                    &err);
        bool same = st == BERT_OK && enc.n == r->inputs[i].n;
        for (size_t t = 0; same && t < enc.n; t++)
            same = enc.ids[t] == r->inputs[i].ids[t] &&
                   enc.type_ids[t] == r->inputs[i].type_ids[t];
        if (!same) {
            fprintf(stderr, "%s: input %zu: our tokenizer %s (%s); golden has %zu tokens\n",
                    r->name, i, st == BERT_OK ? "gives other ids" : "failed",
                    st == BERT_OK ? "see the golden file's tokens" : err.message,
                    r->inputs[i].n);
            mismatches++;
        }
    }
    bert_encoding_free(&enc);
    CHECK_INT_EQ(mismatches, 0);
}

static void check_config(const struct run *r, json_t *init)
{
    const struct bert_config *c = &r->model->config;
    if (json_is_true(json_object_get(init, "sentence-transformers"))) {
        enum bert_pooling want = BERT_POOLING_MEAN;
        const char *p = json_string_value(json_object_get(init, "pooling"));
        if (p != NULL)
            CHECK(bert_pooling_parse(p, &want));
        CHECK(c->pooling_from_model);
        CHECK_INT_EQ(c->pooling, want);
        CHECK_INT_EQ(c->normalize, json_is_true(json_object_get(init, "normalize")));
    }
}

/* Profiling off (as a scratch starts): passes charge nothing. */
static void check_profile_off(const struct bert_scratch *s)
{
    double sec[BERT_OP_CLASSES];
    bert_scratch_profile_read(s, sec);
    for (size_t op = 0; op < BERT_OP_CLASSES; op++)
        CHECK(sec[op] == 0.0);
}

/* Profiling on over passes that took `cpu` seconds of the process's CPU
 * time: the products and attention were seen, no class is negative, and
 * the classes add up to no more than the CPU time spent. */
static void check_profile_on(const struct bert_scratch *s, double cpu)
{
    double sec[BERT_OP_CLASSES], total = 0.0;
    bert_scratch_profile_read(s, sec);
    for (size_t op = 0; op < BERT_OP_CLASSES; op++) {
        CHECK(sec[op] >= 0.0);
        total += sec[op];
    }
    CHECK(sec[BERT_OP_DENSE] > 0.0);
    CHECK(sec[BERT_OP_ATTENTION] > 0.0);
    CHECK(sec[BERT_OP_SOFTMAX] > 0.0);
    CHECK(sec[BERT_OP_NORM] > 0.0);
    CHECK(total <= cpu + 1e-6);
}

/* Run every input alone and all of them packed on a scratch with `threads`
 * compute threads, and compare with the goldens. */
static bool run_threads(struct run *r, size_t threads, json_t *outputs, json_t *f32_outputs,
                        const struct tolerance *same_tol, const struct tolerance *loose_tol,
                        const char *variant_label)
{
    struct bert_error err = {0};
    char label[160];
    snprintf(label, sizeof label, "%s%s", variant_label, threads > 1 ? " x2" : "");
    r->scratch = bert_scratch_new(r->model, r->total_tokens, r->longest, threads, &err);
    CHECK(r->scratch != NULL);
    bool ok = r->scratch != NULL;

    struct result *single = golden_xcalloc(r->n_inputs, sizeof *single);
    struct result *packed = golden_xcalloc(r->n_inputs, sizeof *packed);
    for (size_t i = 0; ok && i < r->n_inputs; i++)
        ok = run_batch(r, i, 1, &single[i]);
    check_profile_off(r->scratch);
    bert_scratch_profile(r->scratch, true);
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    ok = ok && run_batch(r, 0, r->n_inputs, packed);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    check_profile_on(r->scratch, (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    bert_scratch_profile(r->scratch, false);
    if (ok) {
        struct errors e_single, e_packed, e_loose;
        errors_init(&e_single);
        errors_init(&e_packed);
        errors_init(&e_loose);
        double packed_diff = 0.0;
        size_t packed_ids = 0;
        for (size_t i = 0; i < r->n_inputs; i++) {
            json_t *want = json_array_get(outputs, i);
            compare_golden(r, &single[i], want, same_tol->all_top_ids, &e_single);
            compare_golden(r, &packed[i], want, same_tol->all_top_ids, &e_packed);
            if (f32_outputs != NULL)
                compare_golden(r, &single[i], json_array_get(f32_outputs, i),
                               loose_tol->all_top_ids, &e_loose);
            packed_diff = max_of(packed_diff, compare_results(r, &packed[i], &single[i],
                                                              &packed_ids));
        }
        check_errors(label, "one by one", &e_single, same_tol);
        check_errors(label, "packed", &e_packed, same_tol);
        printf("%-24s %-14s max abs %.3g, %zu top-k id differences\n", label,
               "packed-single", packed_diff, packed_ids);
        /* On AMX oneDNN 2.6 has only reference kernels for a product of a
         * few rows in its weight layout, and a lone short input's products
         * ran in f32 there: packed and single differed by bf16's or int8's
         * rounding (a lent 16-core Xeon, int8: up to 0.204; equal on VNNI).
         * They now run padded with zero rows (linear_*_weight_min_rows),
         * which only an AMX machine can confirm; until one has, packed and
         * single there are held to the dtype's tolerance. Elsewhere, bf16 on
         * oneDNN's kernels included (run_bf16_onednn), they agree. */
        const bool amx = (r->model->int8 && strstr(bert_int8_isa(), "AMX") != NULL) ||
                         (r->model->bf16 && strcmp(bert_bf16_isa(), "AMX") == 0);
        bool loose = amx;
        CHECK(packed_diff <= (loose ? same_tol->hidden_abs : PACKED_ABS));
        if (!loose)
            CHECK_INT_EQ(packed_ids, 0);
        if (f32_outputs != NULL)
            check_errors(label, "vs f32 golden", &e_loose, loose_tol);
    }
    for (size_t i = 0; i < r->n_inputs; i++) {
        result_free(&single[i]);
        result_free(&packed[i]);
    }
    free(single);
    free(packed);
    bert_scratch_free(r->scratch);
    r->scratch = NULL;
    return ok;
}

/* The F32 checkpoint in `dir` loaded afresh with int8 dense layers, two
 * threads, against the F32 golden `outputs`. True when int8 is not
 * available here (said on stdout) or the run completed. */
static bool run_int8(struct run *r, const char *dir, json_t *outputs, double weight_std,
                     const char *label)
{
    char why[200], int8_label[160];
    if (!bert_int8_available(why, sizeof why)) {
        printf("%-24s int8 compute not checked: %s\n", label, why);
        return true;
    }
    snprintf(int8_label, sizeof int8_label, "%s int8-compute", label);
    const struct bert_model *f32_model = r->model;
    struct bert_model *model = NULL;
    struct bert_error err = {0};
    CHECK_INT_EQ(bert_model_load(dir, &model, &err), BERT_OK);
    bool ok = model != NULL;
    struct bert_int8_info info = {0};
    if (ok) {
        CHECK_INT_EQ(bert_model_use_int8(model, &info, &err), BERT_OK);
        CHECK_INT_EQ(info.packed, info.dense);
        CHECK(model->int8);
        r->model = model;
        ok = run_threads(r, 2, outputs, NULL,
                         weight_std >= INT8_STRESS_STD ? &int8_stress : &int8_compute, NULL,
                         int8_label);
    }
    bert_model_free(model);
    r->model = f32_model;
    return ok;
}

/* The F32 checkpoint in `dir` loaded afresh with bf16 dense layers on
 * oneDNN's kernels, where bf16 would run on ours (AVX512_BF16 without AMX):
 * the path AMX machines take, checked on these too. True when it does not
 * apply here (said on stdout) or the run completed. */
static bool run_bf16_onednn(struct run *r, const char *dir, json_t *outputs, const char *label)
{
    char onednn_label[160];
    if (strcmp(bert_bf16_isa(), "AMX") == 0 || !bert_bf16_use_onednn(true)) {
        printf("%-24s bf16 on oneDNN without AMX not checked: %s\n", label,
               strcmp(bert_bf16_isa(), "AMX") == 0 ? "AMX runs it by default"
                                                    : "no oneDNN bf16 kernels here");
        return true;
    }
    snprintf(onednn_label, sizeof onednn_label, "%s bf16-onednn", label);
    const struct bert_model *f32_model = r->model;
    struct bert_model *model = NULL;
    struct bert_error err = {0};
    CHECK_INT_EQ(bert_model_load(dir, &model, &err), BERT_OK);
    bool ok = model != NULL;
    if (ok) {
        CHECK_INT_EQ(bert_model_use_bf16(model, &err), BERT_OK);
        r->model = model;
        ok = run_threads(r, 2, outputs, NULL, &bf16_compute, NULL, onednn_label);
    }
    bert_model_free(model);
    r->model = f32_model;
    CHECK(bert_bf16_use_onednn(false));
    return ok;
}

/* Rebuild, load and run one dtype variant; returns false when the variant
 * could not be run at all. */
static bool run_variant(struct run *r, json_t *golden, json_t *variant, json_t *f32_outputs,
                        const char *tokenizer_dir, const char *work_dir)
{
    const char *dtype = json_string_value(json_object_get(variant, "dtype"));
    char label[128], dir[PATH_MAX], path[PATH_MAX + 32];
    snprintf(label, sizeof label, "%s %s", r->name, dtype);
    snprintf(dir, sizeof dir, "%s/%s-%s", work_dir, r->name, dtype);
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);

    const struct tolerance *same_tol = NULL, *loose_tol = NULL;
    for (size_t i = 0; i < sizeof tolerances / sizeof tolerances[0]; i++)
        if (strcmp(dtype, tolerances[i].dtype) == 0) {
            same_tol = &tolerances[i].same;
            loose_tol = &tolerances[i].vs_f32;
        }
    CHECK(same_tol != NULL);
    struct bert_synth_options o;
    if (same_tol == NULL ||
        !golden_synth_options(json_object_get(golden, "init"), dtype, tokenizer_dir, &o)) {
        CHECK(false);
        return false;
    }
    struct bert_error err = {0};
    enum bert_status st = bert_synth_write(&o, dir, &err);
    bert_config_free(&o.config);
    if (st != BERT_OK)
        fprintf(stderr, "%s: bert_synth_write: %s\n", label, err.message);
    CHECK_INT_EQ(st, BERT_OK);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (st != BERT_OK || !golden_check_checksums(label, path, json_object_get(variant, "checksums")))
        return false;

    struct bert_model *model;
    st = bert_model_load(dir, &model, &err);
    if (st != BERT_OK)
        fprintf(stderr, "%s: bert_model_load: %s\n", label, err.message);
    CHECK_INT_EQ(st, BERT_OK);
    if (st != BERT_OK)
        return false;
    r->model = model;
    r->H = model->config.hidden_size;
    CHECK_INT_EQ(model->config.vocab_size, json_integer_value(json_object_get(golden, "vocab_size")));
    if (strcmp(dtype, "f32") == 0) {
        check_tokenizer(r, json_object_get(golden, "inputs"));
        check_config(r, json_object_get(golden, "init"));
    }
    json_t *outputs = json_object_get(variant, "outputs");
    CHECK_INT_EQ(json_array_size(outputs), r->n_inputs);
    bool ok = json_array_size(outputs) == r->n_inputs;
    /* One compute thread, then a team of two: few rows split the products by
     * columns, many rows by rows; both must give the golden answers. */
    for (size_t threads = 1; ok && threads <= 2; threads++)
        ok = run_threads(r, threads, outputs, f32_outputs, same_tol, loose_tol, label);
    char why[200];
    if (ok && strcmp(dtype, "f32") == 0)
        ok = run_int8(r, dir, outputs,
                      json_real_value(json_object_get(json_object_get(golden, "init"),
                                                      "weight-std")),
                      label);
    if (ok && strcmp(dtype, "f32") == 0 && bert_bf16_available(why, sizeof why)) {
        char bf16_label[160];
        snprintf(bf16_label, sizeof bf16_label, "%s bf16-compute", label);
        CHECK_INT_EQ(bert_model_use_bf16(model, &err), BERT_OK);
        ok = run_threads(r, 2, outputs, NULL, &bf16_compute, NULL, bf16_label) &&
             run_bf16_onednn(r, dir, outputs, label);
    } else if (strcmp(dtype, "f32") == 0) {
        printf("%-24s bf16 compute not checked: %s\n", label, why);
    }
    bert_model_free(model);
    r->model = NULL;
    return ok;
}

static void run_golden(const char *golden_dir, const char *work_dir, const char *name)
{
    char path[PATH_MAX], tokenizer_dir[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s.json", golden_dir, name);
    json_error_t jerr;
    json_t *golden = json_load_file(path, 0, &jerr);
    if (golden == NULL) {
        fprintf(stderr, "%s:%d: %s\n", path, jerr.line, jerr.text);
        CHECK(false);
        return;
    }
    snprintf(tokenizer_dir, sizeof tokenizer_dir, "%s/../tokenizer/%s", golden_dir,
             json_string_value(json_object_get(golden, "tokenizer")));
    json_t *inputs = json_object_get(golden, "inputs");
    struct run r = {.name = name, .n_inputs = json_array_size(inputs)};
    r.inputs = golden_xcalloc(r.n_inputs, sizeof *r.inputs);
    for (size_t i = 0; i < r.n_inputs; i++) {
        json_t *ids = json_object_get(json_array_get(inputs, i), "ids");
        json_t *types = json_object_get(json_array_get(inputs, i), "type_ids");
        struct input *in = &r.inputs[i];
        in->n = json_array_size(ids);
        CHECK_INT_EQ(json_array_size(types), in->n);
        in->ids = golden_xcalloc(in->n, sizeof *in->ids);
        in->type_ids = golden_xcalloc(in->n, sizeof *in->type_ids);
        for (size_t t = 0; t < in->n; t++) {
            in->ids[t] = (int32_t)json_integer_value(json_array_get(ids, t));
            in->type_ids[t] = (int32_t)json_integer_value(json_array_get(types, t));
        }
        r.total_tokens += in->n;
        r.longest = in->n > r.longest ? in->n : r.longest;
    }
    json_t *variants = json_object_get(golden, "variants");
    json_t *f32_outputs = NULL;
    for (size_t v = 0; v < json_array_size(variants); v++) {
        json_t *variant = json_array_get(variants, v);
        bool is_f32 = strcmp(json_string_value(json_object_get(variant, "dtype")), "f32") == 0;
        CHECK(is_f32 == (v == 0)); /* the loose comparisons need the F32 golden first */
        run_variant(&r, golden, variant, is_f32 ? NULL : f32_outputs, tokenizer_dir, work_dir);
        if (is_f32)
            f32_outputs = json_object_get(variant, "outputs");
    }
    for (size_t i = 0; i < r.n_inputs; i++) {
        free(r.inputs[i].ids);
        free(r.inputs[i].type_ids);
    }
    free(r.inputs);
    json_decref(golden);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s GOLDEN_DIR WORK_DIR [NAME...]\n", argv[0]);
        return EXIT_FAILURE;
    }
    const char *golden_dir = argv[1], *work_dir = argv[2];
    setvbuf(stdout, NULL, _IOLBF, 0); /* keep the report in step with stderr */
    if (mkdir(work_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "%s: %s\n", work_dir, strerror(errno));
        return EXIT_FAILURE;
    }
    if (argc > 3) {
        for (int i = 3; i < argc; i++)
            run_golden(golden_dir, work_dir, argv[i]);
        return check_exit();
    }
    /* Every golden file, in name order. */
    DIR *d = opendir(golden_dir);
    CHECK(d != NULL);
    char *names[64];
    size_t n = 0;
    for (struct dirent *de; d && (de = readdir(d)) != NULL && n < 64;) {
        size_t len = strlen(de->d_name);
        if (len > 5 && strcmp(de->d_name + len - 5, ".json") == 0)
            names[n++] = strndup(de->d_name, len - 5);
    }
    if (d)
        closedir(d);
    CHECK(n > 0);
    qsort(names, n, sizeof names[0], name_cmp);
    for (size_t i = 0; i < n; i++) {
        run_golden(golden_dir, work_dir, names[i]);
        free(names[i]);
    }
    return check_exit();
}
