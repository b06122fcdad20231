/* Character properties exactly as Hugging Face `tokenizers` sees them.
 *
 * The data comes from libutf8proc (Unicode 15). The Rust reference is not
 * uniform in its Unicode version: BertNormalizer and BertPreTokenizer ask the
 * `unicode_categories` crate (Unicode 8-era tables) for control, punctuation
 * and non-spacing marks, NFD comes from `unicode-normalization-alignments`,
 * and lowercasing from Rust's std (Unicode 16). The few hundred code points
 * where those disagree with utf8proc are listed in unicode_skew.c, a
 * table generated from the reference itself (tests/tokenizer/README.md).
 *
 * All functions are pure and thread-safe. */
#ifndef BERT_TOK_UNICODE_H
#define BERT_TOK_UNICODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest output of tok_unicode_strip_accents / tok_unicode_lowercase. */
#define TOK_UNICODE_MAX_EXPANSION 8

/* BertNormalizer clean_text drops the character: NUL, U+FFFD, and the
 * "other" categories (Cc, Cf, Co; Cs cannot occur in valid UTF-8) except
 * tab, newline and carriage return. Unassigned code points are kept. */
bool tok_unicode_is_removed_by_clean(uint32_t c);

/* Rust's char::is_whitespace (the White_Space property). BertNormalizer
 * clean_text maps these to ' ' and BertPreTokenizer splits on them. */
bool tok_unicode_is_whitespace(uint32_t c);

/* BertPreTokenizer isolates these: ASCII punctuation ('$', '+', '^', '`'
 * included) and general categories P*. */
bool tok_unicode_is_punctuation(uint32_t c);

/* BERT's "Chinese character": the CJK Unified Ideographs blocks, their
 * extensions A-E and the compatibility ideographs, as `tokenizers` lists
 * them (supplementary planes included). */
bool tok_unicode_is_chinese(uint32_t c);

/* strip_accents for one character: its NFD decomposition without the
 * non-spacing marks (Mn). Writes 0..TOK_UNICODE_MAX_EXPANSION code points to
 * `out` and returns how many. */
size_t tok_unicode_strip_accents(uint32_t c, uint32_t *out);

/* Rust's char::to_lowercase: the full lowercase mapping without the
 * context-dependent rules (so final sigma is not applied). Writes 1 or 2
 * code points to `out` and returns how many. */
size_t tok_unicode_lowercase(uint32_t c, uint32_t *out);

/* The regex crate's \w (used by single_word added tokens): letters, marks,
 * decimal digits, connector punctuation and the joiners U+200C/U+200D. */
bool tok_unicode_is_word(uint32_t c);

/* The reference's view where it departs from utf8proc (generated). */
enum tok_skew_kind {
    TOK_SKEW_NOT_CONTROL = 1, /* utf8proc says Cf, the reference keeps it */
    TOK_SKEW_PUNCT,           /* punctuation for the reference only */
    TOK_SKEW_NOT_PUNCT,       /* punctuation for utf8proc only */
    TOK_SKEW_MARK,            /* Mn for the reference only */
    TOK_SKEW_NOT_MARK,        /* Mn for utf8proc only */
    TOK_SKEW_NO_DECOMPOSE,    /* the reference has no NFD decomposition */
};

struct tok_skew_range {
    uint32_t first, last; /* inclusive */
    uint8_t kind;         /* enum tok_skew_kind */
};

struct tok_skew_lower {
    uint32_t c, lower; /* lowercase mappings newer than utf8proc's data */
};

extern const struct tok_skew_range tok_skew_ranges[]; /* sorted by `first` */
extern const size_t tok_skew_ranges_len;
extern const struct tok_skew_lower tok_skew_lowers[]; /* sorted by `c` */
extern const size_t tok_skew_lowers_len;

#endif
