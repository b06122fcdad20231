/* bertserve: load a checkpoint, start the workers, serve HTTP until SIGTERM,
 * then drain and exit 0. */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>
#include <jansson.h>
#include <uv.h>

#include "bert.h"
#include "batcher.h"
#include "server_config.h"
#include "cpu.h"
#include "health_check.h"
#include "http.h"
#include "log.h"
#include "pool.h"
#include "prepare.h"

extern char **environ;

struct server {
    struct server_config cfg;
    uv_loop_t *loop;
    struct bert_model *model;
    struct batcher *batcher;
    struct response_budget answers;
    struct pool *pool;
    struct prepare_pool *prepare;
    size_t prepare_threads;
    unsigned loop_threads;
    struct http_server *http;
    struct pool_settings pool_settings;
    struct prepare_engine prep;
    struct http_engine engine;
    uv_async_t engine_ready;   /* the loader thread finished (pool set or error) */
    pthread_t loader;
    bool loader_started;
    struct bert_error load_err;
    uv_signal_t sigterm, sigint;
    int exit_code;
    char served_name[256];     /* [model] served_model_name, or the folder's name */
};

static void on_signal(uv_signal_t *handle, int signum)
{
    struct server *s = handle->data;
    log_msg(LOG_INFO, "%s: draining (up to %d ms)", signum == SIGTERM ? "SIGTERM" : "SIGINT",
            s->cfg.server.shutdown_timeout_ms);
    http_server_drain(s->http);
}

static void on_drained(void *arg)
{
    struct server *s = arg;
    uv_signal_stop(&s->sigterm);
    uv_signal_stop(&s->sigint);
    uv_close((uv_handle_t *)&s->sigterm, NULL);
    uv_close((uv_handle_t *)&s->sigint, NULL);
    if (s->loader_started)
        pthread_join(s->loader, NULL); /* before closing the handle it signals */
    s->loader_started = false;
    uv_close((uv_handle_t *)&s->engine_ready, NULL);
    http_server_quiesce(s->http); /* no loop serves past here: the engine stops */
    batcher_close(s->batcher);
    prepare_pool_stop(s->prepare); /* what it still holds goes to its loops' completion queues */
    s->prepare = NULL;
    pool_join(s->pool);
    s->pool = NULL;
    http_server_stop(s->http);
    log_msg(LOG_INFO, "drained; exiting");
}

/* Off the loop, so /health and /ready answer (503) while workers warm up. */
static void *load_workers(void *arg)
{
    struct server *s = arg;
    s->pool = pool_start(s->model, s->batcher, &s->pool_settings, &s->load_err);
    uv_async_send(&s->engine_ready);
    return NULL;
}

static char *info_json(const struct server *s)
{
    const struct bert_model *m = s->model;
    const struct bert_config *c = &m->config;
    json_t *labels = json_array();
    for (size_t i = 0; i < c->num_labels && (m->can_classify || m->can_classify_tokens); i++)
        json_array_append_new(labels, json_string(c->id2label[i]));
    json_t *caps = json_array();
    json_array_append_new(caps, json_string("embed"));
    json_array_append_new(caps, json_string("tokenize"));
    if (m->can_classify)
        json_array_append_new(caps, json_string("classify"));
    if (m->can_fill_mask)
        json_array_append_new(caps, json_string("fill-mask"));
    if (m->can_classify && c->num_labels == 1) /* a cross-encoder */
        json_array_append_new(caps, json_string("rerank"));
    if (proto_can_score(m)) /* a cross-encoder, or cosines of embeddings */
        json_array_append_new(caps, json_string("score"));
    if (m->can_detect_replaced) /* an ELECTRA discriminator */
        json_array_append_new(caps, json_string("replaced-tokens"));
    if (m->can_classify_tokens) /* a *ForTokenClassification head */
        json_array_append_new(caps, json_string("token-classification"));
    if (m->can_answer_questions) /* a *ForQuestionAnswering head */
        json_array_append_new(caps, json_string("question-answering"));
    if (proto_can_zero_shot(m)) /* an NLI classifier */
        json_array_append_new(caps, json_string("zero-shot-classification"));
    json_t *root = json_pack(
        "{s:s, s:{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:s, s:b, "
        "s:s}, s:{s:I, s:I, s:I, s:I}, s:o}",
        "version", BERTSERVE_VERSION, "model", "path", m->dir, "model_type", c->model_type,
        "family", bert_family_name(c->family),
        "architecture", c->architecture, "vocab_size", (json_int_t)c->vocab_size,
        "hidden_size", (json_int_t)c->hidden_size, "dimensions", (json_int_t)m->embed_dims,
        "num_layers", (json_int_t)c->num_layers,
        "num_heads", (json_int_t)c->num_heads, "intermediate_size",
        (json_int_t)c->intermediate_size, "max_position_embeddings",
        (json_int_t)c->max_position_embeddings, "max_input_tokens",
        (json_int_t)s->prep.limits.max_input_tokens, "labels", labels, "capabilities", caps,
        "pooling", bert_pooling_name(s->prep.defaults.pooling), "normalize",
        s->prep.defaults.normalize, "dtype", s->model->int8 ? "int8" : s->model->bf16 ? "bf16" : "f32", "workers", "threads",
        (json_int_t)s->pool_settings.threads, "compute_threads",
        (json_int_t)s->pool_settings.threads_per_worker, "scratch_bytes",
        (json_int_t)(s->pool ? pool_scratch_bytes(s->pool) : 0), "prepare_threads",
        (json_int_t)s->prepare_threads, "config",
        server_config_to_json(&s->cfg));
    char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    return text;
}

