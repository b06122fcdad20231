/* Helpers shared by the proto/ sources; not part of the contract. */
#ifndef PROTO_INTERNAL_H
#define PROTO_INTERNAL_H

#include <stddef.h>

#include "proto.h"

/* The route table's types and the functions its rows name: route_table.h. */

/* Length of the valid UTF-8 sequence at s (RFC 3629 and table 3-7 of the
 * Unicode standard: no overlongs, no surrogates, nothing past U+10FFFF), or
 * 0 when the bytes there are not one. */
static inline size_t proto_utf8_sequence_length(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (avail < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return n;
}

/* User text quoted for an error message: at most PROTO_QUOTE_MAX_CHARS
 * characters of it, then "..." when it was longer. */
#define PROTO_QUOTE_MAX_CHARS 64
#define PROTO_QUOTE_SIZE (PROTO_QUOTE_MAX_CHARS * 4 + 8)

/* Write `s` (`len` bytes, any content) into buf as "text" with '"' and '\\'
 * backslash-escaped, control characters and bytes of invalid UTF-8 as \xNN,
 * cut after PROTO_QUOTE_MAX_CHARS characters. Returns buf, for printf. */
const char *proto_quote(char buf[PROTO_QUOTE_SIZE], const char *s, size_t len);

/* Copy `len` bytes of src into dst (capacity cap, always NUL-terminated) with
 * control characters and invalid UTF-8 written as \xNN, so the result is one
 * valid UTF-8 line. Stops early when dst is full. */
void proto_sanitize(char *dst, size_t cap, const char *src, size_t len);

#endif
