/* The one UTF-8 codec of the project (RFC 3629; table 3-7 of the Unicode
 * standard): what counts as valid is the same for the tokenizer, the JSON
 * writer and error quoting, and the TOML reader. Valid means no overlong
 * forms, no UTF-16 surrogates (ED A0..BF) and nothing above U+10FFFF, as
 * Rust's str (so Hugging Face's tokenizers) has it.
 *
 * Pure functions, no state: any thread may call them. */
#ifndef BERT_UTF8_H
#define BERT_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The length a sequence starting with lead byte `c` has (1 for ASCII, 0
 * when `c` cannot start one: a continuation byte, C0/C1 overlong leads,
 * F5..FF), and the range its second byte must be in. Internal to the
 * functions below. */
static inline size_t utf8__lead(uint8_t c, uint8_t *lo, uint8_t *hi)
{
    *lo = 0x80;
    *hi = 0xBF;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return 2;
    if (c >= 0xE0 && c <= 0xEF) {
        if (c == 0xE0)
            *lo = 0xA0; /* overlong */
        else if (c == 0xED)
            *hi = 0x9F; /* UTF-16 surrogates */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (c == 0xF0)
            *lo = 0x90; /* overlong */
        else if (c == 0xF4)
            *hi = 0x8F; /* above U+10FFFF */
        return 4;
    }
    return 0;
}

/* Byte length of the valid UTF-8 character at s (`avail` bytes readable,
 * at least 1), or 0 when the bytes there are not one. */
static inline size_t utf8_sequence_length(const uint8_t *s, size_t avail)
{
    uint8_t lo, hi;
    size_t n = utf8__lead(s[0], &lo, &hi);
    if (n <= 1)
        return n;
    if (avail < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* Where utf8_sequence_length is 0: the byte length of the maximal subpart
 * at s (the longest start of a well-formed sequence, at least 1 byte), which
 * a lossy decoder replaces by one U+FFFD (Unicode 3.9, "substitution of
 * maximal subparts", as Rust's String::from_utf8_lossy). */
size_t utf8_invalid_length(const uint8_t *s, size_t avail);

/* Length of the valid UTF-8 prefix of s[0, len): equal to len when the whole
 * input is valid. */
size_t utf8_valid_prefix(const uint8_t *s, size_t len);

/* Decode the character at `p`, which must be valid UTF-8 (checked before
 * with utf8_valid_prefix); sets *len to its byte length. */
static inline uint32_t utf8_decode(const uint8_t *p, size_t *len)
{
    uint8_t b = p[0];
    if (b < 0x80) {
        *len = 1;
        return b;
    }
    if (b < 0xE0) {
        *len = 2;
        return ((uint32_t)(b & 0x1F) << 6) | (p[1] & 0x3F);
    }
    if (b < 0xF0) {
        *len = 3;
        return ((uint32_t)(b & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    }
    *len = 4;
    return ((uint32_t)(b & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) |
           ((uint32_t)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
}

/* Encode the scalar value `c` (at most U+10FFFF, not a surrogate) to `out`
 * (4 bytes of room); returns the byte count. */
static inline size_t utf8_encode(uint32_t c, uint8_t *out)
{
    if (c < 0x80) {
        out[0] = (uint8_t)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (uint8_t)(0xC0 | (c >> 6));
        out[1] = (uint8_t)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (uint8_t)(0xE0 | (c >> 12));
        out[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | (c >> 18));
    out[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (c & 0x3F));
    return 4;
}

#endif
