#include "team.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* How many pause instructions a waiting member spins before sleeping:
 * tens of microseconds, longer than a barrier wait within a pass, far
 * shorter than the gap between requests. Sleeping (not yielding) matters
 * when the CPUs are oversubscribed: a spinning or yielding member can keep
 * the one it waits for off the CPU for a whole time slice. */
#define SPIN_ROUNDS 1000

struct bert_team {
    size_t n;
    size_t width;            /* members that run the next job (1..n) */
    pthread_t *helpers;
    bert_team_job job;
    void *arg;
    atomic_uint job_gen;     /* bumped to start a job; helpers wait for a change */
    atomic_uint finished;    /* helpers done with the current job */
    atomic_bool stop;
    atomic_uint sleepers;    /* helpers asleep on `wake` */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    atomic_uint bar_count;   /* members at the barrier */
    atomic_uint bar_gen;     /* bumped when the last one arrives */
    atomic_uint bar_sleepers; /* members asleep on bar_gen */
    atomic_bool caller_asleep; /* member 0 asleep on `finished` */
};

struct helper_arg {
    struct bert_team *team;
    size_t member;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Sleep while *word == expected (returns at once if it already differs). */
static void futex_wait(atomic_uint *word, unsigned expected)
{
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void futex_wake_all(atomic_uint *word)
{
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void *helper_main(void *p)
{
    struct helper_arg *ha = p;
    struct bert_team *t = ha->team;
    const size_t member = ha->member;
    free(ha);
    unsigned seen = 0;
    for (;;) {
        unsigned gen;
        int spins = 0;
        while ((gen = atomic_load_explicit(&t->job_gen, memory_order_acquire)) == seen) {
            if (++spins < SPIN_ROUNDS) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&t->lock);
            atomic_fetch_add(&t->sleepers, 1);
            while (atomic_load(&t->job_gen) == seen)
                pthread_cond_wait(&t->wake, &t->lock);
            atomic_fetch_sub(&t->sleepers, 1);
            pthread_mutex_unlock(&t->lock);
            spins = 0;
        }
        seen = gen;
        if (atomic_load(&t->stop))
            return NULL;
        if (member < t->width)
            t->job(t->arg, member, t->width);
        atomic_fetch_add(&t->finished, 1);
        if (atomic_load(&t->caller_asleep))
            futex_wake_all(&t->finished);
    }
}

struct bert_team *bert_team_new(size_t n_threads, struct bert_error *err)
{
    struct bert_team *t = calloc(1, sizeof *t);
    if (t == NULL) {
        bert_error_set(err, BERT_E_NOMEM, "out of memory");
        return NULL;
    }
    t->n = n_threads > 0 ? n_threads : 1;
    t->width = t->n;
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->wake, NULL);
    t->helpers = calloc(t->n, sizeof *t->helpers);
    if (t->helpers == NULL) {
        bert_team_free(t);
        bert_error_set(err, BERT_E_NOMEM, "out of memory");
        return NULL;
    }
    for (size_t m = 1; m < t->n; m++) {
        struct helper_arg *ha = malloc(sizeof *ha);
        if (ha != NULL)
            *ha = (struct helper_arg){t, m};
        if (ha == NULL || pthread_create(&t->helpers[m], NULL, helper_main, ha) != 0) {
            free(ha);
            t->n = m; /* only the started helpers are joined */
            bert_team_free(t);
            bert_error_set(err, BERT_E_NOMEM, "cannot start compute thread %zu", m);
            return NULL;
        }
    }
    return t;
}

void bert_team_free(struct bert_team *t)
{
    if (t == NULL)
        return;
    if (t->n > 1) {
        pthread_mutex_lock(&t->lock);
        atomic_store(&t->stop, true);
        atomic_fetch_add(&t->job_gen, 1);
        pthread_cond_broadcast(&t->wake);
        pthread_mutex_unlock(&t->lock);
        for (size_t m = 1; m < t->n; m++)
            pthread_join(t->helpers[m], NULL);
    }
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->wake);
    free(t->helpers);
    free(t);
}

size_t bert_team_size(const struct bert_team *t)
{
    return t->n;
}

void bert_team_set_width(struct bert_team *t, size_t width)
{
    t->width = width < 1 ? 1 : width > t->n ? t->n : width;
}

void bert_team_run(struct bert_team *t, bert_team_job job, void *arg)
{
    if (t->width == 1) {
        job(arg, 0, 1);
        return;
    }
    t->job = job;
    t->arg = arg;
    atomic_store_explicit(&t->finished, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->job_gen, 1, memory_order_release);
    if (atomic_load(&t->sleepers) > 0) {
        pthread_mutex_lock(&t->lock);
        pthread_cond_broadcast(&t->wake);
        pthread_mutex_unlock(&t->lock);
    }
    job(arg, 0, t->width);
    int spins = 0;
    unsigned done;
    while ((done = atomic_load(&t->finished)) != t->n - 1) {
        if (++spins < SPIN_ROUNDS) {
            cpu_relax();
            continue;
        }
        atomic_store(&t->caller_asleep, true);
        done = atomic_load(&t->finished);
        if (done != t->n - 1)
            futex_wait(&t->finished, done);
        atomic_store(&t->caller_asleep, false);
    }
}

void bert_team_barrier(struct bert_team *t)
{
    if (t->width == 1)
        return;
    unsigned gen = atomic_load_explicit(&t->bar_gen, memory_order_acquire);
    if (atomic_fetch_add_explicit(&t->bar_count, 1, memory_order_acq_rel) == t->width - 1) {
        atomic_store_explicit(&t->bar_count, 0, memory_order_relaxed);
        atomic_fetch_add(&t->bar_gen, 1);
        if (atomic_load(&t->bar_sleepers) > 0)
            futex_wake_all(&t->bar_gen);
        return;
    }
    int spins = 0;
    while (atomic_load_explicit(&t->bar_gen, memory_order_acquire) == gen) {
        if (++spins < SPIN_ROUNDS) {
            cpu_relax();
            continue;
        }
        /* Counted before the kernel re-checks bar_gen, so the last arrival
         * either sees this sleeper or the kernel sees the new generation. */
        atomic_fetch_add(&t->bar_sleepers, 1);
        futex_wait(&t->bar_gen, gen);
        atomic_fetch_sub(&t->bar_sleepers, 1);
    }
}
