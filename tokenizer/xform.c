#include "xform.h"

static size_t char_len(uint8_t b)
{
    return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

bool tok_normalized_reserve(struct tok_normalized *n, size_t extra)
{
    size_t need = n->len + extra;
    if (need <= n->bytes.cap && need * sizeof(uint32_t) <= n->al_start.cap &&
        need * sizeof(uint32_t) <= n->al_end.cap)
        return true;
    return tok_buf_reserve(&n->bytes, n->len, need) &&
           tok_buf_reserve(&n->al_start, n->len * sizeof(uint32_t), need * sizeof(uint32_t)) &&
           tok_buf_reserve(&n->al_end, n->len * sizeof(uint32_t), need * sizeof(uint32_t));
}

void tok_xform_begin(struct tok_xform *x, const struct tok_normalized *src,
                     struct tok_normalized *dst, uint32_t origin)
{
    x->src = src;
    x->dst = dst;
    x->offset = 0;
    x->origin = origin;
    x->ok = true;
    dst->len = 0;
}

void tok_xform_skip(struct tok_xform *x, size_t n)
{
    const uint8_t *s = x->src->bytes.data;
    for (size_t i = 0; i < n && x->offset < x->src->len; i++)
        x->offset += char_len(s[x->offset]);
}

void tok_xform_emit(struct tok_xform *x, uint32_t c, long change)
{
    if (!x->ok || !tok_normalized_reserve(x->dst, 4)) {
        x->ok = false;
        return;
    }
    const uint32_t *as = x->src->al_start.data, *ae = x->src->al_end.data;
    size_t idx = x->offset;
    uint32_t a = x->origin, b = x->origin;
    if (change > 0) {
        if (idx >= 1 && idx - 1 < x->src->len) {
            a = as[idx - 1];
            b = ae[idx - 1];
        }
    } else if (idx < x->src->len) {
        a = as[idx];
        b = ae[idx];
    } else if (x->src->len > 0) {
        /* A stream that replaces more than the source holds (the reference
         * would panic); keep the last alignment. */
        a = as[x->src->len - 1];
        b = ae[x->src->len - 1];
    }
    if (change <= 0)
        tok_xform_skip(x, 1 + (size_t)(-change));
    uint8_t *bytes = x->dst->bytes.data;
    uint32_t *ds = x->dst->al_start.data, *de = x->dst->al_end.data;
    size_t n = utf8_encode(c, bytes + x->dst->len);
    for (size_t i = 0; i < n; i++) {
        ds[x->dst->len + i] = a;
        de[x->dst->len + i] = b;
    }
    x->dst->len += n;
}

void tok_xform_copy(struct tok_xform *x, size_t from, size_t to)
{
    if (!x->ok || !tok_normalized_reserve(x->dst, to - from)) {
        x->ok = false;
        return;
    }
    x->offset = to;
    if (to == from) /* nothing to copy: dst may not have a buffer yet */
        return;
    const struct tok_normalized *s = x->src;
    memcpy((uint8_t *)x->dst->bytes.data + x->dst->len, (const uint8_t *)s->bytes.data + from,
           to - from);
    memcpy((uint32_t *)x->dst->al_start.data + x->dst->len,
           (const uint32_t *)s->al_start.data + from, (to - from) * sizeof(uint32_t));
    memcpy((uint32_t *)x->dst->al_end.data + x->dst->len, (const uint32_t *)s->al_end.data + from,
           (to - from) * sizeof(uint32_t));
    x->dst->len += to - from;
}

bool tok_normalized_identity(const uint8_t *text, size_t start, size_t end,
                             struct tok_normalized *out)
{
    out->len = 0;
    if (!tok_normalized_reserve(out, end - start))
        return false;
    uint8_t *bytes = out->bytes.data;
    uint32_t *as = out->al_start.data, *ae = out->al_end.data;
    memcpy(bytes, text + start, end - start);
    size_t i = start;
    while (i < end) {
        size_t n = char_len(text[i]);
        for (size_t k = 0; k < n; k++) {
            as[i - start + k] = (uint32_t)i;
            ae[i - start + k] = (uint32_t)(i + n);
        }
        i += n;
    }
    out->len = end - start;
    return true;
}

void tok_normalized_swap(struct tok_normalized *a, struct tok_normalized *b)
{
    struct tok_normalized t = *a;
    *a = *b;
    *b = t;
}

void tok_normalized_release(struct tok_normalized *n)
{
    tok_buf_release(&n->bytes);
    tok_buf_release(&n->al_start);
    tok_buf_release(&n->al_end);
    n->len = 0;
}
