/* Hugging Face's NormalizedString::transform with alignment tracking, for the
 * normalizers and pre-tokenizers beyond BERT's.
 *
 * A transformation rewrites a normalized string as a stream of (char,
 * change): change 0 replaces the next source character, a negative change
 * also removes that many following characters, a positive change inserts
 * the character. A replacing character takes the alignment (original byte
 * span) of the source character it replaces; an inserted one takes that of
 * the source byte just before the read position, or an empty span at the
 * segment's origin when nothing precedes it. This is what makes offsets
 * after NFKC, Precompiled or Metaspace equal to the reference's
 * (tokenizers/src/tokenizer/normalizer.rs, transform_range). */
#ifndef BERT_TOK_XFORM_H
#define BERT_TOK_XFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "normalize.h"

struct tok_xform {
    const struct tok_normalized *src;
    struct tok_normalized *dst;
    size_t offset;   /* next unread byte of src */
    uint32_t origin; /* original offset of the segment start */
    bool ok;         /* false once an allocation failed */
};

/* Start writing `dst` (emptied) from `src`. */
void tok_xform_begin(struct tok_xform *x, const struct tok_normalized *src,
                     struct tok_normalized *dst, uint32_t origin);

/* Consume `n` source characters without output (transform's initial_offset). */
void tok_xform_skip(struct tok_xform *x, size_t n);

/* Emit `c` with the given change. */
void tok_xform_emit(struct tok_xform *x, uint32_t c, long change);

/* Append src[from, to) unchanged (change 0 for each character). */
void tok_xform_copy(struct tok_xform *x, size_t from, size_t to);

/* Replace `out` with text[start, end) (valid UTF-8), each byte aligned to its
 * character. False when out of memory. */
bool tok_normalized_identity(const uint8_t *text, size_t start, size_t end,
                             struct tok_normalized *out);

/* Make room for `extra` more bytes (and their alignments) after n->len.
 * False when out of memory. */
bool tok_normalized_reserve(struct tok_normalized *n, size_t extra);

/* Swap two normalized strings (their buffers included). */
void tok_normalized_swap(struct tok_normalized *a, struct tok_normalized *b);

/* Release the buffers of `n`. */
void tok_normalized_release(struct tok_normalized *n);

#endif
