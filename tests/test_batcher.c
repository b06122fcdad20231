/* The micro-batcher's taking rule, on requests made up here (no model, no
 * threads; take() calls batcher_next only with work queued, so it never
 * blocks). */
#include <stdlib.h>
#include <time.h>

#include "batcher.h"
#include "check.h"

#define MAX_REQUESTS 128

static struct srv_request requests[MAX_REQUESTS];
static size_t n_requests;

/* A request of `n_seqs` sequences of `len` tokens each; only the lengths
 * matter to the batcher. */
static struct srv_request *make_request(size_t n_seqs, size_t len)
{
    struct srv_request *r = &requests[n_requests++];
    r->job.seqs = calloc(n_seqs, sizeof *r->job.seqs);
    for (size_t i = 0; i < n_seqs; i++)
        r->job.seqs[i].enc.n = len;
    r->job.n_seqs = n_seqs;
    r->job.n_tokens = n_seqs * len;
    r->client_fd = -1;
    return r;
}

static void free_requests(void)
{
    for (size_t i = 0; i < n_requests; i++)
        free(requests[i].job.seqs);
    memset(requests, 0, sizeof requests);
    n_requests = 0;
}

static const struct batcher_limits two_workers = {
    .max_batch_tokens = 4096,
    .max_batch_sequences = 64,
    .max_queue_tokens = 65536,
    .max_concurrent_requests = 512,
    .n_workers = 2,
};

struct take {
    size_t items, dropped, left, tokens;
};

static struct take take(struct batcher *b)
{
    struct batch_item items[64], dropped[64];
    struct take t = {0};
    CHECK(batcher_stats(b).queued_sequences > 0);
    if (batcher_stats(b).queued_sequences == 0)
        return t;
    CHECK(batcher_next(b, items, &t.items, dropped, &t.dropped, &t.left));
    for (size_t i = 0; i < t.items; i++)
        t.tokens += items[i].req->job.seqs[items[i].seq].enc.n;
    return t;
}

static void submit(struct batcher *b, struct srv_request *r)
{
    CHECK_INT_EQ(batcher_submit(b, r), BATCHER_ADMITTED);
}

/* Light load: everything queued fits the smallest pass and goes at once. */
static void test_light_load_takes_everything(void)
{
    struct batcher *b = batcher_new(&two_workers);
    for (int i = 0; i < 8; i++)
        submit(b, make_request(1, 25));
    struct take t = take(b);
    CHECK_INT_EQ(t.items, 8);
    CHECK_INT_EQ(t.left, 0);
    batcher_free(b);
    free_requests();
}

/* 64 clients of 25 tokens on two workers: 1,600 tokens in flight, so a
 * pass takes a quarter (400 tokens), not the whole queue, and the other
 * worker finds the rest. */
static void test_heavy_load_takes_a_share(void)
{
    struct batcher *b = batcher_new(&two_workers);
    for (int i = 0; i < 64; i++)
        submit(b, make_request(1, 25));
    for (int pass = 0; pass < 4; pass++) {
        struct take t = take(b);
        CHECK_INT_EQ(t.items, 16);
        CHECK_INT_EQ(t.tokens, 400);
        CHECK_INT_EQ(t.left, 64 - 16 * (pass + 1));
    }
    /* Completed requests leave the share: with 4 of them in flight the
     * smallest pass (256 tokens) takes all that is queued again. */
    for (int i = 0; i < 60; i++)
        batcher_release(b, &requests[i]);
    for (int i = 0; i < 4; i++)
        submit(b, make_request(1, 25));
    struct take t = take(b);
    CHECK_INT_EQ(t.items, 4);
    batcher_free(b);
    free_requests();
}

/* The share never exceeds max_batch_tokens, and one sequence longer than
 * the share still goes, alone. */
static void test_bounds_of_the_share(void)
{
    struct batcher_limits limits = two_workers;
    limits.max_batch_tokens = 1000;
    struct batcher *b = batcher_new(&limits);
    for (int i = 0; i < 100; i++)
        submit(b, make_request(1, 100)); /* 10,000 in flight: a quarter is 2,500 */
    struct take t = take(b);
    CHECK_INT_EQ(t.tokens, 1000);
    batcher_free(b);
    free_requests();

    b = batcher_new(&two_workers);
    submit(b, make_request(1, 500));
    submit(b, make_request(4, 25)); /* 600 in flight: the share is the 256 floor */
    t = take(b);
    CHECK_INT_EQ(t.items, 1);
    CHECK_INT_EQ(t.tokens, 500);
    t = take(b);
    CHECK_INT_EQ(t.items, 4);
    CHECK_INT_EQ(t.left, 0);
    batcher_free(b);
    free_requests();
}

/* With max_wait_us, a worker stops waiting once a full pass is queued: its
 * share (here the 256-token floor), not max_batch_tokens. Waiting the whole
 * second would show as a wait of a second. */
