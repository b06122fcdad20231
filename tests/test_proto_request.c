/* proto/request.c and proto/errors.c: every route's valid forms (plain and
 * the Hugging Face "parameters" form) and every way a body can be wrong,
 * with the exact status, kind and message. */
#include <stdint.h>

#include "check.h"
#include "proto.h"
#include "proto_internal.h"

static struct proto_limits limits = {.max_client_batch = 32,
                                     .max_input_tokens = 512,
                                     .max_top_k = 100,
                                     .max_fill_mask_targets = 3};

static bool parse_n(enum proto_route route, const char *body, size_t len, struct proto_request *req,
                    struct proto_error *err)
{
    memset(err, 0, sizeof *err);
    return proto_request_parse(route, body, len, &limits, req, err);
}

static bool parse(enum proto_route route, const char *body, struct proto_request *req,
                  struct proto_error *err)
{
    return parse_n(route, body, strlen(body), req, err);
}

/* Parse must succeed; the request stays in `req` for checks. */
#define EXPECT_OK(route, body, req)                                                                \
    do {                                                                                           \
        struct proto_error e_;                                                                     \
        bool ok_ = parse(route, body, req, &e_);                                                   \
        CHECK(ok_);                                                                                \
        if (!ok_)                                                                                  \
            fprintf(stderr, "  body %s: %s\n", body, e_.message);                                  \
    } while (0)

/* Parse must fail with `kind` and a message containing `text`. */
#define EXPECT_ERR(route, body, kind_, text)                                                       \
    do {                                                                                           \
        struct proto_request r_;                                                                   \
        struct proto_error e_;                                                                     \
        bool ok_ = parse(route, body, &r_, &e_);                                                   \
        CHECK(!ok_);                                                                               \
        CHECK_INT_EQ(e_.kind, kind_);                                                              \
        CHECK_CONTAINS(e_.message, text);                                                          \
        CHECK(r_.root == NULL && r_.inputs == NULL && r_.targets == NULL);                         \
        if (ok_)                                                                                   \
            proto_request_free(&r_);                                                               \
    } while (0)

#define EMBED    PROTO_ROUTE_EMBED
#define FILL     PROTO_ROUTE_FILL_MASK
#define CLASSIFY PROTO_ROUTE_CLASSIFY
#define TOKENIZE PROTO_ROUTE_TOKENIZE
#define OPENAI   PROTO_ROUTE_OPENAI_EMBED
#define E400     PROTO_ERR_MALFORMED
#define E413     PROTO_ERR_TOO_LARGE
#define E422     PROTO_ERR_INVALID

static bool text_is(const struct proto_input *in, const char *s)
{
    return in->text_len == strlen(s) && memcmp(in->text, s, in->text_len) == 0;
}

static void test_routes_and_error_table(void)
{
    enum proto_route r;
    CHECK(proto_route_from_path("/embed", &r) && r == EMBED);
    CHECK(proto_route_from_path("/v1/embeddings", &r) && r == OPENAI);
    CHECK(!proto_route_from_path("/embed/", &r));
    CHECK_STR_EQ(proto_route_name(FILL), "fill-mask");

    static const struct {
        enum proto_error_kind kind;
        int status;
        const char *type;
    } table[] = {
        {PROTO_ERR_MALFORMED, 400, "validation"},
        {PROTO_ERR_UNAUTHORIZED, 401, "unauthorized"},
        {PROTO_ERR_NOT_FOUND, 404, "not_found"},
        {PROTO_ERR_METHOD, 405, "method_not_allowed"},
        {PROTO_ERR_TOO_LARGE, 413, "payload_too_large"},
        {PROTO_ERR_INVALID, 422, "validation"},
        {PROTO_ERR_OVERLOADED, 429, "overloaded"},
        {PROTO_ERR_INTERNAL, 500, "internal"},
        {PROTO_ERR_UNAVAILABLE, 503, "unavailable"},
        {PROTO_ERR_NOT_IMPLEMENTED, 501, "not_implemented"},
        {PROTO_ERR_EXPECTATION, 417, "expectation_failed"},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        CHECK_INT_EQ(proto_error_status(table[i].kind), table[i].status);
        CHECK_STR_EQ(proto_error_type(table[i].kind), table[i].type);
    }
    CHECK_INT_EQ(sizeof table / sizeof table[0], PROTO_ERR_COUNT);
}

