/* Request bodies -> struct proto_request, with one exact message per way a
 * body can be wrong. The messages are part of the API (openapi.yaml lists
 * them); change them only together with that table and the tests. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "extract.h"
#include "proto.h"
#include "proto_internal.h"
#include "route_table.h"

static const char *const param_names[PROTO_PARAM_COUNT] = {
    [PROTO_PARAM_POOLING] = "pooling",
    [PROTO_PARAM_NORMALIZE] = "normalize",
    [PROTO_PARAM_TRUNCATE] = "truncate",
    [PROTO_PARAM_TRUNCATION_DIRECTION] = "truncation_direction",
    [PROTO_PARAM_TOP_K] = "top_k",
    [PROTO_PARAM_TOP_K_LABELS] = "top_k",
    [PROTO_PARAM_TARGETS] = "targets",
    [PROTO_PARAM_RAW_SCORES] = "raw_scores",
    [PROTO_PARAM_FUNCTION_TO_APPLY] = "function_to_apply",
    [PROTO_PARAM_ADD_SPECIAL_TOKENS] = "add_special_tokens",
    [PROTO_PARAM_MODEL] = "model",
    [PROTO_PARAM_ENCODING_FORMAT] = "encoding_format",
    [PROTO_PARAM_DIMENSIONS] = "dimensions",
    [PROTO_PARAM_USER] = "user",
    [PROTO_PARAM_QUERY] = "query",
    [PROTO_PARAM_RETURN_TEXT] = "return_text",
    [PROTO_PARAM_RETURN_DOCUMENTS] = "return_documents",
    [PROTO_PARAM_TOP_N] = "top_n",
    [PROTO_PARAM_AGGREGATION_STRATEGY] = "aggregation_strategy",
    [PROTO_PARAM_IGNORE_LABELS] = "ignore_labels",
    [PROTO_PARAM_STRIDE] = "stride",
    [PROTO_PARAM_NORMALIZED] = "normalized",
    [PROTO_PARAM_EMBEDDING_TYPE] = "embedding_type",
    [PROTO_PARAM_TASK] = "task",
    [PROTO_PARAM_LATE_CHUNKING] = "late_chunking",
    [PROTO_PARAM_RANK_FIELDS] = "rank_fields",
    [PROTO_PARAM_MAX_CHUNKS_PER_DOC] = "max_chunks_per_doc",
    [PROTO_PARAM_MAX_TOKENS_PER_DOC] = "max_tokens_per_doc",
    [PROTO_PARAM_SKIP_SPECIAL_TOKENS] = "skip_special_tokens",
    [PROTO_PARAM_PROMPT_NAME] = "prompt_name",
    [PROTO_PARAM_PROMPT] = "prompt",
};

/* The shapes of a route's inputs (struct proto_inputs in proto_internal.h). */
struct proto_inputs {
    const char *expected;   /* the `must be ...` of a value of any other shape */
    bool list_only;         /* a lone string is refused, not read as a list of one */
    bool pairs;             /* an item may be a pair [text, text_pair] */
    bool objects;           /* an item may be an object {"text": ...} (Jina, Cohere) */
    bool with_query;        /* every item becomes the pair (query, item) */
    bool token_ids;         /* an item may be a list of token ids, and the whole value
                               one such list (OpenAI) */
    bool ids_only;          /* token ids and nothing else (/decode) */
    bool pair_objects;      /* an item, or the whole value, may be {"text", "text_pair"}
                               (the Hugging Face Inference API's pair) */
    bool lone_pair;         /* a list of exactly two strings is one pair (TEI's /predict) */
    bool similarity;        /* the value is {"source_sentence", "sentences"}: the inputs
                               are the source, then each sentence */
};

const struct proto_inputs proto_inputs_texts = {.expected = "a string or a list of strings"};
const struct proto_inputs proto_inputs_texts_or_token_ids = {
    .expected = "a string, a list of strings, a list of token ids or a list of lists of token ids",
    .token_ids = true};
const struct proto_inputs proto_inputs_token_ids = {
    .expected = "a list of token ids or a list of lists of token ids", .list_only = true,
    .token_ids = true, .ids_only = true};
const struct proto_inputs proto_inputs_hf_classify = {
    .expected = "a string, a list of strings, a list of pairs [text, text_pair], or "
                "{\"text\", \"text_pair\"} objects",
    .pairs = true, .pair_objects = true};
const struct proto_inputs proto_inputs_tei_predict = {
    .expected = "a string, a pair [text, text_pair] or a list of strings and pairs",
    .pairs = true, .lone_pair = true};
const struct proto_inputs proto_inputs_similarity = {
    .expected = "an object {\"source_sentence\": string, \"sentences\": [string, ...]}",
    .similarity = true};
