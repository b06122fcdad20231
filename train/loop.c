/* Shared by the training loops (loop.h), and the held-out split (train_loop.h). */
#include "loop.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "train_loop.h"

size_t train_heldout_sequences(size_t n_seqs, double share, size_t max)
{
    size_t n = n_seqs >= 2 ? (size_t)((double)n_seqs * share) : 0;
    return n < max ? n : max;
}

bool batch_buf_init(struct batch_buf *b, size_t seqs, size_t max_len)
{
    b->ids = malloc(seqs * max_len * sizeof *b->ids);
    b->types = calloc(seqs * max_len, sizeof *b->types);
    b->labels = malloc(seqs * max_len * sizeof *b->labels);
    b->cls_labels = malloc(seqs * sizeof *b->cls_labels);
    b->pred = malloc(seqs * sizeof *b->pred);
    b->start = malloc((seqs + 1) * sizeof *b->start);
    return b->ids && b->types && b->labels && b->cls_labels && b->pred && b->start;
}

void batch_buf_free(struct batch_buf *b)
{
    free(b->ids);
    free(b->types);
    free(b->labels);
    free(b->cls_labels);
    free(b->pred);
    free(b->start);
    memset(b, 0, sizeof *b);
}

void loop_shuffle(size_t *order, size_t n, uint64_t seed, size_t epoch)
{
    struct train_rng rng = train_rng_for(seed, epoch, TRAIN_STREAM_SHUFFLE);
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t i = n; i > 1; i--) {
        size_t j = train_rng_below(&rng, i), t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
}

void loop_set_dropout(struct train_batch *tb, double p, uint64_t seed, size_t step)
{
    struct train_rng rng = train_rng_for(seed, step, TRAIN_STREAM_DROPOUT);
    tb->dropout = (float)p;
    tb->dropout_seed = train_rng_next(&rng);
}

void loop_set_second_dropout(struct train_batch *tb, double p, uint64_t seed, size_t step)
{
    struct train_rng rng = train_rng_for(seed, step, TRAIN_STREAM_DROPOUT);
    train_rng_next(&rng);
    tb->dropout = (float)p;
    tb->dropout_seed = train_rng_next(&rng);
}

void loop_say(FILE *out, const char *fmt, ...)
{
    if (out == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fflush(out);
}

double loop_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void loop_format_duration(double s, char *buf, size_t n)
{
    long t = s > 0 ? (long)(s + 0.5) : 0;
    if (t >= 3600)
        snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
}
