#include "metrics.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The labels of the server's own routes, which follow the proto routes'. */
static const char *const server_labels[] = {
    [METRICS_ROUTE_HEALTH - PROTO_ROUTE_COUNT] = "health",
    [METRICS_ROUTE_READY - PROTO_ROUTE_COUNT] = "ready",
    [METRICS_ROUTE_INFO - PROTO_ROUTE_COUNT] = "info",
    [METRICS_ROUTE_METRICS - PROTO_ROUTE_COUNT] = "metrics",
    [METRICS_ROUTE_MODELS - PROTO_ROUTE_COUNT] = "models",
    [METRICS_ROUTE_OTHER - PROTO_ROUTE_COUNT] = "other",
};
_Static_assert(sizeof server_labels / sizeof server_labels[0] ==
                   METRICS_ROUTE_COUNT - PROTO_ROUTE_COUNT,
               "a label for every server route of enum metrics_route");

static const char *route_label(int route)
{
    return route < PROTO_ROUTE_COUNT ? proto_route_name((enum proto_route)route)
                                     : server_labels[route - PROTO_ROUTE_COUNT];
}

/* Every status the server answers with, and 499 (nginx's "client closed
 * request") for a request whose client left before its answer. */
static const int statuses[] = {200, 204, 400, 401, 404, 405, 413, 414, 417, 422,
                               429, 431, 499, 500, 501, 503, 505};
#define N_STATUSES (sizeof statuses / sizeof statuses[0])