static void on_engine_ready(uv_async_t *async)
{
    struct server *s = async->data;
    if (s->pool == NULL) {
        log_msg(LOG_ERROR, "cannot start the workers: %s", s->load_err.message);
        s->exit_code = EXIT_FAILURE;
        http_server_drain(s->http);
        return;
    }
    char err[256];
    s->prepare = prepare_pool_start(&s->prep, s->prepare_threads,
                                    s->cfg.server.offload_parse_bytes, err, sizeof err);
    if (s->prepare == NULL) {
        log_msg(LOG_ERROR, "cannot start the prepare threads: %s", err);
        s->exit_code = EXIT_FAILURE;
        http_server_drain(s->http);
        return;
    }
    s->engine.prepare = s->prepare;
    s->engine.info_json = info_json(s);
    http_server_set_engine(s->http, &s->engine);
    log_msg(LOG_INFO,
            "ready: %zu workers, %zu compute threads each, %zu MiB scratch; %zu prepare threads",
            s->pool_settings.threads, s->pool_settings.threads_per_worker,
            pool_scratch_bytes(s->pool) >> 20, s->prepare_threads);
}

/* [model] served_model_name, else the last component of the checkpoint's
 * folder (its real path for "." or ".."): a name, never a path of this
 * machine. */
static void choose_served_name(struct server *s)
{
    const char *name = s->cfg.model.served_model_name;
    char real[PATH_MAX];
    if (name[0] == '\0') {
        const char *dir = realpath(s->model->dir, real) ? real : s->model->dir;
        size_t len = strlen(dir);
        while (len > 1 && dir[len - 1] == '/')
            len--;
        size_t start = len;
        while (start > 0 && dir[start - 1] != '/')
            start--;
        snprintf(s->served_name, sizeof s->served_name, "%.*s", (int)(len - start), dir + start);
        if (s->served_name[0] == '\0')
            snprintf(s->served_name, sizeof s->served_name, "default");
        return;
    }
    snprintf(s->served_name, sizeof s->served_name, "%s", name);
}

