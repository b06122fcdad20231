/* proto/job.c: tokenisation into tasks, the checks that need the model, and
 * every response shape, using the stand-in tokenizer and hand-made results
 * in place of the encoder. */
#include <stdint.h>

#include "check.h"
#include "proto.h"
#include "proto_fake_tokenizer.h"

static const struct proto_limits limits = {
    .max_client_batch = 32, .max_input_tokens = 12, .max_top_k = 50};
static const struct proto_defaults defaults = {
    .pooling = BERT_POOLING_MEAN, .normalize = true, .truncate = false, .model_name = "tiny-bert"};

static char *labels3[] = {"NEGATIVE", "NEUTRAL", "POSITIVE"};

static struct bert_model make_model(void)
{
    struct bert_model m;
    memset(&m, 0, sizeof m);
    m.tokenizer = fake_tokenizer();
    m.config.hidden_size = m.embed_dims = 4;
    m.config.vocab_size = 24;
    m.config.num_labels = 3;
    m.config.id2label = labels3;
    m.max_input_tokens = 512;
    m.can_fill_mask = true;
    m.can_classify = true;
    return m;
}

/* Parse + prepare; returns false (and fills err) on either failing. */
static bool prepare(const struct bert_model *m, enum proto_route route, const char *body,
                    struct proto_job *job, struct proto_error *err)
{
    struct proto_request req;
    memset(err, 0, sizeof *err);
    if (!proto_request_parse(route, body, strlen(body), &limits, &req, err)) {
        memset(job, 0, sizeof *job);
        return false;
    }
    return proto_job_prepare(job, m, &limits, &defaults, &req, err);
}

#define EXPECT_PREPARE_ERR(model, route, body, kind_, text)                                        \
    do {                                                                                           \
        struct proto_job j_;                                                                       \
        struct proto_error e_;                                                                     \
        bool ok_ = prepare(model, route, body, &j_, &e_);                                          \
        CHECK(!ok_);                                                                               \
        CHECK_INT_EQ(e_.kind, kind_);                                                              \
        CHECK_CONTAINS(e_.message, text);                                                          \
        CHECK(j_.seqs == NULL && j_.outputs == NULL && j_.req.root == NULL);                       \
        proto_job_free(&j_);                                                                       \
    } while (0)

/* Render and parse back. */
static json_t *respond(const struct proto_job *job, const struct bert_model *m)
{
    size_t len = 0;
    char *body = proto_job_respond(job, m, &len);
    CHECK(body != NULL);
    if (body == NULL)
        return NULL;
    CHECK_INT_EQ(len, strlen(body));
    json_error_t jerr;
    json_t *j = json_loads(body, 0, &jerr);
    CHECK(j != NULL);
    if (j == NULL)
        fprintf(stderr, "  unparsable body: %s (%s)\n", body, jerr.text);
    free(body);
    return j;
}

static bool ids_are(const struct bert_encoding *enc, const int32_t *want, size_t n)
{
    return enc->n == n && memcmp(enc->ids, want, n * sizeof *want) == 0;
}

static void test_embed(void)
{
    struct bert_model m = make_model();
    struct proto_job job;
    struct proto_error err;
    CHECK(prepare(&m, PROTO_ROUTE_EMBED,
                  "{\"inputs\":[\"the cat\",\"the dogs sat\"],\"pooling\":\"cls\"}", &job, &err));
    CHECK_INT_EQ(job.n_seqs, 2);
    int32_t want0[] = {FAKE_CLS, FAKE_THE, FAKE_CAT, FAKE_SEP};
    int32_t want1[] = {FAKE_CLS, FAKE_THE, FAKE_DOG, FAKE_S, FAKE_SAT, FAKE_SEP};
    CHECK(ids_are(&job.seqs[0].enc, want0, 4));
    CHECK(ids_are(&job.seqs[1].enc, want1, 6));
    CHECK_INT_EQ(job.n_tokens, 10);
    CHECK_INT_EQ(job.n_truncated, 0);
    CHECK(proto_job_needs_compute(&job));
    for (size_t i = 0; i < 2; i++) {
        const struct bert_seq_task *t = &job.seqs[i].task;
        CHECK_INT_EQ(t->task, BERT_TASK_EMBED);
        CHECK_INT_EQ(t->pooling, BERT_POOLING_CLS); /* from the request */
        CHECK(t->normalize);                        /* from the defaults */
        CHECK(t->embedding == job.outputs + i * 4); /* one buffer */
    }
    const float values[8] = {0.1f, -0.5f, 1.0f, 0.0f, 1e-45f, -0.0f, 3.4028235e38f, 0.25f};
    memcpy(job.outputs, values, sizeof values);
    size_t len;
    char *body = proto_job_respond(&job, &m, &len);
    CHECK_STR_EQ(body, "[[0.1,-0.5,1.0,0.0],[1e-45,-0.0,3.4028235e+38,0.25]]");
    free(body);

    /* A NaN from the engine is a 500, never a 200. */
    job.outputs[5] = NAN;
    CHECK(proto_job_respond(&job, &m, &len) == NULL);
    proto_job_free(&job);
    proto_job_free(&job);

    /* A single input still answers a list of rows (TEI's shape). */
    CHECK(prepare(&m, PROTO_ROUTE_EMBED, "{\"inputs\":\"cat\",\"normalize\":false}", &job, &err));
    CHECK(!job.seqs[0].task.normalize);
    CHECK_INT_EQ(job.seqs[0].task.pooling, BERT_POOLING_MEAN);
    for (int i = 0; i < 4; i++)
        job.outputs[i] = (float)i;
    body = proto_job_respond(&job, &m, &len);
    CHECK_STR_EQ(body, "[[0.0,1.0,2.0,3.0]]");
    free(body);
    proto_job_free(&job);
}

