/* Grow-only work buffers for one encode call.
 *
 * A buffer may start on caller-provided storage (usually the stack), so a
 * short input costs no allocation at all; it moves to the heap only when it
 * outgrows that, doubling each time, so a long input costs O(log n)
 * allocations, never one per character or token. */
#ifndef BERT_TOK_BUF_H
#define BERT_TOK_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct tok_buf {
    void *data;
    size_t cap;   /* bytes */
    bool on_heap; /* data was malloc'd by tok_buf_reserve */
};

static inline void tok_buf_init(struct tok_buf *b, void *storage, size_t bytes)
{
    b->data = storage;
    b->cap = storage ? bytes : 0;
    b->on_heap = false;
}

/* Make room for `bytes` bytes, keeping the first `used` bytes. False when
 * out of memory (the buffer is then unchanged). */
static inline bool tok_buf_reserve(struct tok_buf *b, size_t used, size_t bytes)
{
    if (bytes <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < bytes) {
        if (cap > SIZE_MAX / 2)
            return false;
        cap *= 2;
    }
    void *p = malloc(cap);
    if (p == NULL)
        return false;
    if (used)
        memcpy(p, b->data, used);
    if (b->on_heap)
        free(b->data);
    b->data = p;
    b->cap = cap;
    b->on_heap = true;
    return true;
}

static inline void tok_buf_release(struct tok_buf *b)
{
    if (b->on_heap)
        free(b->data);
    b->data = NULL;
    b->cap = 0;
    b->on_heap = false;
}

#endif
