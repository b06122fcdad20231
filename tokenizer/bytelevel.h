/* GPT-2's byte-level pre-tokenization (RoBERTa, GPT-2, ModernBERT), as
 * tokenizers/src/pre_tokenizers/byte_level.rs does it: an optional leading
 * space, the split by GPT-2's pattern
 *
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *
 * (Radford et al. 2019), then every byte mapped to a printable character
 * ("Ġ" for ' '), each keeping the alignment of the character it came from.
 * Also the offset trimming of its post-processor and its decoder. */
#ifndef BERT_TOK_BYTELEVEL_H
#define BERT_TOK_BYTELEVEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "normalize.h"

/* End of the pattern's match starting at s + i (i < len): every position
 * matches one of the alternatives, so the pieces tile the text. */
size_t tok_bytelevel_next(const uint8_t *s, size_t i, size_t len);

/* Write the byte-level form of src[from, to) into `dst` (emptied). False
 * when out of memory. */
bool tok_bytelevel_map(const struct tok_normalized *src, size_t from, size_t to,
                       struct tok_normalized *dst);

/* The character a byte becomes (U+0021..U+0143). */
uint32_t tok_bytelevel_char(uint8_t b);

/* The byte a byte-level character stands for, or -1. */
int tok_bytelevel_byte(uint32_t c);

/* ByteLevel/RobertaProcessing trim_offsets for one token: shrink [*start,
 * *stop) by the token string's leading and trailing spaces ("Ġ" or Unicode
 * whitespace), keeping one leading space on the sequence's first token when
 * add_prefix_space put it there. */
void tok_bytelevel_trim(const char *token, bool first, bool add_prefix_space, uint32_t *start,
                        uint32_t *stop);

#endif