static void test_truncation_and_limits(void)
{
    struct bert_model m = make_model();
    struct proto_job job;
    struct proto_error err;
    /* 14 tokens with specials, the limit is 12. */
    const char *long_text = "\"the cat sat on the mat the cat sat on the mat\"";
    char body[256];
    snprintf(body, sizeof body, "{\"inputs\":[\"cat\",%s]}", long_text);
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_EMBED, body, PROTO_ERR_TOO_LARGE,
                       "inputs[1] is 14 tokens long, more than the limit of 12; send \"truncate\": "
                       "true to cut it");
    snprintf(body, sizeof body, "{\"input\":%s}", long_text);
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_OPENAI_EMBED, body, PROTO_ERR_TOO_LARGE,
                       "input[0] is 14 tokens long, more than the limit of 12");

    /* Token ids: as given (no specials), the vocabulary and the limit checked. */
    CHECK(prepare(&m, PROTO_ROUTE_OPENAI_EMBED, "{\"input\":[[2,6,3],\"cat\"]}", &job, &err));
    CHECK(job.n_seqs == 2 && job.seqs[0].enc.n == 3 && job.seqs[0].enc.ids[1] == 6);
    CHECK(job.n_seqs == 2 && job.seqs[1].enc.n == 3 && job.seqs[1].enc.ids[1] == 6);
    CHECK_INT_EQ(job.n_tokens, 6);
    proto_job_free(&job);
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_OPENAI_EMBED, "{\"input\":[2,99,3]}", PROTO_ERR_INVALID,
                       "input[0]: token id 99 at position 1 is not in the vocabulary (0 to 23)");
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_OPENAI_EMBED,
                       "{\"input\":[[\"x\"]]}", PROTO_ERR_INVALID, "\"input[0][0]\" must be a token id");
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_OPENAI_EMBED, "{\"input\":[[1,1,1,1,1,1,1,1,1,1,1,1,1]]}",
                       PROTO_ERR_TOO_LARGE, "input[0] is 13 tokens long, more than the limit of 12");

    snprintf(body, sizeof body, "{\"inputs\":[\"cat\",%s],\"truncate\":true}", long_text);
    CHECK(prepare(&m, PROTO_ROUTE_EMBED, body, &job, &err));
    CHECK_INT_EQ(job.seqs[1].enc.n, 12);
    CHECK_INT_EQ(job.seqs[1].enc.ids[1], FAKE_THE);
    CHECK_INT_EQ(job.n_truncated, 1);
    CHECK_INT_EQ(job.n_tokens, 3 + 12);
    proto_job_free(&job);

    snprintf(body, sizeof body,
             "{\"inputs\":%s,\"truncate\":true,\"truncation_direction\":\"left\"}", long_text);
    CHECK(prepare(&m, PROTO_ROUTE_EMBED, body, &job, &err));
    CHECK_INT_EQ(job.seqs[0].enc.n, 12);
    CHECK_INT_EQ(job.seqs[0].enc.ids[1], FAKE_SAT); /* "the cat" dropped from the left */
    proto_job_free(&job);

    /* The model's own limit applies when it is the tighter one. */
    m.max_input_tokens = 3;
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_EMBED, "{\"inputs\":\"the cat\"}", PROTO_ERR_TOO_LARGE,
                       "is 4 tokens long, more than the limit of 3");
    m.max_input_tokens = 512;

    /* Invalid UTF-8 from the tokenizer is a 400 naming the input. */
    struct proto_request req;
    memset(&req, 0, sizeof req);
    const char *two = "{\"inputs\":[\"a\",\"b\"]}";
    if (!proto_request_parse(PROTO_ROUTE_EMBED, two, strlen(two), &limits, &req, &err)) {
        CHECK(false);
        return;
    }
    req.inputs[1].text = "\xff";
    req.inputs[1].text_len = 1;
    CHECK(!proto_job_prepare(&job, &m, &limits, &defaults, &req, &err));
    CHECK_INT_EQ(err.kind, PROTO_ERR_MALFORMED);
    CHECK_CONTAINS(err.message, "inputs[1]: invalid UTF-8");
    CHECK(req.root == NULL); /* ownership moved even on failure */
}

static void test_openai(void)
{
    struct bert_model m = make_model();
    struct proto_job job;
    struct proto_error err;
    CHECK(prepare(&m, PROTO_ROUTE_OPENAI_EMBED, "{\"input\":[\"the cat\",\"dog\"]}", &job, &err));
    const float values[8] = {1.0f, 2.0f, 0.5f, -1.0f, 0.1f, 0.2f, 0.3f, 0.4f};
    memcpy(job.outputs, values, sizeof values);
    json_t *j = respond(&job, &m);
    CHECK_STR_EQ(json_string_value(json_object_get(j, "object")), "list");
    CHECK_STR_EQ(json_string_value(json_object_get(j, "model")), "tiny-bert");
    json_t *data = json_object_get(j, "data");
    CHECK_INT_EQ(json_array_size(data), 2);
    json_t *d1 = json_array_get(data, 1);
    CHECK_STR_EQ(json_string_value(json_object_get(d1, "object")), "embedding");
    CHECK_INT_EQ(json_integer_value(json_object_get(d1, "index")), 1);
    json_t *e1 = json_object_get(d1, "embedding");
    CHECK_INT_EQ(json_array_size(e1), 4);
    CHECK_NEAR(json_real_value(json_array_get(e1, 2)), 0.3, 1e-7);
    json_t *usage = json_object_get(j, "usage");
    CHECK_INT_EQ(json_integer_value(json_object_get(usage, "prompt_tokens")), 4 + 3);
    CHECK_INT_EQ(json_integer_value(json_object_get(usage, "total_tokens")), 4 + 3);
    json_decref(j);
    proto_job_free(&job);

    /* base64 of the little-endian float32 bytes: 1.0f = 00 00 80 3f. */
    CHECK(prepare(
        &m, PROTO_ROUTE_OPENAI_EMBED,
        "{\"input\":\"cat\",\"encoding_format\":\"base64\",\"model\":\"mine\",\"dimensions\":4}",
        &job, &err));
    const float one[4] = {1.0f, 1.0f, 1.0f, -2.0f};
    memcpy(job.outputs, one, sizeof one);
    j = respond(&job, &m);
    /* The served model's name, whatever the request named. */
    CHECK_STR_EQ(json_string_value(json_object_get(j, "model")), "tiny-bert");
    CHECK_STR_EQ(json_string_value(
                     json_object_get(json_array_get(json_object_get(j, "data"), 0), "embedding")),
                 "AACAPwAAgD8AAIA/AAAAwA==");
    json_decref(j);
    job.outputs[0] = INFINITY;
    size_t len;
    CHECK(proto_job_respond(&job, &m, &len) == NULL);
    proto_job_free(&job);

    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_OPENAI_EMBED, "{\"input\":\"cat\",\"dimensions\":5}",
                       PROTO_ERR_INVALID,
                       "\"dimensions\" must be at most the model's embedding size 4, got 5");

    /* Unit length by default; "dimensions" cuts, then makes the cut unit
     * length again (3, 4 -> 0.6, 0.8); "normalized": false cuts only. The
     * engine's own normalisation of the whole vector is not run here. */
    CHECK(prepare(&m, PROTO_ROUTE_OPENAI_EMBED, "{\"input\":\"cat\",\"dimensions\":2}", &job,
                  &err));
    CHECK(job.seqs[0].task.normalize);
    const float v[4] = {3.0f, 4.0f, 12.0f, 0.0f};
    memcpy(job.outputs, v, sizeof v);
    j = respond(&job, &m);
    json_t *cut = json_object_get(json_array_get(json_object_get(j, "data"), 0), "embedding");
    CHECK_INT_EQ(json_array_size(cut), 2);
    CHECK_NEAR(json_real_value(json_array_get(cut, 0)), 0.6, 1e-7);
    CHECK_NEAR(json_real_value(json_array_get(cut, 1)), 0.8, 1e-7);
    json_decref(j);
    proto_job_free(&job);
    CHECK(prepare(&m, PROTO_ROUTE_OPENAI_EMBED,
                  "{\"input\":\"cat\",\"dimensions\":3,\"normalized\":false}", &job, &err));
    CHECK(!job.seqs[0].task.normalize);
    memcpy(job.outputs, v, sizeof v);
    j = respond(&job, &m);
    cut = json_object_get(json_array_get(json_object_get(j, "data"), 0), "embedding");
    CHECK_INT_EQ(json_array_size(cut), 3);
    CHECK_NEAR(json_real_value(json_array_get(cut, 2)), 12.0, 1e-7);
    json_decref(j);
    proto_job_free(&job);
    /* openai_unit_length false: as /embed, the checkpoint's normalisation. */
    struct proto_defaults as_embed = defaults;
    as_embed.normalize = false;
    struct proto_request req;
    CHECK(proto_request_parse(PROTO_ROUTE_OPENAI_EMBED, "{\"input\":\"a\"}", 13, &limits, &req,
                              &err));
    CHECK(proto_job_prepare(&job, &m, &limits, &as_embed, &req, &err));
    CHECK(job.n_seqs == 1 && !job.seqs[0].task.normalize);
    proto_job_free(&job);
    as_embed.openai_unit_length = true;
    CHECK(proto_request_parse(PROTO_ROUTE_OPENAI_EMBED, "{\"input\":\"a\"}", 13, &limits, &req,
                              &err));
    CHECK(proto_job_prepare(&job, &m, &limits, &as_embed, &req, &err));
    CHECK(job.n_seqs == 1 && job.seqs[0].task.normalize);
    proto_job_free(&job);
}

