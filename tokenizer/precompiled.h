/* SentencePiece's precompiled normalizer (the "Precompiled" normalizer of
 * tokenizer.json, XLM-R, T5, ALBERT): a base64 blob holding a Darts double
 * array trie of byte keys whose leaves point into a table of NUL-terminated
 * replacement strings (sentencepiece normalizer.cc; Hugging Face's
 * spm_precompiled crate reads the same format).
 *
 * Layout: u32 LE trie size in bytes, then that many bytes of u32 LE units,
 * then the replacement strings. A unit holds label (bits 0-7), has_leaf
 * (bit 8), an offset (bits 10-30, shifted left by 8 more when bit 9 is set)
 * and, for leaves, is_leaf (bit 31) with the value in bits 0-30. The child of
 * the node at p for byte c is at p ^ offset(p) ^ c; its leaf at
 * p ^ offset(p).
 *
 * Every index read from the blob is bounds-checked: a corrupt table gives no
 * replacement rather than a crash. Read-only after loading. */
#ifndef BERT_TOK_PRECOMPILED_H
#define BERT_TOK_PRECOMPILED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "normalize.h"
#include "buf.h"

struct tok_precompiled {
    uint32_t *units; /* (n_units) */
    size_t n_units;
    char *strings; /* replacement strings, NUL-terminated each */
    size_t strings_len;
};

/* Decode base64 `b64` (len bytes) and check the layout. On failure returns
 * false with a static reason in *why. */
bool tok_precompiled_load(struct tok_precompiled *p, const char *b64, size_t len,
                          const char **why);

void tok_precompiled_free(struct tok_precompiled *p);

/* The replacement for `key` as the reference looks it up (the value of the
 * shortest key that is a prefix of `key`; the search stops at a NUL byte).
 * Returns false when there is none. */
bool tok_precompiled_lookup(const struct tok_precompiled *p, const uint8_t *key, size_t len,
                            const char **out, size_t *out_len);

/* Normalize `src` into `dst` as tokenizers' Precompiled normalizer does: per
 * extended grapheme cluster shorter than 6 bytes, the whole cluster if it has
 * a replacement, otherwise character by character. `work` is scratch. False
 * when out of memory. */
bool tok_precompiled_normalize(const struct tok_precompiled *p, const struct tok_normalized *src,
                               struct tok_normalized *dst, uint32_t origin, struct tok_buf *work);

#endif
