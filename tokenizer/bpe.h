/* Byte-pair encoding (Sennrich et al. 2016) exactly as Hugging Face's BPE
 * model applies it (tokenizers/src/models/bpe): a word's characters (with
 * continuing_subword_prefix / end_of_word_suffix, unknown ones as the unk
 * token, fused or not, or as <0xXX> bytes with byte_fallback) are merged
 * pair by pair, always the pair of lowest merge rank first and the leftmost
 * among equals, through a binary heap: O(n log n) in the word length.
 *
 * Read-only after loading; encode uses caller scratch only. */
#ifndef BERT_TOK_BPE_H
#define BERT_TOK_BPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "normalize.h"
#include "tokens.h"
#include "vocab.h"

struct tok_bpe_merge {
    uint64_t pair; /* left id << 32 | right id; UINT64_MAX: empty slot */
    uint32_t rank;
    int32_t new_id;
};

struct tok_bpe {
    struct tok_vocab vocab;
    struct tok_bpe_merge *merges; /* open addressing */
    size_t merges_mask;
    size_t n_merges;
    char *unk_token; /* NULL: unknown characters are dropped */
    int32_t unk_id;
    char *prefix, *suffix; /* NULL when unset */
    size_t prefix_len, suffix_len;
    bool fuse_unk, byte_fallback, ignore_merges;
    int32_t byte_ids[256]; /* <0xXX> tokens, -1 when absent */
};

/* Add merge number `rank` of tokens a and b (strings). A later duplicate
 * pair replaces an earlier one, as in the reference's map. Returns 0 on
 * success, 1 when a token or their concatenation is not in the vocabulary,
 * 2 when out of memory. */
int tok_bpe_add_merge(struct tok_bpe *bpe, const char *a, size_t a_len, const char *b,
                      size_t b_len, uint32_t rank);

/* Resolve the unk and byte-fallback ids after the vocabulary is built.
 * False when the unk token is set but not in the vocabulary. */
bool tok_bpe_finish(struct tok_bpe *bpe);

/* Scratch of one encode call. */
struct tok_bpe_work {
    struct tok_buf symbols, heap, key;
};

/* Tokenize the word w[from, to) (one pre-tokenized piece) and append its
 * tokens, with original offsets from w's alignments and the first/last
 * word flags. False when out of memory. */
bool tok_bpe_encode(const struct tok_bpe *bpe, const struct tok_normalized *w, size_t from,
                    size_t to, struct tok_bpe_work *work, struct tok_tokens *out);

void tok_bpe_free(struct tok_bpe *bpe);

#endif
