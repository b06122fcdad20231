/* Dense layers (y = x W^T, W stored (out, in) as torch.nn.Linear does) run by
 * a compute team: each member takes a share of the rows, or of the output
 * columns when there are too few rows to go round. */
#ifndef BERT_LINEAR_H
#define BERT_LINEAR_H

#include <stdbool.h>
#include <stddef.h>

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