/* Put (id, prob) predictions for mask `k` of sequence `s`. */
static void set_predictions(struct proto_job *job, size_t s, size_t k, const int32_t *ids,
                            const float *probs)
{
    struct bert_seq_task *t = &job->seqs[s].task;
    for (uint32_t r = 0; r < t->top_k; r++) {
        t->top_ids[k * t->top_k + r] = ids[r];
        t->top_probs[k * t->top_k + r] = probs[r];
    }
}

static void check_prediction(json_t *p, double score, int token, const char *token_str,
                             const char *sequence)
{
    CHECK(json_is_object(p) && json_object_size(p) == 4);
    CHECK_NEAR(json_real_value(json_object_get(p, "score")), score, 1e-7);
    CHECK_INT_EQ(json_integer_value(json_object_get(p, "token")), token);
    CHECK_STR_EQ(json_string_value(json_object_get(p, "token_str")), token_str);
    CHECK_STR_EQ(json_string_value(json_object_get(p, "sequence")), sequence);
}

static void test_fill_mask_single(void)
{
    struct bert_model m = make_model();
    struct proto_job job;
    struct proto_error err;
    CHECK(prepare(&m, PROTO_ROUTE_FILL_MASK,
                  "{\"inputs\":\"the cat sat on the [MASK].\",\"top_k\":2}", &job, &err));
    CHECK_INT_EQ(job.seqs[0].n_masks, 1);
    const struct bert_seq_task *t = &job.seqs[0].task;
    CHECK_INT_EQ(t->task, BERT_TASK_FILL_MASK);
    CHECK_INT_EQ(t->top_k, 2);
    CHECK(t->targets == NULL && t->n_targets == 0);
    set_predictions(&job, 0, 0, (int32_t[]){FAKE_MAT, FAKE_DOG}, (float[]){0.75f, 0.125f});
    json_t *j = respond(&job, &m);
    /* One string, one mask: the list of predictions itself. */
    CHECK(json_is_array(j) && json_array_size(j) == 2);
    check_prediction(json_array_get(j, 0), 0.75, FAKE_MAT, "mat", "the cat sat on the mat.");
    check_prediction(json_array_get(j, 1), 0.125, FAKE_DOG, "dog", "the cat sat on the dog.");
    json_decref(j);
    proto_job_free(&job);

    /* A prediction of [PAD] disappears from the sequence, as padding does. */
    CHECK(
        prepare(&m, PROTO_ROUTE_FILL_MASK, "{\"inputs\":\"[MASK] cat\",\"top_k\":1}", &job, &err));
    set_predictions(&job, 0, 0, (int32_t[]){FAKE_PAD}, (float[]){0.5f});
    j = respond(&job, &m);
    check_prediction(json_array_get(j, 0), 0.5, FAKE_PAD, "[PAD]", "cat");
    json_decref(j);
    proto_job_free(&job);
}

