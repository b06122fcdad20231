#include "profile.h"

#include <time.h>

_Thread_local struct bert_prof *bert_prof_active;

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void bert_prof_charge(struct bert_prof *p, enum bert_op_class op)
{
    const int64_t now = thread_cpu_ns();
    p->ns[op] += now - p->mark_ns;
    p->mark_ns = now;
}

void bert_prof_begin(struct bert_prof *p)
{
    bert_prof_active = p;
    if (p != NULL)
        p->mark_ns = thread_cpu_ns();
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
