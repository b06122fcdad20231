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
};

extern _Thread_local struct bert_prof *bert_prof_active;

void bert_prof_charge(struct bert_prof *p, enum bert_op_class op);

static inline void prof_lap(enum bert_op_class op)
{
    struct bert_prof *p = bert_prof_active;
    if (__builtin_expect(p != NULL, 0))
        bert_prof_charge(p, op);
}

/* Start charging this thread's time to `p` (NULL: profiling off). */
void bert_prof_begin(struct bert_prof *p);
/* Charge the rest to BERT_OP_OTHER and stop. */
void bert_prof_end(void);

#endif
