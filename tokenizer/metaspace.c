#include "metaspace.h"

#include <string.h>

#include "xform.h"
#include "utf8.h"

bool tok_metaspace_map(const struct tok_metaspace *m, const struct tok_normalized *src,
                       size_t from, size_t to, bool starts_input, struct tok_normalized *dst)
{
    size_t rl = m->replacement_len;
    size_t need = (to - from) * rl + rl;
    dst->len = 0;
    if (!tok_normalized_reserve(dst, need))
        return false;
    const uint8_t *s = src->bytes.data;
    const uint32_t *as = src->al_start.data, *ae = src->al_end.data;
    uint8_t *d = dst->bytes.data;
    uint32_t *ds = dst->al_start.data, *de = dst->al_end.data;
    size_t o = 0;
    bool add = from < to && (m->prepend == TOK_PREPEND_ALWAYS ||
                             (m->prepend == TOK_PREPEND_FIRST && starts_input));
    if (add && s[from] != ' ' &&
        !(to - from >= rl && memcmp(s + from, m->replacement_utf8, rl) == 0)) {
        memcpy(d, m->replacement_utf8, rl);
        for (size_t k = 0; k < rl; k++) {
            ds[k] = as[from];
            de[k] = ae[from];
        }
        o = rl;
    }
    for (size_t i = from; i < to; i++) {
        if (s[i] == ' ') {
            memcpy(d + o, m->replacement_utf8, rl);
            for (size_t k = 0; k < rl; k++) {
                ds[o + k] = as[i];
                de[o + k] = ae[i];
            }
            o += rl;
        } else {
            d[o] = s[i];
            ds[o] = as[i];
            de[o] = ae[i];
            o++;
        }
    }
    dst->len = o;
    return true;
}

size_t tok_metaspace_next(const struct tok_metaspace *m, const uint8_t *s, size_t i, size_t len)
{
    if (!m->split)
        return len;
    size_t rl = m->replacement_len;
    size_t j = i;
    if (rl <= len - j && memcmp(s + j, m->replacement_utf8, rl) == 0)
        j += rl;
    while (j < len && !(rl <= len - j && memcmp(s + j, m->replacement_utf8, rl) == 0))
        j++;
    return j;
}
