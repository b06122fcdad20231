/* `bert mlm-eval`: masked-LM accuracy of a checkpoint on the sequences
 * `bert pretrain` holds out, split by what the corruption did to each
 * predicted position ([MASK], a random token, kept), and on uncorrupted
 * input where every token is predicted. This is the measurement behind
 * EXPERIMENTS.md's 80/10/10 ablation (Devlin et al. 2018, appendix C.2). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "train_loop.h"
#include "train_data.h"
#include "train_mask.h"
#include "train_model.h"
#include "train_step.h"

/* Counts for one kind of predicted position. */
struct kind_score {
    size_t count, correct;
    double loss;
};

struct mlm_eval {
    struct train_model model;
    struct train_work *work;
    struct train_vocab vocab;
    struct train_corpus corpus;
    struct bert_tokenizer *tok;
    int32_t *ids, *labels, *kind_labels, *types;
    uint8_t *kinds;
    size_t *start;
};

/* Forward the batch with `labels` and add its MLM counts to *score. */
static bool score_batch(struct mlm_eval *e, size_t n_seqs, size_t n_tokens, const int32_t *labels,
                        struct kind_score *score, struct bert_error *err)
{
    struct train_batch tb = {.b = {n_seqs, n_tokens, e->ids, e->types, e->start},
                             .mlm_labels = labels};
    struct train_stats st;
    if (train_step(&e->model, e->work, &tb, false, false, &st, err) != BERT_OK)
        return false;
    score->count += st.mlm_count;
    score->correct += st.mlm_correct;
    score->loss += st.mlm_loss_sum;
    return true;
}

/* Held-out sequences [first, first + count) into the batch buffers, masked
 * with the generators `bert pretrain` uses for them (corrupt) or left whole
 * with every non-special token as a label. Returns the token count. */
static size_t fill_batch(struct mlm_eval *e, const struct train_mask_options *mask, uint64_t seed,
                         size_t n_train, size_t first, size_t count, bool corrupt)
{
    size_t n_tokens = 0;
    e->start[0] = 0;
    for (size_t k = 0; k < count; k++) {
        int32_t *ids = e->ids + n_tokens, *labels = e->labels + n_tokens;
        size_t n = train_corpus_sequence(&e->corpus, n_train + first + k, ids);
        if (corrupt) {
            struct train_rng rng = train_rng_for(seed, first + k, TRAIN_STREAM_HELDOUT);
            train_mask_sequence(&e->vocab, mask, &rng, ids, n, labels, e->kinds + n_tokens);
        } else {
            for (size_t t = 0; t < n; t++)
                labels[t] = e->vocab.never_pick[ids[t]] ? TRAIN_LABEL_IGNORE : ids[t];
        }
        n_tokens += n;
        e->start[k + 1] = n_tokens;
    }
    return n_tokens;
}

static void print_score(const char *name, const struct kind_score *s)
{
    printf("%-9s %8zu  %.4f  %.4f\n", name, s->count,
           s->count ? (double)s->correct / (double)s->count : 0.0,
           s->count ? s->loss / (double)s->count : 0.0);
}

/* The settings of a run (the flags) and its scores. */
struct mlm_eval_run {
    const char *model_dir;
    const char *files[CLI_MAX_CORPUS_FILES];
    size_t n_files, max_len, batch, heldout_max, threads;
    double heldout;
    uint64_t seed;
    struct train_mask_options mask;
    size_t n_heldout, n_train;
    struct kind_score all, by_kind[4], whole;
};

/* Tokenizer, corpus, model and buffers; the held-out split of `bert
 * pretrain`: the corpus's last sequences. */
