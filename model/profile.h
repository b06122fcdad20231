/* Per-op-class timing of a forward pass (bert_scratch_profile, bert.h).
 *
 * Each team member laps a thread CPU clock: prof_lap(op) charges the time
 * since the member's previous lap to `op`. The kernels lap themselves
 * (entry: what ran since the last lap is BERT_OP_OTHER; exit: their own
 * class), so a family's encode function needs no timers of its own and
 * everything a member does between the start and the end of its share of
 * a pass lands in exactly one class: the classes add up to the pass.
 *
 * Off (the default) a lap is one thread-local load and a branch: the
 * active accumulator is per thread, set by encoder.c around a member's
 * share of a pass only while profiling is on. Private to model/. */
#ifndef BERT_PROFILE_H
#define BERT_PROFILE_H

#include <stdint.h>

#include "bert.h"

/* One member's sums: nanoseconds of thread CPU time per class. */
struct bert_prof {
    int64_t mark_ns;
    int64_t ns[BERT_OP_CLASSES];
    int64_t wall_mark_ns; /* monotonic clock at the last lap */
    int64_t part_wall_ns; /* monotonic time in prof_part stretches since */
};

extern _Thread_local struct bert_prof *bert_prof_active;

void bert_prof_charge(struct bert_prof *p, enum bert_op_class op);
void bert_prof_charge_split(struct bert_prof *p, enum bert_op_class op, enum bert_op_class part);
int64_t bert_prof_wall_ns(void);

static inline void prof_lap(enum bert_op_class op)
{
    struct bert_prof *p = bert_prof_active;
    if (__builtin_expect(p != NULL, 0))
        bert_prof_charge(p, op);
}

/* A second class interleaved with an op too finely for the thread CPU
 * clock (a system call: about a microsecond on a VM, against a
 * microsecond or two per block of attention): the op times its stretches
 * of it on the monotonic clock (the vDSO, tens of nanoseconds),
 *     const int64_t t = prof_part_begin();  ...  prof_part_end(t);
 * and ends with prof_lap_split(op, part), which charges the part's share
 * of the wall time since the previous lap, of the thread CPU time since
 * then, to `part` and the rest to `op`. */
static inline int64_t prof_part_begin(void)
{
    return __builtin_expect(bert_prof_active != NULL, 0) ? bert_prof_wall_ns() : 0;
}

static inline void prof_part_end(int64_t begin)
{
    struct bert_prof *p = bert_prof_active;
    if (__builtin_expect(p != NULL, 0))
        p->part_wall_ns += bert_prof_wall_ns() - begin;
}

static inline void prof_lap_split(enum bert_op_class op, enum bert_op_class part)
{
    struct bert_prof *p = bert_prof_active;
    if (__builtin_expect(p != NULL, 0))
        bert_prof_charge_split(p, op, part);
}

/* Start charging this thread's time to `p` (NULL: profiling off). */
void bert_prof_begin(struct bert_prof *p);
/* Charge the rest to BERT_OP_OTHER and stop. */
void bert_prof_end(void);

#endif
