/* Request bodies' inputs: the shapes each route accepts (a string, lists,
 * pairs, token ids, {"text", "text_pair"} objects, documents, a similarity
 * object) -> struct proto_input, with request.c's exact messages. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "proto_internal.h"
#include "request_internal.h"
#include "route_table.h"

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
const struct proto_inputs proto_inputs_questions = {
    .expected = "an object {\"question\": string, \"context\": string} or a list of them",
    .questions = true};
const struct proto_inputs proto_inputs_document_objects = {
    .expected = "a list of strings", .list_only = true, .objects = true, .with_query = true};
const struct proto_inputs proto_inputs_text_list = {.expected = "a list of strings",
                                                    .list_only = true};
const struct proto_inputs proto_inputs_score = {.expected = "a string or a list of strings",
                                                .score = true};

/* vLLM's score requests: the four spellings of its two text fields. */
static const char *const score_fields[][2] = {
    {"text_1", "text_2"}, {"queries", "documents"}, {"queries", "items"}, {"data_1", "data_2"}};
#define N_SCORE_FIELDS (sizeof score_fields / sizeof score_fields[0])

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
            return request_wrong_type(p, sub, "a token id (an integer)", id);
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
            return request_wrong_type(p, sub, "a string", value);
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

/* One {"question": string, "context": string}: the pair (question,
 * context), both non-empty as the pipeline requires. */
static bool parse_question(struct parse *p, const char *field, json_t *v, struct proto_input *in)
{
    if (!json_is_object(v))
        return request_wrong_type(p, field, p->route->inputs->expected, v);
    const char *key;
    json_t *value;
    json_object_foreach(v, key, value) {
        if (strcmp(key, "question") != 0 && strcmp(key, "context") != 0) {
            char q[PROTO_QUOTE_SIZE];
            proto_error_set(p->err, PROTO_ERR_INVALID,
                            "unknown field %s in \"%s\"; accepted: \"question\", \"context\"",
                            proto_quote(q, key, strlen(key)), field);
            return false;
        }
    }
    static const char *const parts[2] = {"question", "context"};
    for (size_t k = 0; k < 2; k++) {
        json_t *s = json_object_get(v, parts[k]);
        char sub[64];
        snprintf(sub, sizeof sub, "%s.%s", field, parts[k]);
        if (s == NULL) {
            proto_error_set(p->err, PROTO_ERR_INVALID, "missing field \"%s\"", sub);
            return false;
        }
        if (!json_is_string(s))
            return request_wrong_type(p, sub, "a string", s);
        if (json_string_length(s) == 0) {
            proto_error_set(p->err, PROTO_ERR_INVALID, "\"%s\" must not be empty", sub);
            return false;
        }
    }
    in->text = json_string_value(json_object_get(v, "question"));
    in->text_len = json_string_length(json_object_get(v, "question"));
    in->pair = json_string_value(json_object_get(v, "context"));
    in->pair_len = json_string_length(json_object_get(v, "context"));
    return true;
}

