/* SentencePiece-style word boundaries (XLM-R, T5): the Metaspace
 * pre-tokenizer and decoder of tokenizers/src/pre_tokenizers/metaspace.rs.
 * Spaces become the replacement character ("▁", U+2581), which is prepended
 * to the text per `prepend`, and the text splits before each replacement
 * character (Kudo & Richardson 2018, sec. 3.1). */
#ifndef BERT_TOK_METASPACE_H
#define BERT_TOK_METASPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "normalize.h"

enum tok_prepend_scheme {
    TOK_PREPEND_ALWAYS, /* every piece of text between added tokens */
    TOK_PREPEND_FIRST,  /* only a piece that starts the input */
    TOK_PREPEND_NEVER,
};

struct tok_metaspace {
    uint32_t replacement;
    char replacement_utf8[5];
    size_t replacement_len;
    enum tok_prepend_scheme prepend;
    bool split;
};

/* Write the Metaspace form of src[from, to) into `dst` (emptied): spaces
 * replaced, the replacement prepended (it and the first character share
 * that character's alignment) when the scheme asks and `starts_input`
 * says the piece begins the input. False when out of memory. */
bool tok_metaspace_map(const struct tok_metaspace *m, const struct tok_normalized *src,
                       size_t from, size_t to, bool starts_input, struct tok_normalized *dst);

/* End of the word starting at s + i: up to the next replacement character
 * (a word starts with the one it follows), or the end when `split` is off. */
size_t tok_metaspace_next(const struct tok_metaspace *m, const uint8_t *s, size_t i, size_t len);

#endif
