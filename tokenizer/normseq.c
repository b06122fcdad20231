#include "normseq.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "unicode.h"
#include "utf8.h"
#include "xform.h"

struct tok_norm_step *tok_normseq_add(struct tok_normseq *seq, enum tok_norm_kind kind)
{
    struct tok_norm_step *p = realloc(seq->steps, (seq->n + 1) * sizeof *p);
    if (p == NULL)
        return NULL;
    seq->steps = p;
    memset(&p[seq->n], 0, sizeof p[seq->n]);
    p[seq->n].kind = kind;
    return &p[seq->n++];
}

void tok_normseq_free(struct tok_normseq *seq)
{
    for (size_t i = 0; i < seq->n; i++) {
        free(seq->steps[i].pattern);
        free(seq->steps[i].content);
        tok_precompiled_free(&seq->steps[i].precompiled);
    }
    free(seq->steps);
    memset(seq, 0, sizeof *seq);
}

/* ---- Unicode normalization forms --------------------------------------- */

/* One character of the stream: code point, change, combining class. */
struct nf_char {
    uint32_t c;
    int32_t change;
    int32_t ccc;
};

static int32_t ccc_of(uint32_t c)
{
    return utf8proc_get_property((utf8proc_int32_t)c)->combining_class;
}

static bool nf_push(struct tok_buf *b, size_t *n, uint32_t c, int32_t change)
{
    if (!tok_buf_reserve(b, *n * sizeof(struct nf_char), (*n + 1) * sizeof(struct nf_char)))
        return false;
    ((struct nf_char *)b->data)[(*n)++] = (struct nf_char){c, change, ccc_of(c)};
    return true;
}

/* The composite of a starter and a following character, or 0. */
static uint32_t compose_pair(uint32_t a, uint32_t b)
{
    utf8proc_int32_t buf[2] = {(utf8proc_int32_t)a, (utf8proc_int32_t)b};
    return utf8proc_normalize_utf32(buf, 2, UTF8PROC_COMPOSE) == 1 ? (uint32_t)buf[0] : 0;
}

/* unicode-normalization (with alignments) as `tokenizers` uses it: each
 * character's full decomposition, its first character replacing and the
 * others inserted; canonical reordering carries the changes along; a
 * character composed into its starter is removed from it (change - 1). */
static bool unicode_form(struct tok_xform *x, const struct tok_normalized *src, bool compat,
                         bool compose, struct tok_buf *work)
{
    const uint8_t *s = src->bytes.data;
    size_t n = 0;
    utf8proc_option_t opts = UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0);
    for (size_t i = 0; i < src->len;) {
        size_t cl;
        uint32_t c = utf8_decode(s + i, &cl);
        i += cl;
        utf8proc_int32_t d[32];
        int bound = 0;
        utf8proc_ssize_t nd = c < 0x80 ? 0 : utf8proc_decompose_char((utf8proc_int32_t)c, d, 32, opts, &bound);
        if (nd <= 0 || nd > 32) {
            d[0] = (utf8proc_int32_t)c;
            nd = 1;
        }
        for (utf8proc_ssize_t k = 0; k < nd; k++)
            if (!nf_push(work, &n, (uint32_t)d[k], k > 0))
                return false;
    }
    struct nf_char *ch = work->data;
    /* Canonical ordering: a stable sort of each run of non-starters. */
    for (size_t i = 1; i < n; i++) {
        if (ch[i].ccc == 0)
            continue;
        struct nf_char t = ch[i];
        size_t j = i;
        while (j > 0 && ch[j - 1].ccc > t.ccc) {
            ch[j] = ch[j - 1];
            j--;
        }
        ch[j] = t;
    }
    size_t out = n;
    if (compose) {
        out = 0;
        long starter = -1;
        int32_t last_ccc = 0;
        for (size_t i = 0; i < n; i++) {
            struct nf_char c = ch[i];
            if (starter >= 0) {
                bool adjacent = (size_t)starter == out - 1;
                bool blocked = !adjacent && (last_ccc == 0 || last_ccc >= c.ccc);
                uint32_t composite = blocked ? 0 : compose_pair(ch[starter].c, c.c);
                if (composite) {
                    ch[starter].c = composite;
                    ch[starter].ccc = ccc_of(composite);
                    ch[starter].change += c.change - 1;
                    continue;
                }
            }
            if (c.ccc == 0)
                starter = (long)out;
            last_ccc = c.ccc;
            ch[out++] = c;
        }
    }
    for (size_t i = 0; i < out; i++)
        tok_xform_emit(x, ch[i].c, ch[i].change);
    return x->ok;
}

/* ---- the other steps ------------------------------------------------------- */

static bool is_ascii(const struct tok_normalized *n)
{
    const uint8_t *s = n->bytes.data;
    for (size_t i = 0; i < n->len; i++)
        if (s[i] >= 0x80)
            return false;
    return true;
}

