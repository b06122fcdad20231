/* A forward pass's thread team: the calling thread plus (n - 1) helpers that
 * run the same job on their share of the rows and meet at barriers. Helpers
 * spin briefly between jobs (a pass issues many) and sleep when idle. Owned
 * by one scratch, so by one worker; with n = 1 no thread exists.
 *
 * Threading: bert_team_run must not be called concurrently on one team; the
 * job function runs on every member at once. */
#ifndef BERT_TEAM_H
#define BERT_TEAM_H

#include <stddef.h>

#include "status.h"

struct bert_team;

typedef void (*bert_team_job)(void *arg, size_t member, size_t n_members);

struct bert_team *bert_team_new(size_t n_threads, struct bert_error *err);
/* NULL is a no-op. */
void bert_team_free(struct bert_team *t);
size_t bert_team_size(const struct bert_team *t);

/* How many members run the following jobs (clamped to 1..size; initially
 * all). A narrower team leaves the CPUs of the others to other work: one
 * thread alone needs no barrier, so nothing it does waits on a member that
 * another thread has pushed off its CPU. Not while a job runs. */
void bert_team_set_width(struct bert_team *t, size_t width);

/* Run job(arg, m, n) on every member m < n = the width (the caller is
 * member 0) and return when all have finished. */
void bert_team_run(struct bert_team *t, bert_team_job job, void *arg);

/* Inside a job: wait until every member has reached the barrier. */
void bert_team_barrier(struct bert_team *t);

/* [begin, end) of `total` items for `member` of `n`: contiguous, balanced. */
static inline void bert_team_share(size_t total, size_t member, size_t n, size_t *begin,
                                   size_t *end)
{
    *begin = total * member / n;
    *end = total * (member + 1) / n;
}

#endif
