#include "bytelevel.h"

#include <string.h>
#include <utf8proc.h>

#include "xform.h"
#include "unicode.h"
#include "utf8.h"

/* The pattern's three classes. \s is White_Space (Oniguruma's Unicode
 * space), \p{L} and \p{N} the general categories. */
enum cls { CLS_SPACE, CLS_LETTER, CLS_NUMBER, CLS_OTHER };

static enum cls classify(uint32_t c)
{
    if (c < 0x80) {
        if ((c | 32) >= 'a' && (c | 32) <= 'z')
            return CLS_LETTER;
        if (c >= '0' && c <= '9')
            return CLS_NUMBER;
        return c == ' ' || (c >= '\t' && c <= '\r') ? CLS_SPACE : CLS_OTHER;
    }
    if (tok_unicode_is_whitespace(c))
        return CLS_SPACE;
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
        return CLS_LETTER;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
        return CLS_NUMBER;
    default:
        return CLS_OTHER;
    }
}

static enum cls class_at(const uint8_t *s, size_t i, size_t *len)
{
    return classify(utf8_decode(s + i, len));
}

/* End of the run of class `k` starting at i. */
static size_t run_end(const uint8_t *s, size_t i, size_t len, enum cls k)
{
    size_t cl;
    while (i < len && class_at(s, i, &cl) == k)
        i += cl;
    return i;
}

size_t tok_bytelevel_next(const uint8_t *s, size_t i, size_t len)
{
    if (s[i] == '\'' && i + 1 < len) {
        static const char *const contractions[] = {"s", "t", "re", "ve", "m", "ll", "d"};
        for (size_t k = 0; k < 7; k++) {
            size_t n = strlen(contractions[k]);
            if (n <= len - i - 1 && memcmp(s + i + 1, contractions[k], n) == 0)
                return i + 1 + n;
        }
    }
    size_t cl;
    enum cls k = class_at(s, i, &cl);
    /* " ?X+" for the letter, number and other classes. */
    if (s[i] == ' ' && i + 1 < len) {
        size_t nl;
        enum cls next = class_at(s, i + 1, &nl);
        if (next != CLS_SPACE)
            return run_end(s, i + 1, len, next);
    }
    if (k != CLS_SPACE)
        return run_end(s, i, len, k);
    /* \s+(?!\S): the run of spaces, less its last character when something
     * follows; \s+ when that leaves nothing. */
    size_t end = run_end(s, i, len, CLS_SPACE);
    if (end == len)
        return end;
    size_t last = end - 1;
    while (last > i && (s[last] & 0xC0) == 0x80)
        last--;
    return last > i ? last : end;
}

/* GPT-2's byte-to-character table: printable Latin-1 bytes stand for
 * themselves, the other 68 bytes (0x00-0x20, 0x7F-0xA0, 0xAD) become U+0100..
 * in byte order. */
uint32_t tok_bytelevel_char(uint8_t b)
{
    if (b <= 0x20)
        return 256 + b;
    if (b >= 0x7F && b <= 0xA0)
        return 256 + 33 + (b - 0x7F);
    return b == 0xAD ? 256 + 67 : b;
}

int tok_bytelevel_byte(uint32_t c)
{
    if ((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF))
        return (int)c;
    if (c < 256 || c > 256 + 67)
        return -1;
    uint32_t n = c - 256;
    return n <= 32 ? (int)n : n <= 66 ? (int)(0x7F + n - 33) : 0xAD;
}

bool tok_bytelevel_map(const struct tok_normalized *src, size_t from, size_t to,
                       struct tok_normalized *dst)
{
    size_t need = 2 * (to - from);
    dst->len = 0;
    if (!tok_normalized_reserve(dst, need))
        return false;
    const uint8_t *s = src->bytes.data;
    const uint32_t *as = src->al_start.data, *ae = src->al_end.data;
    uint8_t *d = dst->bytes.data;
    uint32_t *ds = dst->al_start.data, *de = dst->al_end.data;
    size_t o = 0;
    for (size_t i = from; i < to; i++) {
        size_t n = utf8_encode(tok_bytelevel_char(s[i]), d + o);
        for (size_t k = 0; k < n; k++) {
            ds[o + k] = as[i];
            de[o + k] = ae[i];
        }
        o += n;
    }
    dst->len = o;
    return true;
}

static bool is_trim_space(uint32_t c)
{
    return c == 0x120 || tok_unicode_is_whitespace(c);
}

void tok_bytelevel_trim(const char *token, bool first, bool add_prefix_space, uint32_t *start,
                        uint32_t *stop)
{
    const uint8_t *t = (const uint8_t *)token;
    size_t len = strlen(token), cl;
    uint32_t leading = 0, trailing = 0;
    for (size_t i = 0; i < len && is_trim_space(utf8_decode(t + i, &cl)); i += cl)
        leading++;
    for (size_t end = len; end > 0;) {
        size_t p = end - 1;
        while (p > 0 && (t[p] & 0xC0) == 0x80)
            p--;
        if (!is_trim_space(utf8_decode(t + p, &cl)))
            break;
        trailing++;
        end = p;
    }
    if (leading > 0) {
        if ((first || *start == 0) && add_prefix_space && leading == 1)
            leading = 0;
        *start = *start + leading < *stop ? *start + leading : *stop;
    }
    if (trailing > 0 && *stop >= trailing)
        *stop = *stop - trailing > *start ? *stop - trailing : *start;
}
