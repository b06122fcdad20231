/* Layout of a worker's scratch memory; internal to encoder.c and heads.c.
 * One allocation, sized once, views into it (llm.c's habit). */
#ifndef BERT_SCRATCH_H
#define BERT_SCRATCH_H

#include <stddef.h>

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
    float *attn;     /* attention_head's workspace, O(max_seq_len) */
    float *logits;   /* (MLM_ROW_BLOCK, V), NULL without an MLM head */
    size_t mlm_seq[MLM_ROW_BLOCK]; /* which sequence each gathered mask row is from */
    size_t mlm_ord[MLM_ROW_BLOCK]; /* which of that sequence's masks it is */
};

#endif
