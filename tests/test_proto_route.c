/* proto/route.c: the route table every layer reads. Each enum proto_route
 * has a complete row (a designated initializer leaves a forgotten row in the
 * middle zeroed, which the compiler does not notice), paths and names are
 * unique and look each other up, and the CLI sees only its own routes. */
#include "check.h"
#include "proto.h"
#include "route_table.h"

/* A route takes at most one parameter of a name: PROTO_PARAM_TOP_K,
 * PROTO_PARAM_TOP_K_LABELS and PROTO_PARAM_TOP_K_ANSWERS are all "top_k". */
static bool same_name_twice(uint64_t params)
{
    uint64_t top_k = params & (PROTO_PARAM(TOP_K) | PROTO_PARAM(TOP_K_LABELS) |
                               PROTO_PARAM(TOP_K_ANSWERS));
    return (top_k & (top_k - 1)) != 0;
}

/* The row whose alt_route is r; PROTO_ROUTE_COUNT when none. */
static int route_hosting(int r)
{
    for (int h = 0; h < PROTO_ROUTE_COUNT; h++)
        if (proto_routes[h].alt_field != NULL && (int)proto_routes[h].alt_route == r)
            return h;
    return PROTO_ROUTE_COUNT;
}

static void test_rows_complete(void)
{
    for (int r = 0; r < PROTO_ROUTE_COUNT; r++) {
        const struct proto_route_desc *d = &proto_routes[r];
        CHECK(d->path != NULL && d->path[0] == '/');
        CHECK(d->name != NULL && d->name[0] != '\0');
        CHECK(d->methods != 0);
        CHECK(d->inputs_name != NULL && d->inputs != NULL);
        CHECK(d->render != NULL);
        CHECK(!same_name_twice(d->params));
        if (d->path == NULL || d->name == NULL) {
            fprintf(stderr, "  route %d has no row in proto/route.c\n", r);
            continue;
        }
        enum proto_route found = PROTO_ROUTE_COUNT;
        CHECK(proto_route_from_path(d->path, &found));
        /* A row of another API's body shares its host's path. */
        CHECK_INT_EQ(found, d->alt_only ? route_hosting(r) : r);
        CHECK_STR_EQ(proto_route_path((enum proto_route)r), d->path);
        CHECK_STR_EQ(proto_route_name((enum proto_route)r), d->name);
        CHECK_INT_EQ(proto_route_methods((enum proto_route)r), d->methods);
        for (int o = 0; o < r; o++) {
            CHECK(d->alt_only || proto_routes[o].path == NULL ||
                  strcmp(proto_routes[o].path, d->path) != 0);
            CHECK(proto_routes[o].name == NULL || strcmp(proto_routes[o].name, d->name) != 0);
        }
    }
    CHECK_INT_EQ(proto_route_methods(PROTO_ROUTE_COUNT), 0);
    CHECK_STR_EQ(proto_route_name(PROTO_ROUTE_COUNT), "?");
}

/* The routes of the API today, as clients and dashboards know them. */
static void test_paths_and_labels(void)
{
    static const struct {
        enum proto_route route;
        const char *path, *name;
        bool cli;
    } want[] = {
        {PROTO_ROUTE_EMBED, "/embed", "embed", true},
        {PROTO_ROUTE_FILL_MASK, "/fill-mask", "fill-mask", true},
        {PROTO_ROUTE_CLASSIFY, "/classify", "classify", true},
        {PROTO_ROUTE_TOKENIZE, "/tokenize", "tokenize", true},
        {PROTO_ROUTE_OPENAI_EMBED, "/v1/embeddings", "openai-embeddings", false},
        {PROTO_ROUTE_RERANK, "/rerank", "rerank", true},
        {PROTO_ROUTE_V1_RERANK, "/v1/rerank", "v1-rerank", false},
        {PROTO_ROUTE_REPLACED_TOKENS, "/replaced-tokens", "replaced-tokens", true},
        {PROTO_ROUTE_TOKEN_CLASSIFICATION, "/token-classification", "token-classification", true},
        {PROTO_ROUTE_QUESTION_ANSWERING, "/question-answering", "question-answering", true},
        {PROTO_ROUTE_ZERO_SHOT, "/zero-shot-classification", "zero-shot-classification", true},
        {PROTO_ROUTE_PREDICT, "/predict", "predict", false},
        {PROTO_ROUTE_SIMILARITY, "/similarity", "similarity", false},
        {PROTO_ROUTE_V2_RERANK, "/v2/rerank", "v2-rerank", false},
        {PROTO_ROUTE_DECODE, "/decode", "decode", false},
        {PROTO_ROUTE_EMBED_ALL, "/embed_all", "embed-all", false},
        {PROTO_ROUTE_EMBED_SPARSE, "/embed_sparse", "embed-sparse", false},
        {PROTO_ROUTE_SCORE, "/score", "score", true},
        {PROTO_ROUTE_V1_SCORE, "/v1/score", "v1-score", false},
        {PROTO_ROUTE_COHERE_EMBED, "/v1/embed", "cohere-embed", false},
        {PROTO_ROUTE_COHERE_V2_EMBED, "/v2/embed", "cohere-v2-embed", false},
        {PROTO_ROUTE_VLLM_CLASSIFY, "/classify", "vllm-classify", false},
        {PROTO_ROUTE_POOLING, "/pooling", "pooling", true},
    };
    CHECK_INT_EQ(sizeof want / sizeof want[0], PROTO_ROUTE_COUNT);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        CHECK_STR_EQ(proto_route_path(want[i].route), want[i].path);
        CHECK_STR_EQ(proto_route_name(want[i].route), want[i].name);
        CHECK_INT_EQ(proto_route_methods(want[i].route), PROTO_METHOD_POST);
        enum proto_route found = PROTO_ROUTE_COUNT;
        CHECK_INT_EQ(proto_route_from_command(want[i].name, &found), want[i].cli);
        if (want[i].cli)
            CHECK_INT_EQ(found, want[i].route);
    }
    enum proto_route found;
    CHECK(!proto_route_from_command("/embed", &found));
    CHECK(!proto_route_from_command("health", &found));
    CHECK(!proto_route_from_path("/embed/", &found));
    CHECK(!proto_route_from_path("embed", &found));
}

int main(void)
{
    test_rows_complete();
    test_paths_and_labels();
    return check_exit();
}
