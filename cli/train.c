/* `bert pretrain` (masked-LM, or causal LM with --objective clm, from
 * scratch) and `bert finetune` (classification head on [CLS], or on the
 * last token of a causal model), both on train/. */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "args.h"
#include "cli.h"
#include "bert.h"
#include "engine.h"
#include "train_data.h"
#include "train_mask.h"
#include "train_optim.h"
#include "train_step.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void format_duration(double s, char *buf, size_t n)
{
    long t = s > 0 ? (long)(s + 0.5) : 0;
    if (t >= 3600)
        snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
}

static bool parse_dtype(const char *name, enum bert_dtype *out)
{
    if (strcmp(name, "f32") == 0)
        *out = BERT_DTYPE_F32;
    else if (strcmp(name, "f16") == 0)
        *out = BERT_DTYPE_F16;
    else if (strcmp(name, "bf16") == 0)
        *out = BERT_DTYPE_BF16;
    else
        return false;
    return true;
}

static bool parse_problem(const char *name, enum bert_problem_type *out)
{
    if (strcmp(name, "single") == 0)
        *out = BERT_PROBLEM_SINGLE_LABEL;
    else if (strcmp(name, "multi") == 0)
        *out = BERT_PROBLEM_MULTI_LABEL;
    else if (strcmp(name, "regression") == 0)
        *out = BERT_PROBLEM_REGRESSION;
    else
        return false;
    return true;
}

/* Packed batch storage for up to `seqs` sequences of `max_len`. */
struct batch_buf {
    int32_t *ids, *types, *labels, *cls_labels, *pred;
    size_t *start;
};

static bool batch_buf_init(struct batch_buf *b, size_t seqs, size_t max_len)
{
    b->ids = malloc(seqs * max_len * sizeof *b->ids);
    b->types = calloc(seqs * max_len, sizeof *b->types);
    b->labels = malloc(seqs * max_len * sizeof *b->labels);
    b->cls_labels = malloc(seqs * sizeof *b->cls_labels);
    b->pred = malloc(seqs * sizeof *b->pred);
    b->start = malloc((seqs + 1) * sizeof *b->start);
    return b->ids && b->types && b->labels && b->cls_labels && b->pred && b->start;
}

static void batch_buf_free(struct batch_buf *b)
{
    free(b->ids);
    free(b->types);
    free(b->labels);
    free(b->cls_labels);
    free(b->pred);
    free(b->start);
}

/* Training batches drop out with a mask that depends only on (seed, step),
 * so a resumed run draws the masks an uninterrupted one would. */
static void set_dropout(struct train_batch *tb, double p, uint64_t seed, size_t step)
{
    struct train_rng rng = train_rng_for(seed, step, TRAIN_STREAM_DROPOUT);
    tb->dropout = (float)p;
    tb->dropout_seed = train_rng_next(&rng);
}

/* The second pass of a step (fine-tuning's masked-LM pass) draws its own
 * masks: the next number of the step's dropout stream. */
static void set_second_dropout(struct train_batch *tb, double p, uint64_t seed, size_t step)
{
    struct train_rng rng = train_rng_for(seed, step, TRAIN_STREAM_DROPOUT);
    train_rng_next(&rng);
    tb->dropout = (float)p;
    tb->dropout_seed = train_rng_next(&rng);
}

static bool valid_dropout(double p) { return p >= 0.0 && p < 1.0; }

/* ---- pretrain ------------------------------------------------------------ */

/* The corpus tail pretrain holds out (and mlm-eval measures): a share of
 * the sequences, at most `max`. */
static size_t heldout_sequences(size_t n_seqs, double share, size_t max)
{
    size_t n = n_seqs >= 2 ? (size_t)((double)n_seqs * share) : 0;
    return n < max ? n : max;
}

struct pretrain {
    struct train_model model;
    struct train_work *work;
    struct train_adamw opt;
    struct train_vocab vocab;
    struct train_corpus corpus;
    struct bert_tokenizer *tok;
    struct batch_buf buf;
    struct train_mask_options mask;
    bool causal;            /* --objective clm: next-token labels, no masking */
    const char *objective;  /* "MLM" or "CLM", for the progress lines */
    size_t n_train, n_heldout;
};

/* Sequence i of the corpus with its labels, appended to the batch: masked
 * with `rng`, or whole with next-token labels for the causal objective. */
static void add_sequence(struct pretrain *p, struct train_rng *rng, size_t i, size_t *n_seqs,
                         size_t *n_tokens)
{
    size_t off = *n_tokens;
    size_t n = train_corpus_sequence(&p->corpus, i, p->buf.ids + off);
    if (p->causal)
        train_next_token_labels(p->buf.ids + off, n, p->buf.labels + off);
    else
        train_mask_sequence(&p->vocab, &p->mask, rng, p->buf.ids + off, n, p->buf.labels + off,
                            NULL);
    p->buf.start[*n_seqs] = off;
    *n_tokens = off + n;
    p->buf.start[++*n_seqs] = *n_tokens;
}

static struct train_batch mlm_batch(struct pretrain *p, size_t n_seqs, size_t n_tokens)
{
    return (struct train_batch){
        .b = {n_seqs, n_tokens, p->buf.ids, p->buf.types, p->buf.start},
        .mlm_labels = p->buf.labels,
    };
}

/* MLM (or next-token) accuracy over the held-out sequences (fixed masking,
 * no updates). */