static void test_error_bodies(void)
{
    struct proto_error err;
    proto_error_set(&err, PROTO_ERR_INVALID, "bad \"%s\"", "x");
    size_t len = 0;
    char *body = proto_error_body(EMBED, &err, &len);
    CHECK_STR_EQ(body, "{\"error\":\"bad \\\"x\\\"\",\"error_type\":\"validation\"}");
    CHECK_INT_EQ(len, strlen(body));
    free(body);

    body = proto_error_body(OPENAI, &err, &len);
    CHECK_STR_EQ(body,
                 "{\"error\":{\"message\":\"bad \\\"x\\\"\",\"type\":\"invalid_request_error\","
                 "\"code\":\"validation\"}}");
    free(body);
    proto_error_set(&err, PROTO_ERR_UNAVAILABLE, "draining");
    body = proto_error_body(OPENAI, &err, &len);
    CHECK_STR_EQ(body, "{\"error\":{\"message\":\"draining\",\"type\":\"server_error\","
                       "\"code\":\"unavailable\"}}");
    free(body);
    proto_error_set(&err, PROTO_ERR_NOT_FOUND, "no route");
    body = proto_error_body(PROTO_ROUTE_COUNT, &err, &len);
    CHECK_STR_EQ(body, "{\"error\":\"no route\",\"error_type\":\"not_found\"}");
    free(body);

    /* Messages are one line of valid UTF-8 whatever was formatted in. */
    proto_error_set(&err, PROTO_ERR_MALFORMED, "a\nb\tc\xff\xc3\xa9");
    CHECK_STR_EQ(err.message, "a\\x0ab\\x09c\\xff\xc3\xa9");
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    proto_error_set(&err, PROTO_ERR_MALFORMED, "%s", big);
    CHECK(strlen(err.message) < sizeof err.message);

    char q[PROTO_QUOTE_SIZE];
    CHECK_STR_EQ(proto_quote(q, "ab\"c\\", 5), "\"ab\\\"c\\\\\"");
    CHECK_STR_EQ(proto_quote(q, "\x01\xff", 2), "\"\\x01\\xff\"");
    memset(big, 'y', 100);
    proto_quote(q, big, 100);
    CHECK_INT_EQ(strlen(q), 1 + 64 + 3 + 1);
    CHECK(strstr(q, "yyy...\"") != NULL);
    /* Cutting counts characters, not bytes, and never splits one. */
    char wide[300] = "";
    for (int i = 0; i < 70; i++)
        strcat(wide, "\xc3\xa9");
    proto_quote(q, wide, strlen(wide));
    CHECK_INT_EQ(strlen(q), 1 + 64 * 2 + 3 + 1);
}

static void test_malformed(void)
{
    EXPECT_ERR(EMBED, "", E400, "malformed JSON at line 1, column 0");
    EXPECT_ERR(EMBED, "{\"inputs\":", E400,
               "malformed JSON at line 1, column 10: unexpected token");
    EXPECT_ERR(EMBED, "{\"inputs\":\"x\"} x", E400, "end of file expected");
    EXPECT_ERR(EMBED, "{\"inputs\":\"x\",}", E400, "malformed JSON");
    EXPECT_ERR(EMBED, "{\"inputs\":\"a\",\"inputs\":\"b\"}", E400, "duplicate object key");
    EXPECT_ERR(EMBED, "{\"inputs\":\"a\",\"parameters\":{\"pooling\":\"cls\",\"pooling\":\"max\"}}",
               E400, "duplicate object key");
    EXPECT_ERR(EMBED, "{\"inputs\":\"\xff\"}", E400, "unable to decode byte 0xff");
    EXPECT_ERR(EMBED, "{\"inputs\":\"\xc3\"}", E400, "unable to decode byte");
    EXPECT_ERR(EMBED, "{\"inputs\":\"\xed\xa0\x80\"}", E400, "malformed JSON");
    /* U+0000 in a text is a character like any other (issue 20); in a name,
     * a choice or a label it is refused; in a key jansson refuses it. */
    {
        struct proto_request req;
        EXPECT_OK(EMBED, "{\"inputs\":[\"a\\u0000b\", \"\\u0000\"]}", &req);
        CHECK(req.n_inputs == 2 && req.inputs[0].text_len == 3 && req.inputs[1].text_len == 1);
        CHECK(req.n_inputs == 2 && memcmp(req.inputs[0].text, "a\0b", 3) == 0);
        proto_request_free(&req);
        EXPECT_OK(PROTO_ROUTE_RERANK, "{\"query\":\"q\\u0000\",\"texts\":[\"d\\u0000\"]}", &req);
        CHECK(req.n_inputs == 1 && req.inputs[0].text_len == 2 && req.inputs[0].pair_len == 2);
        proto_request_free(&req);
    }
    EXPECT_ERR(EMBED, "{\"inputs\":\"a\",\"pooling\":\"mean\\u0000x\"}", E422,
               "\"pooling\" must not contain \\u0000");
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"targets\":[\"a\\u0000\"]}", E422,
               "\"targets[0]\" must not contain \\u0000");
    EXPECT_ERR(OPENAI, "{\"input\":\"a\",\"model\":\"m\\u0000\"}", E422,
               "\"model\" must not contain \\u0000");
    EXPECT_ERR(EMBED, "{\"inputs\":\"a\",\"k\\u0000\":1}", E400, "NUL byte in object key");
    EXPECT_ERR(EMBED, "{\"inputs\":\"\\ud800\"}", E400, "invalid Unicode");
    EXPECT_ERR(EMBED, "{\"inputs\":\"a\x01\"}", E400, "control character");
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"top_k\":99999999999999999999}", E400,
               "too big integer");
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"top_k\":1e400}", E400, "real number overflow");

    /* Nesting is bounded by the parser, not by our stack. */
    size_t depth = 100000;
    char *deep = malloc(depth + 64);
    strcpy(deep, "{\"inputs\":");
    memset(deep + 10, '[', depth);
    deep[10 + depth] = '\0';
    EXPECT_ERR(EMBED, deep, E400, "maximum parsing depth reached");
    free(deep);

    /* A NUL byte inside the body ends nothing early: it is an error. */
    struct proto_request req;
    struct proto_error err;
    CHECK(!parse_n(EMBED, "{\"inputs\":\"a\"}\0", 15, &req, &err));
    CHECK_INT_EQ(err.kind, E400);
    CHECK(!parse_n(EMBED, "{\"inputs\":\"a\0b\"}", 16, &req, &err));
    CHECK_INT_EQ(err.kind, E400);

    CHECK(!proto_request_parse(PROTO_ROUTE_COUNT, "{}", 2, &limits, &req, &err));
    CHECK_INT_EQ(err.kind, PROTO_ERR_NOT_FOUND);
}

