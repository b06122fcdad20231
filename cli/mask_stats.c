/* `bert mask-stats`: run the masked-LM corruption over a corpus and print
 * the measured distribution, so the rule can be checked on real text. */
#include <stdio.h>
#include <stdlib.h>

#include "args.h"
#include "cli.h"
#include "train_data.h"
#include "train_mask.h"

int cli_mask_stats_command(int argc, char **argv)
{
    const char *tok_dir = NULL, *corpus = NULL;
    size_t max_tokens = 1000000, max_len = 128;
    uint64_t seed = 0;
    double mask_prob = 0.15;
    bool whole_word = false;
    struct cli_opt opts[] = {
        {"tokenizer", CLI_OPT_STRING, &tok_dir, "tokenizer folder (required)"},
        {"corpus", CLI_OPT_STRING, &corpus, "text file, one passage per line (required)"},
        {"tokens", CLI_OPT_SIZE, &max_tokens, "stop after this many tokens (1000000)"},
        {"max-len", CLI_OPT_SIZE, &max_len, "sequence length, specials included (128)"},
        {"mask-prob", CLI_OPT_DOUBLE, &mask_prob, "probability a token is picked (0.15)"},
        {"whole-word", CLI_OPT_FLAG, &whole_word, "pick all pieces of a word together"},
        {"seed", CLI_OPT_U64, &seed, "random seed (0)"},
    };
    const size_t n_opts = sizeof opts / sizeof opts[0];
    if (!cli_parse("mask-stats", argc, argv, opts, n_opts))
        return CLI_EXIT_USAGE;
    if (tok_dir == NULL || corpus == NULL || !(mask_prob >= 0 && mask_prob <= 1)) {
        fprintf(stderr, "usage: bert mask-stats --tokenizer DIR --corpus FILE [options]\n");
        cli_print_options(opts, n_opts);
        return CLI_EXIT_USAGE;
    }
    struct bert_error err = {0};
    struct bert_tokenizer *tok = NULL;
    struct train_vocab vocab = {0};
    struct train_corpus data = {0};
    int32_t *ids = malloc(max_len * sizeof *ids), *labels = malloc(max_len * sizeof *labels);
    uint8_t *kinds = malloc(max_len);
    int rc = CLI_EXIT_FAILURE;
    if (ids == NULL || labels == NULL || kinds == NULL) {
        fprintf(stderr, "bert mask-stats: out of memory\n");
        goto out;
    }
    if (bert_tokenizer_load(tok_dir, &tok, &err) != BERT_OK ||
        train_vocab_init(&vocab, tok, &err) != BERT_OK ||
        train_corpus_load(&data, tok, &corpus, 1, max_len, &err) != BERT_OK) {
        fprintf(stderr, "bert mask-stats: %s\n", err.message);
        goto out;
    }
    struct train_mask_options o = train_mask_options_default();
    o.mask_prob = mask_prob;
    o.whole_word = whole_word;
    struct train_rng rng = {seed};
    size_t eligible = 0, specials = 0, counts[4] = {0}, words = 0, split = 0;
    for (size_t s = 0; s < data.n_seqs && eligible < max_tokens; s++) {
        size_t n = train_corpus_sequence(&data, s, ids);
        int32_t orig_prev = -1;
        bool prev_picked = false;
        for (size_t t = 0; t < n; t++)
            labels[t] = ids[t];
        train_mask_sequence(&vocab, &o, &rng, ids, n, labels, kinds);
        for (size_t t = 0; t < n; t++) {
            int32_t orig = kinds[t] == TRAIN_MASK_NONE ? ids[t] : labels[t];
            bool picked = kinds[t] != TRAIN_MASK_NONE;
            if (vocab.never_pick[orig]) {
                specials++;
                split += picked; /* counted as an error below */
            } else {
                eligible++;
                counts[kinds[t]]++;
                bool continues = orig_prev >= 0 && !vocab.never_pick[orig_prev] &&
                                 vocab.continuation[orig];
                words += !continues;
                split += continues && picked != prev_picked;
            }
            orig_prev = orig;
            prev_picked = picked;
        }
    }
    size_t picked = counts[1] + counts[2] + counts[3];
    double p = picked ? (double)picked : 1.0;
    printf("tokens %zu (words %zu, specials %zu)\n", eligible, words, specials);
    printf("picked %.4f (%zu)\n", eligible ? (double)picked / (double)eligible : 0.0, picked);
    printf("of picked: [MASK] %.4f  random %.4f  kept %.4f\n", (double)counts[1] / p,
           (double)counts[2] / p, (double)counts[3] / p);
    printf("words split by %s masking: %zu\n", whole_word ? "whole-word" : "token", split);
    rc = CLI_EXIT_OK;
out:
    free(ids);
    free(labels);
    free(kinds);
    train_corpus_free(&data);
    train_vocab_free(&vocab);
    bert_tokenizer_free(tok);
    return rc;
}
