/* A growing list of tokens (id, original byte span, word boundaries) for one
 * sequence. */
#ifndef BERT_TOK_TOKENS_H
#define BERT_TOK_TOKENS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Token flags: where the pieces of a word the model tokenized begin and end
 * (an added token has neither). Truncation of pairs needs them. */
enum {
    TOK_WORD_FIRST = 1,
    TOK_WORD_LAST = 2,
    TOK_ADDED = 4, /* an added token: its text is the matched span */
};

struct tok_tokens {
    struct tok_buf ids;   /* (n) int32_t */
    struct tok_buf start; /* (n) uint32_t */
    struct tok_buf stop;  /* (n) uint32_t */
    struct tok_buf flags; /* (n) uint8_t: TOK_WORD_* */
    size_t n;
};

/* False when out of memory. */
static inline bool tok_tokens_push(struct tok_tokens *t, int32_t id, uint32_t start,
                                   uint32_t stop, uint8_t flags)
{
    size_t need = (t->n + 1) * sizeof(uint32_t);
    if (need > t->ids.cap || need > t->start.cap || need > t->stop.cap || t->n + 1 > t->flags.cap) {
        size_t used = t->n * sizeof(uint32_t);
        if (!tok_buf_reserve(&t->ids, used, need) || !tok_buf_reserve(&t->start, used, need) ||
            !tok_buf_reserve(&t->stop, used, need) || !tok_buf_reserve(&t->flags, t->n, t->n + 1))
            return false;
    }
    ((int32_t *)t->ids.data)[t->n] = id;
    ((uint32_t *)t->start.data)[t->n] = start;
    ((uint32_t *)t->stop.data)[t->n] = stop;
    ((uint8_t *)t->flags.data)[t->n] = flags;
    t->n++;
    return true;
}

static inline void tok_tokens_release(struct tok_tokens *t)
{
    tok_buf_release(&t->ids);
    tok_buf_release(&t->start);
    tok_buf_release(&t->stop);
    tok_buf_release(&t->flags);
    t->n = 0;
}

#endif
