/* The request subcommands: stdin JSON -> the route's response on stdout,
 * exactly what the server answers for the same body. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "args.h"
#include "bert.h"
#include "cli.h"
#include "proto.h"

/* Inputs longer than this cannot be read from stdin (the server's default
 * body limit is far smaller; offline jobs get more room). */
#define CLI_MAX_REQUEST_BYTES (256u << 20)

struct runner {
    const struct bert_model *model;
    struct bert_scratch *scratch;
    struct proto_limits limits;
    struct proto_defaults defaults;
    /* Packed batch buffers, sized for the scratch. */
    int32_t *ids, *type_ids;
    size_t *seq_start;
    struct bert_seq_task *tasks;
};

/* Run every sequence of `job`, packing as many as fit the scratch per
 * forward pass. */
static bool run_job(struct runner *r, struct proto_job *job, struct proto_error *perr)
{
    const size_t cap = bert_scratch_max_tokens(r->scratch);
    size_t i = 0;
    while (i < job->n_seqs) {
        size_t n_seqs = 0, n_tok = 0;
        r->seq_start[0] = 0;
        while (i < job->n_seqs && n_tok + job->seqs[i].enc.n <= cap) {
            const struct bert_encoding *e = &job->seqs[i].enc;
            memcpy(r->ids + n_tok, e->ids, e->n * sizeof *e->ids);
            memcpy(r->type_ids + n_tok, e->type_ids, e->n * sizeof *e->type_ids);
            r->tasks[n_seqs] = job->seqs[i].task;
            n_tok += e->n;
            r->seq_start[++n_seqs] = n_tok;
            i++;
        }
        struct bert_batch batch = {.n_seqs = n_seqs, .n_tokens = n_tok, .ids = r->ids,
                                   .type_ids = r->type_ids, .seq_start = r->seq_start};
        struct bert_error err = {0};
        if (bert_run(r->model, r->scratch, &batch, r->tasks, &err) != BERT_OK) {
            proto_error_set(perr, PROTO_ERR_INTERNAL, "inference failed: %s", err.message);
            return false;
        }
    }
    return true;
}

/* Answer one request body; returns false when the answer is an error body. */
static bool answer(struct runner *r, enum proto_route route, const char *body, size_t len,
                   FILE *out)
{
    struct proto_request req;
    struct proto_job job = {0};
    struct proto_error perr = {0};
    bool ok = proto_request_parse(route, body, len, &r->limits, &req, &perr);
    route = req.route; /* another API's body on this route's path answers as its own */
    ok = ok && proto_job_prepare(&job, r->model, &r->limits, &r->defaults, &req, &perr) &&
         (!proto_job_needs_compute(&job) || run_job(r, &job, &perr));
    char *text;
    size_t text_len;
    if (ok) {
        text = proto_job_respond(&job, r->model, &text_len);
        if (text == NULL) {
            ok = false;
            proto_error_set(&perr, PROTO_ERR_INTERNAL, "could not render the response (out of memory or a non-finite result)");
        }
    }
    if (!ok)
        text = proto_error_body(route, &perr, &text_len);
    if (text != NULL) {
        fwrite(text, 1, text_len, out);
        fputc('\n', out);
    }
    free(text);
    proto_job_free(&job);
    return ok;
}

static char *read_stdin(size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        size_t got = fread(buf + n, 1, cap - n, stdin);
        n += got;
        if (got == 0)
            break;
        if (n == cap) {
            if (cap >= CLI_MAX_REQUEST_BYTES) {
                free(buf);
                return NULL;
            }
            char *bigger = realloc(buf, cap * 2);
            if (bigger == NULL)
                free(buf);
            buf = bigger;
            cap *= 2;
        }
    }
    *len = n;
    return buf;
}

static bool runner_init(struct runner *r, const struct bert_model *model, size_t max_tokens,
                        size_t threads, struct bert_error *err)
{
    memset(r, 0, sizeof *r);
    r->model = model;
    size_t max_seq = model->max_input_tokens;
    if (max_tokens < max_seq)
        max_tokens = max_seq;
    r->scratch = bert_scratch_new(model, max_tokens, max_seq, threads, err);
    r->ids = malloc(max_tokens * sizeof *r->ids);
    r->type_ids = malloc(max_tokens * sizeof *r->type_ids);
    r->seq_start = malloc((max_tokens + 1) * sizeof *r->seq_start);
    r->tasks = malloc(max_tokens * sizeof *r->tasks);
    if (r->scratch && r->ids && r->type_ids && r->seq_start && r->tasks)
        return true;
    if (r->scratch != NULL)
        bert_error_set(err, BERT_E_NOMEM, "out of memory");
    return false;
}