static enum bert_status mlm_eval_load(struct mlm_eval *e, struct mlm_eval_run *r,
                                      struct bert_error *err)
{
    enum bert_status st;
    if ((st = bert_tokenizer_load(r->model_dir, &e->tok, err)) != BERT_OK ||
        (st = train_vocab_init(&e->vocab, e->tok, err)) != BERT_OK ||
        (st = train_corpus_load(&e->corpus, e->tok, r->files, r->n_files, r->max_len, err)) !=
            BERT_OK ||
        (st = train_model_load(&e->model, r->model_dir, true, false, err)) != BERT_OK)
        return st;
    const struct bert_config *c = &e->model.config;
    if (c->vocab_size != e->vocab.size || r->max_len > c->max_position_embeddings)
        return bert_error_set(err, BERT_E_INVALID,
                              "the model (vocabulary %zu, %zu positions) does not fit its "
                              "tokenizer (%zu) or --max-len %zu",
                              c->vocab_size, c->max_position_embeddings, e->vocab.size,
                              r->max_len);
    if (c->is_decoder)
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "%s is a causal LM (is_decoder): masked-LM accuracy does not "
                              "apply; `bert pretrain --objective clm` reports its held-out "
                              "next-token accuracy",
                              r->model_dir);
    r->n_heldout = train_heldout_sequences(e->corpus.n_seqs, r->heldout, r->heldout_max);
    if (r->n_heldout == 0)
        return bert_error_set(err, BERT_E_INVALID,
                              "the corpus is too small to hold any sequence out");
    r->n_train = e->corpus.n_seqs - r->n_heldout;
    const size_t cap = r->batch * r->max_len;
    e->work = train_work_new(&e->model, cap, r->max_len, r->threads, err);
    if (e->work == NULL)
        return err ? err->status : BERT_E_NOMEM;
    e->ids = malloc(cap * sizeof *e->ids);
    e->labels = malloc(cap * sizeof *e->labels);
    e->kind_labels = malloc(cap * sizeof *e->kind_labels);
    e->types = calloc(cap, sizeof *e->types);
    e->kinds = malloc(cap);
    e->start = malloc((r->batch + 1) * sizeof *e->start);
    if (!e->ids || !e->labels || !e->kind_labels || !e->types || !e->kinds || !e->start)
        return bert_error_set(err, BERT_E_NOMEM, "out of memory");
    return BERT_OK;
}

/* Every held-out batch three ways: corrupted as pretraining did, each kind
 * of corruption alone, and whole. */
static enum bert_status mlm_eval_score(struct mlm_eval *e, struct mlm_eval_run *r,
                                       struct bert_error *err)
{
    for (size_t first = 0; first < r->n_heldout; first += r->batch) {
        const size_t count = r->n_heldout - first < r->batch ? r->n_heldout - first : r->batch;
        size_t n_tokens = fill_batch(e, &r->mask, r->seed, r->n_train, first, count, true);
        if (!score_batch(e, count, n_tokens, e->labels, &r->all, err))
            return err->status;
        for (int kind = TRAIN_MASK_MASKED; kind <= TRAIN_MASK_KEPT; kind++) {
            for (size_t t = 0; t < n_tokens; t++)
                e->kind_labels[t] = e->kinds[t] == kind ? e->labels[t] : TRAIN_LABEL_IGNORE;
            if (!score_batch(e, count, n_tokens, e->kind_labels, &r->by_kind[kind], err))
                return err->status;
        }
        n_tokens = fill_batch(e, &r->mask, r->seed, r->n_train, first, count, false);
        if (!score_batch(e, count, n_tokens, e->labels, &r->whole, err))
            return err->status;
    }
    return BERT_OK;
}

