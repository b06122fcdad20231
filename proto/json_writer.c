#include "json_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_internal.h"

__extension__ typedef unsigned __int128 u128;

void json_writer_init(struct json_writer *w, size_t reserve)
{
    memset(w, 0, sizeof *w);
    if (reserve) {
        w->buf = malloc(reserve);
        if (w->buf == NULL)
            w->nomem = true;
        else
            w->cap = reserve;
    }
}

void json_writer_free(struct json_writer *w)
{
    if (w == NULL)
        return;
    free(w->buf);
    w->buf = NULL;
    w->len = w->cap = 0;
}

bool json_writer_ok(const struct json_writer *w)
{
    return !w->nomem && !w->nonfinite;
}

char *json_writer_finish(struct json_writer *w, size_t *len)
{
    if (!json_writer_ok(w) || w->buf == NULL) {
        json_writer_free(w);
        return NULL;
    }
    char *out = w->buf;
    out[w->len] = '\0'; /* reserve() always keeps one byte for it */
    if (len)
        *len = w->len;
    w->buf = NULL;
    w->len = w->cap = 0;
    return out;
}

/* Make room for `n` more bytes plus the final NUL; false once poisoned. */
static bool reserve(struct json_writer *w, size_t n)
{
    if (!json_writer_ok(w))
        return false;
    if (w->cap - w->len > n)
        return true;
    if (n > SIZE_MAX / 4 - w->len) {
        w->nomem = true;
        return false;
    }
    size_t need = w->len + n + 1;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = realloc(w->buf, cap);
    if (p == NULL) {
        w->nomem = true;
        return false;
    }
    w->buf = p;
    w->cap = cap;
    return true;
}

/* The comma before a value, unless it is the first at its depth or follows
 * a key. The caller has reserved one byte for it. */
static void put_separator(struct json_writer *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (w->depth == 0)
        return;
    if (w->has_value[w->depth - 1])
        w->buf[w->len++] = ',';
    else
        w->has_value[w->depth - 1] = true;
}

static void open_container(struct json_writer *w, char c)
{
    if (!reserve(w, 2))
        return;
    if (w->depth == JSON_WRITER_MAX_DEPTH) {
        w->nomem = true; /* too deep: a renderer bug, fail the body */
        return;
    }
    put_separator(w);
    w->buf[w->len++] = c;
    w->has_value[w->depth++] = false;
}

static void close_container(struct json_writer *w, char c)
{
    if (!reserve(w, 1) || w->depth == 0)
        return;
    w->depth--;
    w->buf[w->len++] = c;
}

void json_writer_begin_object(struct json_writer *w) { open_container(w, '{'); }
void json_writer_end_object(struct json_writer *w) { close_container(w, '}'); }
void json_writer_begin_array(struct json_writer *w) { open_container(w, '['); }
void json_writer_end_array(struct json_writer *w) { close_container(w, ']'); }

static const char hex_digits[] = "0123456789abcdef";

static void put_quoted(struct json_writer *w, const char *str, size_t len)
{
    /* Worst case every byte becomes \u00XX (6 bytes). */
    if (len > (SIZE_MAX / 4) / 6) {
        w->nomem = true;
        return;
    }
    if (!reserve(w, len * 6 + 3))
        return;
    const unsigned char *s = (const unsigned char *)str;
    char *o = w->buf + w->len;
    *o++ = '"';
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            *o++ = (char)c;
            i++;
            continue;
        }
        if (c < 0x80) {
            *o++ = '\\';
            switch (c) {
            case '"': *o++ = '"'; break;
            case '\\': *o++ = '\\'; break;
            case '\n': *o++ = 'n'; break;
            case '\r': *o++ = 'r'; break;
            case '\t': *o++ = 't'; break;
            case '\b': *o++ = 'b'; break;
            case '\f': *o++ = 'f'; break;
            default:
                memcpy(o, "u00", 3);
                o[3] = hex_digits[c >> 4];
                o[4] = hex_digits[c & 15];
                o += 5;
            }
            i++;
            continue;
        }
        size_t n = utf8_sequence_length(s + i, len - i);
        if (n == 0) {
            memcpy(o, "\xEF\xBF\xBD", 3); /* U+FFFD REPLACEMENT CHARACTER */
            o += 3;
            i++;
        } else if (n == 3 && c == 0xE2 && s[i + 1] == 0x80 && (s[i + 2] & 0xFE) == 0xA8) {
            /* U+2028/U+2029 are legal in JSON but end a line in JavaScript. */
            memcpy(o, s[i + 2] == 0xA8 ? "\\u2028" : "\\u2029", 6);
            o += 6;
            i += 3;
        } else {
            memcpy(o, s + i, n);
            o += n;
            i += n;
        }
    }
    *o++ = '"';
    w->len = (size_t)(o - w->buf);
}

