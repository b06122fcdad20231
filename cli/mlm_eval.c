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
#include "train_data.h"
#include "train_mask.h"
#include "train_step.h"

bool cli_mask_options(const char *mix, struct train_mask_options *o)
{
    if (!(o->mask_prob >= 0.0 && o->mask_prob <= 1.0))
        return false;
    if (mix == NULL)
        return true;
    double m, r, k;
    int used = 0;
    if (sscanf(mix, "%lf,%lf,%lf%n", &m, &r, &k, &used) != 3 || mix[used] != '\0' ||
        !(m >= 0 && r >= 0 && k >= 0) || !(m + r + k > 1.0 - 1e-6 && m + r + k < 1.0 + 1e-6))
        return false;
    o->replace_mask = m;
    o->replace_random = r;
    return true;
}

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

int cli_mlm_eval_command(int argc, char **argv)
{
    const char *files[CLI_MAX_CORPUS_FILES];
    size_t n_files;
    argc = cli_take_corpus_files(argc, argv, files, &n_files);
    const char *model_dir = NULL, *mask_mix = NULL;
    size_t max_len = 128, batch = 32, heldout_max = 500, threads = cli_cpus();
    double heldout_frac = 0.05;
    uint64_t seed = 0;
    struct train_mask_options mask = train_mask_options_default();
    struct cli_opt opts[] = {
        {"model", CLI_OPT_STRING, &model_dir, "checkpoint with an MLM head (required)"},
        {"max-len", CLI_OPT_SIZE, &max_len, "sequence length, as in pretraining (128)"},
        {"heldout", CLI_OPT_DOUBLE, &heldout_frac, "share of sequences held out (0.05)"},
        {"heldout-max", CLI_OPT_SIZE, &heldout_max, "held-out sequences at most (500)"},
        {"mask-prob", CLI_OPT_DOUBLE, &mask.mask_prob, "masking probability (0.15)"},
        {"mask-mix", CLI_OPT_STRING, &mask_mix, "picked tokens made [MASK],random,kept (0.8,0.1,0.1)"},
        {"whole-word", CLI_OPT_FLAG, &mask.whole_word, "whole-word masking"},
        {"seed", CLI_OPT_U64, &seed, "seed of the held-out masks, as pretrain's --seed (0)"},
        {"batch", CLI_OPT_SIZE, &batch, "sequences per forward pass (32)"},
        {"threads", CLI_OPT_SIZE, &threads, "compute threads (CPUs available)"},
    };
    const size_t n_opts = sizeof opts / sizeof opts[0];
    if (!cli_parse("mlm-eval", argc, argv, opts, n_opts))
        return CLI_EXIT_USAGE;
    if (model_dir == NULL || n_files == 0 || max_len < 3 || batch == 0 ||
        !(heldout_frac > 0 && heldout_frac < 1) || !cli_mask_options(mask_mix, &mask)) {
        fprintf(stderr, "usage: bert mlm-eval --model DIR --corpus FILE [--corpus FILE...] "
                        "[options]\n(the corpus files, max-len and held-out options as given "
                        "to bert pretrain; mask-mix three shares summing to 1)\n");
        cli_print_options(opts, n_opts);
        return CLI_EXIT_USAGE;
    }
    openblas_set_num_threads(1);
    struct bert_error err = {0};
    struct mlm_eval e = {0};
    int rc = CLI_EXIT_FAILURE;
    if (bert_tokenizer_load(model_dir, &e.tok, &err) != BERT_OK ||
        train_vocab_init(&e.vocab, e.tok, &err) != BERT_OK ||
        train_corpus_load(&e.corpus, e.tok, files, n_files, max_len, &err) != BERT_OK ||
        train_model_load(&e.model, model_dir, true, false, &err) != BERT_OK)
        goto fail;
    if (e.model.config.vocab_size != e.vocab.size || max_len > e.model.config.max_position_embeddings) {
        bert_error_set(&err, BERT_E_INVALID,
                       "the model (vocabulary %zu, %zu positions) does not fit its tokenizer "
                       "(%zu) or --max-len %zu",
                       e.model.config.vocab_size, e.model.config.max_position_embeddings,
                       e.vocab.size, max_len);
        goto fail;
    }
    if (e.model.config.is_decoder) {
        bert_error_set(&err, BERT_E_UNSUPPORTED,
                       "%s is a causal LM (is_decoder): masked-LM accuracy does not apply; "
                       "`bert pretrain --objective clm` reports its held-out next-token accuracy",
                       model_dir);
        goto fail;
    }
    /* The held-out split of `bert pretrain`: the corpus's last sequences. */
    size_t n_heldout = e.corpus.n_seqs >= 2 ? (size_t)((double)e.corpus.n_seqs * heldout_frac) : 0;
    n_heldout = n_heldout < heldout_max ? n_heldout : heldout_max;
    if (n_heldout == 0) {
        bert_error_set(&err, BERT_E_INVALID, "the corpus is too small to hold any sequence out");
        goto fail;
    }
    const size_t n_train = e.corpus.n_seqs - n_heldout, cap = batch * max_len;
    e.work = train_work_new(&e.model, cap, max_len, threads, &err);
    e.ids = malloc(cap * sizeof *e.ids);
    e.labels = malloc(cap * sizeof *e.labels);
    e.kind_labels = malloc(cap * sizeof *e.kind_labels);
    e.types = calloc(cap, sizeof *e.types);
    e.kinds = malloc(cap);
    e.start = malloc((batch + 1) * sizeof *e.start);
    if (e.work == NULL)
        goto fail;
    if (!e.ids || !e.labels || !e.kind_labels || !e.types || !e.kinds || !e.start) {
        bert_error_set(&err, BERT_E_NOMEM, "out of memory");
        goto fail;
    }
    struct kind_score all = {0}, by_kind[4] = {{0}}, whole = {0};
    for (size_t first = 0; first < n_heldout; first += batch) {
        const size_t count = n_heldout - first < batch ? n_heldout - first : batch;
        size_t n_tokens = fill_batch(&e, &mask, seed, n_train, first, count, true);
        if (!score_batch(&e, count, n_tokens, e.labels, &all, &err))
            goto fail;
        for (int kind = TRAIN_MASK_MASKED; kind <= TRAIN_MASK_KEPT; kind++) {
            for (size_t t = 0; t < n_tokens; t++)
                e.kind_labels[t] = e.kinds[t] == kind ? e.labels[t] : TRAIN_LABEL_IGNORE;
            if (!score_batch(&e, count, n_tokens, e.kind_labels, &by_kind[kind], &err))
                goto fail;
        }
        n_tokens = fill_batch(&e, &mask, seed, n_train, first, count, false);
        if (!score_batch(&e, count, n_tokens, e.labels, &whole, &err))
            goto fail;
    }
    printf("mlm-eval: %zu held-out sequences of %zu, mask-prob %.2f, mix %.2f/%.2f/%.2f, %s "
           "masking, seed %llu\n",
           n_heldout, e.corpus.n_seqs, mask.mask_prob, mask.replace_mask, mask.replace_random,
           1.0 - mask.replace_mask - mask.replace_random, mask.whole_word ? "whole-word" : "token",
           (unsigned long long)seed);
    printf("positions   count  accuracy  loss\n");
    print_score("picked", &all);
    print_score("[MASK]", &by_kind[TRAIN_MASK_MASKED]);
    print_score("random", &by_kind[TRAIN_MASK_RANDOM]);
    print_score("kept", &by_kind[TRAIN_MASK_KEPT]);
    print_score("unmasked", &whole);
    rc = CLI_EXIT_OK;
    goto done;
fail:
    fprintf(stderr, "bert mlm-eval: %s\n", err.message);
done:
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
    return rc;
}