static void heldout_eval(struct pretrain *p, size_t batch, uint64_t seed)
{
    size_t count = 0, correct = 0;
    double loss = 0.0;
    struct bert_error err;
    for (size_t first = 0; first < p->n_heldout; first += batch) {
        size_t n_seqs = 0, n_tokens = 0;
        for (size_t i = first; i < p->n_heldout && i < first + batch; i++) {
            struct train_rng rng = train_rng_for(seed, i, TRAIN_STREAM_HELDOUT);
            add_sequence(p, &rng, p->n_train + i, &n_seqs, &n_tokens);
        }
        struct train_batch tb = mlm_batch(p, n_seqs, n_tokens);
        struct train_stats st;
        if (train_step(&p->model, p->work, &tb, false, false, &st, &err) != BERT_OK) {
            fprintf(stderr, "bert pretrain: %s\n", err.message);
            return;
        }
        count += st.mlm_count;
        correct += st.mlm_correct;
        loss += st.mlm_loss_sum;
    }
    printf("held-out: %zu sequences, %zu predictions, %s accuracy %.4f, loss %.4f\n",
           p->n_heldout, count, p->objective, count ? (double)correct / (double)count : 0.0,
           count ? loss / (double)count : 0.0);
}

static enum bert_status save_checkpoint(struct pretrain *p, const char *out, const char *tok_dir,
                                        struct bert_error *err)
{
    char dir[PATH_MAX], state[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/checkpoint", out);
    snprintf(state, sizeof state, "%s/checkpoint/trainer_state.bin", out);
    enum bert_status st = train_model_save(&p->model, dir, tok_dir, BERT_DTYPE_F32, err);
    return st == BERT_OK ? train_adamw_save(&p->opt, state, err) : st;
}

/* The model from out/checkpoint (resume), from the weights of `init`
 * (continued pretraining, fresh optimiser) or a fresh one for `cfg`. */
static enum bert_status pretrain_model(struct pretrain *p, const char *out, bool resume,
                                       const char *init, struct bert_config *cfg, uint64_t seed,
                                       double wd, struct bert_error *err)
{
    enum bert_status st;
    if (!resume && init != NULL) {
        if ((st = train_model_load(&p->model, init, true, false, err)) != BERT_OK)
            return st;
        if (p->model.config.vocab_size != cfg->vocab_size)
            return bert_error_set(err, BERT_E_FORMAT,
                                  "%s: vocabulary of %zu tokens, the tokenizer has %zu", init,
                                  p->model.config.vocab_size, cfg->vocab_size);
        p->model.config.is_decoder = cfg->is_decoder; /* --objective chooses */
        return train_adamw_init(&p->opt, &p->model, wd, err);
    }
    if (!resume) {
        if ((st = train_model_init(&p->model, cfg, true, false, err)) != BERT_OK)
            return st;
        train_model_synth(&p->model, seed, 0.02, 0.0, 0.0);
        return train_adamw_init(&p->opt, &p->model, wd, err);
    }
    char dir[PATH_MAX], state[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/checkpoint", out);
    snprintf(state, sizeof state, "%s/checkpoint/trainer_state.bin", out);
    st = train_model_load(&p->model, dir, true, false, err);
    if (st == BERT_OK && p->model.config.is_decoder != cfg->is_decoder)
        st = bert_error_set(err, BERT_E_INVALID,
                            "%s was trained with --objective %s; resume it with the same", dir,
                            p->model.config.is_decoder ? "clm" : "mlm");
    if (st == BERT_OK)
        st = train_adamw_init(&p->opt, &p->model, wd, err);
    if (st == BERT_OK)
        st = train_adamw_load(&p->opt, state, err);
    return st;
}

int cli_take_corpus_files(int argc, char **argv, const char **files, size_t *n_files)
{
    int kept = 0;
    *n_files = 0;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && strcmp(argv[i], "--corpus") == 0 && i + 1 < argc &&
            *n_files < CLI_MAX_CORPUS_FILES) {
            files[(*n_files)++] = argv[++i];
            continue;
        }
        argv[kept++] = argv[i];
    }
    return kept;
}