const struct proto_inputs proto_inputs_texts_or_pairs = {
    .expected = "a string, a list of strings or a list of pairs [text, text_pair]",
    .pairs = true};
const struct proto_inputs proto_inputs_documents = {
    .expected = "a list of strings", .list_only = true, .with_query = true};
const struct proto_inputs proto_inputs_document_objects = {
    .expected = "a list of strings", .list_only = true, .objects = true, .with_query = true};

struct parse {
    const struct proto_route_desc *route;
    const struct proto_limits *limits;
    struct proto_request *req;
    struct proto_error *err;
    json_t *inputs;                     /* borrowed from req->root */
    json_t *params[PROTO_PARAM_COUNT];  /* borrowed; NULL when absent */
};

/* "a string", "an integer", ...: the `got ...` half of type errors. */
static const char *type_phrase(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "a list";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a float";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "an unknown type";
}

static bool wrong_type(struct parse *p, const char *field, const char *expected, const json_t *v)
{
    proto_error_set(p->err, PROTO_ERR_INVALID, "\"%s\" must be %s, got %s", field, expected,
                    type_phrase(v));
    return false;
}

static bool out_of_memory(struct parse *p)
{
    proto_error_set(p->err, PROTO_ERR_INTERNAL, "out of memory while parsing the request");
    return false;
}

/* The parameter `key` names on this route; -1 when the route takes none. */
static int param_lookup(const struct parse *p, const char *key)
{
    for (int i = 0; i < PROTO_PARAM_COUNT; i++)
        if ((p->route->params & (1u << i)) && strcmp(key, param_names[i]) == 0)
            return i;
    return -1;
}

static bool unknown_field(struct parse *p, const char *key, bool nested)
{
    /* List what is accepted where the unknown key stood. */
    const char *fixed[3] = {p->route->inputs_name, "parameters", "options"};
    size_t n_fixed = nested ? 0 : p->route->flat_body ? 1 : 3;
    char accepted[320] = "";
    size_t n = 0;
    for (size_t k = 0; k < n_fixed + PROTO_PARAM_COUNT; k++) {
        if (k >= n_fixed && !(p->route->params & (1u << (k - n_fixed))))
            continue;
        const char *name = k < n_fixed ? fixed[k] : param_names[k - n_fixed];
        int w = snprintf(accepted + n, sizeof accepted - n, "%s\"%s\"", n ? ", " : "", name);
        if (w > 0 && (size_t)w < sizeof accepted - n)
            n += (size_t)w;
    }
    char q[PROTO_QUOTE_SIZE];
    proto_error_set(p->err, PROTO_ERR_INVALID, "unknown field %s%s; accepted: %s",
                    proto_quote(q, key, strlen(key)), nested ? " in \"parameters\"" : "",
                    accepted);
    return false;
}

/* Record a parameter found at the top level or in "parameters". */
static bool take_param(struct parse *p, const char *key, json_t *value, bool nested)
{
    int i = param_lookup(p, key);
    if (i < 0)
        return unknown_field(p, key, nested);
    if (p->params[i] != NULL) {
        proto_error_set(p->err, PROTO_ERR_INVALID,
                        "\"%s\" is given both at the top level and in \"parameters\"", key);
        return false;
    }
    p->params[i] = value;
    return true;
}

static bool collect_fields(struct parse *p, json_t *root)
{
    const char *key;
    json_t *value;
    json_t *parameters = NULL;
    json_object_foreach(root, key, value) {
        if (strcmp(key, p->route->inputs_name) == 0) {
            p->inputs = value;
        } else if (!p->route->flat_body && strcmp(key, "parameters") == 0) {
            if (json_is_object(value))
                parameters = value;
            else if (!json_is_null(value))
                return wrong_type(p, "parameters", "an object", value);
        } else if (!p->route->flat_body && strcmp(key, "options") == 0) {
            /* The Inference API's options (use_cache, wait_for_model) mean
             * nothing here; accept and ignore them. */
            if (!json_is_object(value) && !json_is_null(value))
                return wrong_type(p, "options", "an object", value);
        } else if (!take_param(p, key, value, false)) {
            return false;
        }
    }
    if (parameters) {
        json_object_foreach(parameters, key, value) {
            if (!take_param(p, key, value, true))
                return false;
        }
    }
    return true;
}

/* OpenAI's tokens input: a non-empty list of integers 0 .. INT32_MAX
 * (`field` names it in messages). */
static bool parse_token_ids(struct parse *p, const char *field, json_t *v, struct proto_input *in)
{
    if (json_array_size(v) == 0) {
        proto_error_set(p->err, PROTO_ERR_INVALID, "\"%s\" must not be an empty list", field);
        return false;
    }
    for (size_t k = 0; k < json_array_size(v); k++) {
        json_t *id = json_array_get(v, k);
        char sub[64];
        snprintf(sub, sizeof sub, "%s[%zu]", field, k);
        if (!json_is_integer(id))
            return wrong_type(p, sub, "a token id (an integer)", id);
        json_int_t x = json_integer_value(id);
        if (x < 0 || x > INT32_MAX) {
            proto_error_set(p->err, PROTO_ERR_INVALID,
                            "\"%s\" must be a token id between 0 and %d, got %lld", sub,
                            INT32_MAX, (long long)x);
            return false;
        }
    }
    in->token_ids = v;
    return true;
}

