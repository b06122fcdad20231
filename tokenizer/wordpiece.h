/* BertPreTokenizer + WordPiece over normalized text.
 *
 * Pre-tokenization splits on whitespace (dropped) and isolates each
 * punctuation character. Each word then becomes its greedy longest-match
 * pieces ("un", "##aff", "##able"), or the unknown token when it is longer
 * than max_input_chars_per_word characters or cannot be covered, as in
 * Hugging Face `tokenizers` (Schuster & Nakajima 2012; Devlin et al. 2018). */
#ifndef BERT_TOK_WORDPIECE_H
#define BERT_TOK_WORDPIECE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "normalize.h"
#include "tokens.h"
#include "vocab.h"

struct tok_wordpiece {
    struct tok_vocab vocab;
    char *unk_token;
    int32_t unk_id;
    char *prefix; /* continuing_subword_prefix, "##" */
    size_t prefix_len;
    uint64_t prefix_hash; /* incremental hash state after the prefix bytes */
    size_t max_input_chars_per_word;
};

/* Tokenize norm[from, to): split into words when `bert_pretokenize`,
 * otherwise the whole range is one word. Appends to `out` with original
 * offsets taken from the alignments. `word` is scratch space. False when out
 * of memory. */
bool tok_wordpiece_encode(const struct tok_wordpiece *wp, bool bert_pretokenize,
                          const struct tok_normalized *norm, size_t from, size_t to,
                          struct tok_buf *word, struct tok_tokens *out);

void tok_wordpiece_free(struct tok_wordpiece *wp);

#endif