static void test_fill_mask_shapes(void)
{
    struct bert_model m = make_model();
    struct proto_job job;
    struct proto_error err;
    /* Input 0 has two masks, input 1 one. */
    CHECK(
        prepare(&m, PROTO_ROUTE_FILL_MASK,
                "{\"inputs\":[\"[MASK] cat sat on the [MASK].\",\"paris is the [MASK] of france\"],"
                "\"top_k\":1}",
                &job, &err));
    CHECK_INT_EQ(job.seqs[0].n_masks, 2);
    CHECK_INT_EQ(job.seqs[1].n_masks, 1);
    /* The engine runs the MLM head at the mask positions proto found. */
    for (size_t i = 0; i < 2; i++) {
        const struct bert_seq_task *t = &job.seqs[i].task;
        CHECK_INT_EQ(t->n_masks, job.seqs[i].n_masks);
        for (uint32_t k = 0; k < t->n_masks; k++)
            CHECK_INT_EQ(job.seqs[i].enc.ids[t->mask_positions[k]], FAKE_MASK);
    }
    CHECK_INT_EQ(job.seqs[0].task.mask_positions[0], 1); /* after [CLS] */
    /* The three mask slots are consecutive in the one buffer. */
    CHECK(job.seqs[1].task.top_probs == job.seqs[0].task.top_probs + 2);
    CHECK((void *)job.seqs[0].task.top_ids >= (void *)(job.outputs + 3));
    set_predictions(&job, 0, 0, (int32_t[]){FAKE_THE}, (float[]){0.5f});
    set_predictions(&job, 0, 1, (int32_t[]){FAKE_MAT}, (float[]){0.25f});
    set_predictions(&job, 1, 0, (int32_t[]){FAKE_CAPITAL}, (float[]){0.875f});
    json_t *j = respond(&job, &m);
    CHECK(json_is_array(j) && json_array_size(j) == 2);
    /* Several masks: a list per mask, the other mask left in place and the
     * specials kept (skip_special_tokens is false). */
    json_t *in0 = json_array_get(j, 0);
    CHECK(json_is_array(in0) && json_array_size(in0) == 2);
    check_prediction(json_array_get(json_array_get(in0, 0), 0), 0.5, FAKE_THE, "the",
                     "[CLS] the cat sat on the [MASK]. [SEP]");
    check_prediction(json_array_get(json_array_get(in0, 1), 0), 0.25, FAKE_MAT, "mat",
                     "[CLS] [MASK] cat sat on the mat. [SEP]");
    /* One mask in a batch: that input's list of predictions. */
    json_t *in1 = json_array_get(j, 1);
    CHECK(json_is_array(in1) && json_array_size(in1) == 1);
    check_prediction(json_array_get(in1, 0), 0.875, FAKE_CAPITAL, "capital",
                     "paris is the capital of france");
    json_decref(j);
    proto_job_free(&job);

    /* A single string with two masks: a list per mask, no outer list. */
    CHECK(prepare(&m, PROTO_ROUTE_FILL_MASK, "{\"inputs\":\"[MASK] [MASK]\",\"top_k\":2}", &job,
                  &err));
    set_predictions(&job, 0, 0, (int32_t[]){FAKE_THE, FAKE_A}, (float[]){0.5f, 0.25f});
    set_predictions(&job, 0, 1, (int32_t[]){FAKE_CAT, FAKE_DOG}, (float[]){0.5f, 0.5f});
    j = respond(&job, &m);
    CHECK(json_is_array(j) && json_array_size(j) == 2);
    CHECK(json_is_array(json_array_get(j, 0)) && json_array_size(json_array_get(j, 0)) == 2);
    CHECK(json_is_object(json_array_get(json_array_get(j, 1), 1)));
    check_prediction(json_array_get(json_array_get(j, 1), 1), 0.5, FAKE_DOG, "dog",
                     "[CLS] [MASK] dog [SEP]");
    json_decref(j);
    proto_job_free(&job);

    /* A batch of one keeps the outer list. */
    CHECK(prepare(&m, PROTO_ROUTE_FILL_MASK, "{\"inputs\":[\"[MASK]\"],\"top_k\":1}", &job, &err));
    set_predictions(&job, 0, 0, (int32_t[]){FAKE_CAT}, (float[]){1.0f});
    j = respond(&job, &m);
    CHECK(json_is_array(j) && json_array_size(j) == 1);
    CHECK(json_is_array(json_array_get(j, 0)));
    check_prediction(json_array_get(json_array_get(j, 0), 0), 1.0, FAKE_CAT, "cat", "cat");
    json_decref(j);
    proto_job_free(&job);
}

static void test_fill_mask_targets_and_errors(void)
{
    struct bert_model m = make_model();
    struct proto_job job;
    struct proto_error err;
    /* "cats" is not a token: its first piece "cat" is used, and deduplicated
     * against "cat"; "zebra" becomes [UNK]; top_k 5 is capped at 3. */
    CHECK(prepare(&m, PROTO_ROUTE_FILL_MASK,
                  "{\"inputs\":\"the [MASK]\",\"targets\":[\"cat\",\"cats\",\"dog\",\"zebra\"]}",
                  &job, &err));
    const struct bert_seq_task *t = &job.seqs[0].task;
    CHECK_INT_EQ(t->n_targets, 3);
    CHECK(t->targets == job.target_ids);
    CHECK_INT_EQ(job.target_ids[0], FAKE_CAT);
    CHECK_INT_EQ(job.target_ids[1], FAKE_DOG);
    CHECK_INT_EQ(job.target_ids[2], FAKE_UNK);
    CHECK_INT_EQ(t->top_k, 3);
    proto_job_free(&job);

    /* A target that tokenizes to nothing is dropped; none left is 422. */
    CHECK(prepare(&m, PROTO_ROUTE_FILL_MASK,
                  "{\"inputs\":\"[MASK]\",\"targets\":[\"  \",\"mat\"],\"top_k\":1}", &job, &err));
    CHECK_INT_EQ(job.seqs[0].task.n_targets, 1);
    CHECK_INT_EQ(job.target_ids[0], FAKE_MAT);
    proto_job_free(&job);
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_FILL_MASK, "{\"inputs\":\"[MASK]\",\"targets\":\" \"}",
                       PROTO_ERR_INVALID,
                       "none of the \"targets\" is a token of this model's vocabulary");

    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_FILL_MASK, "{\"inputs\":[\"[MASK]\",\"no mask here\"]}",
                       PROTO_ERR_INVALID, "inputs[1] has no mask token \"[MASK]\"");
    EXPECT_PREPARE_ERR(
        &m, PROTO_ROUTE_FILL_MASK,
        "{\"inputs\":\"the cat sat on the mat the cat sat on the [MASK]\",\"truncate\":true}",
        PROTO_ERR_INVALID, "inputs[0] has no mask token \"[MASK]\" left after truncation");

    /* masks x top_k x tokens over the decode budget: 2 x 5 x 5 = 50 here. */
    struct proto_limits tight = limits;
    tight.max_fill_mask_decode = 49;
    struct proto_request req;
    const char *body = "{\"inputs\":\"[MASK] the [MASK]\",\"top_k\":5}";
    CHECK(proto_request_parse(PROTO_ROUTE_FILL_MASK, body, strlen(body), &tight, &req, &err));
    CHECK(!proto_job_prepare(&job, &m, &tight, &defaults, &req, &err));
    CHECK_INT_EQ(err.kind, PROTO_ERR_TOO_LARGE);
    CHECK_CONTAINS(err.message, "would decode 50 tokens (masks x top_k x sequence length), "
                                "more than max_fill_mask_decode 49");
    tight.max_fill_mask_decode = 50;
    CHECK(proto_request_parse(PROTO_ROUTE_FILL_MASK, body, strlen(body), &tight, &req, &err));
    CHECK(proto_job_prepare(&job, &m, &tight, &defaults, &req, &err));
    proto_job_free(&job);

    /* top_k beyond the vocabulary is capped at its size. */
    m.config.vocab_size = 3;
    CHECK(prepare(&m, PROTO_ROUTE_FILL_MASK, "{\"inputs\":\"[MASK]\",\"top_k\":50}", &job, &err));
    CHECK_INT_EQ(job.seqs[0].task.top_k, 3);
    proto_job_free(&job);
    m.config.vocab_size = 24;

    fake_tokenizer_set_has_mask(false);
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_FILL_MASK, "{\"inputs\":\"[MASK]\"}", PROTO_ERR_INVALID,
                       "this model cannot fill masks: its tokenizer has no mask token");
    fake_tokenizer_set_has_mask(true);
    m.can_fill_mask = false;
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_FILL_MASK, "{\"inputs\":\"[MASK]\"}", PROTO_ERR_INVALID,
                       "this model cannot fill masks: the checkpoint has no masked-LM head");
}

