#include "unigram.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* sentencepiece's kUnkPenalty. */
#define UNK_PENALTY 10.0

bool tok_unigram_push(struct tok_unigram *u, const char *piece, size_t len, double score)
{
    if (u->n >= (1u << 24) || u->arena_len + len + 1 >= UINT32_MAX)
        return false;
    if ((u->n & (u->n - 1)) == 0) { /* grow at powers of two */
        size_t cap = u->n ? u->n * 2 : 1024;
        double *s = realloc(u->scores, cap * sizeof *s);
        if (s == NULL)
            return false;
        u->scores = s;
        uint32_t *o = realloc(u->piece_off, cap * sizeof *o);
        if (o == NULL)
            return false;
        u->piece_off = o;
    }
    if (u->arena_len + len + 1 > u->arena_cap) {
        size_t cap = u->arena_cap ? u->arena_cap : 1 << 16;
        while (cap < u->arena_len + len + 1)
            cap *= 2;
        char *a = realloc(u->arena, cap);
        if (a == NULL)
            return false;
        u->arena = a;
        u->arena_cap = cap;
    }
    memcpy(u->arena + u->arena_len, piece, len);
    u->arena[u->arena_len + len] = '\0';
    u->piece_off[u->n] = (uint32_t)u->arena_len;
    u->scores[u->n] = score;
    u->arena_len += len + 1;
    if (!tok_vocab_add(&u->vocab, piece, len, (int32_t)u->n))
        return false;
    if (u->n == 0 || score < u->min_score)
        u->min_score = score;
    u->n++;
    return true;
}

bool tok_unigram_finish(struct tok_unigram *u)
{
    if (!tok_vocab_build(&u->vocab))
        return false;
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        u->byte_ids[b] = tok_vocab_get(&u->vocab, name, 6);
    }
    return true;
}

const char *tok_unigram_piece(const struct tok_unigram *u, int32_t id)
{
    return id >= 0 && (size_t)id < u->n ? u->arena + u->piece_off[id] : NULL;
}

void tok_unigram_free(struct tok_unigram *u)
{
    tok_vocab_free(&u->vocab);
    free(u->scores);
    free(u->arena);
    free(u->piece_off);
    memset(u, 0, sizeof *u);
}

struct node {
    double score;
    int32_t starts_at; /* -1: unreached */
    int32_t id;
};

struct piece {
    uint32_t start, end;
    int32_t id; /* -1: fused unknown characters, resolved at output */
};

static size_t char_len(uint8_t b)
{
    return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

static bool push_piece(struct tok_buf *b, size_t *n, struct piece p)
{
    if (!tok_buf_reserve(b, *n * sizeof p, (*n + 1) * sizeof p))
        return false;
    ((struct piece *)b->data)[(*n)++] = p;
    return true;
}

bool tok_unigram_encode(const struct tok_unigram *u, const struct tok_normalized *w, size_t from,
                        size_t to, struct tok_unigram_work *work, struct tok_tokens *out)
{
    size_t size = to - from;
    if (size == 0)
        return true;
    if (!tok_buf_reserve(&work->best, 0, (size + 1) * sizeof(struct node)))
        return false;
    struct node *best = work->best.data;
    for (size_t i = 0; i <= size; i++)
        best[i] = (struct node){0.0, -1, 0};
    const char *s = (const char *)w->bytes.data + from;
    double unk_score = u->min_score - UNK_PENALTY;
    for (size_t start = 0; start < size;) {
        double till_here = best[start].score;
        size_t mblen = char_len((uint8_t)s[start]);
        bool has_single = false;
        /* Every piece that starts here, shortest first: the vocabulary map
         * also holds each piece's prefixes, so one walk finds them all. */
        uint64_t h = TOK_VOCAB_HASH_INIT;
        for (size_t end = start; end < size;) {
            size_t cl = char_len((uint8_t)s[end]);
            for (size_t k = 0; k < cl; k++)
                h = tok_vocab_hash_step(h, (uint8_t)s[end + k]);
            end += cl;
            const struct tok_vocab_slot *slot = tok_vocab_probe(&u->vocab, h, s + start, end - start);
            if (slot == NULL)
                break;
            if (slot->id < 0)
                continue;
            double candidate = u->scores[slot->id] + till_here;
            struct node *t = &best[end];
            if (t->starts_at < 0 || candidate > t->score)
                *t = (struct node){candidate, (int32_t)start, slot->id};
            if (end - start == mblen)
                has_single = true;
        }
        if (!has_single) {
            double candidate = unk_score + till_here;
            struct node *t = &best[start + mblen];
            if (t->starts_at < 0 || candidate > t->score)
                *t = (struct node){candidate, (int32_t)start, u->unk_id};
        }
        start += mblen;
    }
    /* Back from the end; consecutive unknown characters become one piece. */
    size_t n = 0;
    for (size_t end = size; end > 0;) {
        const struct node *node = &best[end];
        size_t start = (size_t)node->starts_at;
        if (node->id == u->unk_id) {
            struct piece *p = n ? &((struct piece *)work->path.data)[n - 1] : NULL;
            if (p && p->id == -1 && p->start == end)
                p->start = (uint32_t)start;
            else if (!push_piece(&work->path, &n, (struct piece){(uint32_t)start, (uint32_t)end, -1}))
                return false;
        } else if (!push_piece(&work->path, &n, (struct piece){(uint32_t)start, (uint32_t)end, node->id})) {
            return false;
        }
        end = start;
    }
    const struct piece *path = work->path.data;
    const uint32_t *as = w->al_start.data, *ae = w->al_end.data;
    size_t first = out->n;
    for (size_t k = n; k-- > 0;) {
        struct piece p = path[k];
        uint32_t a = as[from + p.start], b = ae[from + p.end - 1];
        int32_t id = p.id;
        if (id < 0) {
            /* The fused text may itself be a piece; otherwise bytes or unk. */
            id = tok_vocab_get(&u->vocab, s + p.start, p.end - p.start);
            if (id < 0 && u->byte_fallback) {
                bool all = true;
                for (size_t i = p.start; i < p.end && all; i++)
                    all = u->byte_ids[(uint8_t)s[i]] >= 0;
                if (all) {
                    for (size_t i = p.start; i < p.end; i++)
                        if (!tok_tokens_push(out, u->byte_ids[(uint8_t)s[i]], a, b, 0))
                            return false;
                    continue;
                }
            }
            if (id < 0)
                id = u->unk_id;
        }
        if (!tok_tokens_push(out, id, a, b, 0))
            return false;
    }
    if (out->n > first) {
        uint8_t *flags = out->flags.data;
        flags[first] |= TOK_WORD_FIRST;
        flags[out->n - 1] |= TOK_WORD_LAST;
    }
    return true;
}