void json_writer_key(struct json_writer *w, const char *key)
{
    if (!reserve(w, 2))
        return;
    put_separator(w);
    put_quoted(w, key, strlen(key));
    if (!reserve(w, 1))
        return;
    w->buf[w->len++] = ':';
    w->after_key = true;
}

void json_writer_string(struct json_writer *w, const char *s, size_t len)
{
    if (!reserve(w, 1))
        return;
    put_separator(w);
    put_quoted(w, s, len);
}

void json_writer_cstring(struct json_writer *w, const char *s)
{
    json_writer_string(w, s, strlen(s));
}

static void put_literal(struct json_writer *w, const char *text, size_t n)
{
    if (!reserve(w, n + 1))
        return;
    put_separator(w);
    memcpy(w->buf + w->len, text, n);
    w->len += n;
}

void json_writer_bool(struct json_writer *w, bool v)
{
    if (v)
        put_literal(w, "true", 4);
    else
        put_literal(w, "false", 5);
}

void json_writer_null(struct json_writer *w) { put_literal(w, "null", 4); }

/* Decimal digits of v into out (no NUL); returns the count. */
static size_t format_u64(uint64_t v, char *out)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

void json_writer_int(struct json_writer *w, int64_t v)
{
    char text[24];
    size_t n = 0;
    uint64_t mag = (uint64_t)v;
    if (v < 0) {
        text[n++] = '-';
        mag = 0 - mag;
    }
    n += format_u64(mag, text + n);
    put_literal(w, text, n);
}

/* --- float32 -> shortest decimal -------------------------------------
 *
 * A finite float v = m * 2^e is what strtof returns for every decimal
 * strictly inside the interval between the midpoints to its neighbours, and
 * for the midpoints themselves when m is even (round half to even). We find,
 * with exact integer arithmetic, the decimal D * 10^q in that interval with
 * the fewest digits and, among those, the one closest to v. This is the
 * specification of Steele & White (1990) / Adams' Ryu (2018); the method is
 * a direct one: scale the interval bounds by 10^-q0 for a q0 fine enough that
 * an integer fits (9 significant digits always do for float32), then drop
 * decimal digits while an integer still fits. */

/* 5^0 .. 5^27, the largest powers of five that fit in 64 bits. */
static const uint64_t pow5_table[28] = {
    1u, 5u, 25u, 125u,
    625u, 3125u, 15625u, 78125u,
    390625u, 1953125u, 9765625u, 48828125u,
    244140625u, 1220703125u, 6103515625u, 30517578125u,
    152587890625u, 762939453125u, 3814697265625u, 19073486328125u,
    95367431640625u, 476837158203125u, 2384185791015625u, 11920928955078125u,
    59604644775390625u, 298023223876953125u, 1490116119384765625u, 7450580596923828125u,
};

/* 5^p for 0 <= p <= 54 (float32 needs at most 5^53). */
static u128 pow5(int p)
{
    if (p <= 27)
        return pow5_table[p];
    return (u128)pow5_table[27] * pow5_table[p - 27];
}

static int bit_length(u128 v)
{
    uint64_t hi = (uint64_t)(v >> 64), lo = (uint64_t)v;
    if (hi)
        return 128 - __builtin_clzll(hi);
    return lo ? 64 - __builtin_clzll(lo) : 0;
}

/* floor(x * 2^e2 / 10^q) for 0 < x < 2^28, exactly; *exact says whether
 * there was no remainder. The callers choose q so the result is below
 * 10^11; intermediate products up to 2^192 are handled. */
