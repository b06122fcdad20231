/* The fine-tuning loop driven as a library function (train_loop.h), without the
 * CLI:
 *  1. a regression head on 400 STS-B pairs for 16 steps, evaluated every 4:
 *     four progress lines, the result's step and evaluation counts, and the
 *     checkpoint left in OUT is the best evaluation's: the inference engine
 *     (bert_run, not the trainer's forward pass) on the dev pairs gives the
 *     reported Pearson within 1e-3, computed here in double;
 *  2. the same options run again write a bit-identical checkpoint;
 *  3. an option out of range, or two that do not go together, is
 *     BERT_E_INVALID naming the flag, before anything is loaded or written
 *     (the same for the pretraining loop's checks).
 * argv[1]: tests/data, argv[2]: work folder. */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "bert.h"
#include "check.h"
#include "synth.h"
#include "train_loop.h"
#include "train_data.h"

static const char *data_dir, *work_dir;

static char *path_of(char *buf, const char *dir, const char *name)
{
    int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);
    if (n < 0 || n >= PATH_MAX) {
        fprintf(stderr, "%s/%s: path too long\n", dir, name);
        exit(2);
    }
    return buf;
}

/* A 1-layer, 32-wide BERT with an MLM head and no classifier: what a
 * pretraining run leaves for fine-tuning. */
static bool write_start_model(const char *dir)
{
    char tok[PATH_MAX];
    struct bert_synth_options o = bert_synth_options_default();
    struct bert_config *c = &o.config;
    c->num_layers = 1;
    c->hidden_size = 32;
    c->num_heads = 2;
    c->intermediate_size = 64;
    c->max_position_embeddings = 128;
    c->type_vocab_size = 2;
    c->layer_norm_eps = 1e-12f;
    o.seed = 3;
    o.mlm = true;
    o.tokenizer_dir = path_of(tok, data_dir, "tokenizer/bert-base-uncased");
    struct bert_error err = {0};
    enum bert_status st = bert_synth_write(&o, dir, &err);
    if (st != BERT_OK)
        fprintf(stderr, "bert_synth_write: %s\n", err.message);
    return st == BERT_OK;
}

static struct train_finetune_options regression_options(const char *model, const char *out,
                                                        char *train, char *dev)
{
    struct train_finetune_options o = train_finetune_defaults();
    o.model = model;
    o.out = out;
    o.train = path_of(train, data_dir, "train/stsb-train-400.tsv");
    o.dev = path_of(dev, data_dir, "train/stsb-dev-100.tsv");
    o.problem = BERT_PROBLEM_REGRESSION;
    o.max_steps = 16;
    o.eval_every = 4;
    o.patience = 10;
    o.batch = 16;
    o.max_len = 48;
    o.lr = 3e-3;
    o.dropout = 0.0;
    o.seed = 5;
    return o;
}

static double pearson(const double *x, const double *y, size_t n)
{
    double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
    for (size_t i = 0; i < n; i++) {
        mx += x[i];
        my += y[i];
    }
    mx /= (double)n;
    my /= (double)n;
    for (size_t i = 0; i < n; i++) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    return sxy / sqrt(sxx * syy);
}

/* The dev Pearson of the checkpoint in `dir`, by the inference engine. */
static double engine_dev_pearson(const char *dir, const char *dev_path, size_t max_len)
{
    struct bert_model *m = NULL;
    struct bert_error err = {0};
    CHECK_INT_EQ(bert_model_load(dir, &m, &err), BERT_OK);
    if (m == NULL)
        return NAN;
    CHECK_INT_EQ(m->config.num_labels, 1);
    CHECK_INT_EQ(m->config.problem_type, BERT_PROBLEM_REGRESSION);
    const struct train_label_spec spec = {BERT_PROBLEM_REGRESSION, 1, NULL};
    struct train_labeled d = {0};
    CHECK_INT_EQ(train_labeled_load_spec(&d, m->tokenizer, dev_path, max_len, &spec, &err),
                 BERT_OK);
    struct bert_scratch *s = bert_scratch_new(m, max_len, max_len, 1, &err);
    double *got = calloc(d.n, sizeof *got), *want = calloc(d.n, sizeof *want);
    CHECK(s != NULL && got != NULL && want != NULL);
    for (size_t i = 0; s && got && want && i < d.n; i++) {
        size_t starts[2] = {0, d.start[i + 1] - d.start[i]};
        struct bert_batch b = {1, starts[1], d.ids + d.start[i], d.types + d.start[i], starts};
        float logit = NAN;
        struct bert_seq_task t = {.task = BERT_TASK_CLASSIFY, .logits = &logit};
        CHECK_INT_EQ(bert_run(m, s, &b, &t, &err), BERT_OK);
        got[i] = logit;
        want[i] = d.targets[i];
    }
    double r = got && want ? pearson(got, want, d.n) : NAN;
    free(got);
    free(want);
    bert_scratch_free(s);
    train_labeled_free(&d);
    bert_model_free(m);
    return r;
}

static size_t count_lines_starting(FILE *f, const char *prefix)
{
    char line[1024];
    size_t n = 0;
    rewind(f);
    while (fgets(line, sizeof line, f))
        n += strncmp(line, prefix, strlen(prefix)) == 0;
    return n;
}