static void test_classify(void)
{
    struct bert_model m = make_model();
    struct proto_job job;
    struct proto_error err;
    /* /predict (TEI): one text answers its list alone. */
    CHECK(prepare(&m, PROTO_ROUTE_PREDICT, "{\"inputs\":\"the cat\"}", &job, &err));
    CHECK_INT_EQ(job.seqs[0].task.task, BERT_TASK_CLASSIFY);
    CHECK(job.seqs[0].task.logits == job.outputs);
    /* Default for 3 labels: softmax. */
    const float logits[3] = {1.0f, 3.0f, 2.0f};
    memcpy(job.outputs, logits, sizeof logits);
    json_t *j = respond(&job, &m);
    CHECK(json_is_array(j) && json_array_size(j) == 3);
    double e1 = exp(1.0), e2 = exp(2.0), e3 = exp(3.0), sum = e1 + e2 + e3;
    CHECK_STR_EQ(json_string_value(json_object_get(json_array_get(j, 0), "label")), "NEUTRAL");
    CHECK_NEAR(json_real_value(json_object_get(json_array_get(j, 0), "score")), e3 / sum, 1e-7);
    CHECK_STR_EQ(json_string_value(json_object_get(json_array_get(j, 1), "label")), "POSITIVE");
    CHECK_NEAR(json_real_value(json_object_get(json_array_get(j, 1), "score")), e2 / sum, 1e-7);
    CHECK_STR_EQ(json_string_value(json_object_get(json_array_get(j, 2), "label")), "NEGATIVE");
    CHECK_NEAR(json_real_value(json_object_get(json_array_get(j, 2), "score")), e1 / sum, 1e-7);
    /* /classify (the Hugging Face Inference API): the same list, in a list,
     * for one text and for one {"text", "text_pair"} object. */
    static const char *const single_bodies[] = {
        "{\"inputs\":\"the cat\"}", "{\"inputs\":{\"text\":\"the cat\",\"text_pair\":null}}"};
    for (size_t b = 0; b < 2; b++) {
        struct proto_job one;
        CHECK(prepare(&m, PROTO_ROUTE_CLASSIFY, single_bodies[b], &one, &err));
        memcpy(one.outputs, logits, sizeof logits);
        json_t *nested = respond(&one, &m);
        CHECK(json_is_array(nested) && json_array_size(nested) == 1);
        CHECK(json_equal(json_array_get(nested, 0), j));
        json_decref(nested);
        proto_job_free(&one);
    }
    json_decref(j);
    proto_job_free(&job);
    /* {"text", "text_pair"} is the pair [text, text_pair]; TEI's /predict
     * reads a lone two-string list as one pair. */
    struct proto_job a, b2, c;
    CHECK(prepare(&m, PROTO_ROUTE_CLASSIFY,
                  "{\"inputs\":[{\"text\":\"the cat\",\"text_pair\":\"a dog\"}]}", &a, &err));
    CHECK(prepare(&m, PROTO_ROUTE_CLASSIFY, "{\"inputs\":[[\"the cat\",\"a dog\"]]}", &b2, &err));
    CHECK(prepare(&m, PROTO_ROUTE_PREDICT, "{\"inputs\":[\"the cat\",\"a dog\"]}", &c, &err));
    CHECK(a.n_seqs == 1 && b2.n_seqs == 1 && c.n_seqs == 1 && !c.req.batched);
    CHECK(a.n_seqs == 1 && a.seqs[0].enc.n == 7 && c.seqs[0].enc.n == 7 &&
          memcmp(a.seqs[0].enc.type_ids, b2.seqs[0].enc.type_ids, 7 * sizeof(int32_t)) == 0 &&
          memcmp(c.seqs[0].enc.ids, b2.seqs[0].enc.ids, 7 * sizeof(int32_t)) == 0);
    proto_job_free(&a);
    proto_job_free(&b2);
    proto_job_free(&c);

    /* A batch with a pair, raw scores, top_k, and a tie (lower index first). */
    CHECK(prepare(&m, PROTO_ROUTE_CLASSIFY,
                  "{\"inputs\":[[\"the cat\",\"a dog\"],\"mat\"],\"raw_scores\":true,\"top_k\":2}",
                  &job, &err));
    int32_t types[] = {0, 0, 0, 0, 1, 1, 1};
    CHECK_INT_EQ(job.seqs[0].enc.n, 7);
    CHECK(memcmp(job.seqs[0].enc.type_ids, types, sizeof types) == 0);
    const float raw[6] = {-1.5f, 2.0f, 2.0f, 0.0f, 0.0f, -3.0f};
    memcpy(job.outputs, raw, sizeof raw);
    size_t len;
    char *body = proto_job_respond(&job, &m, &len);
    CHECK_STR_EQ(body,
                 "[[{\"label\":\"NEUTRAL\",\"score\":2.0},{\"label\":\"POSITIVE\",\"score\":2.0}],"
                 "[{\"label\":\"NEGATIVE\",\"score\":0.0},{\"label\":\"NEUTRAL\",\"score\":0.0}]]");
    free(body);
    proto_job_free(&job);

    /* A model with one token type (RoBERTa, XLM-R) gets no pair types; one
     * with two keeps them (above). */
    m.config.type_vocab_size = 1;
    CHECK(prepare(&m, PROTO_ROUTE_CLASSIFY, "{\"inputs\":[[\"the cat\",\"a dog\"]]}", &job,
                  &err));
    int32_t single_type[7] = {0};
    CHECK_INT_EQ(job.seqs[0].enc.n, 7);
    CHECK(memcmp(job.seqs[0].enc.type_ids, single_type, sizeof single_type) == 0);
    proto_job_free(&job);
    m.config.type_vocab_size = 0;

    /* Sigmoid on request; top_k over the label count means all labels. */
    CHECK(prepare(&m, PROTO_ROUTE_CLASSIFY,
                  "{\"inputs\":[\"cat\"],\"function_to_apply\":\"sigmoid\",\"top_k\":10}", &job,
                  &err));
    const float s[3] = {0.0f, 10.0f, -10.0f};
    memcpy(job.outputs, s, sizeof s);
    j = respond(&job, &m);
    json_t *row = json_array_get(j, 0);
    CHECK_INT_EQ(json_array_size(row), 3);
    CHECK_NEAR(json_real_value(json_object_get(json_array_get(row, 0), "score")),
               1 / (1 + exp(-10.0)), 1e-7);
    CHECK_NEAR(json_real_value(json_object_get(json_array_get(row, 1), "score")), 0.5, 1e-7);
    json_decref(j);
    proto_job_free(&job);

    /* transformers' defaults: one label -> sigmoid; multi-label -> sigmoid;
     * regression with several labels -> softmax; no id2label -> LABEL_i. */
    char *one_label[] = {"SCORE"};
    m.config.num_labels = 1;
    m.config.id2label = one_label;
    CHECK(prepare(&m, PROTO_ROUTE_PREDICT, "{\"inputs\":\"cat\"}", &job, &err));
    job.outputs[0] = 0.0f;
    body = proto_job_respond(&job, &m, &len);
    CHECK_STR_EQ(body, "[{\"label\":\"SCORE\",\"score\":0.5}]");
    free(body);
    proto_job_free(&job);

    m.config.num_labels = 2;
    m.config.id2label = NULL;
    m.config.problem_type = BERT_PROBLEM_MULTI_LABEL;
    CHECK(prepare(&m, PROTO_ROUTE_PREDICT, "{\"inputs\":\"cat\"}", &job, &err));
    job.outputs[0] = 0.0f;
    job.outputs[1] = 0.0f;
    body = proto_job_respond(&job, &m, &len);
    CHECK_STR_EQ(body,
                 "[{\"label\":\"LABEL_0\",\"score\":0.5},{\"label\":\"LABEL_1\",\"score\":0.5}]");
    free(body);
    proto_job_free(&job);

    m.config.problem_type = BERT_PROBLEM_REGRESSION;
    CHECK(prepare(&m, PROTO_ROUTE_PREDICT, "{\"inputs\":\"cat\"}", &job, &err));
    job.outputs[0] = 5.0f;
    job.outputs[1] = 5.0f;
    body = proto_job_respond(&job, &m, &len);
    CHECK_STR_EQ(body,
                 "[{\"label\":\"LABEL_0\",\"score\":0.5},{\"label\":\"LABEL_1\",\"score\":0.5}]");
    job.outputs[1] = NAN;
    CHECK(proto_job_respond(&job, &m, &len) == NULL);
    free(body);
    proto_job_free(&job);

    m.can_classify = false;
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_CLASSIFY, "{\"inputs\":\"cat\"}", PROTO_ERR_INVALID,
                       "this model cannot classify: the checkpoint has no classification head");
}