/* {"text": string, "text_pair": string?}: the Hugging Face Inference API's
 * text-classification pair. */
static bool parse_pair_object(struct parse *p, const char *field, json_t *v,
                              struct proto_input *in)
{
    const char *key;
    json_t *value;
    json_object_foreach(v, key, value) {
        char sub[80];
        snprintf(sub, sizeof sub, "%s.%s", field, key);
        bool is_text = strcmp(key, "text") == 0, is_pair = strcmp(key, "text_pair") == 0;
        if (!is_text && !is_pair) {
            char q[PROTO_QUOTE_SIZE];
            proto_error_set(p->err, PROTO_ERR_INVALID,
                            "unknown field %s in \"%s\"; accepted: \"text\", \"text_pair\"",
                            proto_quote(q, key, strlen(key)), field);
            return false;
        }
        if (is_pair && json_is_null(value))
            continue;
        if (!json_is_string(value))
            return wrong_type(p, sub, "a string", value);
        if (is_text) {
            in->text = json_string_value(value);
            in->text_len = json_string_length(value);
        } else {
            in->pair = json_string_value(value);
            in->pair_len = json_string_length(value);
        }
    }
    if (in->text == NULL) {
        proto_error_set(p->err, PROTO_ERR_INVALID, "missing field \"text\" in \"%s\"", field);
        return false;
    }
    return true;
}

/* Levels of objects and lists in v (a string is 0): documents are echoed
 * by a writer with a bounded depth. */
static size_t json_depth(const json_t *v)
{
    size_t deepest = 0, i;
    const char *key;
    json_t *item;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, key, item) {
            size_t d = json_depth(item);
            deepest = d > deepest ? d : deepest;
        }
        return deepest + 1;
    }
    if (json_is_array(v)) {
        json_array_foreach(v, i, item) {
            size_t d = json_depth(item);
            deepest = d > deepest ? d : deepest;
        }
        return deepest + 1;
    }
    return 0;
}

#define PROTO_DOCUMENT_MAX_DEPTH 16

static bool parse_input(struct parse *p, size_t i, json_t *v, struct proto_input *in)
{
    const struct proto_inputs *shape = p->route->inputs;
    if (shape->objects && json_is_object(v)) {
        /* Its "text", or with "rank_fields" other fields: read when
         * tokenizing (proto_tokenize_documents), which says what is
         * missing. */
        if (json_depth(v) > PROTO_DOCUMENT_MAX_DEPTH) {
            proto_error_set(p->err, PROTO_ERR_INVALID,
                            "\"%s[%zu]\" nests objects and lists deeper than %d levels",
                            p->route->inputs_name, i, PROTO_DOCUMENT_MAX_DEPTH);
            return false;
        }
        json_t *text = json_object_get(v, "text");
        in->document = v;
        in->text = json_is_string(text) ? json_string_value(text) : NULL;
        in->text_len = json_is_string(text) ? json_string_length(text) : 0;
        return true;
    }
    if (shape->ids_only && !json_is_array(v)) {
        char field[48];
        snprintf(field, sizeof field, "%s[%zu]", p->route->inputs_name, i);
        return wrong_type(p, field, "a list of token ids", v);
    }
    json_t *text = v;
    if (json_is_string(text)) {
        in->text = json_string_value(text);
        in->text_len = json_string_length(text);
        return true;
    }
    char field[48];
    snprintf(field, sizeof field, "%s[%zu]", p->route->inputs_name, i);
    if (shape->token_ids && json_is_array(v))
        return parse_token_ids(p, field, v, in);
    if (shape->token_ids)
        return wrong_type(p, field, "a string or a list of token ids", v);
    if (shape->pair_objects && json_is_object(v))
        return parse_pair_object(p, field, v, in);
    if (shape->objects)
        return wrong_type(p, field, "a string or an object {\"text\": string}", v);
    if (!shape->pairs)
        return wrong_type(p, field, "a string", v);
    if (!json_is_array(v))
        return wrong_type(p, field, "a string or a pair [text, text_pair]", v);
    if (json_array_size(v) != 2) {
        proto_error_set(p->err, PROTO_ERR_INVALID,
                        "\"%s\" must be a pair [text, text_pair], got a list of %zu", field,
                        json_array_size(v));
        return false;
    }
    for (size_t k = 0; k < 2; k++) {
        json_t *part = json_array_get(v, k);
        if (!json_is_string(part)) {
            char sub[64];
            snprintf(sub, sizeof sub, "%s[%zu]", field, k);
            return wrong_type(p, sub, "a string", part);
        }
    }
    in->text = json_string_value(json_array_get(v, 0));
    in->text_len = json_string_length(json_array_get(v, 0));
    in->pair = json_string_value(json_array_get(v, 1));
    in->pair_len = json_string_length(json_array_get(v, 1));
    return true;
}

