#include "bpe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EMPTY_PAIR UINT64_MAX

static size_t pair_slot(uint64_t pair, size_t mask)
{
    /* MurmurHash3's fmix64. */
    pair ^= pair >> 33;
    pair *= UINT64_C(0xff51afd7ed558ccd);
    pair ^= pair >> 33;
    pair *= UINT64_C(0xc4ceb9fe1a85ec53);
    pair ^= pair >> 33;
    return (size_t)pair & mask;
}

static const struct tok_bpe_merge *find_merge(const struct tok_bpe *bpe, int32_t a, int32_t b)
{
    if (bpe->merges == NULL)
        return NULL;
    uint64_t pair = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    for (size_t i = pair_slot(pair, bpe->merges_mask);; i = (i + 1) & bpe->merges_mask) {
        const struct tok_bpe_merge *m = &bpe->merges[i];
        if (m->pair == pair)
            return m;
        if (m->pair == EMPTY_PAIR)
            return NULL;
    }
}

static bool insert_merge(struct tok_bpe *bpe, uint64_t pair, uint32_t rank, int32_t new_id)
{
    if ((bpe->n_merges + 1) * 2 > (bpe->merges ? bpe->merges_mask + 1 : 0)) {
        size_t n = bpe->merges ? (bpe->merges_mask + 1) * 2 : 1024;
        struct tok_bpe_merge *slots = malloc(n * sizeof *slots);
        if (slots == NULL)
            return false;
        for (size_t i = 0; i < n; i++)
            slots[i].pair = EMPTY_PAIR;
        struct tok_bpe_merge *old = bpe->merges;
        size_t old_n = old ? bpe->merges_mask + 1 : 0;
        bpe->merges = slots;
        bpe->merges_mask = n - 1;
        for (size_t i = 0; i < old_n; i++) {
            if (old[i].pair == EMPTY_PAIR)
                continue;
            size_t j = pair_slot(old[i].pair, bpe->merges_mask);
            while (slots[j].pair != EMPTY_PAIR)
                j = (j + 1) & bpe->merges_mask;
            slots[j] = old[i];
        }
        free(old);
    }
    size_t j = pair_slot(pair, bpe->merges_mask);
    while (bpe->merges[j].pair != EMPTY_PAIR && bpe->merges[j].pair != pair)
        j = (j + 1) & bpe->merges_mask;
    if (bpe->merges[j].pair == EMPTY_PAIR)
        bpe->n_merges++;
    bpe->merges[j] = (struct tok_bpe_merge){pair, rank, new_id};
    return true;
}

int tok_bpe_add_merge(struct tok_bpe *bpe, const char *a, size_t a_len, const char *b,
                      size_t b_len, uint32_t rank)
{
    int32_t ia = tok_vocab_get(&bpe->vocab, a, a_len);
    int32_t ib = tok_vocab_get(&bpe->vocab, b, b_len);
    if (ia < 0 || ib < 0 || b_len < bpe->prefix_len)
        return 1;
    /* The merged token: a, then b without the continuing-subword prefix. */
    char stack[256];
    size_t n = a_len + b_len - bpe->prefix_len;
    char *joined = n <= sizeof stack ? stack : malloc(n);
    if (joined == NULL)
        return 2;
    memcpy(joined, a, a_len);
    memcpy(joined + a_len, b + bpe->prefix_len, b_len - bpe->prefix_len);
    int32_t id = tok_vocab_get(&bpe->vocab, joined, n);
    if (joined != stack)
        free(joined);
    if (id < 0)
        return 1;
    return insert_merge(bpe, (uint64_t)(uint32_t)ia << 32 | (uint32_t)ib, rank, id) ? 0 : 2;
}

bool tok_bpe_finish(struct tok_bpe *bpe)
{
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        bpe->byte_ids[b] = tok_vocab_get(&bpe->vocab, name, 6);
    }
    bpe->unk_id = -1;
    if (bpe->unk_token == NULL)
        return true;
    bpe->unk_id = tok_vocab_get(&bpe->vocab, bpe->unk_token, strlen(bpe->unk_token));
    return bpe->unk_id >= 0;
}