static void test_tokenize(void)
{
    struct bert_model m = make_model();
    struct proto_job job;
    struct proto_error err;
    CHECK(prepare(&m, PROTO_ROUTE_TOKENIZE, "{\"inputs\":\"The cats!\"}", &job, &err));
    CHECK(!proto_job_needs_compute(&job));
    CHECK(job.outputs == NULL);
    size_t len;
    char *body = proto_job_respond(&job, &m, &len);
    CHECK_STR_EQ(body,
                 "[[{\"id\":2,\"text\":\"[CLS]\",\"special\":true,\"start\":null,\"stop\":null},"
                 "{\"id\":5,\"text\":\"The\",\"special\":false,\"start\":0,\"stop\":3},"
                 "{\"id\":6,\"text\":\"cat\",\"special\":false,\"start\":4,\"stop\":7},"
                 "{\"id\":17,\"text\":\"s\",\"special\":false,\"start\":7,\"stop\":8},"
                 "{\"id\":22,\"text\":\"!\",\"special\":false,\"start\":8,\"stop\":9},"
                 "{\"id\":3,\"text\":\"[SEP]\",\"special\":true,\"start\":null,\"stop\":null}]]");
    free(body);
    proto_job_free(&job);

    /* Pairs: offsets are into the input each token came from. Without
     * specials, a user-typed [MASK] is not "special". */
    CHECK(prepare(
        &m, PROTO_ROUTE_TOKENIZE,
        "{\"inputs\":[[\"caf\\u00e9 mat\",\"on [MASK]\"],\"dog\"],\"add_special_tokens\":false}",
        &job, &err));
    json_t *j = respond(&job, &m);
    CHECK(json_is_array(j) && json_array_size(j) == 2);
    json_t *t0 = json_array_get(j, 0);
    CHECK_INT_EQ(json_array_size(t0), 4);
    json_t *tok = json_array_get(t0, 0);
    CHECK_STR_EQ(json_string_value(json_object_get(tok, "text")), "caf\xc3\xa9");
    CHECK_INT_EQ(json_integer_value(json_object_get(tok, "stop")), 5);
    tok = json_array_get(t0, 3);
    CHECK_INT_EQ(json_integer_value(json_object_get(tok, "id")), FAKE_MASK);
    CHECK_STR_EQ(json_string_value(json_object_get(tok, "text")), "[MASK]");
    CHECK(json_is_false(json_object_get(tok, "special")));
    CHECK_INT_EQ(json_integer_value(json_object_get(tok, "start")), 3);
    CHECK_INT_EQ(json_integer_value(json_object_get(tok, "stop")), 9);
    CHECK_INT_EQ(json_array_size(json_array_get(j, 1)), 1);
    json_decref(j);
    proto_job_free(&job);
}

/* Rerank: every text paired with the query, one logit each, best first. */
/* Cohere v1's rank_fields and max_chunks_per_doc, v2's max_tokens_per_doc
 * (the fake tokenizer: a token per word, limit 12). */