static uint64_t scaled_floor(uint64_t x, int e2, int q, bool *exact)
{
    if (q >= 0) {
        u128 d5 = pow5(q);
        int s = e2 - q;
        if (s >= 0) {
            u128 n = (u128)x << s; /* s < 80 here: the result is small */
            *exact = n % d5 == 0;
            return (uint64_t)(n / d5);
        }
        if (bit_length(d5) - s > 127) { /* divisor beyond x: quotient 0 */
            *exact = false;
            return 0;
        }
        u128 d = d5 << -s;
        *exact = x % d == 0;
        return (uint64_t)(x / d);
    }
    u128 m5 = pow5(-q);
    int s = e2 - q;
    if (s >= 0) {
        *exact = true;
        return (uint64_t)(((u128)x * m5) << s);
    }
    /* x * 5^p can pass 2^128 for subnormals: form it in three words. */
    u128 a = (u128)x * (uint64_t)m5;
    u128 b = (u128)x * (uint64_t)(m5 >> 64);
    u128 mid = (a >> 64) + (uint64_t)b;
    uint64_t w0 = (uint64_t)a;
    u128 high = (((b >> 64) + (mid >> 64)) << 64) | (uint64_t)mid; /* words 2:1 */
    int t = -s;
    if (t < 64) {
        *exact = (w0 & ((UINT64_C(1) << t) - 1)) == 0;
        return (uint64_t)((high << (64 - t)) | (w0 >> t));
    }
    int u = t - 64;
    if (u >= 128) {
        *exact = false;
        return 0;
    }
    *exact = w0 == 0 && (u == 0 || (high & (((u128)1 << u) - 1)) == 0);
    return (uint64_t)(u ? high >> u : high);
}

static int floor_div(int64_t n, int64_t d)
{
    return (int)(n >= 0 ? n / d : -((-n + d - 1) / d));
}

size_t json_writer_format_float(float v, char *out)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint32_t biased = (bits >> 23) & 0xFF, frac = bits & 0x7FFFFF;
    char *o = out;
    if (biased == 0xFF) {
        out[0] = '\0';
        return 0;
    }
    if (bits >> 31)
        *o++ = '-';
    if (biased == 0 && frac == 0) {
        memcpy(o, "0.0", 4);
        return (size_t)(o - out) + 3;
    }
    uint64_t m = biased ? frac | (UINT32_C(1) << 23) : frac;
    int e = biased ? (int)biased - 150 : -149;
    bool even = (m & 1) == 0;

    /* Interval bounds in units of 2^(e-2); below a power of two the
     * neighbour is twice as close. */
    uint64_t lo4 = (frac == 0 && biased > 1) ? 4 * m - 1 : 4 * m - 2;
    uint64_t hi4 = 4 * m + 2;
    int e2 = e - 2;

    /* floor(log10 v), possibly one too small: 78913 / 2^18 ~ log10(2). */
    int log2v = 63 - __builtin_clzll(m) + e;
    int q = floor_div((int64_t)log2v * 78913, 1 << 18) - 8;

    bool exact;
    uint64_t lo = scaled_floor(lo4, e2, q, &exact);
    lo += (exact && even) ? 0 : 1; /* smallest acceptable integer */
    uint64_t hi = scaled_floor(hi4, e2, q, &exact);
    hi -= (exact && !even) ? 1 : 0; /* largest acceptable integer */
    for (;;) {
        uint64_t lo10 = (lo + 9) / 10, hi10 = hi / 10;
        if (lo10 > hi10)
            break;
        lo = lo10;
        hi = hi10;
        q++;
    }
    /* The closest acceptable integer to v / 10^q, from floor(2v / 10^q). */
    uint64_t twice = scaled_floor(4 * m, e2 + 1, q, &exact);
    uint64_t d = twice >> 1;
    if ((twice & 1) && (!exact || (d & 1)))
        d++;
    if (d < lo)
        d = lo;
    if (d > hi)
        d = hi;

    char digits[20];
    int nd = (int)format_u64(d, digits);
    int point = nd + q; /* v = 0.DIGITS * 10^point */

    /* Python's repr: positional for 1e-4 <= |v| < 1e16. */
    if (point > -4 && point <= 16) {
        if (point <= 0) {
            memcpy(o, "0.", 2);
            o += 2;
            memset(o, '0', (size_t)-point);
            o += -point;
            memcpy(o, digits, (size_t)nd);
            o += nd;
        } else if (point >= nd) {
            memcpy(o, digits, (size_t)nd);
            o += nd;
            memset(o, '0', (size_t)(point - nd));
            o += point - nd;
            memcpy(o, ".0", 2);
            o += 2;
        } else {
            memcpy(o, digits, (size_t)point);
            o += point;
            *o++ = '.';
            memcpy(o, digits + point, (size_t)(nd - point));
            o += nd - point;
        }
    } else {
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)(nd - 1));
            o += nd - 1;
        }
        int exp10 = point - 1;
        *o++ = 'e';
        *o++ = exp10 < 0 ? '-' : '+';
        if (exp10 < 0)
            exp10 = -exp10;
        if (exp10 < 10)
            *o++ = '0';
        o += format_u64((uint64_t)exp10, o);
    }
    *o = '\0';
    return (size_t)(o - out);
}