static bool parse_input(struct parse *p, size_t i, json_t *v, struct proto_input *in)
{
    const struct proto_inputs *shape = p->route->inputs;
    if (shape->questions) {
        char field[48];
        snprintf(field, sizeof field, "%s[%zu]", p->inputs_name, i);
        return parse_question(p, p->req->batched ? field : p->inputs_name, v, in);
    }
    if (shape->objects && json_is_object(v)) {
        /* Its "text", or with "rank_fields" other fields: read when
         * tokenizing (proto_tokenize_documents), which says what is
         * missing. */
        if (json_depth(v) > PROTO_DOCUMENT_MAX_DEPTH) {
            proto_error_set(p->err, PROTO_ERR_INVALID,
                            "\"%s[%zu]\" nests objects and lists deeper than %d levels",
                            p->inputs_name, i, PROTO_DOCUMENT_MAX_DEPTH);
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
        snprintf(field, sizeof field, "%s[%zu]", p->inputs_name, i);
        return request_wrong_type(p, field, "a list of token ids", v);
    }
    json_t *text = v;
    if (json_is_string(text)) {
        in->text = json_string_value(text);
        in->text_len = json_string_length(text);
        return true;
    }
    char field[48];
    snprintf(field, sizeof field, "%s[%zu]", p->inputs_name, i);
    if (shape->token_ids && json_is_array(v))
        return parse_token_ids(p, field, v, in);
    if (shape->token_ids)
        return request_wrong_type(p, field, "a string or a list of token ids", v);
    if (shape->pair_objects && json_is_object(v))
        return parse_pair_object(p, field, v, in);
    if (shape->objects)
        return request_wrong_type(p, field, "a string or an object {\"text\": string}", v);
    if (!shape->pairs)
        return request_wrong_type(p, field, "a string", v);
    if (!json_is_array(v))
        return request_wrong_type(p, field, "a string or a pair [text, text_pair]", v);
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
            return request_wrong_type(p, sub, "a string", part);
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
        return request_out_of_memory(p);
    p->req->n_inputs = n;
    return true;
}

/* {"source_sentence": s, "sentences": [t, ...]} -> inputs s, t, ... */
static bool parse_similarity(struct parse *p, json_t *v)
{
    const char *name = p->inputs_name;
    if (!json_is_object(v))
        return request_wrong_type(p, name, p->route->inputs->expected, v);
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
        return request_wrong_type(p, "inputs.source_sentence", "a string", source);
    if (!json_is_array(sentences))
        return request_wrong_type(p, "inputs.sentences", "a list of strings", sentences);
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
            return request_wrong_type(p, field, "a string", s);
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
        return parse_token_ids(p, p->inputs_name, v, in);
    if (object)
        return parse_pair_object(p, p->inputs_name, v, in);
    in->text = json_string_value(json_array_get(v, 0));
    in->text_len = json_string_length(json_array_get(v, 0));
    in->pair = json_string_value(json_array_get(v, 1));
    in->pair_len = json_string_length(json_array_get(v, 1));
    return true;
}

bool request_score_field(struct parse *p, const char *key, json_t *value, bool *taken)
{
    *taken = false;
    for (size_t k = 0; k < N_SCORE_FIELDS; k++) {
        for (size_t side = 0; side < 2; side++) {
            if (strcmp(key, score_fields[k][side]) != 0)
                continue;
            json_t **slot = side == 0 ? &p->score_first : &p->inputs;
            const char **name = side == 0 ? &p->score_first_name : &p->inputs_name;
            if (*slot != NULL) {
                proto_error_set(p->err, PROTO_ERR_INVALID,
                                "\"%s\" and \"%s\" are two names for the same texts: give one",
                                *name, score_fields[k][side]);
                return false;
            }
            *slot = value;
            *name = score_fields[k][side];
            *taken = true;
            return true;
        }
    }
    return true;
}

/* A score field's texts: a string (one) or a non-empty list of strings. */
static bool score_texts(struct parse *p, const char *field, json_t *v, size_t *n)
{
    if (json_is_string(v)) {
        *n = 1;
        return true;
    }
    if (!json_is_array(v))
        return request_wrong_type(p, field, "a string or a list of strings", v);
    *n = json_array_size(v);
    if (*n == 0) {
        proto_error_set(p->err, PROTO_ERR_INVALID, "\"%s\" must not be an empty list", field);
        return false;
    }
    for (size_t i = 0; i < *n; i++) {
        if (!json_is_string(json_array_get(v, i))) {
            char sub[48];
            snprintf(sub, sizeof sub, "%s[%zu]", field, i);
            return request_wrong_type(p, sub, "a string", json_array_get(v, i));
        }
    }
    return true;
}

static json_t *score_text(json_t *v, size_t i)
{
    return json_is_string(v) ? v : json_array_get(v, i);
}

/* vLLM's pairing: one first text for every second (1:N) or one each
 * (N:N); the two fields spelled as one of score_fields' pairs. */
static bool parse_score(struct parse *p)
{
    const char *first = p->score_first_name, *second = p->inputs_name;
    if (p->score_first == NULL && p->inputs == NULL) {
        proto_error_set(p->err, PROTO_ERR_INVALID, "missing fields: send %s",
                        REQUEST_SCORE_FIELDS);
        return false;
    }
    size_t pair = N_SCORE_FIELDS;
    for (size_t k = 0; k < N_SCORE_FIELDS; k++) {
        bool first_ok = p->score_first == NULL || strcmp(first, score_fields[k][0]) == 0;
        bool second_ok = p->inputs == NULL || strcmp(second, score_fields[k][1]) == 0;
        if (first_ok && second_ok) {
            pair = k;
            break;
        }
    }
    if (pair == N_SCORE_FIELDS) {
        proto_error_set(p->err, PROTO_ERR_INVALID,
                        "\"%s\" does not go with \"%s\": send %s", first, second,
                        REQUEST_SCORE_FIELDS);
        return false;
    }
    if (p->score_first == NULL || p->inputs == NULL) {
        proto_error_set(p->err, PROTO_ERR_INVALID, "missing field \"%s\"",
                        score_fields[pair][p->score_first == NULL ? 0 : 1]);
        return false;
    }
    size_t n_first, n;
    if (!score_texts(p, first, p->score_first, &n_first) ||
        !score_texts(p, second, p->inputs, &n))
        return false;
    if (n_first != 1 && n_first != n) {
        proto_error_set(p->err, PROTO_ERR_INVALID,
                        "\"%s\" has %zu texts and \"%s\" %zu: give one text to pair with "
                        "each of \"%s\", or one per text",
                        first, n_first, second, n, second);
        return false;
    }
    if (!alloc_inputs(p, n))
        return false;
    struct proto_request *req = p->req;
    req->batched = true;
    req->n_score_firsts = n_first;
    req->score_names[0] = first;
    req->score_names[1] = second;
    for (size_t i = 0; i < n; i++) {
        json_t *a = score_text(p->score_first, n_first == 1 ? 0 : i);
        json_t *b = score_text(p->inputs, i);
        req->inputs[i].text = json_string_value(a);
        req->inputs[i].text_len = json_string_length(a);
        req->inputs[i].pair = json_string_value(b);
        req->inputs[i].pair_len = json_string_length(b);
    }
    return true;
}

bool request_parse_inputs(struct parse *p)
{
    if (p->route->inputs->score)
        return parse_score(p);
    struct proto_request *req = p->req;
    json_t *v = p->inputs;
    const char *name = p->inputs_name;
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
    if (p->route->inputs->questions ? json_is_object(v)
                                    : json_is_string(v) && !p->route->inputs->list_only) {
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
        return request_wrong_type(p, name, p->route->inputs->expected, v);
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