static void test_cohere_documents(struct bert_model *m)
{
    struct proto_job job;
    struct proto_error err;
    /* rank_fields: "title: paris\ntext: the cat", fields in the order named;
     * the object is echoed whole. */
    CHECK(prepare(m, PROTO_ROUTE_V1_RERANK,
                  "{\"query\":\"cat\",\"documents\":[{\"text\":\"the cat\",\"title\":\"paris\","
                  "\"n\":1.5}],\"rank_fields\":[\"title\",\"missing\",\"text\"],"
                  "\"return_documents\":true}",
                  &job, &err));
    CHECK_INT_EQ(job.n_seqs, 1);
    /* [CLS] cat [SEP] title : paris text : the cat [SEP]: ':' is unknown. */
    CHECK_INT_EQ(job.seqs[0].enc.n, 11);
    CHECK_INT_EQ(job.seqs[0].enc.ids[5], 12); /* paris */
    job.outputs[0] = 0.0f;
    size_t len;
    char *body = proto_job_respond(&job, m, &len);
    CHECK_CONTAINS(body, "\"document\":{\"text\":\"the cat\",\"title\":\"paris\",\"n\":1.5}");
    free(body);
    proto_job_free(&job);
    EXPECT_PREPARE_ERR(m, PROTO_ROUTE_V1_RERANK,
                       "{\"query\":\"cat\",\"documents\":[{\"a\":\"b\"}],\"rank_fields\":[\"t\"]}",
                       PROTO_ERR_INVALID, "\"documents[0]\" has none of the \"rank_fields\"");
    EXPECT_PREPARE_ERR(m, PROTO_ROUTE_V1_RERANK,
                       "{\"query\":\"cat\",\"documents\":[{\"t\":5}],\"rank_fields\":[\"t\"]}",
                       PROTO_ERR_INVALID, "\"documents[0]\" field \"t\" must be a string");
    /* 14 words with "cat" as query: 18 tokens, over 12. Without chunks 413;
     * with chunks of 12 - 4 = 8 words: 8, then the last 6; the best
     * chunk's score is the document's. */
    const char *long_doc = "the cat sat on the mat the dog sat on the mat a cat";
    char body_text[512];
    snprintf(body_text, sizeof body_text, "{\"query\":\"cat\",\"documents\":[\"mat\",\"%s\"]}",
             long_doc);
    EXPECT_PREPARE_ERR(m, PROTO_ROUTE_V1_RERANK, body_text, PROTO_ERR_TOO_LARGE,
                       "documents[1] is 18 tokens long with the query, more than the limit of 12; "
                       "send \"truncate\": true to cut it or \"max_chunks_per_doc\" to read it in "
                       "chunks");
    snprintf(body_text, sizeof body_text,
             "{\"query\":\"cat\",\"documents\":[\"mat\",\"%s\"],\"max_chunks_per_doc\":2}", long_doc);
    CHECK(prepare(m, PROTO_ROUTE_V1_RERANK, body_text, &job, &err));
    CHECK_INT_EQ(job.n_seqs, 3);
    CHECK(job.n_seqs == 3 && job.seq_input[0] == 0 && job.seq_input[1] == 1 &&
          job.seq_input[2] == 1);
    CHECK(job.n_seqs == 3 && job.seqs[1].enc.n == 12 && job.seqs[2].enc.n == 10);
    const float chunk_logits[3] = {0.0f, -1.0f, 3.0f};
    memcpy(job.outputs, chunk_logits, sizeof chunk_logits);
    json_t *j = respond(&job, m);
    json_t *best = json_array_get(json_object_get(j, "results"), 0);
    CHECK_INT_EQ(json_integer_value(json_object_get(best, "index")), 1);
    CHECK_NEAR(json_real_value(json_object_get(best, "relevance_score")), 1.0 / (1.0 + exp(-3.0)),
               1e-7);
    CHECK_INT_EQ(json_array_size(json_object_get(j, "results")), 2);
    json_decref(j);
    proto_job_free(&job);
    /* v2: each document's first max_tokens_per_doc tokens. */
    snprintf(body_text, sizeof body_text,
             "{\"query\":\"cat\",\"documents\":[\"%s\"],\"max_tokens_per_doc\":3}", long_doc);
    CHECK(prepare(m, PROTO_ROUTE_V2_RERANK, body_text, &job, &err));
    CHECK(job.n_seqs == 1 && job.seqs[0].enc.n == 3 + 1 + 3);
    job.outputs[0] = 0.0f;
    j = respond(&job, m);
    CHECK_STR_EQ(json_string_value(json_object_get(
                     json_object_get(json_object_get(j, "meta"), "api_version"), "version")),
                 "2");
    json_decref(j);
    proto_job_free(&job);
    EXPECT_PREPARE_ERR(m, PROTO_ROUTE_V2_RERANK,
                       "{\"query\":\"cat\",\"documents\":[\"a\"],\"max_chunks_per_doc\":2}",
                       PROTO_ERR_INVALID, "unknown field \"max_chunks_per_doc\"");
}

/* sentence-transformers prompts: prompt_name, prompt, the default. */
static void test_prompts(void)
{
    struct bert_model m = make_model();
    char *names[] = {"q", "d"}, *texts[] = {"paris ", "the "};
    m.config.prompt_names = names;
    m.config.prompt_texts = texts;
    m.config.n_prompts = 2;
    m.config.default_prompt = 1;
    struct proto_job job;
    struct proto_error err;
    static const struct {
        const char *body;
        int32_t first; /* the id after [CLS] */
        size_t n;
    } cases[] = {
        {"{\"inputs\":\"cat\",\"prompt_name\":\"q\"}", 12, 4},   /* paris cat */
        {"{\"inputs\":\"cat\",\"prompt\":\"mat \"}", 9, 4},        /* mat cat */
        {"{\"inputs\":\"cat\"}", 5, 4},                              /* the cat */
        {"{\"inputs\":\"cat\",\"prompt\":\"\"}", 6, 3},              /* cat */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        CHECK(prepare(&m, PROTO_ROUTE_EMBED, cases[c].body, &job, &err));
        CHECK(job.n_seqs == 1 && job.seqs[0].enc.n == cases[c].n &&
              job.seqs[0].enc.ids[1] == cases[c].first);
        proto_job_free(&job);
    }
    /* Routes without prompts ignore the default. */
    CHECK(prepare(&m, PROTO_ROUTE_TOKENIZE, "{\"inputs\":\"cat\"}", &job, &err));
    CHECK(job.n_seqs == 1 && job.seqs[0].enc.n == 3);
    proto_job_free(&job);
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_EMBED, "{\"inputs\":\"cat\",\"prompt_name\":\"x\"}",
                       PROTO_ERR_INVALID,
                       "\"prompt_name\" \"x\" is not one of this model's 2 prompts "
                       "(config_sentence_transformers.json)");
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_CLASSIFY, "{\"inputs\":\"cat\",\"prompt\":\"x\"}",
                       PROTO_ERR_INVALID, "unknown field \"prompt\"");
}

/* TEI's /decode: ids (one list or several) back to text, no compute. */
static void test_decode(void)
{
    struct bert_model m = make_model();
    struct proto_job job;
    struct proto_error err;
    CHECK(prepare(&m, PROTO_ROUTE_DECODE, "{\"ids\":[2,5,6,3]}", &job, &err));
    CHECK(!proto_job_needs_compute(&job));
    size_t len;
    char *body = proto_job_respond(&job, &m, &len);
    CHECK_STR_EQ(body, "[\"the cat\"]");
    free(body);
    proto_job_free(&job);
    CHECK(prepare(&m, PROTO_ROUTE_DECODE,
                  "{\"ids\":[[2,5,6,3],[20]],\"skip_special_tokens\":false}", &job, &err));
    body = proto_job_respond(&job, &m, &len);
    CHECK_STR_EQ(body, "[\"[CLS] the cat [SEP]\",\"hello\"]");
    free(body);
    proto_job_free(&job);
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_DECODE, "{\"ids\":[2,99]}", PROTO_ERR_INVALID,
                       "ids[0]: token id 99 at position 1 is not in the vocabulary (0 to 23)");
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_DECODE, "{\"ids\":\"the cat\"}", PROTO_ERR_INVALID,
                       "\"ids\" must be a list of token ids or a list of lists of token ids, got a "
                       "string");
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_DECODE, "{\"ids\":[\"the\"]}", PROTO_ERR_INVALID,
                       "\"ids[0]\" must be a list of token ids, got a string");
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_DECODE, "{\"ids\":[1],\"skip_special_tokens\":1}",
                       PROTO_ERR_INVALID, "\"skip_special_tokens\" must be a boolean, got an integer");
}

