/* Prometheus metrics. Every series exists from start-up (zeros included) so
 * dashboards and alerts never see gaps. Counters and histograms are
 * lock-free atomics: any thread may record; rendering runs on the loop. */
#ifndef SRV_METRICS_H
#define SRV_METRICS_H

#include <stddef.h>

/* Route labels: the inference routes in proto_route order (http.c casts one
 * to the other), then the rest. */
enum metrics_route {
    METRICS_ROUTE_EMBED,
    METRICS_ROUTE_FILL_MASK,
    METRICS_ROUTE_CLASSIFY,
    METRICS_ROUTE_TOKENIZE,
    METRICS_ROUTE_OPENAI_EMBED,
    METRICS_ROUTE_RERANK,
    METRICS_ROUTE_V1_RERANK,
    METRICS_ROUTE_REPLACED_TOKENS,
    METRICS_ROUTE_HEALTH,
    METRICS_ROUTE_READY,
    METRICS_ROUTE_INFO,
    METRICS_ROUTE_METRICS,
    METRICS_ROUTE_OTHER,
    METRICS_ROUTE_COUNT
};

enum metrics_stage {
    METRICS_STAGE_QUEUE,      /* admitted -> first sequence starts computing */
    METRICS_STAGE_TOKENIZE,   /* parse + tokenise */
    METRICS_STAGE_INFERENCE,  /* first compute -> last sequence done */
    METRICS_STAGE_COUNT
};

void metrics_request(enum metrics_route route, int status, double total_seconds);
void metrics_stage(enum metrics_stage stage, double seconds);
void metrics_batch(size_t sequences, size_t tokens);
void metrics_input_tokens(enum metrics_route route, size_t tokens);

/* Point-in-time values the caller reads from the batcher. */
struct metrics_gauges {
    size_t queue_sequences;
    size_t queue_tokens;
    size_t in_flight;
    int ready;
};

/* Render the exposition text; malloc'd, caller frees. */
char *metrics_render(const struct metrics_gauges *g, size_t *len);

#endif
