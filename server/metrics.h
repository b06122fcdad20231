/* Prometheus metrics. Every series exists from start-up (zeros included) so
 * dashboards and alerts never see gaps. Counters and histograms are
 * lock-free atomics: any thread may record; rendering runs on the loop. */
#ifndef SRV_METRICS_H
#define SRV_METRICS_H

#include <stddef.h>

#include "proto.h"

/* Route labels, one index space: every proto route at its enum proto_route
 * value, labelled with its proto_route_name (so a route added to proto's
 * table is counted with no change here), then the server's own routes,
 * then everything else. */
enum metrics_route {
    METRICS_ROUTE_HEALTH = PROTO_ROUTE_COUNT,
    METRICS_ROUTE_READY,
    METRICS_ROUTE_INFO,
    METRICS_ROUTE_METRICS,
    METRICS_ROUTE_MODELS,     /* GET /v1/models and /v1/models/{id} */
    METRICS_ROUTE_OTHER,
    METRICS_ROUTE_COUNT
};

/* The label index of a proto route. */
static inline enum metrics_route metrics_route_of(enum proto_route route)
{
    return (enum metrics_route)route;
}

enum metrics_stage {
    METRICS_STAGE_QUEUE,      /* admitted -> first sequence starts computing */
    METRICS_STAGE_TOKENIZE,   /* parse + tokenise */
    METRICS_STAGE_INFERENCE,  /* first compute -> last sequence done */
    METRICS_STAGE_COUNT
};

/* One request answered with `status` (499: its client left first) after
 * `total_seconds`; a status outside metrics.c's list counts only in the
 * duration histogram. */
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
    /* CPU time the event-loop threads have used since they began serving,
     * all together: what one loop can carry per request is 1 / (the CPU per
     * request of one loop). */
    double loop_cpu_seconds;
    double prepare_cpu_seconds; /* the prepare threads', all together */
};

/* Render the exposition text; malloc'd, caller frees. */
char *metrics_render(const struct metrics_gauges *g, size_t *len);

#endif
