#include "normalize.h"

#include "unicode.h"

/* Room for one original character's output: up to 3 characters after
 * handle_chinese_chars, each expanding under NFD and lowercasing. */
#define MAX_CHARS_PER_INPUT (3 * TOK_UNICODE_MAX_EXPANSION * 2)

static bool reserve(struct tok_normalized *out, size_t extra)
{
    size_t need = out->len + extra;
    return tok_buf_reserve(&out->bytes, out->len, need) &&
           tok_buf_reserve(&out->al_start, out->len * sizeof(uint32_t), need * sizeof(uint32_t)) &&
           tok_buf_reserve(&out->al_end, out->len * sizeof(uint32_t), need * sizeof(uint32_t));
}

static void emit(struct tok_normalized *out, uint32_t c, uint32_t al_start, uint32_t al_end)
{
    uint8_t *bytes = out->bytes.data;
    uint32_t *s = out->al_start.data, *e = out->al_end.data;
    size_t n = utf8_encode(c, bytes + out->len);
    for (size_t i = 0; i < n; i++) {
        s[out->len + i] = al_start;
        e[out->len + i] = al_end;
    }
    out->len += n;
}

bool tok_normalize(const struct tok_norm_cfg *cfg, const uint8_t *text, size_t start,
                   size_t end, struct tok_normalized *out)
{
    out->len = 0;
    /* Alignment of the last character that survived clean_text: a space
     * inserted before an ideograph borrows it (empty at the start). */
    uint32_t prev_start = (uint32_t)start, prev_end = (uint32_t)start;
    size_t i = start;
    while (i < end) {
        size_t n;
        uint32_t c = utf8_decode(text + i, &n);
        uint32_t b = (uint32_t)i, e = (uint32_t)(i + n);
        i += n;
        if (!reserve(out, 4 * MAX_CHARS_PER_INPUT))
            return false;
        if (cfg->clean_text) {
            if (tok_unicode_is_removed_by_clean(c))
                continue;
            if (tok_unicode_is_whitespace(c))
                c = ' ';
        }
        if (c < 0x80) {
            /* ASCII: no ideographs, no accents; lowercasing is A-Z only. */
            if (cfg->lowercase && c >= 'A' && c <= 'Z')
                c += 32;
            emit(out, c, b, e);
            prev_start = b;
            prev_end = e;
            continue;
        }
        bool chinese = cfg->handle_chinese_chars && tok_unicode_is_chinese(c);
        if (chinese)
            emit(out, ' ', prev_start, prev_end);
        uint32_t stripped[TOK_UNICODE_MAX_EXPANSION];
        size_t n_stripped = 1;
        stripped[0] = c;
        if (cfg->strip_accents)
            n_stripped = tok_unicode_strip_accents(c, stripped);
        for (size_t k = 0; k < n_stripped; k++) {
            uint32_t lower[2];
            size_t n_lower = 1;
            lower[0] = stripped[k];
            if (cfg->lowercase)
                n_lower = tok_unicode_lowercase(stripped[k], lower);
            for (size_t m = 0; m < n_lower; m++)
                emit(out, lower[m], b, e);
        }
        if (chinese)
            emit(out, ' ', b, e);
        prev_start = b;
        prev_end = e;
    }
    return true;
}