/* Effective limits and defaults from the config and the checkpoint. */
static void configure_engine(struct server *s)
{
    const struct server_config *cfg = &s->cfg;
    const struct bert_model *m = s->model;
    size_t max_input = m->max_input_tokens;
    if (cfg->model.max_input_tokens > 0 && cfg->model.max_input_tokens < max_input)
        max_input = cfg->model.max_input_tokens;
    if (max_input > cfg->batching.max_batch_tokens) {
        log_msg(LOG_WARN,
                "inputs are limited to max_batch_tokens (%zu) instead of the model's %zu tokens",
                cfg->batching.max_batch_tokens, max_input);
        max_input = cfg->batching.max_batch_tokens;
    }
    static const enum bert_pooling poolings[] = {
        [SERVER_CONFIG_POOLING_CLS] = BERT_POOLING_CLS,
        [SERVER_CONFIG_POOLING_MEAN] = BERT_POOLING_MEAN,
        [SERVER_CONFIG_POOLING_MAX] = BERT_POOLING_MAX,
    };
    s->prep = (struct prepare_engine){
        .model = m,
        .limits = {.max_client_batch = (size_t)cfg->server.max_client_batch,
                   .max_input_tokens = max_input,
                   .max_top_k = (uint32_t)cfg->server.max_top_k,
                   .max_fill_mask_decode = (size_t)cfg->server.max_fill_mask_decode,
                   .max_fill_mask_targets = (size_t)cfg->server.max_fill_mask_targets,
                   .max_response_bytes = cfg->server.max_response_bytes},
        .defaults = {.pooling = cfg->model.pooling == SERVER_CONFIG_POOLING_MODEL
                                    ? m->config.pooling
                                    : poolings[cfg->model.pooling],
                     .normalize = cfg->model.normalize == SERVER_CONFIG_AUTO
                                      ? m->config.normalize
                                      : cfg->model.normalize == SERVER_CONFIG_TRUE,
                     .truncate = cfg->model.truncate,
                     .openai_unit_length = cfg->model.openai_unit_length,
                     .model_name = s->served_name},
        .max_queue_tokens = cfg->batching.max_queue_tokens,
        .answers = &s->answers,
    };
    s->engine = (struct http_engine){
        .model_name = s->served_name,
        .created = (int64_t)time(NULL),
        .answers = &s->answers,
    };
    s->pool_settings = (struct pool_settings){
        .max_batch_tokens = cfg->batching.max_batch_tokens,
        .max_batch_sequences = (size_t)cfg->batching.max_batch_requests,
        .max_seq_len = max_input,
        .answers = &s->answers,
    };
    response_budget_init(&s->answers, cfg->server.max_response_bytes,
                         cfg->server.max_pending_response_bytes);
}

/* By default one worker per CPU this process may use (its affinity mask
 * and cgroup quota), each able to split a pass over all of them, sharing
 * the CPUs (pool_settings.shared_cpus): a lone request gets every CPU, and
 * under load each CPU runs its own batch. One team for everything loses
 * about a tenth of its throughput under load to barrier waits whenever the
 * HTTP thread takes a member's CPU. Explicit counts are used as given;
 * workers x compute threads beyond the CPUs oversubscribe them. OpenBLAS
 * runs single-threaded inside each team, which splits the products itself. */
static void choose_threads(struct server *s)
{
    unsigned cpus = cpu_available();
    const bool shared = s->cfg.workers.threads == 0 && s->cfg.workers.blas_threads == 0;
    size_t workers = s->cfg.workers.threads > 0 ? (size_t)s->cfg.workers.threads
                     : shared                   ? cpus
                                                : 1;
    size_t team = s->cfg.workers.blas_threads > 0 ? (size_t)s->cfg.workers.blas_threads
                  : shared                        ? cpus
                  : cpus / workers > 0            ? cpus / workers
                                                  : 1;
    s->pool_settings.threads = workers;
    s->pool_settings.threads_per_worker = team;
    s->pool_settings.shared_cpus = shared ? cpus : 0;
    /* Parsing and tokenizing a short request takes a prepare thread ~13 us
     * (BENCHMARKS.md): two carry more than one loop thread can, and two keep
     * one free for short bodies while the other has a large one. */
    s->prepare_threads = s->cfg.workers.prepare_threads > 0 ? (size_t)s->cfg.workers.prepare_threads
                         : cpus / 8 > 2                     ? cpus / 8
                                                            : 2;
    /* One loop thread carries ~25k short requests/s (BENCHMARKS.md, "Several
     * loop threads"), about what eight CPUs of workers answer on a small model. */
    s->loop_threads = s->cfg.server.loop_threads > 0 ? (unsigned)s->cfg.server.loop_threads
                      : cpus / 8 > 1                 ? cpus / 8
                                                     : 1;
    openblas_set_num_threads(1);
    log_msg(LOG_INFO, "%u CPUs available: %zu workers x %zu compute threads%s", cpus, workers,
            team, shared ? ", sharing the CPUs (a lone batch uses all, concurrent ones one each)"
                         : "");
}

