/* The loop threads: `loop_threads` copies of the front end (struct http),
 * each with its own libuv loop, listening socket, connections, timers
 * and completion queue, bound to one port with SO_REUSEPORT. One loop
 * thread saturates near 25k short requests/s (BENCHMARKS.md), most of it
 * the system calls and bookkeeping of each request's bytes: more loops
 * spread that over cores.
 *
 * The first loop is the caller's (it also handles the signals); each other
 * one runs on a thread of its own and takes commands (drain, quiesce, stop)
 * through a uv_async. Each loop reports its drain to the first, which calls
 * on_drained once all have. */
#include "http_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "log.h"

enum {
    CMD_DRAIN = 1,
    CMD_QUIESCE = 2,
    CMD_STOP = 4,
};

struct loop_slot {
    struct http_server *srv;
    unsigned index;
    struct http *http;
    uv_loop_t own_loop;         /* the other loops' (the first is the caller's) */
    uv_loop_t *loop;
    pthread_t thread;
    bool thread_started, loop_inited;
    clockid_t cpu_clock;        /* the loop thread's CPU clock */
    uint64_t cpu_start;         /* its reading when serving began */
    uv_async_t control;         /* commands, and (first loop) "every loop drained" */
    atomic_uint commands;       /* CMD_* bits not yet carried out */
};

struct http_server {
    unsigned n;
    struct loop_slot *slots;
    atomic_size_t open_conns;   /* every loop's connections, against max_connections */
    atomic_uint undrained;      /* loops whose drain has not finished */
    bool drained_reported;      /* the first loop's */
    void (*on_drained)(void *arg);
    void *on_drained_arg;
    uv_sem_t go;                /* the other threads wait here until everything is set up */
    bool aborted;               /* set-up failed: the threads end without running */
    uv_sem_t quiesced;          /* posted by each other loop once its daemon has stopped */
    char *info_json;            /* the engine's /info body, shared by every loop */
};

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double http_server_loop_cpu_seconds(const struct http_server *srv)
{
    double total = 0.0;
    for (unsigned i = 0; i < srv->n; i++)
        total += (double)(clock_ns(srv->slots[i].cpu_clock) - srv->slots[i].cpu_start) / 1e9;
    return total;
}

/* First loop: each loop's drain has ended; once all have, on_drained. */
static void on_loop_drained(void *arg)
{
    struct loop_slot *slot = arg;
    struct http_server *srv = slot->srv;
    if (atomic_fetch_sub(&srv->undrained, 1) == 1)
        uv_async_send(&srv->slots[0].control);
}

static void on_control(uv_async_t *async)
{
    struct loop_slot *slot = async->data;
    struct http_server *srv = slot->srv;
    if (slot->index == 0) {
        if (atomic_load(&srv->undrained) == 0 && !srv->drained_reported) {
            srv->drained_reported = true;
            srv->on_drained(srv->on_drained_arg);
        }
        return;
    }
    unsigned cmd = atomic_exchange(&slot->commands, 0);
    if (cmd & CMD_DRAIN)
        http_drain(slot->http);
    if (cmd & CMD_QUIESCE) {
        http_close_daemon(slot->http);
        uv_sem_post(&srv->quiesced);
    }
    if (cmd & CMD_STOP) {
        http_close(slot->http);
        uv_close((uv_handle_t *)&slot->control, NULL);
    }
}

static void command(struct loop_slot *slot, unsigned cmd)
{
    atomic_fetch_or(&slot->commands, cmd);
    uv_async_send(&slot->control);
}

static void *loop_thread(void *arg)
{
    struct loop_slot *slot = arg;
    uv_sem_wait(&slot->srv->go);
    if (!slot->srv->aborted)
        uv_run(slot->loop, UV_RUN_DEFAULT);
    return NULL;
}

/* Before anything is attached to the loops: their threads end unrun. */
static void abort_start(struct http_server *srv)
{
    srv->aborted = true;
    for (unsigned i = 0; i < srv->n; i++)
        if (srv->slots[i].thread_started)
            uv_sem_post(&srv->go);
    http_server_free(srv);
}

static struct http_server *server_new(unsigned n, void (*on_drained)(void *arg), void *arg)
{
    struct http_server *srv = calloc(1, sizeof *srv);
    if (srv == NULL || (srv->slots = calloc(n, sizeof *srv->slots)) == NULL) {
        free(srv);
        return NULL;
    }
    srv->n = n;
    srv->on_drained = on_drained;
    srv->on_drained_arg = arg;
    atomic_init(&srv->open_conns, 0);
    atomic_init(&srv->undrained, n);
    uv_sem_init(&srv->go, 0);
    uv_sem_init(&srv->quiesced, 0);
    for (unsigned i = 0; i < n; i++) {
        srv->slots[i].srv = srv;
        srv->slots[i].index = i;
        atomic_init(&srv->slots[i].commands, 0);
    }
    return srv;
}