void json_writer_float(struct json_writer *w, float v)
{
    if (!reserve(w, JSON_WRITER_FLOAT_MAX + 1))
        return;
    put_separator(w);
    size_t n = json_writer_format_float(v, w->buf + w->len);
    if (n == 0)
        w->nonfinite = true;
    w->len += n;
}

void json_writer_float_array(struct json_writer *w, const float *v, size_t n)
{
    json_writer_begin_array(w);
    if (n > SIZE_MAX / (4 * JSON_WRITER_FLOAT_MAX)) {
        w->nomem = true;
        return;
    }
    if (!reserve(w, n * JSON_WRITER_FLOAT_MAX + 1))
        return;
    char *o = w->buf + w->len;
    for (size_t i = 0; i < n; i++) {
        if (i)
            *o++ = ',';
        size_t len = json_writer_format_float(v[i], o);
        if (len == 0) {
            w->nonfinite = true;
            return;
        }
        o += len;
    }
    w->len = (size_t)(o - w->buf);
    json_writer_end_array(w);
}

void json_writer_base64(struct json_writer *w, const void *data, size_t n)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (n > SIZE_MAX / 8) {
        w->nomem = true;
        return;
    }
    size_t out_len = (n + 2) / 3 * 4;
    if (!reserve(w, out_len + 3))
        return;
    put_separator(w);
    const unsigned char *s = data;
    char *o = w->buf + w->len;
    *o++ = '"';
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t g = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        o[0] = alphabet[g >> 18];
        o[1] = alphabet[(g >> 12) & 63];
        o[2] = alphabet[(g >> 6) & 63];
        o[3] = alphabet[g & 63];
        o += 4;
    }
    if (i < n) {
        uint32_t g = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);
        o[0] = alphabet[g >> 18];
        o[1] = alphabet[(g >> 12) & 63];
        o[2] = i + 1 < n ? alphabet[(g >> 6) & 63] : '=';
        o[3] = '=';
        o += 4;
    }
    *o++ = '"';
    w->len = (size_t)(o - w->buf);
}

void json_writer_json(struct json_writer *w, const json_t *v)
{
    const char *key;
    json_t *item;
    size_t i;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        json_writer_begin_object(w);
        json_object_foreach((json_t *)v, key, item) {
            json_writer_key(w, key);
            json_writer_json(w, item);
        }
        json_writer_end_object(w);
        break;
    case JSON_ARRAY:
        json_writer_begin_array(w);
        json_array_foreach(v, i, item)
            json_writer_json(w, item);
        json_writer_end_array(w);
        break;
    case JSON_STRING:
        json_writer_string(w, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        json_writer_int(w, (int64_t)json_integer_value(v));
        break;
    case JSON_REAL: {
        /* jansson's reals are finite; 17 digits read back exactly. */
        char text[32];
        int n = snprintf(text, sizeof text, "%.17g", json_real_value(v));
        put_literal(w, text, n > 0 ? (size_t)n : 0);
        break;
    }
    case JSON_TRUE:
    case JSON_FALSE:
        json_writer_bool(w, json_is_true(v));
        break;
    case JSON_NULL:
        json_writer_null(w);
        break;
    }
}
