/* The Unigram language-model tokenizer (Kudo 2018) as Hugging Face's Unigram
 * model runs it (tokenizers/src/models/unigram/model.rs, encode_optimized):
 * a Viterbi pass over every vocabulary piece that starts at each character,
 * keeping the best-scoring segmentation (the first found on ties), an
 * unknown character costing the lowest score minus 10, consecutive unknown
 * characters fused into one token, byte_fallback to <0xXX> pieces.
 *
 * Read-only after loading; encode uses caller scratch only. */
#ifndef BERT_TOK_UNIGRAM_H
#define BERT_TOK_UNIGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "normalize.h"
#include "tokens.h"
#include "vocab.h"

struct tok_unigram {
    struct tok_vocab vocab; /* piece -> id (a later duplicate wins) */
    double *scores;         /* (n) by id */
    char *arena;            /* pieces by id, NUL-terminated */
    uint32_t *piece_off;    /* (n) */
    size_t n, arena_len, arena_cap;
    double min_score;
    int32_t unk_id;
    bool byte_fallback;
    int32_t byte_ids[256];
};

/* Append piece number n (its id) with its score. False when out of memory. */
bool tok_unigram_push(struct tok_unigram *u, const char *piece, size_t len, double score);

/* Build the lookup structures after the last push. False when out of memory. */
bool tok_unigram_finish(struct tok_unigram *u);

/* The piece of `id`, or NULL. */
const char *tok_unigram_piece(const struct tok_unigram *u, int32_t id);

struct tok_unigram_work {
    struct tok_buf best, path;
};

/* Tokenize w[from, to) and append the tokens. False when out of memory. */
bool tok_unigram_encode(const struct tok_unigram *u, const struct tok_normalized *w, size_t from,
                        size_t to, struct tok_unigram_work *work, struct tok_tokens *out);

void tok_unigram_free(struct tok_unigram *u);

#endif
