/* Layout of a worker's scratch memory and its thread team; internal to
 * the encoders (encoder.c, the family files), attention.c and heads.c. One
 * allocation, sized once, views into it (llm.c's habit). */
#ifndef BERT_SCRATCH_H
#define BERT_SCRATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "bert.h"
#include "linear.h"
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
    float *f32_buf;  /* (members, LINEAR_F32_BUFFER_FLOATS) for packed f32 products; NULL
                      * when the model has none (bert_model.f32_packing) */
    struct bert_team *team;
    atomic_size_t next_item;       /* dynamic scheduling of attention heads */
    struct bert_mask_row *masks;   /* (max_tokens) the [MASK] rows of a fill-mask batch */
    struct linear_bf16_ctx **bf16; /* (members) their bf16 contexts; NULL: the model runs f32 */
    struct linear_int8_ctx **int8; /* (members) their int8 contexts; NULL: no int8 products */
    struct bert_prof *prof;        /* (members) op-class times (profile.h) */
    bool profiling;                /* members charge their time to prof */
};

/* A [MASK] row: where it is, whose it is, and which of that sequence's masks. */
struct bert_mask_row {
    size_t row, seq, ord;
};

#endif