void tok_bpe_free(struct tok_bpe *bpe)
{
    tok_vocab_free(&bpe->vocab);
    free(bpe->merges);
    free(bpe->unk_token);
    free(bpe->prefix);
    free(bpe->suffix);
    memset(bpe, 0, sizeof *bpe);
}

struct symbol {
    int32_t id;
    int32_t prev, next;
    uint32_t len; /* bytes of the word; 0: merged away */
};

struct heap_entry {
    uint32_t rank;
    uint32_t pos;
    int32_t new_id;
};

static bool entry_less(const struct heap_entry *a, const struct heap_entry *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static bool heap_push(struct tok_buf *h, size_t *n, struct heap_entry e)
{
    if (!tok_buf_reserve(h, *n * sizeof e, (*n + 1) * sizeof e))
        return false;
    struct heap_entry *a = h->data;
    size_t i = (*n)++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!entry_less(&e, &a[parent]))
            break;
        a[i] = a[parent];
        i = parent;
    }
    a[i] = e;
    return true;
}

static struct heap_entry heap_pop(struct tok_buf *h, size_t *n)
{
    struct heap_entry *a = h->data;
    struct heap_entry top = a[0], last = a[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && entry_less(&a[c + 1], &a[c]))
            c++;
        if (!entry_less(&a[c], &last))
            break;
        a[i] = a[c];
        i = c;
    }
    if (*n > 0)
        a[i] = last;
    return top;
}

static bool add_symbol(struct tok_buf *b, size_t *n, int32_t id, size_t len)
{
    if (!tok_buf_reserve(b, *n * sizeof(struct symbol), (*n + 1) * sizeof(struct symbol)))
        return false;
    struct symbol *s = b->data;
    if (*n > 0)
        s[*n - 1].next = (int32_t)*n;
    s[*n] = (struct symbol){id, (int32_t)*n - 1, -1, (uint32_t)len};
    (*n)++;
    return true;
}

/* The id of the character at w + i (cl bytes), with the prefix or suffix
 * the reference adds, or -1. `key` receives the looked-up bytes. */
static int32_t char_id(const struct tok_bpe *bpe, const uint8_t *c, size_t cl, bool first,
                       bool last, struct tok_buf *key, const uint8_t **key_out, size_t *key_len)
{
    bool pre = !first && bpe->prefix, suf = last && bpe->suffix;
    if (!pre && !suf) {
        *key_out = c;
        *key_len = cl;
        return tok_vocab_get(&bpe->vocab, (const char *)c, cl);
    }
    size_t n = (pre ? bpe->prefix_len : 0) + cl + (suf ? bpe->suffix_len : 0);
    if (!tok_buf_reserve(key, 0, n)) {
        *key_len = 0;
        return -2;
    }
    uint8_t *k = key->data;
    size_t o = 0;
    if (pre) {
        memcpy(k, bpe->prefix, bpe->prefix_len);
        o = bpe->prefix_len;
    }
    memcpy(k + o, c, cl);
    o += cl;
    if (suf)
        memcpy(k + o, bpe->suffix, bpe->suffix_len);
    *key_out = k;
    *key_len = n;
    return tok_vocab_get(&bpe->vocab, (const char *)k, n);
}

static bool emit(const struct tok_normalized *w, size_t from, size_t to, size_t pos, size_t len,
                 int32_t id, uint8_t flags, struct tok_tokens *out)
{
    const uint32_t *as = w->al_start.data, *ae = w->al_end.data;
    size_t a = from + pos, b = from + pos + len;
    /* Byte-fallback pieces of a prefixed character can run past the word. */
    if (b > to)
        b = to;
    if (a >= b)
        a = b - 1;
    return tok_tokens_push(out, id, as[a], ae[b - 1], flags);
}

