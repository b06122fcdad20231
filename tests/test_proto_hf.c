/* proto/job.c with the real WordPiece tokenizer (bert-base-uncased's
 * vocab.txt in tests/data/proto): the fill-mask "sequence" / "token_str"
 * text, target resolution and /tokenize offsets, against what the Hugging
 * Face pipelines and text-embeddings-inference answer for the same input.
 * Registered only once tokenizer/tokenizer.c exists (see tests/proto.cmake). */
#include <stdint.h>

#include "check.h"
#include "proto.h"

enum {
    ID_PAD = 0,
    ID_CLS = 101,
    ID_SEP = 102,
    ID_MASK = 103,
    ID_EXCLAIM = 999,
    ID_DOT = 1012,
    ID_THE = 1996,
    ID_OF = 1997,
    ID_IS = 2003,
    ID_ON = 2006,
    ID_S = 2015, /* "##s" */
    ID_WORLD = 2088,
    ID_FRANCE = 2605,
    ID_CENTRE = 2803,
    ID_SAT = 2938,
    ID_PARIS = 3000,
    ID_CAPITAL = 3007,
    ID_CAT = 4937,
    ID_HELLO = 7592,
    ID_MAT = 13523,
};

static const struct proto_limits limits = {.max_client_batch = 8, .max_input_tokens = 512, .max_top_k = 10};
static const struct proto_defaults defaults = {.pooling = BERT_POOLING_CLS, .model_name = "bert"};

static bool prepare(const struct bert_model *m, enum proto_route route, const char *body,
                    struct proto_job *job)
{
    struct proto_request req;
    struct proto_error err = {0};
    bool ok = proto_request_parse(route, body, strlen(body), &limits, &req, &err) &&
              proto_job_prepare(job, m, &limits, &defaults, &req, &err);
    if (!ok)
        fprintf(stderr, "  %s: %s\n", body, err.message);
    return ok;
}

static bool ids_are(const struct bert_encoding *enc, const int32_t *want, size_t n)
{
    return enc->n == n && memcmp(enc->ids, want, n * sizeof *want) == 0;
}

static char *render(const struct proto_job *job, const struct bert_model *m)
{
    size_t len;
    char *body = proto_job_respond(job, m, &len);
    CHECK(body != NULL);
    return body;
}

static void test_tokenize(const struct bert_model *m)
{
    struct proto_job job;
    if (!prepare(m, PROTO_ROUTE_TOKENIZE, "{\"inputs\":\"Hello world!\"}", &job)) {
        CHECK(false);
        return;
    }
    char *body = render(&job, m);
    CHECK_STR_EQ(body, "[[{\"id\":101,\"text\":\"[CLS]\",\"special\":true,\"start\":null,\"stop\":null},"
                       "{\"id\":7592,\"text\":\"Hello\",\"special\":false,\"start\":0,\"stop\":5},"
                       "{\"id\":2088,\"text\":\"world\",\"special\":false,\"start\":6,\"stop\":11},"
                       "{\"id\":999,\"text\":\"!\",\"special\":false,\"start\":11,\"stop\":12},"
                       "{\"id\":102,\"text\":\"[SEP]\",\"special\":true,\"start\":null,\"stop\":null}]]");
    free(body);
    proto_job_free(&job);

    /* A pair: offsets into the text each token came from. */
    if (!prepare(m, PROTO_ROUTE_TOKENIZE, "{\"inputs\":[[\"Hello\",\"world!\"]]}", &job)) {
        CHECK(false);
        return;
    }
    int32_t want[] = {ID_CLS, ID_HELLO, ID_SEP, ID_WORLD, ID_EXCLAIM, ID_SEP};
    int32_t types[] = {0, 0, 0, 1, 1, 1};
    CHECK(ids_are(&job.seqs[0].enc, want, 6));
    CHECK(memcmp(job.seqs[0].enc.type_ids, types, sizeof types) == 0);
    body = render(&job, m);
    CHECK_CONTAINS(body, "{\"id\":2088,\"text\":\"world\",\"special\":false,\"start\":0,\"stop\":5}");
    CHECK_CONTAINS(body, "{\"id\":999,\"text\":\"!\",\"special\":false,\"start\":5,\"stop\":6}");
    free(body);
    proto_job_free(&job);
}