static void test_wait_ends_at_a_full_pass(void)
{
    struct batcher_limits limits = two_workers;
    limits.max_wait_us = 1000000;
    struct batcher *b = batcher_new(&limits);
    for (int i = 0; i < 12; i++)
        submit(b, make_request(1, 25));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct take t = take(b);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK_INT_EQ(t.items, 10);
    CHECK(t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9 < 0.5);
    batcher_free(b);
    free_requests();
}

/* Sequences of a departed client are handed back as dropped, not taken,
 * and do not count against the pass. */
static void test_orphans_are_dropped(void)
{
    struct batcher *b = batcher_new(&two_workers);
    struct srv_request *gone = make_request(3, 25);
    submit(b, gone);
    submit(b, make_request(2, 25));
    atomic_store(&gone->orphaned, true);
    struct take t = take(b);
    CHECK_INT_EQ(t.dropped, 3);
    CHECK_INT_EQ(t.items, 2);
    CHECK_INT_EQ(t.left, 0);
    batcher_free(b);
    free_requests();
}

/* Whether the pass `items` (n of them) holds a sequence of `r`. */
static bool pass_has(const struct batch_item *items, size_t n, const struct srv_request *r)
{
    for (size_t i = 0; i < n; i++)
        if (items[i].req == r)
            return true;
    return false;
}

/* Issue 18: a one-line request behind four admitted requests of 32 x 500
 * tokens went after all 64,000 of their tokens (seconds); its first 512
 * tokens now ride the very next pass, beside the big ones' first tokens. */
static void test_a_small_request_rides_the_next_pass(void)
{
    struct batcher *b = batcher_new(&two_workers);
    for (int i = 0; i < 4; i++)
        submit(b, make_request(32, 500));
    struct srv_request *small = make_request(1, 5);
    submit(b, small);
    struct batch_item items[64], dropped[64];
    size_t n, n_dropped, left;
    CHECK(batcher_next(b, items, &n, dropped, &n_dropped, &left));
    CHECK(pass_has(items, n, small));
    CHECK_INT_EQ(n, 9); /* two sequences of each big request (their 512), the small one */
    CHECK_INT_EQ(left, 4 * 32 - 8);
    /* Then the big ones go oldest first again: the first takes the pass. */
    CHECK(batcher_next(b, items, &n, dropped, &n_dropped, &left));
    CHECK_INT_EQ(n, 8);
    for (size_t i = 0; i < n; i++)
        CHECK(items[i].req == &requests[0]);
    batcher_free(b);
    free_requests();
}

/* The oldest request advances every pass, even when new requests' head
 * starts alone would fill it. */
static void test_the_oldest_always_advances(void)
{
    struct batcher *b = batcher_new(&two_workers);
    struct srv_request *old = make_request(16, 300);
    submit(b, old);
    struct batch_item items[64], dropped[64];
    size_t n, n_dropped, left;
    for (int pass = 0; pass < 8; pass++) {
        for (int i = 0; i < 8; i++) /* a stream of newcomers */
            submit(b, make_request(1, 500));
        CHECK(batcher_next(b, items, &n, dropped, &n_dropped, &left));
        CHECK(pass_has(items, n, old));
    }
    batcher_free(b);
    free_requests();
}

/* Admission is all or nothing, against both limits. */
static void test_admission(void)
{
    struct batcher_limits limits = two_workers;
    limits.max_concurrent_requests = 2;
    limits.max_queue_tokens = 100;
    struct batcher *b = batcher_new(&limits);
    CHECK_INT_EQ(batcher_submit(b, make_request(2, 40)), BATCHER_ADMITTED);
    CHECK_INT_EQ(batcher_submit(b, make_request(1, 40)), BATCHER_QUEUE_FULL);
    CHECK_INT_EQ(batcher_submit(b, make_request(1, 10)), BATCHER_ADMITTED);
    CHECK_INT_EQ(batcher_submit(b, make_request(1, 1)), BATCHER_TOO_MANY_REQUESTS);
    struct batcher_stats s = batcher_stats(b);
    CHECK_INT_EQ(s.queued_sequences, 3);
    CHECK_INT_EQ(s.queued_tokens, 90);
    CHECK_INT_EQ(s.in_flight, 2);
    batcher_close(b);
    CHECK_INT_EQ(batcher_submit(b, make_request(1, 1)), BATCHER_CLOSED);
    struct take t = take(b); /* closed, but what is queued still goes */
    CHECK_INT_EQ(t.items, 3);
    struct batch_item items[4], dropped[4];
    size_t n, n_dropped, left;
    CHECK(!batcher_next(b, items, &n, dropped, &n_dropped, &left));
    batcher_free(b);
    free_requests();
}

int main(void)
{
    test_light_load_takes_everything();
    test_heavy_load_takes_a_share();
    test_bounds_of_the_share();
    test_wait_ends_at_a_full_pass();
    test_orphans_are_dropped();
    test_a_small_request_rides_the_next_pass();
    test_the_oldest_always_advances();
    test_admission();
    return check_exit();
}