static void lowercase(struct tok_xform *x, const struct tok_normalized *src)
{
    const uint8_t *s = src->bytes.data;
    for (size_t i = 0; i < src->len;) {
        size_t cl;
        uint32_t c = utf8_decode(s + i, &cl);
        i += cl;
        uint32_t lower[2];
        size_t nl = c < 0x80 ? (lower[0] = (c >= 'A' && c <= 'Z') ? c + 32 : c, 1)
                             : tok_unicode_lowercase(c, lower);
        for (size_t k = 0; k < nl; k++)
            tok_xform_emit(x, lower[k], k > 0);
    }
}

static void strip(struct tok_xform *x, const struct tok_normalized *src, bool left, bool right)
{
    const uint8_t *s = src->bytes.data;
    size_t from = 0, to = src->len, cl;
    while (left && from < to && tok_unicode_is_whitespace(utf8_decode(s + from, &cl)))
        from += cl;
    while (right && to > from) {
        size_t p = to - 1;
        while (p > from && (s[p] & 0xC0) == 0x80)
            p--;
        if (!tok_unicode_is_whitespace(utf8_decode(s + p, &cl)))
            break;
        to = p;
    }
    x->offset = from;
    tok_xform_copy(x, from, to);
}

/* End of the match of `st`'s pattern at s + i, or 0 when none. */
static size_t match_at(const struct tok_norm_step *st, const uint8_t *s, size_t i, size_t len)
{
    size_t pl = st->pattern_len;
    if (st->min_repeat == 0)
        return pl <= len - i && memcmp(s + i, st->pattern, pl) == 0 ? i + pl : 0;
    size_t j = i, count = 0;
    while (pl <= len - j && memcmp(s + j, st->pattern, pl) == 0) {
        j += pl;
        count++;
    }
    return count >= st->min_repeat ? j : 0;
}

/* NormalizedString::replace: each match is removed and the content inserted
 * after it, taking the alignment of the match's last byte. */
static void replace(struct tok_xform *x, const struct tok_normalized *src,
                    const struct tok_norm_step *st)
{
    const uint8_t *s = src->bytes.data;
    size_t last = 0, i = 0;
    while (i < src->len) {
        size_t end = match_at(st, s, i, src->len);
        if (end == 0) {
            i++;
            continue;
        }
        tok_xform_copy(x, last, i);
        x->offset = end;
        for (size_t k = 0; k < st->content_len;) {
            size_t cl;
            uint32_t c = utf8_decode((const uint8_t *)st->content + k, &cl);
            k += cl;
            tok_xform_emit(x, c, 1);
        }
        i = last = end;
    }
    tok_xform_copy(x, last, src->len);
}

/* NormalizedString::prepend: the prefix's first character replaces the
 * string's first, the rest and that first character are inserted after it. */
static void prepend(struct tok_xform *x, const struct tok_normalized *src, const char *p,
                    size_t len)
{
    const uint8_t *s = src->bytes.data;
    size_t cl;
    uint32_t first = utf8_decode(s, &cl);
    for (size_t k = 0; k < len;) {
        size_t pl;
        uint32_t c = utf8_decode((const uint8_t *)p + k, &pl);
        tok_xform_emit(x, c, k > 0);
        k += pl;
    }
    tok_xform_emit(x, first, 1);
    tok_xform_copy(x, cl, src->len);
}

bool tok_normseq_apply(const struct tok_normseq *seq, struct tok_normalized *io, uint32_t origin,
                       struct tok_normseq_work *work)
{
    for (size_t k = 0; k < seq->n; k++) {
        const struct tok_norm_step *st = &seq->steps[k];
        if (io->len == 0)
            return true;
        struct tok_xform x;
        bool ok = true;
        switch (st->kind) {
        case TOK_NORM_NFC:
        case TOK_NORM_NFD:
        case TOK_NORM_NFKC:
        case TOK_NORM_NFKD:
            if (is_ascii(io))
                continue;
            tok_xform_begin(&x, io, &work->tmp, origin);
            ok = unicode_form(&x, io, st->kind == TOK_NORM_NFKC || st->kind == TOK_NORM_NFKD,
                              st->kind == TOK_NORM_NFC || st->kind == TOK_NORM_NFKC,
                              &work->changes);
            break;
        case TOK_NORM_LOWERCASE:
            tok_xform_begin(&x, io, &work->tmp, origin);
            lowercase(&x, io);
            break;
        case TOK_NORM_STRIP:
            tok_xform_begin(&x, io, &work->tmp, origin);
            strip(&x, io, st->left, st->right);
            break;
        case TOK_NORM_REPLACE:
            tok_xform_begin(&x, io, &work->tmp, origin);
            replace(&x, io, st);
            break;
        case TOK_NORM_PREPEND:
            tok_xform_begin(&x, io, &work->tmp, origin);
            prepend(&x, io, st->content, st->content_len);
            break;
        case TOK_NORM_PRECOMPILED:
            x.ok = true;
            ok = tok_precompiled_normalize(&st->precompiled, io, &work->tmp, origin,
                                           &work->changes);
            break;
        }
        if (!ok || !x.ok)
            return false;
        tok_normalized_swap(io, &work->tmp);
    }
    return true;
}