int cli_pretrain_command(int argc, char **argv)
{
    const char *files[CLI_MAX_CORPUS_FILES];
    size_t n_files;
    argc = cli_take_corpus_files(argc, argv, files, &n_files);
    struct bert_config cfg = {0};
    snprintf(cfg.model_type, sizeof cfg.model_type, "bert");
    cfg.num_layers = 2;
    cfg.hidden_size = 128;
    cfg.num_heads = 2;
    cfg.intermediate_size = 512;
    cfg.max_position_embeddings = 512;
    cfg.type_vocab_size = 2;
    cfg.num_labels = 2;
    cfg.layer_norm_eps = 1e-12f;
    cfg.activation = BERT_ACTIVATION_GELU;
    const char *out = NULL, *tok_dir = NULL, *dtype_name = "f32", *mask_mix = NULL;
    const char *init = NULL, *objective = "mlm";
    size_t max_len = 128, steps = 1000, batch = 32, warmup = 0, save_every = 0, log_every = 10;
    size_t stop_at = 0, threads = cli_cpus(), heldout_max = 500;
    double lr = 5e-4, wd = 0.01, clip = 1.0, heldout_frac = 0.05, dropout = 0.0;
    uint64_t seed = 0;
    bool resume = false;
    struct pretrain p = {0};
    p.mask = train_mask_options_default();
    struct cli_opt opts[] = {
        {"out", CLI_OPT_STRING, &out, "output folder (required); checkpoints in OUT/checkpoint"},
        {"tokenizer", CLI_OPT_STRING, &tok_dir, "tokenizer folder, e.g. bert-base-uncased (required)"},
        {"layers", CLI_OPT_SIZE, &cfg.num_layers, "encoder layers (2)"},
        {"hidden", CLI_OPT_SIZE, &cfg.hidden_size, "hidden size (128)"},
        {"heads", CLI_OPT_SIZE, &cfg.num_heads, "attention heads (2)"},
        {"intermediate", CLI_OPT_SIZE, &cfg.intermediate_size, "feed-forward size (512)"},
        {"max-position", CLI_OPT_SIZE, &cfg.max_position_embeddings, "position embeddings (512)"},
        {"max-len", CLI_OPT_SIZE, &max_len, "training sequence length, specials included (128)"},
        {"steps", CLI_OPT_SIZE, &steps, "optimiser steps (1000)"},
        {"batch", CLI_OPT_SIZE, &batch, "sequences per step (32)"},
        {"lr", CLI_OPT_DOUBLE, &lr, "peak learning rate (5e-4)"},
        {"warmup", CLI_OPT_SIZE, &warmup, "warm-up steps (default 10% of steps)"},
        {"weight-decay", CLI_OPT_DOUBLE, &wd, "AdamW weight decay (0.01)"},
        {"clip", CLI_OPT_DOUBLE, &clip, "gradient-norm clip, 0 for none (1.0)"},
        {"dropout", CLI_OPT_DOUBLE, &dropout, "dropout of hidden states (0: short runs underfit)"},
        {"objective", CLI_OPT_STRING, &objective, "mlm, or clm: causal LM, is_decoder (mlm)"},
        {"mask-prob", CLI_OPT_DOUBLE, &p.mask.mask_prob, "masking probability (0.15)"},
        {"whole-word", CLI_OPT_FLAG, &p.mask.whole_word, "whole-word masking"},
        {"mask-mix", CLI_OPT_STRING, &mask_mix, "picked tokens made [MASK],random,kept (0.8,0.1,0.1)"},
        {"seed", CLI_OPT_U64, &seed, "seed for weights, batches and masks (0)"},
        {"threads", CLI_OPT_SIZE, &threads, "compute threads (CPUs available)"},
        {"log-every", CLI_OPT_SIZE, &log_every, "progress line every N steps (10)"},
        {"save-every", CLI_OPT_SIZE, &save_every, "checkpoint every N steps (0: at the end only)"},
        {"resume", CLI_OPT_FLAG, &resume, "continue from OUT/checkpoint"},
        {"init", CLI_OPT_STRING, &init, "start from this model's weights (geometry flags ignored)"},
        {"stop-at", CLI_OPT_SIZE, &stop_at, "end this run after step N (schedule still --steps)"},
        {"heldout", CLI_OPT_DOUBLE, &heldout_frac, "share of sequences held out (0.05)"},
        {"heldout-max", CLI_OPT_SIZE, &heldout_max, "held-out sequences evaluated at most (500)"},
        {"dtype", CLI_OPT_STRING, &dtype_name, "final model dtype: f32, f16, bf16 (f32)"},
    };
    const size_t n_opts = sizeof opts / sizeof opts[0];
    if (!cli_parse("pretrain", argc, argv, opts, n_opts))
        return CLI_EXIT_USAGE;
    enum bert_dtype dtype;
    if (out == NULL || tok_dir == NULL || n_files == 0 || steps == 0 || batch == 0 ||
        max_len < 3 || max_len > cfg.max_position_embeddings || !parse_dtype(dtype_name, &dtype) ||
        !(heldout_frac >= 0 && heldout_frac < 1) || !(lr > 0) || !valid_dropout(dropout) ||
        !cli_mask_options(mask_mix, &p.mask) ||
        (strcmp(objective, "mlm") != 0 && strcmp(objective, "clm") != 0)) {
        fprintf(stderr, "usage: bert pretrain --corpus FILE [--corpus FILE...] --out DIR "
                        "--tokenizer DIR [options]\n"
                        "(max-len must be 3..max-position, dtype f32/f16/bf16, mask-prob in "
                        "[0, 1], mask-mix three shares summing to 1, objective mlm or clm)\n");
        cli_print_options(opts, n_opts);
        return CLI_EXIT_USAGE;
    }
    p.causal = cfg.is_decoder = strcmp(objective, "clm") == 0;
    p.objective = p.causal ? "CLM" : "MLM";
    if (warmup == 0)
        warmup = steps / 10 > 0 ? steps / 10 : 1;
    if (stop_at == 0 || stop_at > steps)
        stop_at = steps;
    openblas_set_num_threads(1);
    struct bert_error err = {0};
    int rc = CLI_EXIT_FAILURE;
    if (bert_tokenizer_load(tok_dir, &p.tok, &err) != BERT_OK ||
        train_vocab_init(&p.vocab, p.tok, &err) != BERT_OK ||
        train_corpus_load(&p.corpus, p.tok, files, n_files, max_len, &err) != BERT_OK)
        goto fail;
    cfg.vocab_size = p.vocab.size;
    cfg.pad_token_id = bert_tokenizer_pad_id(p.tok) >= 0 ? bert_tokenizer_pad_id(p.tok) : 0;
    if (pretrain_model(&p, out, resume, init, &cfg, seed, wd, &err) != BERT_OK)
        goto fail;
    max_len = max_len < p.model.config.max_position_embeddings
                  ? max_len
                  : p.model.config.max_position_embeddings;
    p.work = train_work_new(&p.model, batch * max_len, max_len, threads, &err);
    if (p.work == NULL)
        goto fail;
    if (!batch_buf_init(&p.buf, batch, max_len)) {
        err = (struct bert_error){BERT_E_NOMEM, "out of memory"};
        goto fail;
    }
    p.n_heldout = heldout_sequences(p.corpus.n_seqs, heldout_frac, heldout_max);
    p.n_train = p.corpus.n_seqs - p.n_heldout;
    printf("pretrain (%s): %zu corpus tokens, %zu training sequences, %zu held out; %zu "
           "layers, hidden %zu, heads %zu, intermediate %zu, vocab %zu, %zu parameters; %zu "
           "threads; %.0f MiB of activations\n",
           p.causal ? "causal LM" : "masked LM", p.corpus.n_ids, p.n_train, p.n_heldout,
           p.model.config.num_layers,
           p.model.config.hidden_size, p.model.config.num_heads,
           p.model.config.intermediate_size, p.model.config.vocab_size, p.model.n_params,
           threads, (double)train_work_bytes(p.work) / (1 << 20));
    if (resume)
        printf("resumed at step %zu\n", p.opt.step);
    fflush(stdout);

    const size_t first_step = p.opt.step;
    double t0 = now_seconds(), window_loss = 0.0;
    size_t window_steps = 0, window_count = 0, window_correct = 0, tokens = 0;
    for (size_t step = p.opt.step; step < stop_at; step++) {
        struct train_rng rng = train_rng_for(seed, step, TRAIN_STREAM_BATCH);
        size_t n_seqs = 0, n_tokens = 0;
        for (size_t k = 0; k < batch; k++)
            add_sequence(&p, &rng, train_rng_below(&rng, p.n_train), &n_seqs, &n_tokens);
        struct train_batch tb = mlm_batch(&p, n_seqs, n_tokens);
        set_dropout(&tb, dropout, seed, step);
        struct train_stats st;
        if (train_step(&p.model, p.work, &tb, true, false, &st, &err) != BERT_OK)
            goto fail;
        train_clip_grads(&p.model, clip, TRAIN_PART_ALL);
        double step_lr = train_lr_at(step, warmup, steps, lr);
        train_adamw_update(&p.opt, &p.model, step_lr, TRAIN_PART_ALL);
        memset(p.model.grads, 0, p.model.n_params * sizeof(float));
        window_loss += st.loss;
        window_steps++;
        window_count += st.mlm_count;
        window_correct += st.mlm_correct;
        tokens += n_tokens;
        if ((step + 1) % log_every == 0 || step + 1 == stop_at) {
            double el = now_seconds() - t0, tps = (double)tokens / (el > 0 ? el : 1e-9);
            char eta[32];
            format_duration((double)(steps - step - 1) * el / (double)(step + 1 - first_step),
                            eta, sizeof eta);
            printf("step %zu/%zu  loss %.6f  %s-acc %.4f  lr %.2e  tok/s %.0f  eta %s\n",
                   step + 1, steps, window_loss / (double)window_steps, p.causal ? "clm" : "mlm",
                   window_count ? (double)window_correct / (double)window_count : 0.0, step_lr,
                   tps, eta);
            fflush(stdout);
            window_loss = 0.0;
            window_steps = window_count = window_correct = 0;
        }
        if (save_every > 0 && (step + 1) % save_every == 0 &&
            save_checkpoint(&p, out, tok_dir, &err) != BERT_OK)
            goto fail;
    }
    if (save_checkpoint(&p, out, tok_dir, &err) != BERT_OK ||
        (p.opt.step == steps && train_model_save(&p.model, out, tok_dir, dtype, &err) != BERT_OK))
        goto fail;
    printf("trained %zu steps in %.1f s\n", p.opt.step, now_seconds() - t0);
    if (p.opt.step == steps && p.n_heldout > 0)
        heldout_eval(&p, batch, seed);
    rc = CLI_EXIT_OK;
    goto done;
fail:
    fprintf(stderr, "bert pretrain: %s\n", err.message);
done:
    batch_buf_free(&p.buf);
    train_work_free(p.work);
    train_adamw_free(&p.opt);
    train_model_free(&p.model);
    train_corpus_free(&p.corpus);
    train_vocab_free(&p.vocab);
    bert_tokenizer_free(p.tok);
    return rc;
}