/* Room for `n` inputs, within max_client_batch. */
static bool alloc_inputs(struct parse *p, size_t n)
{
    size_t limit = p->limits->max_client_batch;
    if (limit && n > limit) {
        proto_error_set(p->err, PROTO_ERR_TOO_LARGE,
                        "too many inputs: %zu given, at most %zu are allowed per request", n,
                        limit);
        return false;
    }
    p->req->inputs = calloc(n, sizeof *p->req->inputs);
    if (p->req->inputs == NULL)
        return out_of_memory(p);
    p->req->n_inputs = n;
    return true;
}

/* {"source_sentence": s, "sentences": [t, ...]} -> inputs s, t, ... */
static bool parse_similarity(struct parse *p, json_t *v)
{
    const char *name = p->route->inputs_name;
    if (!json_is_object(v))
        return wrong_type(p, name, p->route->inputs->expected, v);
    json_t *source = NULL, *sentences = NULL;
    const char *key;
    json_t *value;
    json_object_foreach(v, key, value) {
        if (strcmp(key, "source_sentence") == 0) {
            source = value;
        } else if (strcmp(key, "sentences") == 0) {
            sentences = value;
        } else {
            char q[PROTO_QUOTE_SIZE];
            proto_error_set(p->err, PROTO_ERR_INVALID,
                            "unknown field %s in \"%s\"; accepted: \"source_sentence\", "
                            "\"sentences\"",
                            proto_quote(q, key, strlen(key)), name);
            return false;
        }
    }
    if (source == NULL || sentences == NULL) {
        proto_error_set(p->err, PROTO_ERR_INVALID, "missing field \"%s\" in \"%s\"",
                        source == NULL ? "source_sentence" : "sentences", name);
        return false;
    }
    if (!json_is_string(source))
        return wrong_type(p, "inputs.source_sentence", "a string", source);
    if (!json_is_array(sentences))
        return wrong_type(p, "inputs.sentences", "a list of strings", sentences);
    size_t n = json_array_size(sentences);
    if (n == 0) {
        proto_error_set(p->err, PROTO_ERR_INVALID,
                        "\"inputs.sentences\" must not be an empty list");
        return false;
    }
    if (!alloc_inputs(p, n + 1))
        return false;
    p->req->batched = true;
    p->req->inputs[0].text = json_string_value(source);
    p->req->inputs[0].text_len = json_string_length(source);
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_array_get(sentences, i);
        if (!json_is_string(s)) {
            char field[48];
            snprintf(field, sizeof field, "inputs.sentences[%zu]", i);
            return wrong_type(p, field, "a string", s);
        }
        p->req->inputs[i + 1].text = json_string_value(s);
        p->req->inputs[i + 1].text_len = json_string_length(s);
    }
    return true;
}

/* The whole value as one input that is not a plain string: a token list
 * (OpenAI), a {"text", "text_pair"} object (Hugging Face), two strings
 * (TEI's pair). False with *handled false when the value is none of these. */
static bool parse_single_input(struct parse *p, json_t *v, bool *handled)
{
    const struct proto_inputs *shape = p->route->inputs;
    bool ids = shape->token_ids && json_is_array(v) && json_is_integer(json_array_get(v, 0));
    bool object = shape->pair_objects && json_is_object(v);
    bool pair = shape->lone_pair && json_is_array(v) && json_array_size(v) == 2 &&
                json_is_string(json_array_get(v, 0)) && json_is_string(json_array_get(v, 1));
    *handled = ids || object || pair;
    if (!*handled || !alloc_inputs(p, 1))
        return false;
    struct proto_input *in = &p->req->inputs[0];
    if (ids)
        return parse_token_ids(p, p->route->inputs_name, v, in);
    if (object)
        return parse_pair_object(p, p->route->inputs_name, v, in);
    in->text = json_string_value(json_array_get(v, 0));
    in->text_len = json_string_length(json_array_get(v, 0));
    in->pair = json_string_value(json_array_get(v, 1));
    in->pair_len = json_string_length(json_array_get(v, 1));
    return true;
}