static const double time_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                      0.1,    0.25,  0.5,    1.0,   2.5,  5.0,   10.0, 30.0};
#define N_TIME_BUCKETS (sizeof time_buckets / sizeof time_buckets[0])
static const double seq_buckets[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
#define N_SEQ_BUCKETS (sizeof seq_buckets / sizeof seq_buckets[0])
static const double token_buckets[] = {16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
#define N_TOKEN_BUCKETS (sizeof token_buckets / sizeof token_buckets[0])

#define MAX_BUCKETS 16

/* Sums are kept in millionths so they fit an atomic integer. */
struct histogram {
    _Atomic uint64_t buckets[MAX_BUCKETS + 1]; /* last: above every bound */
    _Atomic uint64_t sum_micro;
    _Atomic uint64_t count;
};

static struct {
    _Atomic uint64_t requests[METRICS_ROUTE_COUNT][N_STATUSES];
    _Atomic uint64_t tokens[METRICS_ROUTE_COUNT];
    struct histogram total[METRICS_ROUTE_COUNT];
    struct histogram stage[METRICS_STAGE_COUNT];
    struct histogram batch_sequences;
    struct histogram batch_tokens;
} m;

static void observe(struct histogram *h, const double *bounds, size_t n, double v)
{
    size_t i = 0;
    while (i < n && v > bounds[i])
        i++;
    atomic_fetch_add_explicit(&h->buckets[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_micro, (uint64_t)(v * 1e6 + 0.5), memory_order_relaxed);
    atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
}

void metrics_request(enum metrics_route route, int status, double total_seconds)
{
    for (size_t i = 0; i < N_STATUSES; i++) {
        if (statuses[i] == status) {
            atomic_fetch_add_explicit(&m.requests[route][i], 1, memory_order_relaxed);
            break;
        }
    }
    observe(&m.total[route], time_buckets, N_TIME_BUCKETS, total_seconds);
}

void metrics_stage(enum metrics_stage stage, double seconds)
{
    observe(&m.stage[stage], time_buckets, N_TIME_BUCKETS, seconds);
}

void metrics_batch(size_t sequences, size_t tokens)
{
    observe(&m.batch_sequences, seq_buckets, N_SEQ_BUCKETS, (double)sequences);
    observe(&m.batch_tokens, token_buckets, N_TOKEN_BUCKETS, (double)tokens);
}

void metrics_input_tokens(enum metrics_route route, size_t tokens)
{
    atomic_fetch_add_explicit(&m.tokens[route], tokens, memory_order_relaxed);
}

struct text {
    char *buf;
    size_t len, cap;
    int failed;
};

static void emit(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(struct text *t, const char *fmt, ...)
{
    for (int attempt = 0; attempt < 2 && !t->failed; attempt++) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = 1;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = (t->cap + (size_t)n) * 2;
        char *buf = realloc(t->buf, cap);
        if (buf == NULL) {
            t->failed = 1;
            return;
        }
        t->buf = buf;
        t->cap = cap;
    }
}

static void emit_histogram(struct text *t, const char *name, const char *labels,
                           const struct histogram *h, const double *bounds, size_t n)
{
    uint64_t cumulative = 0;
    const char *sep = labels[0] ? "," : "";
    for (size_t i = 0; i <= n; i++) {
        cumulative += atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
        if (i < n)
            emit(t, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, bounds[i],
                 (unsigned long long)cumulative);
        else
            emit(t, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
                 (unsigned long long)cumulative);
    }
    const char *open = labels[0] ? "{" : "", *close = labels[0] ? "}" : "";
    emit(t, "%s_sum%s%s%s %.6f\n", name, open, labels, close,
         (double)atomic_load_explicit(&h->sum_micro, memory_order_relaxed) / 1e6);
    emit(t, "%s_count%s%s%s %llu\n", name, open, labels, close,
         (unsigned long long)atomic_load_explicit(&h->count, memory_order_relaxed));
}

static size_t resident_bytes(void)
{
    FILE *fp = fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;
    if (fp != NULL) {
        if (fscanf(fp, "%lu %lu", &size, &resident) != 2)
            resident = 0;
        fclose(fp);
    }
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

char *metrics_render(const struct metrics_gauges *g, size_t *len)
{
    struct text t = {.cap = 16384};
    t.buf = malloc(t.cap);
    if (t.buf == NULL)
        return NULL;
    t.buf[0] = '\0';

    emit(&t, "# HELP bertserve_requests_total HTTP requests by route and status.\n"
             "# TYPE bertserve_requests_total counter\n");
    for (int r = 0; r < METRICS_ROUTE_COUNT; r++)
        for (size_t s = 0; s < N_STATUSES; s++)
            emit(&t, "bertserve_requests_total{route=\"%s\",status=\"%d\"} %llu\n",
                 route_label(r), statuses[s],
                 (unsigned long long)atomic_load_explicit(&m.requests[r][s],
                                                          memory_order_relaxed));

    emit(&t, "# HELP bertserve_input_tokens_total Tokens of accepted inputs by route.\n"
             "# TYPE bertserve_input_tokens_total counter\n");
    for (int r = 0; r < PROTO_ROUTE_COUNT; r++)
        emit(&t, "bertserve_input_tokens_total{route=\"%s\"} %llu\n", route_label(r),
             (unsigned long long)atomic_load_explicit(&m.tokens[r], memory_order_relaxed));

    emit(&t, "# HELP bertserve_request_duration_seconds Time from request to response.\n"
             "# TYPE bertserve_request_duration_seconds histogram\n");
    for (int r = 0; r < METRICS_ROUTE_COUNT; r++) {
        char labels[64];
        snprintf(labels, sizeof labels, "route=\"%s\"", route_label(r));
        emit_histogram(&t, "bertserve_request_duration_seconds", labels, &m.total[r],
                       time_buckets, N_TIME_BUCKETS);
    }
    static const char *const stage_names[METRICS_STAGE_COUNT][2] = {
        {"bertserve_queue_duration_seconds", "Time from admission to the first forward pass."},
        {"bertserve_tokenize_duration_seconds", "Time to parse and tokenise a request."},
        {"bertserve_inference_duration_seconds", "Time from the first forward pass to the last."},
    };
    for (int s = 0; s < METRICS_STAGE_COUNT; s++) {
        emit(&t, "# HELP %s %s\n# TYPE %s histogram\n", stage_names[s][0], stage_names[s][1],
             stage_names[s][0]);
        emit_histogram(&t, stage_names[s][0], "", &m.stage[s], time_buckets, N_TIME_BUCKETS);
    }
    emit(&t, "# HELP bertserve_batch_sequences Sequences per forward pass.\n"
             "# TYPE bertserve_batch_sequences histogram\n");
    emit_histogram(&t, "bertserve_batch_sequences", "", &m.batch_sequences, seq_buckets,
                   N_SEQ_BUCKETS);
    emit(&t, "# HELP bertserve_batch_tokens Tokens per forward pass.\n"
             "# TYPE bertserve_batch_tokens histogram\n");
    emit_histogram(&t, "bertserve_batch_tokens", "", &m.batch_tokens, token_buckets,
                   N_TOKEN_BUCKETS);

    emit(&t,
         "# HELP bertserve_queue_sequences Sequences waiting for a worker.\n"
         "# TYPE bertserve_queue_sequences gauge\nbertserve_queue_sequences %zu\n"
         "# HELP bertserve_queue_tokens Tokens waiting for a worker.\n"
         "# TYPE bertserve_queue_tokens gauge\nbertserve_queue_tokens %zu\n"
         "# HELP bertserve_requests_in_flight Admitted requests not yet computed.\n"
         "# TYPE bertserve_requests_in_flight gauge\nbertserve_requests_in_flight %zu\n"
         "# HELP bertserve_ready 1 while the server accepts requests.\n"
         "# TYPE bertserve_ready gauge\nbertserve_ready %d\n"
         "# HELP bertserve_loop_cpu_seconds_total CPU time of the event-loop threads, all together.\n"
         "# TYPE bertserve_loop_cpu_seconds_total counter\n"
         "bertserve_loop_cpu_seconds_total %.6f\n"
         "# HELP bertserve_prepare_cpu_seconds_total CPU time of the prepare threads.\n"
         "# TYPE bertserve_prepare_cpu_seconds_total counter\n"
         "bertserve_prepare_cpu_seconds_total %.6f\n"
         "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
         "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %zu\n",
         g->queue_sequences, g->queue_tokens, g->in_flight, g->ready, g->loop_cpu_seconds,
         g->prepare_cpu_seconds, resident_bytes());
    if (t.failed) {
        free(t.buf);
        return NULL;
    }
    *len = t.len;
    return t.buf;
}