/* ---- finetune ------------------------------------------------------------ */

struct finetune {
    struct train_model model;
    struct train_work *work;
    struct train_adamw opt;
    struct bert_tokenizer *tok;
    struct train_labeled train, dev;
    struct batch_buf buf;
    float *targets; /* (batch, width) multi-label / regression targets of a batch */
    size_t batch;
    /* --mlm-weight: a masked batch also trains the MLM head, so the model
     * keeps filling masks while its encoder moves: a copy of each batch, or
     * with --corpus as many sequences of general text (rehearsal, so the
     * head does not drift to the task's vocabulary). */
    double mlm_weight;
    struct train_vocab vocab;
    struct train_mask_options mask;
    struct train_corpus corpus;
    size_t corpus_train;    /* sequences drawn from: pretrain's held-out tail excluded */
    struct batch_buf mlm_buf;
};

/* Rows order[first .. first + batch) of `d` into the batch buffer. */
static struct train_batch labeled_batch(struct finetune *f, const struct train_labeled *d,
                                        const size_t *order, size_t first, size_t count)
{
    size_t n_tokens = 0;
    f->buf.start[0] = 0;
    for (size_t k = 0; k < count; k++) {
        size_t i = order ? order[first + k] : first + k;
        size_t n = d->start[i + 1] - d->start[i];
        memcpy(f->buf.ids + n_tokens, d->ids + d->start[i], n * sizeof *f->buf.ids);
        memcpy(f->buf.types + n_tokens, d->types + d->start[i], n * sizeof *f->buf.types);
        n_tokens += n;
        f->buf.start[k + 1] = n_tokens;
        f->buf.cls_labels[k] = d->labels[i];
        if (d->width > 0)
            memcpy(f->targets + k * d->width, d->targets + i * d->width,
                   d->width * sizeof *f->targets);
    }
    return (struct train_batch){.b = {count, n_tokens, f->buf.ids, f->buf.types, f->buf.start},
                                .cls_labels = d->width == 0 ? f->buf.cls_labels : NULL,
                                .cls_targets = d->width > 0 ? f->targets : NULL,
                                .cls_pred = f->buf.pred};
}

