#include "precompiled.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "utf8.h"
#include "xform.h"

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Standard base64 with padding, as the reference's decoder requires. */
static uint8_t *b64_decode(const char *s, size_t len, size_t *out_len)
{
    if (len % 4 != 0)
        return NULL;
    size_t pad = 0;
    if (len >= 1 && s[len - 1] == '=')
        pad++;
    if (len >= 2 && s[len - 2] == '=')
        pad++;
    size_t n = len / 4 * 3 - pad;
    uint8_t *out = malloc(n ? n : 1);
    if (out == NULL)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        for (int k = 0; k < 4; k++) {
            bool padding = i + (size_t)k >= len - pad;
            v[k] = padding ? 0 : b64_value((unsigned char)s[i + (size_t)k]);
            if (v[k] < 0) {
                free(out);
                return NULL;
            }
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        uint8_t bytes[3] = {(uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w};
        for (int k = 0; k < 3 && o < n; k++)
            out[o++] = bytes[k];
    }
    *out_len = n;
    return out;
}

bool tok_precompiled_load(struct tok_precompiled *p, const char *b64, size_t len,
                          const char **why)
{
    memset(p, 0, sizeof *p);
    size_t n = 0;
    uint8_t *blob = b64_decode(b64, len, &n);
    if (blob == NULL) {
        *why = "not valid base64 (or out of memory)";
        return false;
    }
    if (n < 4) {
        free(blob);
        *why = "shorter than its 4-byte header";
        return false;
    }
    uint32_t trie_size = (uint32_t)blob[0] | (uint32_t)blob[1] << 8 | (uint32_t)blob[2] << 16 |
                         (uint32_t)blob[3] << 24;
    size_t n_units = trie_size / 4;
    if (n_units > (n - 4) / 4) {
        free(blob);
        *why = "the trie size is larger than the blob";
        return false;
    }
    size_t strings_off = 4 + n_units * 4;
    size_t strings_len = n - strings_off;
    if (utf8_valid_prefix(blob + strings_off, strings_len) != strings_len) {
        free(blob);
        *why = "the replacement strings are not valid UTF-8";
        return false;
    }
    p->units = malloc((n_units ? n_units : 1) * sizeof *p->units);
    p->strings = malloc(strings_len + 1);
    if (p->units == NULL || p->strings == NULL) {
        free(blob);
        tok_precompiled_free(p);
        *why = "out of memory";
        return false;
    }
    for (size_t i = 0; i < n_units; i++) {
        const uint8_t *u = blob + 4 + 4 * i;
        p->units[i] = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
    }
    p->n_units = n_units;
    memcpy(p->strings, blob + strings_off, strings_len);
    p->strings[strings_len] = '\0';
    p->strings_len = strings_len;
    free(blob);
    return true;
}

void tok_precompiled_free(struct tok_precompiled *p)
{
    free(p->units);
    free(p->strings);
    memset(p, 0, sizeof *p);
}

static size_t unit_offset(uint32_t u)
{
    return (size_t)(u >> 10) << ((u & (1u << 9)) >> 6);
}

bool tok_precompiled_lookup(const struct tok_precompiled *p, const uint8_t *key, size_t len,
                            const char **out, size_t *out_len)
{
    if (p->n_units == 0)
        return false;
    size_t pos = unit_offset(p->units[0]);
    for (size_t i = 0; i < len && key[i] != 0; i++) {
        pos ^= key[i];
        if (pos >= p->n_units)
            return false;
        uint32_t u = p->units[pos];
        if ((u & ((1u << 31) | 0xFF)) != key[i])
            return false;
        pos ^= unit_offset(u);
        if ((u >> 8) & 1) {
            if (pos >= p->n_units)
                return false;
            size_t value = p->units[pos] & ((1u << 31) - 1);
            /* The reference slices the string table here: a value outside it
             * or inside a character cannot be used. */
            if (value > p->strings_len ||
                (value < p->strings_len && (p->strings[value] & 0xC0) == 0x80))
                return false;
            *out = p->strings + value;
            *out_len = strlen(p->strings + value);
            return true;
        }
    }
    return false;
}

struct change {
    uint32_t c;
    int32_t change;
};

static bool push(struct tok_buf *work, size_t *n, uint32_t c, int32_t change)
{
    if (!tok_buf_reserve(work, *n * sizeof(struct change), (*n + 1) * sizeof(struct change)))
        return false;
    ((struct change *)work->data)[(*n)++] = (struct change){c, change};
    return true;
}

/* tokenizers' `replace` helper: the new characters replace, the surplus ones
 * are inserted, or the last change absorbs the characters removed. */
static bool push_replacement(struct tok_buf *work, size_t *n, size_t old_count, const char *norm,
                             size_t norm_len)
{
    size_t first = *n;
    for (size_t i = 0; i < norm_len;) {
        size_t cl;
        uint32_t c = utf8_decode((const uint8_t *)norm + i, &cl);
        i += cl;
        if (!push(work, n, c, 0))
            return false;
    }
    struct change *ch = work->data;
    long diff = (long)(*n - first) - (long)old_count;
    if (diff > 0)
        for (size_t k = 0; k < (size_t)diff; k++)
            ch[*n - 1 - k].change = 1;
    else if (diff < 0 && *n > 0)
        ch[*n - 1].change += (int32_t)diff;
    return true;
}

bool tok_precompiled_normalize(const struct tok_precompiled *p, const struct tok_normalized *src,
                               struct tok_normalized *dst, uint32_t origin, struct tok_buf *work)
{
    const uint8_t *s = src->bytes.data;
    size_t n = 0;
    bool modified = false;
    size_t g = 0; /* start of the current grapheme */
    utf8proc_int32_t state = 0;
    while (g < src->len) {
        /* The grapheme [g, e). */
        size_t cl;
        uint32_t prev = utf8_decode(s + g, &cl);
        size_t e = g + cl;
        while (e < src->len) {
            uint32_t c = utf8_decode(s + e, &cl);
            if (utf8proc_grapheme_break_stateful((utf8proc_int32_t)prev, (utf8proc_int32_t)c, &state))
                break;
            prev = c;
            e += cl;
        }
        const char *norm;
        size_t norm_len;
        if (e - g < 6 && tok_precompiled_lookup(p, s + g, e - g, &norm, &norm_len)) {
            size_t count = 0;
            for (size_t i = g; i < e; i++)
                count += (s[i] & 0xC0) != 0x80;
            if (!push_replacement(work, &n, count, norm, norm_len))
                return false;
            modified = true;
        } else {
            for (size_t i = g; i < e; i += cl) {
                uint32_t c = utf8_decode(s + i, &cl);
                if (tok_precompiled_lookup(p, s + i, cl, &norm, &norm_len)) {
                    if (!push_replacement(work, &n, 1, norm, norm_len))
                        return false;
                    modified = true;
                } else if (!push(work, &n, c, 0)) {
                    return false;
                }
            }
        }
        g = e;
    }
    struct tok_xform x;
    tok_xform_begin(&x, src, dst, origin);
    if (!modified) {
        tok_xform_copy(&x, 0, src->len);
        return x.ok;
    }
    const struct change *ch = work->data;
    for (size_t i = 0; i < n; i++)
        tok_xform_emit(&x, ch[i].c, ch[i].change);
    return x.ok;
}