static void test_shape_errors(void)
{
    EXPECT_ERR(EMBED, "[]", E422, "\"request body\" must be a JSON object, got a list");
    EXPECT_ERR(EMBED, "\"text\"", E422, "\"request body\" must be a JSON object, got a string");
    EXPECT_ERR(EMBED, "{}", E422, "missing field \"inputs\"");
    EXPECT_ERR(EMBED, "{\"parameters\":{}}", E422, "missing field \"inputs\"");
    EXPECT_ERR(EMBED, "{\"inputs\":\"x\",\"foo\":1}", E422,
               "unknown field \"foo\"; accepted: \"inputs\", "
               "\"parameters\", \"options\", \"pooling\", \"normalize\", \"truncate\", "
               "\"truncation_direction\"");
    EXPECT_ERR(EMBED, "{\"inputs\":\"x\",\"parameters\":{\"bar\":1}}", E422,
               "unknown field \"bar\" in \"parameters\"; accepted: \"pooling\"");
    EXPECT_ERR(EMBED, "{\"inputs\":\"x\",\"parameters\":{\"inputs\":\"y\"}}", E422,
               "unknown field \"inputs\" in \"parameters\"");
    EXPECT_ERR(EMBED, "{\"inputs\":\"x\",\"top_k\":3}", E422, "unknown field \"top_k\"");
    EXPECT_ERR(EMBED, "{\"input\":\"x\"}", E422, "unknown field \"input\"");
    EXPECT_ERR(EMBED, "{\"inputs\":\"x\",\"parameters\":[1]}", E422,
               "\"parameters\" must be an object, got a list");
    EXPECT_ERR(EMBED, "{\"inputs\":\"x\",\"options\":5}", E422,
               "\"options\" must be an object, got an integer");
    EXPECT_ERR(EMBED,
               "{\"inputs\":\"x\",\"pooling\":\"cls\",\"parameters\":{\"pooling\":\"mean\"}}", E422,
               "\"pooling\" is given both at the top level and in \"parameters\"");
    /* Both places count even when one of them is null. */
    EXPECT_ERR(EMBED, "{\"inputs\":\"x\",\"pooling\":null,\"parameters\":{\"pooling\":\"mean\"}}",
               E422, "given both");

    EXPECT_ERR(FILL, "{\"inputs\":5}", E422,
               "\"inputs\" must be a string or a list of strings, got an integer");
    EXPECT_ERR(FILL, "{\"inputs\":null}", E422, "got null");
    EXPECT_ERR(FILL, "{\"inputs\":{\"text\":\"a\"}}", E422, "got an object");
    EXPECT_ERR(FILL, "{\"inputs\":[]}", E422, "\"inputs\" must not be an empty list");
    EXPECT_ERR(FILL, "{\"inputs\":[\"a\",1]}", E422,
               "\"inputs[1]\" must be a string, got an integer");
    EXPECT_ERR(FILL, "{\"inputs\":[\"a\",2.5]}", E422,
               "\"inputs[1]\" must be a string, got a float");
    EXPECT_ERR(FILL, "{\"inputs\":[[\"a\",\"b\"]]}", E422,
               "\"inputs[0]\" must be a string, got a list");
    EXPECT_ERR(FILL, "{\"inputs\":[\"a\",true]}", E422, "got a boolean");
    /* TEI's /embed (and /embed_all, /embed_sparse) take token ids too. */
    EXPECT_ERR(EMBED, "{\"inputs\":5}", E422,
               "\"inputs\" must be a string, a list of strings, a list of token ids or a list "
               "of lists of token ids, got an integer");
    EXPECT_ERR(EMBED, "{\"inputs\":[\"a\",1]}", E422,
               "\"inputs[1]\" must be a string or a list of token ids, got an integer");
    EXPECT_ERR(EMBED, "{\"inputs\":[[101,\"b\"]]}", E422,
               "\"inputs[0][1]\" must be a token id (an integer), got a string");

    /* User text in messages is escaped and cut. */
    char body[512];
    char longkey[201];
    memset(longkey, 'k', 200);
    longkey[200] = '\0';
    snprintf(body, sizeof body, "{\"inputs\":\"x\",\"%s\":1}", longkey);
    struct proto_request req;
    struct proto_error err;
    CHECK(!parse(EMBED, body, &req, &err));
    char cut[80];
    memset(cut, 'k', 64);
    strcpy(cut + 64, "...\"");
    CHECK_CONTAINS(err.message, cut);
    memset(cut, 'k', 65);
    cut[65] = '\0';
    CHECK(strstr(err.message, cut) == NULL);
    EXPECT_ERR(EMBED, "{\"inputs\":\"x\",\"a\\\"b\\nc\":1}", E422,
               "unknown field \"a\\\"b\\x0ac\"");
}