/* The other loops' libuv loops and threads, waiting on `go`. */
static bool start_threads(struct http_server *srv, char *err, size_t err_len)
{
    for (unsigned i = 1; i < srv->n; i++) {
        struct loop_slot *slot = &srv->slots[i];
        if (uv_loop_init(&slot->own_loop) != 0) {
            snprintf(err, err_len, "cannot create event loop %u", i);
            return false;
        }
        slot->loop_inited = true;
        slot->loop = &slot->own_loop;
        if (pthread_create(&slot->thread, NULL, loop_thread, slot) != 0) {
            snprintf(err, err_len, "cannot start loop thread %u", i);
            return false;
        }
        slot->thread_started = true;
        pthread_setname_np(slot->thread, "bertserve-loop");
        pthread_getcpuclockid(slot->thread, &slot->cpu_clock);
    }
    return true;
}

struct http_server *http_server_start(uv_loop_t *loop, const struct http_settings *s,
                                      void (*on_drained)(void *arg), void *arg, char *err,
                                      size_t err_len)
{
    unsigned n = s->loop_threads;
    if (n < 1 || n > HTTP_MAX_LOOP_THREADS) {
        snprintf(err, err_len, "loop_threads %u is out of range 1..%d", n, HTTP_MAX_LOOP_THREADS);
        return NULL;
    }
    if (n > 1 && !http_port_free(s, err, err_len))
        return NULL;
    struct http_server *srv = server_new(n, on_drained, arg);
    if (srv == NULL) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    /* Bodies are parsed on other threads: seed jansson's hashing before. */
    json_object_seed(0);
    struct http_settings each = *s;
    each.max_connections = http_conns_fit_fd_limit(s->max_connections, n);
    srv->slots[0].loop = loop;
    pthread_getcpuclockid(pthread_self(), &srv->slots[0].cpu_clock);
    if (!start_threads(srv, err, err_len)) {
        abort_start(srv);
        return NULL;
    }
    for (unsigned i = 0; i < n; i++) {
        srv->slots[i].http = http_open(&each, n > 1, err, err_len);
        if (srv->slots[i].http == NULL) {
            abort_start(srv);
            return NULL;
        }
    }
    for (unsigned i = 0; i < n; i++) {
        struct loop_slot *slot = &srv->slots[i];
        /* The first thread's clock includes the model's loading: not counted. */
        slot->cpu_start = clock_ns(slot->cpu_clock);
        http_attach(slot->http, slot->loop, srv, &srv->open_conns, on_loop_drained, slot);
        uv_async_init(slot->loop, &slot->control, on_control);
        slot->control.data = slot;
    }
    for (unsigned i = 1; i < n; i++)
        uv_sem_post(&srv->go);
    return srv;
}

void http_server_set_engine(struct http_server *srv, const struct http_engine *engine)
{
    srv->info_json = engine->info_json;
    for (unsigned i = 0; i < srv->n; i++)
        http_set_engine(srv->slots[i].http, engine);
}

void http_server_drain(struct http_server *srv)
{
    http_drain(srv->slots[0].http);
    for (unsigned i = 1; i < srv->n; i++)
        command(&srv->slots[i], CMD_DRAIN);
}

void http_server_quiesce(struct http_server *srv)
{
    for (unsigned i = 1; i < srv->n; i++)
        command(&srv->slots[i], CMD_QUIESCE);
    http_close_daemon(srv->slots[0].http);
    for (unsigned i = 1; i < srv->n; i++)
        uv_sem_wait(&srv->quiesced);
}

void http_server_stop(struct http_server *srv)
{
    for (unsigned i = 1; i < srv->n; i++)
        command(&srv->slots[i], CMD_STOP);
    http_close(srv->slots[0].http);
    uv_close((uv_handle_t *)&srv->slots[0].control, NULL);
}

void http_server_free(struct http_server *srv)
{
    if (srv == NULL)
        return;
    for (unsigned i = 0; i < srv->n; i++) {
        struct loop_slot *slot = &srv->slots[i];
        if (slot->thread_started)
            pthread_join(slot->thread, NULL);
        if (slot->loop_inited && uv_loop_close(&slot->own_loop) != 0)
            log_msg(LOG_WARN, "loop %u closed with handles open", i);
        http_free(slot->http);
    }
    uv_sem_destroy(&srv->go);
    uv_sem_destroy(&srv->quiesced);
    free(srv->info_json);
    free(srv->slots);
    free(srv);
}