bool tok_bpe_encode(const struct tok_bpe *bpe, const struct tok_normalized *w, size_t from,
                    size_t to, struct tok_bpe_work *work, struct tok_tokens *out)
{
    if (from >= to)
        return true;
    const uint8_t *s = (const uint8_t *)w->bytes.data;
    if (bpe->ignore_merges) {
        int32_t id = tok_vocab_get(&bpe->vocab, (const char *)s + from, to - from);
        if (id >= 0)
            return emit(w, from, to, 0, to - from, id, TOK_WORD_FIRST | TOK_WORD_LAST, out);
    }
    size_t n = 0;
    int32_t unk_len = -1; /* pending unknown-token bytes, -1: none */
    for (size_t i = from; i < to;) {
        size_t cl = (s[i] < 0x80) ? 1 : (s[i] < 0xE0) ? 2 : (s[i] < 0xF0) ? 3 : 4;
        const uint8_t *key;
        size_t key_len;
        int32_t id = char_id(bpe, s + i, cl, i == from, i + cl == to, &work->key, &key, &key_len);
        i += cl;
        if (id == -2)
            return false;
        if (id >= 0) {
            if (unk_len >= 0 && !add_symbol(&work->symbols, &n, bpe->unk_id, (size_t)unk_len))
                return false;
            unk_len = -1;
            if (!add_symbol(&work->symbols, &n, id, cl))
                return false;
            continue;
        }
        if (bpe->byte_fallback) {
            bool all = true;
            for (size_t k = 0; k < key_len && all; k++)
                all = bpe->byte_ids[key[k]] >= 0;
            if (all) {
                for (size_t k = 0; k < key_len; k++)
                    if (!add_symbol(&work->symbols, &n, bpe->byte_ids[key[k]], 1))
                        return false;
                continue;
            }
        }
        if (bpe->unk_id < 0)
            continue; /* no unk token: the character is dropped */
        if (unk_len >= 0 && bpe->fuse_unk) {
            unk_len += (int32_t)cl;
            continue;
        }
        if (unk_len >= 0 && !add_symbol(&work->symbols, &n, bpe->unk_id, (size_t)unk_len))
            return false;
        unk_len = (int32_t)cl;
    }
    if (unk_len >= 0 && !add_symbol(&work->symbols, &n, bpe->unk_id, (size_t)unk_len))
        return false;

    size_t heap_n = 0;
    struct symbol *sym = work->symbols.data;
    for (size_t k = 0; k + 1 < n; k++) {
        const struct tok_bpe_merge *m = find_merge(bpe, sym[k].id, sym[k + 1].id);
        if (m && !heap_push(&work->heap, &heap_n, (struct heap_entry){m->rank, (uint32_t)k, m->new_id}))
            return false;
    }
    while (heap_n > 0) {
        struct heap_entry top = heap_pop(&work->heap, &heap_n);
        struct symbol *cur = &sym[top.pos];
        if (cur->len == 0 || cur->next < 0)
            continue;
        struct symbol right = sym[cur->next];
        const struct tok_bpe_merge *m = find_merge(bpe, cur->id, right.id);
        if (m == NULL || m->new_id != top.new_id)
            continue; /* a stale entry */
        sym[cur->next].len = 0;
        cur->id = top.new_id;
        cur->len += right.len;
        cur->next = right.next;
        if (right.next >= 0)
            sym[right.next].prev = (int32_t)top.pos;
        if (cur->prev >= 0) {
            m = find_merge(bpe, sym[cur->prev].id, cur->id);
            if (m && !heap_push(&work->heap, &heap_n,
                                (struct heap_entry){m->rank, (uint32_t)cur->prev, m->new_id}))
                return false;
        }
        if (cur->next >= 0) {
            m = find_merge(bpe, cur->id, sym[cur->next].id);
            if (m && !heap_push(&work->heap, &heap_n, (struct heap_entry){m->rank, top.pos, m->new_id}))
                return false;
        }
    }
    size_t pos = 0, first = out->n;
    for (size_t k = 0; k < n; k++) {
        if (sym[k].len == 0)
            continue;
        if (!emit(w, from, to, pos, sym[k].len, sym[k].id, 0, out))
            return false;
        pos += sym[k].len;
    }
    if (out->n > first) {
        uint8_t *flags = out->flags.data;
        flags[first] |= TOK_WORD_FIRST;
        flags[out->n - 1] |= TOK_WORD_LAST;
    }
    return true;
}