static void test_too_many_inputs(void)
{
    /* 10,000 empty strings: over the limit is 413 before any is looked at. */
    size_t n = 10000;
    char *body = malloc(n * 3 + 32);
    char *p = body + sprintf(body, "{\"inputs\":[");
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, i ? ",\"\"" : "\"\"");
    strcpy(p, "]}");
    EXPECT_ERR(EMBED, body, E413,
               "too many inputs: 10000 given, at most 32 are allowed per request");

    struct proto_request req;
    limits.max_client_batch = 10000;
    EXPECT_OK(EMBED, body, &req);
    CHECK_INT_EQ(req.n_inputs, 10000);
    CHECK(req.batched);
    CHECK(req.inputs[9999].text != NULL && req.inputs[9999].text_len == 0);
    proto_request_free(&req);
    limits.max_client_batch = 9999;
    EXPECT_ERR(EMBED, body, E413, "10000 given, at most 9999");
    limits.max_client_batch = 32;
    free(body);

    /* 33 > 32 also on the other routes. */
    char small[512];
    p = small + sprintf(small, "{\"input\":[");
    for (int i = 0; i < 33; i++)
        p += sprintf(p, i ? ",\"a\"" : "\"a\"");
    strcpy(p, "]}");
    EXPECT_ERR(OPENAI, small, E413, "too many inputs: 33 given");
}

static void test_embed(void)
{
    struct proto_request req;
    EXPECT_OK(EMBED, "{\"inputs\":\"Hello world\"}", &req);
    CHECK_INT_EQ(req.route, EMBED);
    CHECK_INT_EQ(req.n_inputs, 1);
    CHECK(!req.batched);
    CHECK(text_is(&req.inputs[0], "Hello world"));
    CHECK(req.inputs[0].pair == NULL);
    CHECK(!req.has_pooling && !req.has_normalize && !req.has_truncate);
    CHECK_INT_EQ(req.truncation_side, BERT_TRUNCATE_RIGHT);
    proto_request_free(&req);
    proto_request_free(&req); /* twice is harmless */

    EXPECT_OK(EMBED,
              "{\"inputs\":[\"a\",\"\\u00e9\\n\"],\"pooling\":\"mean\",\"normalize\":false,"
              "\"truncate\":true,\"truncation_direction\":\"left\"}",
              &req);
    CHECK_INT_EQ(req.n_inputs, 2);
    CHECK(req.batched);
    CHECK(text_is(&req.inputs[1], "\xc3\xa9\n"));
    CHECK(req.has_pooling && req.pooling == BERT_POOLING_MEAN);
    CHECK(req.has_normalize && !req.normalize);
    CHECK(req.has_truncate && req.truncate);
    CHECK_INT_EQ(req.truncation_side, BERT_TRUNCATE_LEFT);
    proto_request_free(&req);

    /* Hugging Face form, TEI's capitalised direction, ignored options. */
    EXPECT_OK(EMBED,
              "{\"inputs\":[\"a\"],\"parameters\":{\"pooling\":\"max\",\"normalize\":true,"
              "\"truncation_direction\":\"Left\"},\"options\":{\"wait_for_model\":true}}",
              &req);
    CHECK(req.batched && req.n_inputs == 1);
    CHECK(req.has_pooling && req.pooling == BERT_POOLING_MAX);
    CHECK(req.has_normalize && req.normalize);
    CHECK_INT_EQ(req.truncation_side, BERT_TRUNCATE_LEFT);
    proto_request_free(&req);

    EXPECT_OK(EMBED,
              "{\"inputs\":\"x\",\"pooling\":\"cls\",\"truncation_direction\":\"Right\","
              "\"parameters\":null,\"options\":null}",
              &req);
    CHECK(req.has_pooling && req.pooling == BERT_POOLING_CLS);
    CHECK_INT_EQ(req.truncation_side, BERT_TRUNCATE_RIGHT);
    proto_request_free(&req);

    /* null means "not given". */
    EXPECT_OK(EMBED, "{\"inputs\":\"x\",\"pooling\":null,\"parameters\":{\"truncate\":null}}",
              &req);
    CHECK(!req.has_pooling && !req.has_truncate);
    proto_request_free(&req);

    EXPECT_OK(EMBED, "{\"inputs\":\"\"}", &req);
    CHECK(req.n_inputs == 1 && req.inputs[0].text_len == 0);
    proto_request_free(&req);

    EXPECT_ERR(EMBED, "{\"inputs\":\"x\",\"pooling\":\"sum\"}", E422,
               "\"pooling\" must be one of \"cls\", \"mean\", \"max\", got \"sum\"");
    EXPECT_ERR(EMBED, "{\"inputs\":\"x\",\"pooling\":\"CLS\"}", E422, "got \"CLS\"");
    EXPECT_ERR(EMBED, "{\"inputs\":\"x\",\"pooling\":1}", E422,
               "\"pooling\" must be a string, got an integer");
    EXPECT_ERR(EMBED, "{\"inputs\":\"x\",\"normalize\":\"yes\"}", E422,
               "\"normalize\" must be a boolean, got a string");
    EXPECT_ERR(EMBED, "{\"inputs\":\"x\",\"normalize\":1}", E422,
               "\"normalize\" must be a boolean, got an integer");
    EXPECT_ERR(EMBED, "{\"inputs\":\"x\",\"parameters\":{\"truncate\":\"true\"}}", E422,
               "\"truncate\" must be a boolean, got a string");
    EXPECT_ERR(EMBED, "{\"inputs\":\"x\",\"truncation_direction\":\"up\"}", E422,
               "\"truncation_direction\" must be \"right\" or \"left\", got \"up\"");
    EXPECT_ERR(EMBED, "{\"inputs\":\"x\",\"truncation_direction\":\"RIGHT\"}", E422,
               "got \"RIGHT\"");
}

