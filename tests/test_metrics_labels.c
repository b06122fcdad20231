/* server/metrics.c: the route labels of /metrics, which dashboards and
 * alerts select on, and the series the benchmarks read. Proto routes take theirs from the route table, the
 * server's own routes from metrics.c; together they must stay exactly
 * these, in this order, and a request counted under a route shows under
 * its label. */
#include <stdlib.h>

#include "check.h"
#include "metrics.h"

static const char *const labels[] = {
    "embed", "fill-mask", "classify", "tokenize", "openai-embeddings", "rerank", "v1-rerank",
    "replaced-tokens", "token-classification", "question-answering", "zero-shot-classification",
    "predict", "similarity", "v2-rerank", "decode", "embed-all", "embed-sparse", "score",
    "v1-score", "cohere-embed", "cohere-v2-embed", "vllm-classify", "pooling", "health", "ready", "info",
    "metrics", "models", "other",
};
#define N_LABELS (sizeof labels / sizeof labels[0])

/* The route labels of `series` lines in `text`, in order, each once. */
static size_t labels_of(const char *text, const char *series, const char *out[], size_t cap)
{
    size_t n = 0;
    char prefix[96];
    snprintf(prefix, sizeof prefix, "%s{route=\"", series);
    for (const char *p = strstr(text, prefix); p != NULL; p = strstr(p + 1, prefix)) {
        const char *label = p + strlen(prefix);
        size_t len = strcspn(label, "\"");
        if (n > 0 && strncmp(out[n - 1], label, len) == 0 && out[n - 1][len] == '\0')
            continue;
        if (n == cap)
            return n + 1;
        char *copy = malloc(len + 1);
        memcpy(copy, label, len);
        copy[len] = '\0';
        out[n++] = copy;
    }
    return n;
}

static void check_series(const char *text, const char *series, size_t n_want)
{
    const char *got[N_LABELS + 1] = {0};
    size_t n = labels_of(text, series, got, N_LABELS + 1);
    CHECK_INT_EQ(n, n_want);
    for (size_t i = 0; i < n && i < n_want; i++)
        CHECK_STR_EQ(got[i], labels[i]);
    for (size_t i = 0; i < n && i <= N_LABELS; i++)
        free((char *)got[i]);
}

int main(void)
{
    metrics_request(metrics_route_of(PROTO_ROUTE_V1_RERANK), 422, 0.001);
    metrics_request(METRICS_ROUTE_OTHER, 404, 0.001);
    metrics_request(metrics_route_of(PROTO_ROUTE_EMBED), 204, 0.001); /* a CORS preflight */
    metrics_request(metrics_route_of(PROTO_ROUTE_EMBED), 499, 0.001); /* its client left */
    metrics_request(metrics_route_of(PROTO_ROUTE_EMBED), 499, 0.001);
    metrics_input_tokens(metrics_route_of(PROTO_ROUTE_REPLACED_TOKENS), 7);

    struct metrics_gauges g = {.ready = 1, .loop_cpu_seconds = 1.5, .prepare_cpu_seconds = 0.25};
    size_t len = 0;
    char *text = metrics_render(&g, &len);
    CHECK(text != NULL);
    if (text == NULL)
        return check_exit();
    CHECK_INT_EQ(strlen(text), len);
    check_series(text, "bertserve_requests_total", N_LABELS);
    check_series(text, "bertserve_request_duration_seconds_count", N_LABELS);
    /* Only proto routes tokenize. */
    check_series(text, "bertserve_input_tokens_total", PROTO_ROUTE_COUNT);

    CHECK_CONTAINS(text, "bertserve_requests_total{route=\"v1-rerank\",status=\"422\"} 1\n");
    CHECK_CONTAINS(text, "bertserve_requests_total{route=\"other\",status=\"404\"} 1\n");
    CHECK_CONTAINS(text, "bertserve_requests_total{route=\"embed\",status=\"204\"} 1\n");
    CHECK_CONTAINS(text, "bertserve_requests_total{route=\"embed\",status=\"499\"} 2\n");
    CHECK_CONTAINS(text, "bertserve_input_tokens_total{route=\"replaced-tokens\"} 7\n");
    /* The CPU counters http_bench.py divides by the requests answered. */
    CHECK_CONTAINS(text, "# TYPE bertserve_loop_cpu_seconds_total counter\n"
                         "bertserve_loop_cpu_seconds_total 1.500000\n");
    CHECK_CONTAINS(text, "# TYPE bertserve_prepare_cpu_seconds_total counter\n"
                         "bertserve_prepare_cpu_seconds_total 0.250000\n");
    free(text);
    return check_exit();
}