static void runner_free(struct runner *r)
{
    bert_scratch_free(r->scratch);
    free(r->ids);
    free(r->type_ids);
    free(r->seq_start);
    free(r->tasks);
}

int cli_request_command(const char *name, int argc, char **argv)
{
    enum proto_route route;
    if (!proto_route_from_command(name, &route))
        return CLI_NOT_A_COMMAND;

    const char *model_dir = "models/default", *pooling = NULL, *dtype = "f32";
    bool jsonl = false, normalize = false, truncate = false;
    size_t max_batch_tokens = 8192, threads = 0, max_input_tokens = 0;
    size_t max_client_batch = 1u << 20, max_top_k = 100;
    struct cli_opt opts[] = {
        {"model", CLI_OPT_STRING, &model_dir, "checkpoint folder (models/default)"},
        {"jsonl", CLI_OPT_FLAG, &jsonl, "one request per input line, one response per line"},
        {"pooling", CLI_OPT_STRING, &pooling, "default pooling: cls, mean, max (checkpoint's)"},
        {"normalize", CLI_OPT_FLAG, &normalize, "L2-normalise embeddings by default"},
        {"truncate", CLI_OPT_FLAG, &truncate, "cut over-long inputs by default"},
        {"max-input-tokens", CLI_OPT_SIZE, &max_input_tokens, "token limit (model's maximum)"},
        {"max-batch-tokens", CLI_OPT_SIZE, &max_batch_tokens, "tokens per forward pass (8192)"},
        {"max-client-batch", CLI_OPT_SIZE, &max_client_batch, "inputs per request (1048576)"},
        {"max-top-k", CLI_OPT_SIZE, &max_top_k, "largest top_k (100)"},
        {"threads", CLI_OPT_SIZE, &threads, "compute threads (available CPUs)"},
        {"dtype", CLI_OPT_STRING, &dtype, "f32, bf16 or int8 for the dense layers (f32)"},
    };
    const size_t n_opts = sizeof opts / sizeof opts[0];
    if (!cli_parse(name, argc, argv, opts, n_opts))
        return CLI_EXIT_USAGE;
    /* The engine's team splits the products; OpenBLAS runs inside it. */
    openblas_set_num_threads(1);

    struct bert_error err = {0};
    struct bert_model *model;
    if (bert_model_load(model_dir, &model, &err) != BERT_OK) {
        fprintf(stderr, "bert %s: %s\n", name, err.message);
        return CLI_EXIT_FAILURE;
    }
    struct runner r = {0};
    int rc = CLI_EXIT_OK;
    rc = cli_apply_dtype(name, model, dtype);
    if (rc != CLI_EXIT_OK) {
        bert_model_free(model);
        return rc;
    }
    if (!runner_init(&r, model, max_batch_tokens, threads ? threads : cli_cpus(), &err)) {
        fprintf(stderr, "bert %s: %s\n", name, err.message);
        rc = CLI_EXIT_FAILURE;
        goto done;
    }
    r.limits = (struct proto_limits){
        .max_client_batch = max_client_batch,
        .max_input_tokens = max_input_tokens && max_input_tokens < model->max_input_tokens
                                ? max_input_tokens
                                : model->max_input_tokens,
        .max_top_k = (uint32_t)max_top_k,
    };
    r.defaults = (struct proto_defaults){
        .pooling = model->config.pooling,
        .normalize = normalize || model->config.normalize,
        .truncate = truncate,
        .openai_unit_length = true, /* the server's default: vLLM's /pooling embeds so */
        .model_name = model->dir,
    };
    if (pooling != NULL && !bert_pooling_parse(pooling, &r.defaults.pooling)) {
        fprintf(stderr, "bert %s: --pooling must be cls, mean or max\n", name);
        rc = CLI_EXIT_USAGE;
        goto done;
    }

    if (jsonl) {
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        while ((len = getline(&line, &cap, stdin)) > 0) {
            while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
                len--;
            if (len == 0)
                continue;
            if (!answer(&r, route, line, (size_t)len, stdout))
                rc = CLI_EXIT_FAILURE;
        }
        free(line);
    } else {
        size_t len;
        char *body = read_stdin(&len);
        if (body == NULL) {
            fprintf(stderr, "bert %s: cannot read stdin (over %u bytes?)\n", name,
                    CLI_MAX_REQUEST_BYTES);
            rc = CLI_EXIT_FAILURE;
        } else if (!answer(&r, route, body, len, stdout)) {
            rc = CLI_EXIT_FAILURE;
        }
        free(body);
    }
done:
    runner_free(&r);
    bert_model_free(model);
    return rc;
}