static void test_fill_mask(void)
{
    struct proto_request req;
    EXPECT_OK(FILL, "{\"inputs\":\"Paris is the [MASK] of France.\"}", &req);
    CHECK_INT_EQ(req.top_k, 5);
    CHECK(req.targets == NULL && req.n_targets == 0);
    CHECK(!req.batched);
    proto_request_free(&req);

    EXPECT_OK(FILL,
              "{\"inputs\":[\"a [MASK]\",\"b [MASK]\"],\"top_k\":1,\"targets\":[\"x\",\"y\"]}",
              &req);
    CHECK(req.batched && req.n_inputs == 2);
    CHECK_INT_EQ(req.top_k, 1);
    CHECK_INT_EQ(req.n_targets, 2);
    CHECK_STR_EQ(req.targets[0], "x");
    CHECK_STR_EQ(req.targets[1], "y");
    proto_request_free(&req);

    EXPECT_OK(FILL,
              "{\"inputs\":\"[MASK]\",\"parameters\":{\"top_k\":100,\"targets\":\"one\"},"
              "\"options\":{}}",
              &req);
    CHECK_INT_EQ(req.top_k, 100);
    CHECK_INT_EQ(req.n_targets, 1);
    CHECK_STR_EQ(req.targets[0], "one");
    proto_request_free(&req);

    /* max_fill_mask_targets: each target is tokenized, so the count is
     * bounded before any of them is. */
    EXPECT_OK(FILL, "{\"inputs\":\"[MASK]\",\"targets\":[\"a\",\"b\",\"a\"]}", &req);
    CHECK_INT_EQ(req.n_targets, 3);
    proto_request_free(&req);
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"targets\":[\"a\",\"b\",\"c\",\"d\"]}", E413,
               "too many targets: 4 given, at most 3 are allowed per request");

    EXPECT_OK(FILL, "{\"inputs\":\"[MASK]\",\"top_k\":null,\"targets\":null,\"truncate\":true}",
              &req);
    CHECK_INT_EQ(req.top_k, 5);
    CHECK(req.targets == NULL);
    CHECK(req.has_truncate && req.truncate);
    proto_request_free(&req);

    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"top_k\":0}", E422,
               "\"top_k\" must be between 1 and 100, got 0");
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"top_k\":-3}", E422, "between 1 and 100, got -3");
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"top_k\":101}", E422, "between 1 and 100, got 101");
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"top_k\":9223372036854775807}", E422,
               "got 9223372036854775807");
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"top_k\":5.0}", E422,
               "\"top_k\" must be an integer, got a float");
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"top_k\":1e3}", E422, "got a float");
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"top_k\":\"5\"}", E422,
               "\"top_k\" must be an integer, got a string");
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"parameters\":{\"top_k\":true}}", E422,
               "got a boolean");
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"targets\":[]}", E422,
               "\"targets\" must not be an empty list");
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"targets\":[\"a\",1]}", E422,
               "\"targets[1]\" must be a non-empty string, got an integer");
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"targets\":[\"a\",\"\"]}", E422,
               "\"targets[1]\" must be a non-empty string");
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"targets\":\"\"}", E422,
               "\"targets\" must be a non-empty string");
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"targets\":{\"a\":1}}", E422,
               "\"targets\" must be a string or a list of strings, got an object");
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"targets\":[[\"a\"]]}", E422, "got a list");
    EXPECT_ERR(FILL, "{\"inputs\":[[\"a [MASK]\",\"b\"]]}", E422,
               "\"inputs[0]\" must be a string, got a list");
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"pooling\":\"cls\"}", E422,
               "unknown field \"pooling\"");
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"top_k\":2,\"parameters\":{\"top_k\":3}}", E422,
               "given both");

    /* max_top_k comes from the limits. */
    limits.max_top_k = 3;
    EXPECT_ERR(FILL, "{\"inputs\":\"[MASK]\",\"top_k\":4}", E422, "between 1 and 3, got 4");
    limits.max_top_k = 100;
}