static bool parse_inputs(struct parse *p)
{
    struct proto_request *req = p->req;
    json_t *v = p->inputs;
    const char *name = p->route->inputs_name;
    if (v == NULL) {
        proto_error_set(p->err, PROTO_ERR_INVALID, "missing field \"%s\"", name);
        return false;
    }
    if (p->route->inputs->similarity)
        return parse_similarity(p, v);
    bool handled;
    bool ok = parse_single_input(p, v, &handled);
    if (handled)
        return ok;
    size_t n;
    if (json_is_string(v) && !p->route->inputs->list_only) {
        n = 1;
    } else if (json_is_array(v)) {
        n = json_array_size(v);
        if (n == 0) {
            proto_error_set(p->err, PROTO_ERR_INVALID, "\"%s\" must not be an empty list",
                            name);
            return false;
        }
        req->batched = true;
    } else {
        return wrong_type(p, name, p->route->inputs->expected, v);
    }
    if (!alloc_inputs(p, n))
        return false;
    if (!req->batched)
        return parse_input(p, 0, v, &req->inputs[0]);
    for (size_t i = 0; i < n; i++)
        if (!parse_input(p, i, json_array_get(v, i), &req->inputs[i]))
            return false;
    return true;
}

static bool get_bool(struct parse *p, enum proto_param i, bool *out)
{
    json_t *v = p->params[i];
    if (!json_is_boolean(v))
        return wrong_type(p, param_names[i], "a boolean", v);
    *out = json_is_true(v);
    return true;
}

/* Texts may hold U+0000 (the tokenizer drops or encodes it as Hugging Face
 * does); a name, a choice or a label may not, since it is compared and
 * echoed as a C string. */
static bool no_nul(struct parse *p, const char *field, const json_t *v)
{
    if (strlen(json_string_value(v)) == json_string_length(v))
        return true;
    proto_error_set(p->err, PROTO_ERR_INVALID, "\"%s\" must not contain \\u0000", field);
    return false;
}

static bool get_string(struct parse *p, enum proto_param i, const char **out)
{
    json_t *v = p->params[i];
    if (!json_is_string(v))
        return wrong_type(p, param_names[i], "a string", v);
    *out = json_string_value(v);
    return no_nul(p, param_names[i], v);
}

static bool bad_choice(struct parse *p, enum proto_param i, const char *choices, const char *got)
{
    char q[PROTO_QUOTE_SIZE];
    proto_error_set(p->err, PROTO_ERR_INVALID, "\"%s\" must be %s, got %s", param_names[i],
                    choices, proto_quote(q, got, strlen(got)));
    return false;
}

/* An integer parameter at least `min` and, when max > 0, at most `max`. */
static bool get_integer(struct parse *p, enum proto_param i, json_int_t min, json_int_t max,
                        json_int_t *out)
{
    json_t *v = p->params[i];
    if (!json_is_integer(v))
        return wrong_type(p, param_names[i], "an integer", v);
    json_int_t x = json_integer_value(v);
    if (x < min || (max > 0 && x > max)) {
        if (max > 0)
            proto_error_set(p->err, PROTO_ERR_INVALID,
                            "\"%s\" must be between %lld and %lld, got %lld", param_names[i],
                            (long long)min, (long long)max, (long long)x);
        else
            proto_error_set(p->err, PROTO_ERR_INVALID, "\"%s\" must be at least %lld, got %lld",
                            param_names[i], (long long)min, (long long)x);
        return false;
    }
    *out = x;
    return true;
}

/* A list of strings (possibly empty) into *out, pointing into the body. */
static bool parse_string_list(struct parse *p, enum proto_param i, const char ***out, size_t *n)
{
    json_t *v = p->params[i];
    if (!json_is_array(v))
        return wrong_type(p, param_names[i], "a list of strings", v);
    *n = json_array_size(v);
    *out = calloc(*n ? *n : 1, sizeof **out);
    if (*out == NULL)
        return out_of_memory(p);
    for (size_t k = 0; k < *n; k++) {
        json_t *t = json_array_get(v, k);
        if (!json_is_string(t)) {
            char field[48];
            snprintf(field, sizeof field, "%s[%zu]", param_names[i], k);
            return wrong_type(p, field, "a string", t);
        }
        if (!no_nul(p, param_names[i], t))
            return false;
        (*out)[k] = json_string_value(t);
    }
    return true;
}