/* A masked-LM batch (BERT's rule, masks from `rng`) in f->mlm_buf: the
 * texts of `tb`, or as many random corpus sequences when `from_corpus`. */
static struct train_batch masked_batch(struct finetune *f, const struct train_batch *tb,
                                       bool from_corpus, struct train_rng *rng)
{
    const struct bert_batch *b = &tb->b;
    struct batch_buf *m = &f->mlm_buf;
    size_t n_tokens = b->n_tokens;
    if (from_corpus) {
        m->start[0] = n_tokens = 0;
        for (size_t i = 0; i < b->n_seqs; i++) {
            size_t seq = train_rng_below(rng, f->corpus_train);
            n_tokens += train_corpus_sequence(&f->corpus, seq, m->ids + n_tokens);
            m->start[i + 1] = n_tokens;
        }
        memset(m->types, 0, n_tokens * sizeof *m->types);
    } else {
        memcpy(m->ids, b->ids, n_tokens * sizeof *m->ids);
        memcpy(m->types, b->type_ids, n_tokens * sizeof *m->types);
        memcpy(m->start, b->seq_start, (b->n_seqs + 1) * sizeof *m->start);
    }
    for (size_t i = 0; i < b->n_seqs; i++)
        train_mask_sequence(&f->vocab, &f->mask, rng, m->ids + m->start[i],
                            m->start[i + 1] - m->start[i], m->labels + m->start[i], NULL);
    return (struct train_batch){
        .b = {b->n_seqs, n_tokens, m->ids, m->types, m->start},
        .mlm_labels = m->labels,
    };
}

/* The dev scores of the head, and the one early stopping follows. */
struct dev_eval {
    double loss, metric;
    const char *metric_name; /* as in "best dev NAME" */
    char scores[160];        /* as on the progress line */
};

/* Dev loss and scores: accuracy and F1 (single-label), micro-F1 (multi-
 * label) or Pearson (regression) drives early stopping; false on failure. */
static bool dev_scores(struct finetune *f, struct dev_eval *out, struct bert_error *err)
{
    const struct bert_config *c = &f->model.config;
    const size_t C = c->num_labels, n = f->dev.n;
    int32_t *pred = malloc(n * sizeof *pred);
    float *logits = malloc(n * C * sizeof *logits);
    if (pred == NULL || logits == NULL) {
        free(pred);
        free(logits);
        bert_error_set(err, BERT_E_NOMEM, "out of memory");
        return false;
    }
    double sum = 0.0;
    size_t mlm_count = 0, mlm_correct = 0;
    for (size_t first = 0; first < n; first += f->batch) {
        size_t count = n - first < f->batch ? n - first : f->batch;
        struct train_batch tb = labeled_batch(f, &f->dev, NULL, first, count);
        tb.cls_logits = logits + first * C;
        struct train_stats st, mst = {0};
        bool ok = train_step(&f->model, f->work, &tb, false, false, &st, err) == BERT_OK;
        if (ok && f->mlm_weight > 0.0) {
            /* The same masks at every evaluation: a stream of their own. */
            struct train_rng rng = train_rng_for(0, first, TRAIN_STREAM_HELDOUT);
            struct train_batch mb = masked_batch(f, &tb, false, &rng);
            ok = train_step(&f->model, f->work, &mb, false, false, &mst, err) == BERT_OK;
        }
        if (!ok) {
            free(pred);
            free(logits);
            return false;
        }
        memcpy(pred + first, f->buf.pred, count * sizeof *pred);
        sum += st.cls_loss_sum;
        mlm_count += mst.mlm_count;
        mlm_correct += mst.mlm_correct;
    }
    out->loss = sum / (double)n;
    if (c->problem_type == BERT_PROBLEM_MULTI_LABEL) {
        struct train_multi_scores sc = train_score_multi(logits, f->dev.targets, n, C);
        out->metric = sc.micro_f1;
        out->metric_name = "micro-f1";
        snprintf(out->scores, sizeof out->scores, "dev-micro-f1 %.4f  dev-macro-f1 %.4f  "
                 "dev-exact %.4f", sc.micro_f1, sc.macro_f1, sc.exact_match);
    } else if (c->problem_type == BERT_PROBLEM_REGRESSION) {
        struct train_regression_scores sc = train_score_regression(logits, f->dev.targets, n);
        out->metric = sc.pearson;
        out->metric_name = "pearson";
        snprintf(out->scores, sizeof out->scores, "dev-pearson %.4f  dev-spearman %.4f  "
                 "dev-mse %.4f", sc.pearson, sc.spearman, sc.mse);
    } else {
        struct train_scores sc = train_score(pred, f->dev.labels, n, C);
        out->metric = sc.accuracy;
        out->metric_name = "accuracy";
        snprintf(out->scores, sizeof out->scores, "dev-acc %.4f  dev-f1 %.4f", sc.accuracy,
                 C == 2 ? sc.f1_positive : sc.macro_f1);
    }
    if (mlm_count > 0) {
        size_t len = strlen(out->scores);
        snprintf(out->scores + len, sizeof out->scores - len, "  dev-mlm-acc %.4f",
                 (double)mlm_correct / (double)mlm_count);
    }
    free(pred);
    free(logits);
    return true;
}