/* [model] dtype = "int8": refused, not run in f32, where it cannot run, since
 * its answers differ from f32's more than bf16's do. */
static bool use_int8(struct server *s)
{
    struct bert_error err = {0};
    struct bert_int8_info info;
    if (bert_model_use_int8(s->model, &info, &err) != BERT_OK) {
        log_msg(LOG_ERROR, "dtype int8 refused: %s", err.message);
        return false;
    }
    log_msg(LOG_INFO,
            "dense layers run in int8 on %s (oneDNN): %zu of %zu, weights per channel, "
            "activations per row, int32 accumulation; attention, norms, activations and heads "
            "in f32; %zu MiB of mapped f32 weights released%s",
            info.isa, info.packed, info.dense, info.released_bytes >> 20,
            info.released_bytes ? "" : " (F16/BF16 checkpoint: its f32 copy stays resident)");
    if (info.pad_rows > 1)
        log_msg(LOG_INFO,
                "int8 products of fewer than %zu rows run padded to %zu with zero rows: oneDNN "
                "has no %s kernel for fewer in the weights' layout",
                info.pad_rows, info.pad_rows, info.isa);
    return true;
}

static int run(struct server *s)
{
    const struct server_config *cfg = &s->cfg;
    uint64_t t0 = srv_now_ns();
    if (bert_model_load(cfg->model.path, &s->model, &s->load_err) != BERT_OK) {
        log_msg(LOG_ERROR, "cannot load the model: %s", s->load_err.message);
        return EXIT_FAILURE;
    }
    const struct bert_config *c = &s->model->config;
    if (bert_tokenizer_load_note(s->model->tokenizer) != NULL)
        log_msg(LOG_WARN, "%s", bert_tokenizer_load_note(s->model->tokenizer));
    log_msg(LOG_INFO,
            "loaded %s in %.0f ms: %s, %zu layers, hidden %zu, %zu heads, vocab %zu, "
            "max %zu tokens, heads:%s%s",
            cfg->model.path, (double)(srv_now_ns() - t0) / 1e6,
            c->architecture[0] ? c->architecture : "BertModel", c->num_layers, c->hidden_size,
            c->num_heads, c->vocab_size, s->model->max_input_tokens,
            s->model->can_classify ? " classify" : "", s->model->can_fill_mask ? " fill-mask" : "");
    if (cfg->model.dtype == SERVER_CONFIG_DTYPE_BF16) {
        struct bert_error bf16_err = {0};
        const char *isa = bert_bf16_isa();
        if (bert_model_use_bf16(s->model, &bf16_err) == BERT_OK)
            log_msg(LOG_INFO, "dense layers run in bf16 on %s (%s); the rest in f32", isa,
                    strcmp(isa, "AMX") == 0 ? "oneDNN" : "weights packed at load");
        else
            log_msg(LOG_WARN, "%s; running f32", bf16_err.message);
    }
    if (cfg->model.dtype == SERVER_CONFIG_DTYPE_INT8 && !use_int8(s))
        return EXIT_FAILURE;
    const struct bert_f32_packing *fp = &s->model->f32_packing;
    if (fp->packed > 0)
        log_msg(LOG_INFO,
                "f32 dense layers run on AVX-512 over weights packed at load: %zu of %zu, "
                "%zu MiB packed, %zu MiB of mapped f32 weights released%s",
                fp->packed, fp->dense, fp->packed_bytes >> 20, fp->released_bytes >> 20,
                fp->packed < fp->dense ? "; the others on OpenBLAS" : "");
    choose_served_name(s);
    configure_engine(s);
    choose_threads(s);

    struct batcher_limits bl = {
        .max_batch_tokens = cfg->batching.max_batch_tokens,
        .max_batch_sequences = (size_t)cfg->batching.max_batch_requests,
        .max_wait_us = (unsigned)cfg->batching.max_wait_us,
        .max_queue_tokens = cfg->batching.max_queue_tokens,
        .max_concurrent_requests = (size_t)cfg->server.max_concurrent_requests,
        .n_workers = s->pool_settings.threads,
    };
    s->batcher = batcher_new(&bl);
    if (s->batcher == NULL) {
        log_msg(LOG_ERROR, "out of memory creating the batcher");
        return EXIT_FAILURE;
    }
    s->engine.batcher = s->prep.batcher = s->batcher;
    s->loop = uv_default_loop();
    struct http_settings hs = {
        .host = cfg->server.host,
        .port = (uint16_t)cfg->server.port,
        .max_body_bytes = cfg->server.max_body_bytes,
        .max_connections = (size_t)cfg->server.max_connections,
        .request_timeout_ms = (unsigned)cfg->server.request_timeout_ms,
        .shutdown_timeout_ms = (unsigned)cfg->server.shutdown_timeout_ms,
        .api_key = cfg->server.api_key,
        .cors_allow_origin = cfg->server.cors_allow_origin,
        .loop_threads = s->loop_threads,
        .default_route = proto_default_route(s->model),
    };
    char err[256];
    s->http = http_server_start(s->loop, &hs, on_drained, s, err, sizeof err);
    if (s->http == NULL) {
        log_msg(LOG_ERROR, "%s", err);
        return EXIT_FAILURE;
    }
    log_msg(LOG_INFO, "listening on %s:%d with %u loop thread%s (max_batch_tokens %zu, "
                      "max_concurrent_requests %d, max_body_bytes %zu, auth %s)",
            cfg->server.host, cfg->server.port, s->loop_threads,
            s->loop_threads == 1 ? "" : "s", cfg->batching.max_batch_tokens,
            cfg->server.max_concurrent_requests, cfg->server.max_body_bytes,
            cfg->server.api_key[0] ? "on" : "off");
    log_msg(LOG_INFO, "POST / and /invocations answer as %s",
            proto_route_path(hs.default_route));

    uv_signal_init(s->loop, &s->sigterm);
    uv_signal_init(s->loop, &s->sigint);
    s->sigterm.data = s->sigint.data = s;
    uv_signal_start(&s->sigterm, on_signal, SIGTERM);
    uv_signal_start(&s->sigint, on_signal, SIGINT);
    uv_async_init(s->loop, &s->engine_ready, on_engine_ready);
    s->engine_ready.data = s;
    s->loader_started = pthread_create(&s->loader, NULL, load_workers, s) == 0;
    if (!s->loader_started) {
        snprintf(s->load_err.message, sizeof s->load_err.message, "cannot start a thread");
        uv_async_send(&s->engine_ready);
    }

    uv_run(s->loop, UV_RUN_DEFAULT);
    return s->exit_code;
}