static bool same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool same = fa != NULL && fb != NULL;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        same = ca == cb;
        if (ca == EOF || cb == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

static void check_run(const char *model)
{
    char out[PATH_MAX], out2[PATH_MAX], train[PATH_MAX], dev[PATH_MAX];
    char a[PATH_MAX], b[PATH_MAX];
    struct train_finetune_options o =
        regression_options(model, path_of(out, work_dir, "reg"), train, dev);
    o.progress = tmpfile();
    CHECK(o.progress != NULL);
    struct train_finetune_result r = {0};
    struct bert_error err = {0};
    enum bert_status st = train_finetune(&o, &r, &err);
    if (st != BERT_OK)
        fprintf(stderr, "train_finetune: %s\n", err.message);
    CHECK_INT_EQ(st, BERT_OK);
    CHECK_INT_EQ(r.steps, 16);
    CHECK_INT_EQ(r.evaluations, 4);
    CHECK(!r.early_stop);
    CHECK_STR_EQ(r.metric, "pearson");
    if (o.progress) {
        char line[1024];
        rewind(o.progress);
        while (fgets(line, sizeof line, o.progress))
            fputs(line, stdout);
        CHECK_INT_EQ(count_lines_starting(o.progress, "step "), 4);
        CHECK_INT_EQ(count_lines_starting(o.progress, "best dev pearson "), 1);
        fclose(o.progress);
    }
    const double engine = engine_dev_pearson(out, dev, o.max_len);
    printf("best dev Pearson: trainer %.6f, engine on the saved checkpoint %.6f\n", r.best,
           engine);
    /* The engine and the trainer compute the network separately (float
     * sums in other orders); near-constant early predictions amplify that
     * in Pearson to ~1e-4. The evaluations of this run differ by more than
     * 1e-2, so the wrong checkpoint cannot pass. */
    CHECK_NEAR(engine, r.best, 1e-3);

    /* Deterministic: the same options write the same bytes. */
    o.out = path_of(out2, work_dir, "reg-again");
    o.progress = NULL;
    CHECK_INT_EQ(train_finetune(&o, NULL, &err), BERT_OK);
    CHECK(same_file(path_of(a, out, "model.safetensors"), path_of(b, out2, "model.safetensors")));
}

/* Each bad option set fails the check naming `flag`, and writes nothing. */
static void expect_bad(struct train_finetune_options o, const char *flag)
{
    char out[PATH_MAX];
    struct stat sb;
    struct bert_error err = {0};
    o.out = path_of(out, work_dir, "never-written");
    CHECK_INT_EQ(train_finetune(&o, NULL, &err), BERT_E_INVALID);
    CHECK_CONTAINS(err.message, flag);
    CHECK(stat(out, &sb) != 0);
}

static void check_bad_options(const char *model)
{
    char train[PATH_MAX], dev[PATH_MAX];
    const struct train_finetune_options good = regression_options(model, "x", train, dev);
    struct train_finetune_options o = good;
    o.model = NULL;
    expect_bad(o, "--model");
    o = good, o.batch = 0;
    expect_bad(o, "--batch");
    o = good, o.max_len = 2;
    expect_bad(o, "--max-len");
    o = good, o.dropout = 1.0;
    expect_bad(o, "--dropout");
    o = good, o.labels = "a,b";
    expect_bad(o, "--labels");
    o = good, o.problem = BERT_PROBLEM_MULTI_LABEL;
    expect_bad(o, "--labels");
    o = good, o.mlm_weight = 1.0, o.freeze_encoder = true;
    expect_bad(o, "--freeze-encoder");
    const char *corpus[] = {"corpus.txt"};
    o = good, o.corpus = corpus, o.n_corpus = 1;
    expect_bad(o, "--mlm-weight");
    o = good, o.dtype = BERT_DTYPE_I8;
    expect_bad(o, "--dtype");

    struct train_pretrain_options p = train_pretrain_defaults();
    p.corpus = corpus;
    p.n_corpus = 1;
    p.out = "x";
    p.tokenizer = "t";
    struct bert_error err = {0};
    CHECK_INT_EQ(train_pretrain_check(&p, &err), BERT_OK);
    struct train_pretrain_options q = p;
    q.max_len = q.config.max_position_embeddings + 1;
    CHECK_INT_EQ(train_pretrain_check(&q, &err), BERT_E_INVALID);
    CHECK_CONTAINS(err.message, "--max-len");
    q = p, q.mask.mask_prob = 1.5;
    CHECK_INT_EQ(train_pretrain(&q, &err), BERT_E_INVALID);
    CHECK_CONTAINS(err.message, "--mask-prob");
    q = p, q.n_corpus = 0;
    CHECK_INT_EQ(train_pretrain_check(&q, &err), BERT_E_INVALID);
    CHECK_CONTAINS(err.message, "--corpus");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s TESTS_DATA_DIR WORK_DIR\n", argv[0]);
        return 2;
    }
    data_dir = argv[1];
    work_dir = argv[2];
    openblas_set_num_threads(1);
    char model[PATH_MAX];
    if (!write_start_model(path_of(model, work_dir, "start"))) {
        CHECK(false);
        return check_exit();
    }
    check_run(model);
    check_bad_options(model);
    return check_exit();
}