static void test_fill_mask(const struct bert_model *m)
{
    struct proto_job job;
    if (!prepare(m, PROTO_ROUTE_FILL_MASK,
                 "{\"inputs\":\"Paris is the [MASK] of France.\",\"top_k\":2}", &job)) {
        CHECK(false);
        return;
    }
    int32_t want[] = {ID_CLS, ID_PARIS, ID_IS, ID_THE, ID_MASK, ID_OF, ID_FRANCE, ID_DOT, ID_SEP};
    CHECK(ids_are(&job.seqs[0].enc, want, 9));
    struct bert_seq_task *t = &job.seqs[0].task;
    t->top_ids[0] = ID_CAPITAL;
    t->top_probs[0] = 0.5f;
    t->top_ids[1] = ID_S;
    t->top_probs[1] = 0.25f;
    char *body = render(&job, m);
    /* One mask: no specials in "sequence"; token_str keeps "##" as
     * tokenizer.decode([id]) does for a lone continuation piece. */
    CHECK_STR_EQ(body, "[{\"score\":0.5,\"token\":3007,\"token_str\":\"capital\","
                       "\"sequence\":\"paris is the capital of france.\"},"
                       "{\"score\":0.25,\"token\":2015,\"token_str\":\"##s\","
                       "\"sequence\":\"paris is thes of france.\"}]");
    free(body);
    proto_job_free(&job);

    /* Two masks: specials (and the other mask) stay in "sequence". */
    if (!prepare(m, PROTO_ROUTE_FILL_MASK, "{\"inputs\":\"The [MASK] sat on the [MASK].\",\"top_k\":1}",
                 &job)) {
        CHECK(false);
        return;
    }
    int32_t want2[] = {ID_CLS, ID_THE, ID_MASK, ID_SAT, ID_ON, ID_THE, ID_MASK, ID_DOT, ID_SEP};
    CHECK(ids_are(&job.seqs[0].enc, want2, 9));
    t = &job.seqs[0].task;
    t->top_ids[0] = ID_CAT;
    t->top_probs[0] = 0.75f;
    t->top_ids[1] = ID_MAT;
    t->top_probs[1] = 0.5f;
    body = render(&job, m);
    CHECK_STR_EQ(body, "[[{\"score\":0.75,\"token\":4937,\"token_str\":\"cat\","
                       "\"sequence\":\"[CLS] the cat sat on the [MASK]. [SEP]\"}],"
                       "[{\"score\":0.5,\"token\":13523,\"token_str\":\"mat\","
                       "\"sequence\":\"[CLS] the [MASK] sat on the mat. [SEP]\"}]]");
    free(body);
    proto_job_free(&job);

    /* Targets: "Capital" is not a token of the uncased vocabulary; it
     * tokenizes to "capital" and merges with it. */
    if (!prepare(m, PROTO_ROUTE_FILL_MASK,
                 "{\"inputs\":\"[MASK]\",\"targets\":[\"capital\",\"Capital\",\"centre\"]}", &job)) {
        CHECK(false);
        return;
    }
    CHECK_INT_EQ(job.seqs[0].task.n_targets, 2);
    CHECK_INT_EQ(job.target_ids[0], ID_CAPITAL);
    CHECK_INT_EQ(job.target_ids[1], ID_CENTRE);
    CHECK_INT_EQ(job.seqs[0].task.top_k, 2);
    proto_job_free(&job);
}

int main(void)
{
    struct bert_model m;
    memset(&m, 0, sizeof m);
    struct bert_error err = {0};
    if (bert_tokenizer_load("tests/data/tokenizer/bert-base-uncased", &m.tokenizer, &err) != BERT_OK) {
        fprintf(stderr, "tokenizer: %s\n", err.message);
        return EXIT_FAILURE;
    }
    m.config.hidden_size = m.embed_dims = 8;
    m.config.num_labels = 2;
    m.max_input_tokens = 512;
    m.can_fill_mask = true;
    CHECK_INT_EQ(bert_tokenizer_mask_id(m.tokenizer), ID_MASK);
    CHECK_INT_EQ(bert_tokenizer_pad_id(m.tokenizer), ID_PAD);
    test_tokenize(&m);
    test_fill_mask(&m);
    bert_tokenizer_free(m.tokenizer);
    return check_exit();
}