static bool parse_targets(struct parse *p)
{
    struct proto_request *req = p->req;
    json_t *v = p->params[PROTO_PARAM_TARGETS];
    size_t n = json_is_string(v) ? 1 : json_is_array(v) ? json_array_size(v) : 0;
    if (!json_is_string(v) && !json_is_array(v))
        return wrong_type(p, "targets", "a string or a list of strings", v);
    if (n == 0) {
        proto_error_set(p->err, PROTO_ERR_INVALID, "\"targets\" must not be an empty list");
        return false;
    }
    size_t limit = p->limits->max_fill_mask_targets;
    if (limit && n > limit) {
        proto_error_set(p->err, PROTO_ERR_TOO_LARGE,
                        "too many targets: %zu given, at most %zu are allowed per request", n,
                        limit);
        return false;
    }
    req->targets = calloc(n, sizeof *req->targets);
    if (req->targets == NULL)
        return out_of_memory(p);
    req->n_targets = n;
    for (size_t k = 0; k < n; k++) {
        json_t *t = json_is_string(v) ? v : json_array_get(v, k);
        char field[32];
        if (json_is_string(v))
            snprintf(field, sizeof field, "targets");
        else
            snprintf(field, sizeof field, "targets[%zu]", k);
        if (!json_is_string(t))
            return wrong_type(p, field, "a non-empty string", t);
        if (json_string_length(t) == 0) {
            proto_error_set(p->err, PROTO_ERR_INVALID, "\"%s\" must be a non-empty string",
                            field);
            return false;
        }
        if (!no_nul(p, field, t))
            return false;
        req->targets[k] = json_string_value(t);
    }
    return true;
}

static bool parse_pooling(struct parse *p)
{
    static const struct {
        const char *name;
        enum bert_pooling pooling;
    } choices[] = {
        {"cls", BERT_POOLING_CLS}, {"mean", BERT_POOLING_MEAN}, {"max", BERT_POOLING_MAX}};
    const char *s = NULL; /* set by get_string; NULL keeps -O2 TSan builds quiet */
    if (!get_string(p, PROTO_PARAM_POOLING, &s))
        return false;
    for (size_t k = 0; k < sizeof choices / sizeof choices[0]; k++) {
        if (strcmp(s, choices[k].name) == 0) {
            p->req->has_pooling = true;
            p->req->pooling = choices[k].pooling;
            return true;
        }
    }
    return bad_choice(p, PROTO_PARAM_POOLING, "one of \"cls\", \"mean\", \"max\"", s);
}

static bool parse_function_to_apply(struct parse *p, bool *given)
{
    static const struct {
        const char *name;
        enum proto_activation activation;
    } choices[] = {{"softmax", PROTO_ACTIVATION_SOFTMAX},
                   {"sigmoid", PROTO_ACTIVATION_SIGMOID},
                   {"none", PROTO_ACTIVATION_NONE}};
    const char *s = NULL; /* set by get_string; NULL keeps -O2 TSan builds quiet */
    if (!get_string(p, PROTO_PARAM_FUNCTION_TO_APPLY, &s))
        return false;
    /* transformers upper-cases the name before the enum lookup, so any case
     * is accepted there; do the same. */
    for (size_t k = 0; k < sizeof choices / sizeof choices[0]; k++) {
        if (strcasecmp(s, choices[k].name) == 0) {
            p->req->function_to_apply = choices[k].activation;
            *given = true;
            return true;
        }
    }
    return bad_choice(p, PROTO_PARAM_FUNCTION_TO_APPLY,
                      "one of \"softmax\", \"sigmoid\", \"none\"", s);
}