int main(int argc, char **argv)
{
    bert_blas_core_fix(argv);
    /* A client that hangs up must not kill the process. */
    signal(SIGPIPE, SIG_IGN);
    struct server s = {0};
    char err[512];
    switch (server_config_load(&s.cfg, argc, argv, environ, err, sizeof err)) {
    case SERVER_CONFIG_OK:
        break;
    case SERVER_CONFIG_HELP:
        server_config_usage(stdout);
        server_config_free(&s.cfg);
        return EXIT_SUCCESS;
    case SERVER_CONFIG_VERSION:
        printf("bertserve %s\n", BERTSERVE_VERSION);
        server_config_free(&s.cfg);
        return EXIT_SUCCESS;
    case SERVER_CONFIG_HEALTH_CHECK: {
        int rc = health_check(&s.cfg, 2000);
        server_config_free(&s.cfg);
        return rc;
    }
    case SERVER_CONFIG_ERROR:
        fprintf(stderr, "bertserve: %s\n", err);
        server_config_free(&s.cfg);
        return 2;
    }
    log_init((enum log_level)s.cfg.log.level, (enum log_format)s.cfg.log.format);
    log_msg(LOG_INFO, "bertserve %s starting (config: %s; OpenBLAS kernels: %s)",
            BERTSERVE_VERSION,
            s.cfg.config_file ? s.cfg.config_file : "defaults, environment and flags",
            bert_blas_core());
    int rc = run(&s);
    if (s.loop != NULL)
        uv_loop_close(s.loop);
    http_server_free(s.http);
    pool_join(s.pool);
    batcher_free(s.batcher);
    bert_model_free(s.model);
    server_config_free(&s.cfg);
    return rc;
}