static void test_classify(void)
{
    struct proto_request req;
    EXPECT_OK(CLASSIFY, "{\"inputs\":\"I love it\"}", &req);
    CHECK(!req.batched);
    CHECK_INT_EQ(req.function_to_apply, PROTO_ACTIVATION_DEFAULT);
    CHECK(!req.raw_scores);
    CHECK_INT_EQ(req.classify_top_k, 0);
    proto_request_free(&req);

    EXPECT_OK(CLASSIFY,
              "{\"inputs\":[[\"q\",\"passage\"],\"single\"],\"top_k\":2,"
              "\"function_to_apply\":\"sigmoid\"}",
              &req);
    CHECK(req.batched && req.n_inputs == 2);
    CHECK(text_is(&req.inputs[0], "q"));
    CHECK(req.inputs[0].pair != NULL && req.inputs[0].pair_len == 7 &&
          memcmp(req.inputs[0].pair, "passage", 7) == 0);
    CHECK(req.inputs[1].pair == NULL);
    CHECK_INT_EQ(req.classify_top_k, 2);
    CHECK_INT_EQ(req.function_to_apply, PROTO_ACTIVATION_SIGMOID);
    proto_request_free(&req);

    EXPECT_OK(CLASSIFY, "{\"inputs\":\"x\",\"parameters\":{\"raw_scores\":true,\"top_k\":null}}",
              &req);
    CHECK(req.raw_scores);
    CHECK_INT_EQ(req.function_to_apply, PROTO_ACTIVATION_NONE);
    CHECK_INT_EQ(req.classify_top_k, 0);
    proto_request_free(&req);

    EXPECT_OK(CLASSIFY, "{\"inputs\":\"x\",\"raw_scores\":true,\"function_to_apply\":\"none\"}",
              &req);
    CHECK_INT_EQ(req.function_to_apply, PROTO_ACTIVATION_NONE);
    proto_request_free(&req);
    EXPECT_OK(CLASSIFY, "{\"inputs\":\"x\",\"raw_scores\":false,\"function_to_apply\":\"SoftMax\"}",
              &req);
    CHECK_INT_EQ(req.function_to_apply, PROTO_ACTIVATION_SOFTMAX);
    proto_request_free(&req);
    EXPECT_OK(CLASSIFY, "{\"inputs\":\"x\",\"top_k\":1000000000000}", &req);
    CHECK_INT_EQ(req.classify_top_k, UINT32_MAX);
    proto_request_free(&req);

    EXPECT_ERR(CLASSIFY, "{\"inputs\":\"x\",\"raw_scores\":true,\"function_to_apply\":\"softmax\"}",
               E422, "\"raw_scores\": true conflicts with \"function_to_apply\": \"softmax\"");
    EXPECT_ERR(
        CLASSIFY,
        "{\"inputs\":\"x\",\"raw_scores\":true,\"parameters\":{\"function_to_apply\":\"sigmoid\"}}",
        E422, "conflicts");
    EXPECT_ERR(
        CLASSIFY, "{\"inputs\":\"x\",\"function_to_apply\":\"relu\"}", E422,
        "\"function_to_apply\" must be one of \"softmax\", \"sigmoid\", \"none\", got \"relu\"");
    EXPECT_ERR(CLASSIFY, "{\"inputs\":\"x\",\"raw_scores\":\"no\"}", E422,
               "\"raw_scores\" must be a boolean");
    EXPECT_ERR(CLASSIFY, "{\"inputs\":\"x\",\"top_k\":0}", E422,
               "\"top_k\" must be at least 1, got 0");
    EXPECT_ERR(CLASSIFY, "{\"inputs\":\"x\",\"top_k\":1.5}", E422,
               "must be an integer, got a float");
    EXPECT_ERR(CLASSIFY, "{\"inputs\":[[\"a\"]]}", E422,
               "\"inputs[0]\" must be a pair [text, text_pair], got a list of 1");
    EXPECT_ERR(CLASSIFY, "{\"inputs\":[[\"a\",\"b\",\"c\"]]}", E422, "got a list of 3");
    EXPECT_ERR(CLASSIFY, "{\"inputs\":[\"ok\",[\"a\",1]]}", E422,
               "\"inputs[1][1]\" must be a string, got an integer");
    EXPECT_ERR(CLASSIFY, "{\"inputs\":[5]}", E422,
               "\"inputs[0]\" must be a string or a pair [text, text_pair], got an integer");
    EXPECT_ERR(CLASSIFY, "{\"inputs\":5}", E422,
               "\"inputs\" must be a string, a list of strings, a list of pairs [text, "
               "text_pair], or {\"text\", \"text_pair\"} objects, got an integer");
    EXPECT_ERR(CLASSIFY, "{\"inputs\":{\"text_pair\":\"b\"}}", E422,
               "missing field \"text\" in \"inputs\"");
    EXPECT_ERR(CLASSIFY, "{\"inputs\":[{\"text\":\"a\",\"pair\":\"b\"}]}", E422,
               "unknown field \"pair\" in \"inputs[0]\"; accepted: \"text\", \"text_pair\"");
    EXPECT_ERR(CLASSIFY, "{\"inputs\":{\"text\":5}}", E422,
               "\"inputs.text\" must be a string, got an integer");
    /* TEI's /predict: [a, b] alone is one pair; a list of three is a batch. */
    {
        EXPECT_OK(PROTO_ROUTE_PREDICT, "{\"inputs\":[\"a\",\"b\"]}", &req);
        CHECK(req.n_inputs == 1 && !req.batched && text_is(&req.inputs[0], "a") &&
              req.inputs[0].pair_len == 1);
        proto_request_free(&req);
        EXPECT_OK(PROTO_ROUTE_PREDICT, "{\"inputs\":[\"a\",\"b\",[\"c\",\"d\"]]}", &req);
        CHECK(req.n_inputs == 3 && req.batched && req.inputs[2].pair != NULL);
        proto_request_free(&req);
    }
    EXPECT_ERR(PROTO_ROUTE_PREDICT, "{\"inputs\":\"a\",\"top_k\":1}", E422,
               "unknown field \"top_k\"");
    /* /similarity (TEI, Hugging Face sentence-similarity). */
    {
        EXPECT_OK(PROTO_ROUTE_SIMILARITY,
                  "{\"inputs\":{\"source_sentence\":\"s\",\"sentences\":[\"a\",\"b\"]},"
                  "\"parameters\":{\"truncate\":true}}",
                  &req);
        CHECK(req.n_inputs == 3 && text_is(&req.inputs[0], "s") && text_is(&req.inputs[2], "b"));
        proto_request_free(&req);
    }
    EXPECT_ERR(PROTO_ROUTE_SIMILARITY, "{\"inputs\":\"s\"}", E422,
               "\"inputs\" must be an object {\"source_sentence\": string, \"sentences\": "
               "[string, ...]}, got a string");
    EXPECT_ERR(PROTO_ROUTE_SIMILARITY, "{\"inputs\":{\"source_sentence\":\"s\"}}", E422,
               "missing field \"sentences\" in \"inputs\"");
    EXPECT_ERR(PROTO_ROUTE_SIMILARITY,
               "{\"inputs\":{\"source_sentence\":\"s\",\"sentences\":[]}}", E422,
               "\"inputs.sentences\" must not be an empty list");
    EXPECT_ERR(PROTO_ROUTE_SIMILARITY,
               "{\"inputs\":{\"source_sentence\":\"s\",\"sentences\":[1]}}", E422,
               "\"inputs.sentences[0]\" must be a string, got an integer");
    EXPECT_ERR(PROTO_ROUTE_SIMILARITY,
               "{\"inputs\":{\"source_sentence\":1,\"sentences\":[\"a\"]}}", E422,
               "\"inputs.source_sentence\" must be a string, got an integer");
    EXPECT_ERR(PROTO_ROUTE_SIMILARITY,
               "{\"inputs\":{\"source_sentence\":\"s\",\"sentences\":[\"a\"],\"x\":1}}", E422,
               "unknown field \"x\" in \"inputs\"; accepted: \"source_sentence\", \"sentences\"");
    EXPECT_ERR(CLASSIFY, "{\"inputs\":\"x\",\"targets\":[\"a\"]}", E422,
               "unknown field \"targets\"");
}