static bool parse_params(struct parse *p)
{
    struct proto_request *req = p->req;
    bool function_given = false;
    for (int i = 0; i < PROTO_PARAM_COUNT; i++) {
        /* null means "not given", as Option fields do in TEI and None in
         * the transformers pipelines. */
        if (p->params[i] == NULL || json_is_null(p->params[i]))
            continue;
        bool ok = true;
        const char *s = NULL;
        json_int_t x = 0;
        switch ((enum proto_param)i) {
        case PROTO_PARAM_POOLING:
            ok = parse_pooling(p);
            break;
        case PROTO_PARAM_NORMALIZE:
            ok = get_bool(p, PROTO_PARAM_NORMALIZE, &req->normalize);
            req->has_normalize = true;
            break;
        case PROTO_PARAM_TRUNCATE:
            ok = get_bool(p, PROTO_PARAM_TRUNCATE, &req->truncate);
            req->has_truncate = true;
            break;
        case PROTO_PARAM_TRUNCATION_DIRECTION:
            /* text-embeddings-inference spells them "Right" / "Left". */
            ok = get_string(p, PROTO_PARAM_TRUNCATION_DIRECTION, &s);
            if (!ok)
                break;
            if (strcmp(s, "right") == 0 || strcmp(s, "Right") == 0)
                req->truncation_side = BERT_TRUNCATE_RIGHT;
            else if (strcmp(s, "left") == 0 || strcmp(s, "Left") == 0)
                req->truncation_side = BERT_TRUNCATE_LEFT;
            else
                ok = bad_choice(p, PROTO_PARAM_TRUNCATION_DIRECTION, "\"right\" or \"left\"", s);
            break;
        case PROTO_PARAM_TOP_K:
            ok = get_integer(p, PROTO_PARAM_TOP_K, 1, (json_int_t)p->limits->max_top_k, &x);
            req->top_k = (uint32_t)x;
            break;
        case PROTO_PARAM_TOP_K_LABELS:
            ok = get_integer(p, PROTO_PARAM_TOP_K_LABELS, 1, 0, &x);
            req->classify_top_k = x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
            break;
        case PROTO_PARAM_TARGETS:
            ok = parse_targets(p);
            break;
        case PROTO_PARAM_RAW_SCORES:
            ok = get_bool(p, PROTO_PARAM_RAW_SCORES, &req->raw_scores);
            break;
        case PROTO_PARAM_FUNCTION_TO_APPLY:
            ok = parse_function_to_apply(p, &function_given);
            break;
        case PROTO_PARAM_ADD_SPECIAL_TOKENS:
            ok = get_bool(p, PROTO_PARAM_ADD_SPECIAL_TOKENS, &req->add_special_tokens);
            break;
        case PROTO_PARAM_MODEL:
            ok = get_string(p, PROTO_PARAM_MODEL, &s); /* any name: one model is served */
            break;
        case PROTO_PARAM_ENCODING_FORMAT:
        case PROTO_PARAM_EMBEDDING_TYPE: /* Jina's name for it */
            ok = get_string(p, (enum proto_param)i, &s);
            if (!ok)
                break;
            if (strcmp(s, "base64") == 0)
                req->base64 = true;
            else if (strcmp(s, "float") != 0)
                ok = bad_choice(p, (enum proto_param)i, "\"float\" or \"base64\"", s);
            break;
        case PROTO_PARAM_NORMALIZED:
            ok = get_bool(p, PROTO_PARAM_NORMALIZED, &req->normalize);
            req->has_normalize = true;
            break;
        case PROTO_PARAM_TASK:
            /* Jina's adapters (retrieval.query, ...) belong to its own
             * checkpoints; any name is accepted and changes nothing. */
            ok = get_string(p, PROTO_PARAM_TASK, &s);
            break;
        case PROTO_PARAM_RANK_FIELDS:
            ok = parse_string_list(p, PROTO_PARAM_RANK_FIELDS, &req->rank_fields,
                                   &req->n_rank_fields);
            if (ok && req->n_rank_fields == 0) {
                proto_error_set(p->err, PROTO_ERR_INVALID,
                                "\"rank_fields\" must not be an empty list");
                ok = false;
            }
            break;
        case PROTO_PARAM_MAX_CHUNKS_PER_DOC:
            ok = get_integer(p, PROTO_PARAM_MAX_CHUNKS_PER_DOC, 1, 1000, &x);
            req->max_chunks_per_doc = (uint32_t)x;
            break;
        case PROTO_PARAM_MAX_TOKENS_PER_DOC:
            ok = get_integer(p, PROTO_PARAM_MAX_TOKENS_PER_DOC, 1, INT32_MAX, &x);
            req->max_tokens_per_doc = (uint32_t)x;
            break;
        case PROTO_PARAM_PROMPT_NAME:
            ok = get_string(p, PROTO_PARAM_PROMPT_NAME, &req->prompt_name);
            break;
        case PROTO_PARAM_PROMPT: /* a text: U+0000 allowed */
            if (!json_is_string(p->params[PROTO_PARAM_PROMPT]))
                ok = wrong_type(p, "prompt", "a string", p->params[PROTO_PARAM_PROMPT]);
            else
                req->prompt = json_string_value(p->params[PROTO_PARAM_PROMPT]);
            req->prompt_len = ok ? json_string_length(p->params[PROTO_PARAM_PROMPT]) : 0;
            break;
        case PROTO_PARAM_SKIP_SPECIAL_TOKENS:
            ok = get_bool(p, PROTO_PARAM_SKIP_SPECIAL_TOKENS, &req->skip_special_tokens);
            break;
        case PROTO_PARAM_LATE_CHUNKING: {
            bool late = false;
            ok = get_bool(p, PROTO_PARAM_LATE_CHUNKING, &late);
            if (ok && late) {
                proto_error_set(p->err, PROTO_ERR_INVALID,
                                "\"late_chunking\": true is not supported; send false or leave "
                                "it out");
                ok = false;
            }
            break;
        }
        case PROTO_PARAM_DIMENSIONS:
            ok = get_integer(p, PROTO_PARAM_DIMENSIONS, 1, 0, &x);
            req->dimensions = x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
            break;
        case PROTO_PARAM_USER:
            ok = get_string(p, PROTO_PARAM_USER, &s);
            break;
        case PROTO_PARAM_QUERY: /* a text: U+0000 allowed */
            if (!json_is_string(p->params[PROTO_PARAM_QUERY]))
                ok = wrong_type(p, "query", "a string", p->params[PROTO_PARAM_QUERY]);
            else
                req->query = json_string_value(p->params[PROTO_PARAM_QUERY]);
            req->query_len = ok ? json_string_length(p->params[PROTO_PARAM_QUERY]) : 0;
            break;
        case PROTO_PARAM_RETURN_TEXT:
            ok = get_bool(p, PROTO_PARAM_RETURN_TEXT, &req->return_text);
            break;
        case PROTO_PARAM_RETURN_DOCUMENTS:
            ok = get_bool(p, PROTO_PARAM_RETURN_DOCUMENTS, &req->return_text);
            break;
        case PROTO_PARAM_TOP_N:
            ok = get_integer(p, PROTO_PARAM_TOP_N, 1, 0, &x);
            req->top_n = x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
            break;
        case PROTO_PARAM_AGGREGATION_STRATEGY: {
            enum ner_strategy st = NER_STRATEGY_SIMPLE;
            ok = get_string(p, PROTO_PARAM_AGGREGATION_STRATEGY, &s);
            if (ok && !ner_strategy_parse(s, &st))
                ok = bad_choice(p, PROTO_PARAM_AGGREGATION_STRATEGY,
                                "one of \"none\", \"simple\", \"first\", \"average\", \"max\"", s);
            req->ner_strategy = (int)st;
            break;
        }
        case PROTO_PARAM_IGNORE_LABELS:
            ok = parse_string_list(p, PROTO_PARAM_IGNORE_LABELS, &req->ignore_labels,
                                   &req->n_ignore_labels);
            break;
        case PROTO_PARAM_STRIDE:
            ok = get_integer(p, PROTO_PARAM_STRIDE, 0, INT32_MAX, &x);
            req->has_stride = true;
            req->stride = (uint32_t)x;
            break;
        case PROTO_PARAM_COUNT:
            break;
        }
        if (!ok)
            return false;
    }
    if (req->raw_scores) {
        /* raw_scores is text-embeddings-inference's spelling of "none". */
        if (function_given && req->function_to_apply != PROTO_ACTIVATION_NONE) {
            proto_error_set(p->err, PROTO_ERR_INVALID,
                            "\"raw_scores\": true conflicts with \"function_to_apply\": \"%s\"",
                            json_string_value(p->params[PROTO_PARAM_FUNCTION_TO_APPLY]));
            return false;
        }
        req->function_to_apply = PROTO_ACTIVATION_NONE;
    }
    return true;
}

