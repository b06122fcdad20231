#include <string.h>

#include "proto.h"
#include "proto_internal.h"

static const struct {
    const char *path;
    const char *name;
} route_table[PROTO_ROUTE_COUNT] = {
    [PROTO_ROUTE_EMBED] = {"/embed", "embed"},
    [PROTO_ROUTE_FILL_MASK] = {"/fill-mask", "fill-mask"},
    [PROTO_ROUTE_CLASSIFY] = {"/classify", "classify"},
    [PROTO_ROUTE_TOKENIZE] = {"/tokenize", "tokenize"},
    [PROTO_ROUTE_OPENAI_EMBED] = {"/v1/embeddings", "openai-embeddings"},
    [PROTO_ROUTE_RERANK] = {"/rerank", "rerank"},
    [PROTO_ROUTE_V1_RERANK] = {"/v1/rerank", "v1-rerank"},
    [PROTO_ROUTE_REPLACED_TOKENS] = {"/replaced-tokens", "replaced-tokens"},
};

bool proto_route_from_path(const char *path, enum proto_route *out)
{
    for (int r = 0; r < PROTO_ROUTE_COUNT; r++) {
        if (strcmp(path, route_table[r].path) == 0) {
            *out = (enum proto_route)r;
            return true;
        }
    }
    return false;
}

const char *proto_route_path(enum proto_route route)
{
    return route < PROTO_ROUTE_COUNT ? route_table[route].path : "?";
}

const char *proto_route_name(enum proto_route route)
{
    return route < PROTO_ROUTE_COUNT ? route_table[route].name : "?";
}

const char *proto_inputs_name(enum proto_route route)
{
    switch (route) {
    case PROTO_ROUTE_OPENAI_EMBED:
        return "input";
    case PROTO_ROUTE_RERANK:
        return "texts";
    case PROTO_ROUTE_V1_RERANK:
        return "documents";
    default:
        return "inputs";
    }
}