static enum bert_status mlm_eval_run(struct mlm_eval_run *r, struct bert_error *err)
{
    struct mlm_eval e = {0};
    enum bert_status st = mlm_eval_load(&e, r, err);
    if (st == BERT_OK)
        st = mlm_eval_score(&e, r, err);
    if (st == BERT_OK) {
        const struct train_mask_options *m = &r->mask;
        printf("mlm-eval: %zu held-out sequences of %zu, mask-prob %.2f, mix %.2f/%.2f/%.2f, "
               "%s masking, seed %llu\n",
               r->n_heldout, e.corpus.n_seqs, m->mask_prob, m->replace_mask, m->replace_random,
               1.0 - m->replace_mask - m->replace_random,
               m->whole_word ? "whole-word" : "token", (unsigned long long)r->seed);
        printf("positions   count  accuracy  loss\n");
        print_score("picked", &r->all);
        print_score("[MASK]", &r->by_kind[TRAIN_MASK_MASKED]);
        print_score("random", &r->by_kind[TRAIN_MASK_RANDOM]);
        print_score("kept", &r->by_kind[TRAIN_MASK_KEPT]);
        print_score("unmasked", &r->whole);
    }
    free(e.ids);
    free(e.labels);
    free(e.kind_labels);
    free(e.types);
    free(e.kinds);
    free(e.start);
    train_work_free(e.work);
    train_model_free(&e.model);
    train_corpus_free(&e.corpus);
    train_vocab_free(&e.vocab);
    bert_tokenizer_free(e.tok);
    return st;
}

static const char MLM_EVAL_USAGE[] =
    "usage: bert mlm-eval --model DIR --corpus FILE [--corpus FILE...] [options]\n"
    "(the corpus files, max-len and held-out options as given to bert pretrain; mask-mix "
    "three shares summing to 1)\n";

int cli_mlm_eval_command(int argc, char **argv)
{
    struct mlm_eval_run r = {.max_len = 128, .batch = 32, .heldout_max = 500,
                             .threads = cli_cpus(), .heldout = 0.05,
                             .mask = train_mask_options_default()};
    argc = cli_take_corpus_files(argc, argv, r.files, &r.n_files);
    const char *mask_mix = NULL;
    struct cli_opt opts[] = {
        {"model", CLI_OPT_STRING, &r.model_dir, "checkpoint with an MLM head (required)"},
        {"max-len", CLI_OPT_SIZE, &r.max_len, "sequence length, as in pretraining (128)"},
        {"heldout", CLI_OPT_DOUBLE, &r.heldout, "share of sequences held out (0.05)"},
        {"heldout-max", CLI_OPT_SIZE, &r.heldout_max, "held-out sequences at most (500)"},
        {"mask-prob", CLI_OPT_DOUBLE, &r.mask.mask_prob, "masking probability (0.15)"},
        {"mask-mix", CLI_OPT_STRING, &mask_mix, "picked tokens made [MASK],random,kept (0.8,0.1,0.1)"},
        {"whole-word", CLI_OPT_FLAG, &r.mask.whole_word, "whole-word masking"},
        {"seed", CLI_OPT_U64, &r.seed, "seed of the held-out masks, as pretrain's --seed (0)"},
        {"batch", CLI_OPT_SIZE, &r.batch, "sequences per forward pass (32)"},
        {"threads", CLI_OPT_SIZE, &r.threads, "compute threads (CPUs available)"},
    };
    const size_t n_opts = sizeof opts / sizeof opts[0];
    if (!cli_parse("mlm-eval", argc, argv, opts, n_opts))
        return CLI_EXIT_USAGE;
    const char *bad = r.model_dir == NULL      ? "--model is required"
                      : r.n_files == 0          ? "--corpus is required"
                      : r.max_len < 3           ? "--max-len must be at least 3"
                      : r.batch == 0            ? "--batch must be at least 1"
                      : !(r.heldout > 0 && r.heldout < 1) ? "--heldout must be in (0, 1)"
                                                : cli_mask_options(mask_mix, &r.mask);
    if (bad != NULL)
        return cli_usage_error("mlm-eval", bad, MLM_EVAL_USAGE, opts, n_opts);
    openblas_set_num_threads(1);
    struct bert_error err = {0};
    if (mlm_eval_run(&r, &err) != BERT_OK) {
        fprintf(stderr, "bert mlm-eval: %s\n", err.message);
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}