/* "a,b" -> config labels; NULL keeps LABEL_i names for n labels. */
static bool set_labels(struct bert_config *c, const char *list, size_t n)
{
    bert_config_free(c);
    c->num_labels = n;
    if (list != NULL) {
        c->num_labels = 1;
        for (const char *q = list; *q; q++)
            c->num_labels += *q == ',';
    }
    c->id2label = calloc(c->num_labels, sizeof *c->id2label);
    if (c->id2label == NULL)
        return false;
    const char *q = list;
    for (size_t i = 0; i < c->num_labels; i++) {
        char name[64];
        if (list != NULL) {
            size_t len = strcspn(q, ",");
            snprintf(name, sizeof name, "%.*s", (int)len, q);
            q += len + (q[len] == ',');
        } else {
            snprintf(name, sizeof name, "LABEL_%zu", i);
        }
        if ((c->id2label[i] = strdup(name)) == NULL)
            return false;
    }
    return true;
}

/* The checkpoint's encoder (and MLM head, kept so the model still fills
 * masks) plus a new or reused pooler and classifier. */
static enum bert_status finetune_model(struct finetune *f, const char *dir, const char *labels,
                                       size_t n_labels, enum bert_problem_type problem,
                                       uint64_t seed, struct bert_error *err)
{
    struct bert_model *loaded;
    enum bert_status st = bert_model_load(dir, &loaded, err);
    if (st != BERT_OK)
        return st;
    struct bert_config cfg = loaded->config;
    cfg.id2label = NULL;
    if (!set_labels(&cfg, labels, n_labels)) {
        bert_config_free(&cfg);
        bert_model_free(loaded);
        return bert_error_set(err, BERT_E_NOMEM, "out of memory");
    }
    cfg.problem_type = problem;
    st = train_model_init(&f->model, &cfg, loaded->engine->weights.mlm_dense_w != NULL, true, err);
    bert_config_free(&cfg);
    if (st == BERT_OK) {
        /* New heads start as BERT initialises them: N(0, 0.02)-like weights,
         * zero biases; a classifier for another label count is not reused. */
        train_model_synth(&f->model, seed, 0.02, 0.0, 0.0);
        struct bert_weights w = loaded->engine->weights;
        if (loaded->config.num_labels != f->model.config.num_labels)
            w.classifier_w = w.classifier_b = NULL;
        st = train_model_copy_weights(&f->model, &w, err);
    }
    bert_model_free(loaded);
    return st;
}