static void test_tokenize(void)
{
    struct proto_request req;
    EXPECT_OK(TOKENIZE, "{\"inputs\":\"x\"}", &req);
    CHECK(req.add_special_tokens);
    proto_request_free(&req);
    EXPECT_OK(TOKENIZE,
              "{\"inputs\":[[\"a\",\"b\"]],\"add_special_tokens\":false,\"truncate\":false}", &req);
    CHECK(!req.add_special_tokens);
    CHECK(req.has_truncate && !req.truncate);
    CHECK(req.inputs[0].pair != NULL);
    proto_request_free(&req);
    EXPECT_OK(TOKENIZE, "{\"inputs\":\"x\",\"parameters\":{\"add_special_tokens\":true}}", &req);
    CHECK(req.add_special_tokens);
    proto_request_free(&req);
    EXPECT_ERR(TOKENIZE, "{\"inputs\":\"x\",\"add_special_tokens\":\"yes\"}", E422,
               "\"add_special_tokens\" must be a boolean, got a string");
    EXPECT_ERR(TOKENIZE, "{\"inputs\":\"x\",\"pooling\":\"cls\"}", E422,
               "unknown field \"pooling\"");
}

static void test_openai(void)
{
    struct proto_request req;
    EXPECT_OK(OPENAI, "{\"input\":\"x\"}", &req);
    CHECK(!req.base64 && req.dimensions == 0 && !req.has_normalize);
    CHECK(!req.batched);
    proto_request_free(&req);
    EXPECT_OK(OPENAI,
              "{\"input\":[\"a\",\"b\"],\"model\":\"text-embedding-3-small\","
              "\"encoding_format\":\"base64\",\"dimensions\":384,\"user\":\"u-1\"}",
              &req);
    CHECK(req.batched && req.n_inputs == 2);
    CHECK(req.base64);
    CHECK_INT_EQ(req.dimensions, 384);
    proto_request_free(&req);
    EXPECT_OK(OPENAI, "{\"input\":\"x\",\"encoding_format\":\"float\",\"model\":null}", &req);
    CHECK(!req.base64);
    proto_request_free(&req);
    /* Jina's fields: normalized honoured, embedding_type as encoding_format,
     * task accepted and ignored, late_chunking false only. */
    EXPECT_OK(OPENAI,
              "{\"input\":[\"x\"],\"model\":\"jina-embeddings-v3\",\"task\":\"retrieval.query\","
              "\"normalized\":false,\"embedding_type\":\"base64\",\"dimensions\":64,"
              "\"late_chunking\":false,\"truncate\":true}",
              &req);
    CHECK(req.has_normalize && !req.normalize && req.base64 && req.dimensions == 64);
    CHECK(req.has_truncate && req.truncate);
    proto_request_free(&req);
    EXPECT_ERR(OPENAI, "{\"input\":\"x\",\"late_chunking\":true}", E422,
               "\"late_chunking\": true is not supported; send false or leave it out");
    EXPECT_ERR(OPENAI, "{\"input\":\"x\",\"embedding_type\":\"binary\"}", E422,
               "\"embedding_type\" must be \"float\" or \"base64\", got \"binary\"");
    EXPECT_ERR(OPENAI, "{\"input\":\"x\",\"normalized\":1}", E422,
               "\"normalized\" must be a boolean, got an integer");
    EXPECT_ERR(OPENAI, "{\"input\":\"x\",\"task\":[]}", E422,
               "\"task\" must be a string, got a list");

    EXPECT_ERR(OPENAI, "{}", E422, "missing field \"input\"");
    EXPECT_ERR(OPENAI, "{\"inputs\":\"x\"}", E422,
               "unknown field \"inputs\"; accepted: \"input\", \"truncate\", "
               "\"add_special_tokens\", \"model\", \"encoding_format\", \"dimensions\", "
               "\"user\", \"normalized\", \"embedding_type\", \"task\", \"late_chunking\", "
               "\"truncate_prompt_tokens\", \"use_activation\", \"truncation_side\"");
    EXPECT_ERR(OPENAI, "{\"input\":\"x\",\"parameters\":{}}", E422, "unknown field \"parameters\"");
    EXPECT_ERR(OPENAI, "{\"input\":[]}", E422, "\"input\" must not be an empty list");
    /* OpenAI's token arrays: one list of ids, or a list of them (mixed with
     * strings too); ids are checked against the vocabulary when tokenizing. */
    EXPECT_OK(OPENAI, "{\"input\":[7592,2088]}", &req);
    CHECK(req.n_inputs == 1 && req.inputs[0].text == NULL && req.inputs[0].token_ids != NULL);
    CHECK(req.n_inputs == 1 && json_array_size(req.inputs[0].token_ids) == 2);
    proto_request_free(&req);
    EXPECT_OK(OPENAI, "{\"input\":[[1,2],\"text\",[3]]}", &req);
    CHECK(req.n_inputs == 3 && req.inputs[0].token_ids && !req.inputs[1].token_ids &&
          req.inputs[2].token_ids);
    proto_request_free(&req);
    EXPECT_ERR(OPENAI, "{\"input\":[1,\"a\"]}", E422,
               "\"input[1]\" must be a token id (an integer), got a string");
    EXPECT_ERR(OPENAI, "{\"input\":[[1,-1]]}", E422,
               "\"input[0][1]\" must be a token id between 0 and 2147483647, got -1");
    EXPECT_ERR(OPENAI, "{\"input\":[[1,2147483648]]}", E422,
               "\"input[0][1]\" must be a token id between 0 and 2147483647, got 2147483648");
    EXPECT_ERR(OPENAI, "{\"input\":[[]]}", E422, "\"input[0]\" must not be an empty list");
    EXPECT_ERR(OPENAI, "{\"input\":[[1.5]]}", E422,
               "\"input[0][0]\" must be a token id (an integer), got a float");
    EXPECT_ERR(OPENAI, "{\"input\":[{}]}", E422,
               "\"input[0]\" must be a string or a list of token ids, got an object");
    EXPECT_ERR(OPENAI, "{\"input\":5}", E422,
               "\"input\" must be a string, a list of strings, a list of token ids or a list of "
               "lists of token ids, got an integer");
    EXPECT_ERR(OPENAI, "{\"input\":\"x\",\"encoding_format\":\"int8\"}", E422,
               "\"encoding_format\" must be \"float\" or \"base64\", got \"int8\"");
    EXPECT_ERR(OPENAI, "{\"input\":\"x\",\"dimensions\":0}", E422,
               "\"dimensions\" must be at least 1, got 0");
    EXPECT_ERR(OPENAI, "{\"input\":\"x\",\"dimensions\":\"384\"}", E422,
               "\"dimensions\" must be an integer");
    EXPECT_ERR(OPENAI, "{\"input\":\"x\",\"model\":5}", E422,
               "\"model\" must be a string, got an integer");
    EXPECT_ERR(OPENAI, "{\"input\":\"x\",\"user\":{}}", E422,
               "\"user\" must be a string, got an object");
}

int main(void)
{
    test_routes_and_error_table();
    test_error_bodies();
    test_malformed();
    test_shape_errors();
    test_too_many_inputs();
    test_embed();
    test_fill_mask();
    test_classify();
    test_tokenize();
    test_openai();
    return check_exit();
}