/* Rerank: every document becomes the pair (query, document), the input of
 * a cross-encoder (sentence-transformers CrossEncoder.rank). */
static bool pair_with_query(struct parse *p)
{
    struct proto_request *req = p->req;
    if (!p->route->inputs->with_query)
        return true;
    if (req->query == NULL) {
        proto_error_set(p->err, PROTO_ERR_INVALID, "missing field \"query\"");
        return false;
    }
    for (size_t i = 0; i < req->n_inputs; i++) {
        struct proto_input *in = &req->inputs[i];
        in->pair = in->text;
        in->pair_len = in->text_len;
        in->text = req->query;
        in->text_len = req->query_len;
    }
    return true;
}

bool proto_request_parse(enum proto_route route, const char *body, size_t len,
                         const struct proto_limits *limits, struct proto_request *req,
                         struct proto_error *err)
{
    memset(req, 0, sizeof *req);
    req->route = route;
    req->top_k = 5;
    req->add_special_tokens = true;
    req->skip_special_tokens = true;
    req->ner_strategy = NER_STRATEGY_SIMPLE;
    req->truncation_side = BERT_TRUNCATE_RIGHT;
    req->function_to_apply = PROTO_ACTIVATION_DEFAULT;
    if (route >= PROTO_ROUTE_COUNT) {
        proto_error_set(err, PROTO_ERR_NOT_FOUND, "no such route");
        return false;
    }

    json_error_t jerr;
    /* U+0000 is valid JSON, and Hugging Face's normalizers drop it like any
     * control character: one scraped document with a NUL must not fail a
     * batch (keys with it are still refused by jansson). */
    req->root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL,
                           &jerr);
    if (req->root == NULL) {
        proto_error_set(err, PROTO_ERR_MALFORMED, "malformed JSON at line %d, column %d: %s",
                        jerr.line, jerr.column, jerr.text);
        return false;
    }
    struct parse p = {
        .route = &proto_routes[route],
        .limits = limits,
        .req = req,
        .err = err,
    };
    bool ok;
    if (!json_is_object(req->root))
        ok = wrong_type(&p, "request body", "a JSON object", req->root);
    else
        ok = collect_fields(&p, req->root) && parse_inputs(&p) && parse_params(&p) &&
             pair_with_query(&p);
    if (!ok)
        proto_request_free(req);
    return ok;
}

void proto_request_free(struct proto_request *req)
{
    if (req == NULL)
        return;
    json_decref(req->root);
    free(req->inputs);
    free(req->targets);
    free(req->ignore_labels);
    free(req->rank_fields);
    memset(req, 0, sizeof *req);
}