static void test_rerank(void)
{
    struct bert_model m = make_model();
    static char *one_label[] = {"LABEL_0"};
    struct proto_job job;
    struct proto_error err;

    /* A three-label classifier is not a cross-encoder. */
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_RERANK, "{\"query\":\"the cat\",\"texts\":[\"mat\"]}",
                       PROTO_ERR_INVALID, "cannot rerank: its classifier has 3 labels");
    m.config.num_labels = 1;
    m.config.id2label = one_label;
    m.can_classify = false;
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_V1_RERANK,
                       "{\"query\":\"the cat\",\"documents\":[\"mat\"]}", PROTO_ERR_INVALID,
                       "cannot rerank: the checkpoint has no classification head");
    m.can_classify = true;
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_RERANK, "{\"texts\":[\"mat\"]}", PROTO_ERR_INVALID,
                       "missing field \"query\"");
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_RERANK, "{\"query\":\"cat\",\"texts\":\"mat\"}",
                       PROTO_ERR_INVALID, "\"texts\" must be a list of strings, got a string");
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_RERANK,
                       "{\"query\":\"cat\",\"texts\":[[\"a\",\"b\"]]}", PROTO_ERR_INVALID,
                       "\"texts[0]\" must be a string, got a list");
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_V1_RERANK,
                       "{\"query\":\"cat\",\"documents\":[{\"txt\":\"mat\"}]}",
                       PROTO_ERR_INVALID,
                       "\"documents[0]\" must be a string or an object {\"text\": string}, got an "
                       "object without \"text\" (or name its fields in \"rank_fields\")");
    EXPECT_PREPARE_ERR(&m, PROTO_ROUTE_RERANK,
                       "{\"query\":\"cat\",\"texts\":[\"mat\"],\"top_n\":0}",
                       PROTO_ERR_INVALID, "\"top_n\" must be at least 1, got 0");

    /* Each text becomes the pair (query, text). */
    CHECK(prepare(&m, PROTO_ROUTE_RERANK,
                  "{\"query\":\"the cat\",\"texts\":[\"a dog\",\"mat\",\"the\",\"cat\"]}",
                  &job, &err));
    CHECK_INT_EQ(job.n_seqs, 4);
    int32_t types[] = {0, 0, 0, 0, 1, 1, 1};
    CHECK_INT_EQ(job.seqs[0].enc.n, 7);
    CHECK(memcmp(job.seqs[0].enc.type_ids, types, sizeof types) == 0);
    CHECK_INT_EQ(job.seqs[0].task.task, BERT_TASK_CLASSIFY);
    /* A tie between texts 1 and 3 keeps their order. */
    const float logits[4] = {0.5f, 2.0f, -1.0f, 2.0f};
    memcpy(job.outputs, logits, sizeof logits);
    json_t *j = respond(&job, &m);
    CHECK(json_is_array(j) && json_array_size(j) == 4);
    const int order[4] = {1, 3, 0, 2};
    for (size_t k = 0; k < 4 && k < json_array_size(j); k++) {
        json_t *r = json_array_get(j, k);
        CHECK_INT_EQ(json_integer_value(json_object_get(r, "index")), order[k]);
        CHECK_NEAR(json_real_value(json_object_get(r, "score")),
                   1.0 / (1.0 + exp(-(double)logits[order[k]])), 1e-7);
        CHECK(json_object_size(r) == 2);
    }
    json_decref(j);
    proto_job_free(&job);

    CHECK(prepare(&m, PROTO_ROUTE_RERANK,
                  "{\"query\":\"the cat\",\"texts\":[\"a dog\",\"mat\"],"
                  "\"raw_scores\":true,\"return_text\":true,\"top_n\":1}",
                  &job, &err));
    memcpy(job.outputs, logits, 2 * sizeof(float));
    size_t len;
    char *body = proto_job_respond(&job, &m, &len);
    CHECK_STR_EQ(body, "[{\"index\":1,\"score\":2.0,\"text\":\"mat\"}]");
    free(body);
    proto_job_free(&job);

    /* /v1/rerank: strings or {"text"} objects, sigmoid scores, usage. */
    CHECK(prepare(&m, PROTO_ROUTE_V1_RERANK,
                  "{\"query\":\"the cat\",\"documents\":[{\"text\":\"a dog\"},\"mat\"],"
                  "\"return_documents\":true}",
                  &job, &err));
    memcpy(job.outputs, logits, 2 * sizeof(float));
    j = respond(&job, &m);
    CHECK_STR_EQ(json_string_value(json_object_get(j, "model")), "tiny-bert");
    json_t *results = json_object_get(j, "results");
    CHECK(json_array_size(results) == 2);
    json_t *best = json_array_get(results, 0);
    CHECK_INT_EQ(json_integer_value(json_object_get(best, "index")), 1);
    CHECK_NEAR(json_real_value(json_object_get(best, "relevance_score")), 1.0 / (1.0 + exp(-2.0)),
               1e-7);
    CHECK_STR_EQ(json_string_value(json_object_get(json_object_get(best, "document"), "text")),
                 "mat");
    CHECK_INT_EQ(json_integer_value(json_object_get(json_object_get(j, "usage"), "total_tokens")),
                 job.n_tokens);
    /* Cohere's id and meta. */
    CHECK(json_is_string(json_object_get(j, "id")));
    CHECK_STR_EQ(json_string_value(json_object_get(
                     json_object_get(json_object_get(j, "meta"), "api_version"), "version")),
                 "1");
    json_decref(j);
    proto_job_free(&job);
    test_cohere_documents(&m);
}

int main(void)
{
    test_embed();
    test_truncation_and_limits();
    test_openai();
    test_fill_mask_single();
    test_fill_mask_shapes();
    test_fill_mask_targets_and_errors();
    test_classify();
    test_tokenize();
    test_rerank();
    test_decode();
    test_prompts();
    return check_exit();
}
