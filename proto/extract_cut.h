/* Cutting an input encoded whole into the sequences an extraction route
 * runs: a long text's windows (token classification), a long context's
 * chunks (question answering), a premise truncated to fit its hypothesis
 * (zero-shot). One part of the encoding (the text, or the pair) is cut as
 * `tokenizers` cuts it; the template's specials and the other part are
 * copied into every window unchanged. Internal to proto/. */
#ifndef PROTO_EXTRACT_CUT_H
#define PROTO_EXTRACT_CUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "extract.h"
#include "proto.h"

struct extract_cut {
    struct bert_encoding whole; /* the input, specials included, nothing cut */
    size_t p0, n_part;          /* the part that is cut: tokens [p0, p0 + n_part) */
    size_t budget;              /* part tokens one window holds */
    struct extract_span *spans; /* (n_windows) windows of the part, relative to p0 */
    size_t n_windows;
};

enum extract_cut_status {
    EXTRACT_CUT_OK,
    EXTRACT_CUT_NO_ROOM,  /* the tokens that are not cut already fill max_len */
    EXTRACT_CUT_STRIDE,   /* stride >= budget: windows would never advance */
    EXTRACT_CUT_NO_MEMORY,
};

/* Plan the windows of c->whole's sequence `part` (0: the text, 1: the pair)
 * so that each window is at most max_len tokens: with `has_stride`, windows
 * overlapping by `stride` tokens until one reaches the end; without, the
 * first window only (truncation). A whole encoding within max_len is one
 * window. */
enum extract_cut_status extract_cut_plan(struct extract_cut *c, uint8_t part, size_t max_len,
                                         bool has_stride, size_t stride);

/* Append the windows of cuts[0..n) to job->seqs as sequences, in order,
 * recording each one's input in job->seq_input (both allocated here for
 * every window of the n cuts). `one_type`: the model has one token type,
 * so the pair's type ids are written 0. False with err set when out of
 * memory. */
bool extract_cut_to_job(struct proto_job *job, const struct extract_cut *cuts, size_t n,
                        bool one_type, struct proto_error *err);

void extract_cut_free(struct extract_cut *c);

/* The longest sequence the route may run: the model's limit, or the
 * configured one when that is smaller. */
size_t extract_max_tokens(const struct bert_model *model, const struct proto_limits *limits);

/* The character offsets of a window's tokens into the text they came from
 * (sequence `part`; every other token gets 0, 0), into start/end. */
void extract_char_offsets(const struct bert_encoding *e, uint8_t part,
                          const struct extract_text *t, uint32_t *start, uint32_t *end);

#endif
