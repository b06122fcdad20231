#include "profile.h"

#include <time.h>

_Thread_local struct bert_prof *bert_prof_active;

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t bert_prof_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void restart(struct bert_prof *p, int64_t cpu_now)
{
    p->mark_ns = cpu_now;
    p->wall_mark_ns = bert_prof_wall_ns();
    p->part_wall_ns = 0;
}

void bert_prof_charge(struct bert_prof *p, enum bert_op_class op)
{
    const int64_t now = thread_cpu_ns();
    p->ns[op] += now - p->mark_ns;
    restart(p, now);
}

void bert_prof_charge_split(struct bert_prof *p, enum bert_op_class op, enum bert_op_class part)
{
    const int64_t now = thread_cpu_ns(), cpu = now - p->mark_ns;
    const int64_t wall = bert_prof_wall_ns() - p->wall_mark_ns;
    /* Preemption stretches the wall clock, not the thread's: as likely
     * inside the part's stretches as outside, so the share holds. */
    double share = 0.0;
    if (wall > 0)
        share = p->part_wall_ns < wall ? (double)p->part_wall_ns / (double)wall : 1.0;
    const int64_t part_ns = (int64_t)((double)cpu * share);
    p->ns[part] += part_ns;
    p->ns[op] += cpu - part_ns;
    restart(p, now);
}

void bert_prof_begin(struct bert_prof *p)
{
    bert_prof_active = p;
    if (p != NULL)
        restart(p, thread_cpu_ns());
}

void bert_prof_end(void)
{
    prof_lap(BERT_OP_OTHER);
    bert_prof_active = NULL;
}

const char *bert_op_class_name(enum bert_op_class op)
{
    switch (op) {
    case BERT_OP_DENSE:
        return "dense";
    case BERT_OP_ATTENTION:
        return "attention";
    case BERT_OP_SOFTMAX:
        return "softmax";
    case BERT_OP_ACTIVATION:
        return "activation";
    case BERT_OP_NORM:
        return "layernorm_bias_residual";
    case BERT_OP_CONVERT:
        return "convert";
    case BERT_OP_EMBED:
        return "embeddings";
    case BERT_OP_OTHER:
    case BERT_OP_CLASSES:
        break;
    }
    return "other";
}