int cli_finetune_command(int argc, char **argv)
{
    const char *files[CLI_MAX_CORPUS_FILES];
    size_t n_files;
    argc = cli_take_corpus_files(argc, argv, files, &n_files);
    const char *model_dir = NULL, *train_path = NULL, *dev_path = NULL, *out = NULL;
    const char *labels = NULL, *dtype_name = "f32", *problem_name = "single";
    size_t max_len = 128, epochs = 3, eval_every = 0, patience = 3, threads = cli_cpus();
    size_t max_steps = 0;
    double lr = 0.0, wd = 0.01, clip = 1.0, warmup_frac = 0.1, dropout = 0.1;
    uint64_t seed = 0;
    bool freeze = false;
    struct finetune f = {.batch = 32};
    struct cli_opt opts[] = {
        {"model", CLI_OPT_STRING, &model_dir, "checkpoint to start from (required)"},
        {"train", CLI_OPT_STRING, &train_path, "training TSV: header, then text[<TAB>text_b]<TAB>label (required)"},
        {"dev", CLI_OPT_STRING, &dev_path, "dev TSV for early stopping (required)"},
        {"out", CLI_OPT_STRING, &out, "folder for the best checkpoint (required)"},
        {"labels", CLI_OPT_STRING, &labels, "label names in id order, a,b,... (LABEL_i)"},
        {"problem", CLI_OPT_STRING, &problem_name, "head: single, multi (label names a,b in the "
                                                   "label column) or regression (a number) (single)"},
        {"freeze-encoder", CLI_OPT_FLAG, &freeze, "train only the pooler and classifier"},
        {"epochs", CLI_OPT_SIZE, &epochs, "passes over the training set at most (3)"},
        {"max-steps", CLI_OPT_SIZE, &max_steps, "stop after this many steps (0: no limit)"},
        {"batch", CLI_OPT_SIZE, &f.batch, "sequences per step (32)"},
        {"max-len", CLI_OPT_SIZE, &max_len, "tokens per text, specials included (128)"},
        {"lr", CLI_OPT_DOUBLE, &lr, "peak learning rate (2e-5, frozen encoder 1e-3)"},
        {"warmup", CLI_OPT_DOUBLE, &warmup_frac, "warm-up share of the steps (0.1)"},
        {"weight-decay", CLI_OPT_DOUBLE, &wd, "AdamW weight decay (0.01)"},
        {"clip", CLI_OPT_DOUBLE, &clip, "gradient-norm clip, 0 for none (1.0)"},
        {"dropout", CLI_OPT_DOUBLE, &dropout, "dropout of hidden states and the pooled [CLS] (0.1)"},
        {"mlm-weight", CLI_OPT_DOUBLE, &f.mlm_weight, "also train the masked-LM head, loss weight "
                                                      "W, on a masked copy of each batch or on "
                                                      "--corpus text (0: off)"},
        {"eval-every", CLI_OPT_SIZE, &eval_every, "dev evaluation every N steps (once per epoch)"},
        {"patience", CLI_OPT_SIZE, &patience, "stop after N evaluations without improvement (3)"},
        {"seed", CLI_OPT_U64, &seed, "seed for new heads and shuffling (0)"},
        {"threads", CLI_OPT_SIZE, &threads, "compute threads (CPUs available)"},
        {"dtype", CLI_OPT_STRING, &dtype_name, "saved dtype: f32, f16, bf16 (f32)"},
    };
    const size_t n_opts = sizeof opts / sizeof opts[0];
    if (!cli_parse("finetune", argc, argv, opts, n_opts))
        return CLI_EXIT_USAGE;
    enum bert_dtype dtype;
    enum bert_problem_type problem = BERT_PROBLEM_SINGLE_LABEL;
    if (model_dir == NULL || train_path == NULL || dev_path == NULL || out == NULL ||
        f.batch == 0 || epochs == 0 || max_len < 3 || patience == 0 ||
        !parse_dtype(dtype_name, &dtype) || lr < 0 || !valid_dropout(dropout) ||
        !parse_problem(problem_name, &problem) || !(f.mlm_weight >= 0.0) ||
        (freeze && f.mlm_weight > 0.0) || (n_files > 0 && f.mlm_weight == 0.0) ||
        (problem == BERT_PROBLEM_MULTI_LABEL && labels == NULL) ||
        (problem == BERT_PROBLEM_REGRESSION && labels != NULL)) {
        fprintf(stderr, "usage: bert finetune --model DIR --train TSV --dev TSV --out DIR "
                        "[--freeze-encoder] [options]\n"
                        "(--problem single, multi or regression; multi needs --labels, "
                        "regression takes none; --mlm-weight needs the encoder to train;\n"
                        " --corpus FILE [--corpus FILE...]: general text for the --mlm-weight "
                        "batches instead of the training texts, its last 5%% (at most 500 "
                        "sequences, pretrain's held-out part) unused)\n");
        cli_print_options(opts, n_opts);
        return CLI_EXIT_USAGE;
    }
    if (lr == 0.0)
        lr = freeze ? 1e-3 : 2e-5;
    openblas_set_num_threads(1);
    struct bert_error err = {0};
    int rc = CLI_EXIT_FAILURE;
    size_t *order = NULL;
    /* A single-label head takes its size from the training ids, the others
     * from --labels (multi) or are one number (regression). */
    const bool single = problem == BERT_PROBLEM_SINGLE_LABEL;
    if (bert_tokenizer_load(model_dir, &f.tok, &err) != BERT_OK ||
        (single && train_labeled_load(&f.train, f.tok, train_path, max_len, 0, &err) != BERT_OK))
        goto fail;
    size_t n_labels = single && f.train.max_label + 1 > 2 ? (size_t)f.train.max_label + 1
                                                          : (single ? 2 : 1);
    if (finetune_model(&f, model_dir, labels, n_labels, problem, seed, &err) != BERT_OK)
        goto fail;
    if (f.mlm_weight > 0.0) {
        if (!f.model.mlm || f.model.config.is_decoder) {
            bert_error_set(&err, BERT_E_INVALID, "%s: --mlm-weight needs a masked-LM head, and "
                           "this checkpoint has %s", model_dir,
                           f.model.config.is_decoder ? "a causal one" : "none");
            goto fail;
        }
        if (train_vocab_init(&f.vocab, f.tok, &err) != BERT_OK)
            goto fail;
        f.mask = train_mask_options_default();
    }
    const struct train_label_spec spec = {problem, f.model.config.num_labels,
                                          f.model.config.id2label};
    if ((!single &&
         train_labeled_load_spec(&f.train, f.tok, train_path, max_len, &spec, &err) != BERT_OK) ||
        train_labeled_load_spec(&f.dev, f.tok, dev_path, max_len, &spec, &err) != BERT_OK)
        goto fail;
    if ((size_t)f.train.max_label >= f.model.config.num_labels) {
        bert_error_set(&err, BERT_E_INVALID, "%s has label %d but --labels names %zu",
                       train_path, f.train.max_label, f.model.config.num_labels);
        goto fail;
    }
    max_len = max_len < f.model.config.max_position_embeddings
                  ? max_len
                  : f.model.config.max_position_embeddings;
    if (n_files > 0) {
        if (train_corpus_load(&f.corpus, f.tok, files, n_files, max_len, &err) != BERT_OK)
            goto fail;
        f.corpus_train = f.corpus.n_seqs - heldout_sequences(f.corpus.n_seqs, 0.05, 500);
        if (f.corpus_train == 0) {
            bert_error_set(&err, BERT_E_INVALID, "%s: no text to train on", files[0]);
            goto fail;
        }
    }
    f.work = train_work_new(&f.model, f.batch * max_len, max_len, threads, &err);
    if (f.work == NULL || train_adamw_init(&f.opt, &f.model, wd, &err) != BERT_OK)
        goto fail;
    order = malloc(f.train.n * sizeof *order);
    f.targets = malloc(f.batch * (f.train.width + 1) * sizeof *f.targets);
    if (!batch_buf_init(&f.buf, f.batch, max_len) ||
        !batch_buf_init(&f.mlm_buf, f.batch, max_len) || order == NULL || f.targets == NULL) {
        err = (struct bert_error){BERT_E_NOMEM, "out of memory"};
        goto fail;
    }
    const size_t per_epoch = (f.train.n + f.batch - 1) / f.batch;
    size_t total = per_epoch * epochs;
    if (max_steps > 0 && max_steps < total)
        total = max_steps;
    if (eval_every == 0)
        eval_every = per_epoch;
    const size_t warmup = (size_t)((double)total * warmup_frac);
    printf("finetune: %zu training and %zu dev texts, %zu labels%s, %s, %s, %zu steps (%zu per "
           "epoch), lr %.1e%s\n",
           f.train.n, f.dev.n, f.model.config.num_labels,
           single ? "" : problem == BERT_PROBLEM_MULTI_LABEL ? " (multi-label)" : " (regression)",
           freeze ? "frozen encoder" : "full fine-tuning",
           f.model.config.is_decoder ? "causal, last-token head" : "[CLS] head", total,
           per_epoch, lr,
           f.mlm_weight == 0.0       ? ""
           : f.corpus.n_seqs > 0     ? ", masked-LM loss kept on the corpus"
                                     : ", masked-LM loss kept on the training texts");
    fflush(stdout);
    /* The MLM head changes only when its loss is trained. */
    const unsigned parts = TRAIN_PART_CLASSIFIER | (freeze ? 0u : TRAIN_PART_ENCODER) |
                           (f.mlm_weight > 0.0 ? TRAIN_PART_MLM : 0u);
    double best = -INFINITY, t0 = now_seconds(), window_loss = 0.0;
    const char *best_name = "accuracy";
    size_t bad = 0, window = 0, window_right = 0, window_n = 0, window_mlm = 0,
           window_mlm_right = 0;
    for (size_t step = 0; step < total; step++) {
        const size_t epoch = step / per_epoch, first = (step % per_epoch) * f.batch;
        if (step % per_epoch == 0) {
            struct train_rng rng = train_rng_for(seed, epoch, TRAIN_STREAM_SHUFFLE);
            for (size_t i = 0; i < f.train.n; i++)
                order[i] = i;
            for (size_t i = f.train.n; i > 1; i--) {
                size_t j = train_rng_below(&rng, i), t = order[i - 1];
                order[i - 1] = order[j];
                order[j] = t;
            }
        }
        size_t count = f.train.n - first < f.batch ? f.train.n - first : f.batch;
        struct train_batch tb = labeled_batch(&f, &f.train, order, first, count);
        set_dropout(&tb, dropout, seed, step);
        struct train_stats st, mst = {0};
        if (f.mlm_weight > 0.0) {
            /* MLM pass first: its gradients are scaled by the weight before
             * the classification pass adds its own. */
            struct train_rng rng = train_rng_for(seed, step, TRAIN_STREAM_BATCH);
            struct train_batch mb = masked_batch(&f, &tb, f.corpus.n_seqs > 0, &rng);
            set_second_dropout(&mb, dropout, seed, step);
            if (train_step(&f.model, f.work, &mb, true, false, &mst, &err) != BERT_OK)
                goto fail;
            const float weight = (float)f.mlm_weight;
            for (size_t i = 0; i < f.model.n_params; i++)
                f.model.grads[i] *= weight;
        }
        if (train_step(&f.model, f.work, &tb, true, freeze, &st, &err) != BERT_OK)
            goto fail;
        train_clip_grads(&f.model, clip, parts);
        train_adamw_update(&f.opt, &f.model, train_lr_at(step, warmup, total, lr), parts);
        memset(f.model.grads, 0, f.model.n_params * sizeof(float));
        window_loss += st.loss;
        window++;
        window_right += st.cls_correct;
        window_n += st.cls_count;
        window_mlm_right += mst.mlm_correct;
        window_mlm += mst.mlm_count;
        if ((step + 1) % eval_every != 0 && step + 1 != total)
            continue;
        struct dev_eval dev;
        if (!dev_scores(&f, &dev, &err))
            goto fail;
        const bool improved = dev.metric > best;
        /* The share of texts right: the class (single-label) or the whole set
         * (multi-label); a regression has none. */
        char train_right[64] = "";
        if (problem != BERT_PROBLEM_REGRESSION)
            snprintf(train_right, sizeof train_right, "  train-%s %.4f",
                     single ? "acc" : "exact", (double)window_right / (double)window_n);
        if (window_mlm > 0) {
            size_t len = strlen(train_right);
            snprintf(train_right + len, sizeof train_right - len, "  train-mlm-acc %.4f",
                     (double)window_mlm_right / (double)window_mlm);
        }
        printf("step %zu/%zu  epoch %.2f  train-loss %.4f%s  dev-loss %.4f  %s  %.0fs%s\n",
               step + 1, total, (double)(step + 1) / (double)per_epoch,
               window_loss / (double)window, train_right, dev.loss, dev.scores,
               now_seconds() - t0, improved ? "  (best, saved)" : "");
        fflush(stdout);
        window_loss = 0.0;
        window = window_right = window_n = window_mlm = window_mlm_right = 0;
        best_name = dev.metric_name;
        if (improved) {
            best = dev.metric;
            bad = 0;
            if (train_model_save(&f.model, out, model_dir, dtype, &err) != BERT_OK)
                goto fail;
        } else if (++bad >= patience) {
            printf("early stop: no dev improvement in %zu evaluations\n", patience);
            break;
        }
    }
    printf("best dev %s %.4f (saved in %s)\n", best_name, best, out);
    rc = CLI_EXIT_OK;
    goto done;
fail:
    fprintf(stderr, "bert finetune: %s\n", err.message);
done:
    free(order);
    free(f.targets);
    batch_buf_free(&f.mlm_buf);
    train_corpus_free(&f.corpus);
    train_vocab_free(&f.vocab);
    batch_buf_free(&f.buf);
    train_work_free(f.work);
    train_adamw_free(&f.opt);
    train_model_free(&f.model);
    train_labeled_free(&f.train);
    train_labeled_free(&f.dev);
    bert_tokenizer_free(f.tok);
    return rc;
}
