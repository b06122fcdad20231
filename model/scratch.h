/* Layout of a worker's scratch memory and its thread team; internal to
 * encoder.c and heads.c. One allocation, sized once, views into it (llm.c's
 * habit). */
#ifndef BERT_SCRATCH_H
#define BERT_SCRATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "encoder.h"
#include "team.h"

/* The MLM decoder runs over this many [MASK] rows at a time: the logits
 * buffer is (MLM_ROW_BLOCK x vocab). */
#define MLM_ROW_BLOCK 32

struct bert_scratch {
    size_t max_tokens;
    size_t max_seq_len;
    size_t bytes;
    float *memory;   /* the one allocation */
    float *x;        /* (T, H) hidden states */
    float *qkv;      /* (T, 3H) query | key | value per row */
    float *ctx;      /* (T, H) attention context; heads reuse it */
    float *tmp;      /* (T, H) projection outputs; heads reuse it */
    float *ffn;      /* (T, I) */
    float *attn;     /* (members, attn_floats) attention workspaces */
    size_t attn_floats;
    float *logits;   /* (MLM_ROW_BLOCK, V), NULL without an MLM head */
    struct bert_team *team;
    atomic_size_t next_item;       /* dynamic scheduling of attention heads */
    struct bert_mask_row *masks;   /* (max_tokens) the [MASK] rows of a fill-mask batch */
};

/* A [MASK] row: where it is, whose it is, and which of that sequence's masks. */
struct bert_mask_row {
    size_t row, seq, ord;
};

/* One member's share of a pass: its rows, and whether matrix products are
 * split by rows (enough rows for every member) or by output columns (few
 * rows: splitting them would make each member pack the whole weight matrix
 * for a sliver of work). */
struct bert_share {
    size_t member, n_members;
    size_t rows;       /* T */
    size_t r0, r1;     /* this member's rows */
    bool by_rows;
};

struct bert_share bert_share_of(size_t rows, size_t member, size_t n_members);

/* y (rows, out) = x (rows, in) W^T for this member's share; W (out, in) as
 * torch.nn.Linear stores it. */
void bert_linear_share(const struct bert_share *p, const float *x, size_t in, const float *w,
                       size_t out, float *y, size_t ldy);

/* Columns [c0, c1) of `out` that are this member's when splitting columns,
 * or all of them when splitting rows. */
void bert_share_cols(const struct bert_share *p, size_t out, size_t *c0, size_t *c1);

#endif
