/* A request body of every route through the whole wire path the server runs
 * before the encoder: parse and validate, tokenize with the real WordPiece
 * tokenizer, set up the tasks, render the response (with the zeroed results
 * the job starts with) or the error body. The first byte picks the route
 * (its value modulo the number of routes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "bert.h"
#include "proto.h"

/* An NLI classifier's labels, so /zero-shot-classification runs too. */
static char *labels[] = {"CONTRADICTION", "ENTAILMENT"};
static struct bert_model model;

static const struct proto_limits limits = {
    .max_client_batch = 32, .max_input_tokens = 128, .max_top_k = 50,
    .max_fill_mask_decode = 100000};
static const struct proto_defaults defaults = {
    .pooling = BERT_POOLING_MEAN, .normalize = true, .truncate = false, .model_name = "fuzz"};

/* A checkpoint without weights: what proto/ reads of a model is its
 * tokenizer, sizes, labels and heads. */
static void load_once(void)
{
    if (model.tokenizer != NULL)
        return;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tokenizer/minilm", BERT_FUZZ_DATA);
    struct bert_error err;
    if (bert_tokenizer_load(dir, &model.tokenizer, &err) != BERT_OK) {
        fprintf(stderr, "fuzz_request: %s\n", err.message);
        abort();
    }
    model.config.hidden_size = model.embed_dims = 8;
    model.config.vocab_size = bert_tokenizer_vocab_size(model.tokenizer);
    model.config.num_labels = 2;
    model.config.id2label = labels;
    model.max_input_tokens = 512;
    model.can_fill_mask = true;
    model.can_classify = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    load_once();
    if (size == 0)
        return 0;
    enum proto_route route = (enum proto_route)(data[0] % PROTO_ROUTE_COUNT);
    /* A checkpoint has one per-token head at most: the one the route needs
     * (/pooling's token_classify task needs the token classifier). */
    model.can_classify_tokens =
        route == PROTO_ROUTE_TOKEN_CLASSIFICATION || route == PROTO_ROUTE_POOLING;
    model.can_answer_questions = route == PROTO_ROUTE_QUESTION_ANSWERING;
    /* /score's two ways: a cross-encoder (one label) there, cosines of
     * embeddings (no classifier) on /v1/score, which runs the same code. */
    model.can_classify = route != PROTO_ROUTE_V1_SCORE;
    model.config.num_labels = route == PROTO_ROUTE_SCORE ? 1 : 2;
    struct proto_request req;
    struct proto_job job;
    struct proto_error err = {0};
    memset(&job, 0, sizeof job);
    size_t len = 0;
    char *body = NULL;
    if (proto_request_parse(route, (const char *)data + 1, size - 1, &limits, &req, &err) &&
        proto_job_prepare(&job, &model, &limits, &defaults, &req, &err)) {
        /* No encoder runs: results of zero, so replays are deterministic
         * (fill-mask's outputs also hold the mask positions setup wrote). */
        if (job.outputs != NULL && route != PROTO_ROUTE_FILL_MASK)
            memset(job.outputs, 0, job.n_outputs * sizeof *job.outputs);
        body = proto_job_respond(&job, &model, &len);
    } else {
        body = proto_error_body(route, &err, &len);
    }
    if (body != NULL && strlen(body) != len)
        abort(); /* the length the server sends must be the body's */
    free(body);
    proto_job_free(&job);
    return 0;
}
