/* UTF-8 decoding, encoding and validation for the tokenizer. */
#ifndef BERT_TOK_UTF8_H
#define BERT_TOK_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decode the character at `p` (valid UTF-8); sets *len to its byte length. */
static inline uint32_t tok_utf8_decode(const uint8_t *p, size_t *len)
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

/* Encode `c` to `out` (4 bytes of room); returns the byte count. */
static inline size_t tok_utf8_encode(uint32_t c, uint8_t *out)
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

/* Length of the valid UTF-8 prefix of s[0, len): equal to len when the whole
 * input is valid. Rejects overlong forms, surrogates (ED A0..BF) and code
 * points above U+10FFFF, as Rust's str does. */
size_t tok_utf8_valid_prefix(const uint8_t *s, size_t len);

#endif
