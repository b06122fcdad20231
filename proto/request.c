/* Request bodies -> struct proto_request, with one exact message per way a
 * body can be wrong. The messages are part of the API (openapi.yaml lists
 * them); change them only together with that table and the tests. */
#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "extract.h"
#include "proto.h"
#include "proto_internal.h"
#include "request_internal.h"
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
    [PROTO_PARAM_TOP_K_ANSWERS] = "top_k",
    [PROTO_PARAM_DOC_STRIDE] = "doc_stride",
    [PROTO_PARAM_MAX_ANSWER_LEN] = "max_answer_len",
    [PROTO_PARAM_MAX_SEQ_LEN] = "max_seq_len",
    [PROTO_PARAM_MAX_QUESTION_LEN] = "max_question_len",
    [PROTO_PARAM_HANDLE_IMPOSSIBLE_ANSWER] = "handle_impossible_answer",
    [PROTO_PARAM_ALIGN_TO_WORDS] = "align_to_words",
    [PROTO_PARAM_CANDIDATE_LABELS] = "candidate_labels",
    [PROTO_PARAM_HYPOTHESIS_TEMPLATE] = "hypothesis_template",
    [PROTO_PARAM_MULTI_LABEL] = "multi_label",
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
    [PROTO_PARAM_THRESHOLD] = "threshold",
    [PROTO_PARAM_TRUNCATE_PROMPT_TOKENS] = "truncate_prompt_tokens",
    [PROTO_PARAM_USE_ACTIVATION] = "use_activation",
    [PROTO_PARAM_TRUNCATION_SIDE] = "truncation_side",
    [PROTO_PARAM_INPUT_TYPE] = "input_type",
    [PROTO_PARAM_EMBEDDING_TYPES] = "embedding_types",
    [PROTO_PARAM_TRUNCATE_SIDE] = "truncate",
    [PROTO_PARAM_MAX_TOKENS] = "max_tokens",
    [PROTO_PARAM_OUTPUT_DIMENSION] = "output_dimension",
    [PROTO_PARAM_PRIORITY] = "priority",
    [PROTO_PARAM_POOLING_TASK] = "task",
};

/* The parameter `key` names on this route; -1 when the route takes none. */
static int param_lookup(const struct parse *p, const char *key)
{
    for (int i = 0; i < PROTO_PARAM_COUNT; i++)
        if ((p->route->params & (UINT64_C(1) << i)) && strcmp(key, param_names[i]) == 0)
            return i;
    return -1;
}

static bool unknown_field(struct parse *p, const char *key, bool nested)
{
    /* List what is accepted where the unknown key stood. */
    const char *fixed[3] = {p->route->inputs_name, "parameters", "options"};
    size_t n_fixed = nested ? 0 : p->route->flat_body ? 1 : 3;
    char accepted[400] = "";
    size_t n = 0;
    if (!nested && p->route->inputs->score) {
        n = (size_t)snprintf(accepted, sizeof accepted, "%s", REQUEST_SCORE_FIELDS);
        n_fixed = 0;
    }
    for (size_t k = 0; k < n_fixed + PROTO_PARAM_COUNT; k++) {
        if (k >= n_fixed && !(p->route->params & (UINT64_C(1) << (k - n_fixed))))
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
        bool taken = false;
        if (p->route->inputs->score && !request_score_field(p, key, value, &taken))
            return false;
        if (taken)
            continue;
        if (strcmp(key, p->route->inputs_name) == 0) {
            p->inputs = value;
        } else if (!p->route->flat_body && strcmp(key, "parameters") == 0) {
            if (json_is_object(value))
                parameters = value;
            else if (!json_is_null(value))
                return request_wrong_type(p, "parameters", "an object", value);
        } else if (!p->route->flat_body && strcmp(key, "options") == 0) {
            /* The Inference API's options (use_cache, wait_for_model) mean
             * nothing here; accept and ignore them. */
            if (!json_is_object(value) && !json_is_null(value))
                return request_wrong_type(p, "options", "an object", value);
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


static bool get_bool(struct parse *p, enum proto_param i, bool *out)
{
    json_t *v = p->params[i];
    if (!json_is_boolean(v))
        return request_wrong_type(p, param_names[i], "a boolean", v);
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
        return request_wrong_type(p, param_names[i], "a string", v);
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
        return request_wrong_type(p, param_names[i], "an integer", v);
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
        return request_wrong_type(p, param_names[i], "a list of strings", v);
    *n = json_array_size(v);
    *out = calloc(*n ? *n : 1, sizeof **out);
    if (*out == NULL)
        return request_out_of_memory(p);
    for (size_t k = 0; k < *n; k++) {
        json_t *t = json_array_get(v, k);
        if (!json_is_string(t)) {
            char field[48];
            snprintf(field, sizeof field, "%s[%zu]", param_names[i], k);
            return request_wrong_type(p, field, "a string", t);
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
        return request_wrong_type(p, "targets", "a string or a list of strings", v);
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
        return request_out_of_memory(p);
    req->n_targets = n;
    for (size_t k = 0; k < n; k++) {
        json_t *t = json_is_string(v) ? v : json_array_get(v, k);
        char field[32];
        if (json_is_string(v))
            snprintf(field, sizeof field, "targets");
        else
            snprintf(field, sizeof field, "targets[%zu]", k);
        if (!json_is_string(t))
            return request_wrong_type(p, field, "a non-empty string", t);
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

/* The pipeline's candidate labels: a string is split at commas, each part
 * stripped of white space, empty parts dropped; a list is taken as is. */
static bool parse_candidate_labels(struct parse *p)
{
    struct proto_request *req = p->req;
    json_t *v = p->params[PROTO_PARAM_CANDIDATE_LABELS];
    if (json_is_array(v)) {
        if (!parse_string_list(p, PROTO_PARAM_CANDIDATE_LABELS, &req->candidate_labels,
                               &req->n_candidate_labels))
            return false;
    } else if (json_is_string(v)) {
        size_t len = json_string_length(v);
        req->labels_text = malloc(len + 1);
        req->candidate_labels = calloc(len / 2 + 1, sizeof *req->candidate_labels);
        if (req->labels_text == NULL || req->candidate_labels == NULL)
            return request_out_of_memory(p);
        memcpy(req->labels_text, json_string_value(v), len + 1);
        char *s = req->labels_text;
        for (size_t at = 0; at <= len;) {
            size_t end = at;
            while (end < len && s[end] != ',')
                end++;
            size_t b = at, e = end;
            while (b < e && isspace((unsigned char)s[b]))
                b++;
            while (e > b && isspace((unsigned char)s[e - 1]))
                e--;
            s[e] = '\0';
            if (e > b)
                req->candidate_labels[req->n_candidate_labels++] = s + b;
            at = end + 1;
        }
    } else {
        return request_wrong_type(p, "candidate_labels", "a string or a list of strings", v);
    }
    if (req->n_candidate_labels == 0) {
        proto_error_set(p->err, PROTO_ERR_INVALID,
                        "\"candidate_labels\" must name at least one label");
        return false;
    }
    return true;
}

/* Python's str.format with one label: exactly one "{}" and no other
 * brace, so that every label changes the text. */
static bool parse_hypothesis_template(struct parse *p)
{
    const char *s = NULL;
    if (!get_string(p, PROTO_PARAM_HYPOTHESIS_TEMPLATE, &s))
        return false;
    const char *at = strstr(s, "{}");
    size_t braces = 0;
    for (const char *c = s; *c; c++)
        braces += *c == '{' || *c == '}';
    if (at == NULL || braces != 2) {
        char q[PROTO_QUOTE_SIZE];
        proto_error_set(p->err, PROTO_ERR_INVALID,
                        "\"hypothesis_template\" must hold \"{}\" once, where the label goes, "
                        "and no other brace; got %s",
                        proto_quote(q, s, strlen(s)));
        return false;
    }
    p->req->hypothesis_template = s;
    return true;
}

/* The parameters of /token-classification, /question-answering and
 * /zero-shot-classification. */
static bool parse_extraction_param(struct parse *p, enum proto_param i)
{
    struct proto_request *req = p->req;
    bool ok = true;
    const char *s = NULL;
    json_int_t x = 0;
    switch (i) {
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
    case PROTO_PARAM_TOP_K_ANSWERS:
        ok = get_integer(p, PROTO_PARAM_TOP_K_ANSWERS, 1, (json_int_t)p->limits->max_top_k,
                         &x);
        req->qa_top_k = (uint32_t)x;
        break;
    case PROTO_PARAM_DOC_STRIDE:
        ok = get_integer(p, PROTO_PARAM_DOC_STRIDE, 0, INT32_MAX, &x);
        req->has_doc_stride = true;
        req->doc_stride = (uint32_t)x;
        break;
    case PROTO_PARAM_MAX_ANSWER_LEN:
        ok = get_integer(p, PROTO_PARAM_MAX_ANSWER_LEN, 1, INT32_MAX, &x);
        req->max_answer_len = (uint32_t)x;
        break;
    case PROTO_PARAM_MAX_SEQ_LEN:
        ok = get_integer(p, PROTO_PARAM_MAX_SEQ_LEN, 1, INT32_MAX, &x);
        req->max_seq_len = (uint32_t)x;
        break;
    case PROTO_PARAM_MAX_QUESTION_LEN:
        ok = get_integer(p, PROTO_PARAM_MAX_QUESTION_LEN, 1, INT32_MAX, &x);
        req->max_question_len = (uint32_t)x;
        break;
    case PROTO_PARAM_HANDLE_IMPOSSIBLE_ANSWER:
        ok = get_bool(p, PROTO_PARAM_HANDLE_IMPOSSIBLE_ANSWER, &req->handle_impossible_answer);
        break;
    case PROTO_PARAM_ALIGN_TO_WORDS:
        ok = get_bool(p, PROTO_PARAM_ALIGN_TO_WORDS, &req->align_to_words);
        break;
    case PROTO_PARAM_CANDIDATE_LABELS:
        ok = parse_candidate_labels(p);
        break;
    case PROTO_PARAM_HYPOTHESIS_TEMPLATE:
        ok = parse_hypothesis_template(p);
        break;
    case PROTO_PARAM_MULTI_LABEL:
        ok = get_bool(p, PROTO_PARAM_MULTI_LABEL, &req->multi_label);
        break;
    default:
        break;
    }
    return ok;
}

/* Cohere's "input_type": its four text types (the prompt is chosen when
 * preparing, where the checkpoint's prompts are known). */
static bool parse_input_type(struct parse *p)
{
    const char *s = NULL;
    if (!get_string(p, PROTO_PARAM_INPUT_TYPE, &s))
        return false;
    if (strcmp(s, "image") == 0) {
        proto_error_set(p->err, PROTO_ERR_INVALID,
                        "\"input_type\": \"image\" is for images, and this server embeds texts");
        return false;
    }
    if (strcmp(s, "search_document") != 0 && strcmp(s, "search_query") != 0 &&
        strcmp(s, "classification") != 0 && strcmp(s, "clustering") != 0)
        return bad_choice(p, PROTO_PARAM_INPUT_TYPE,
                          "one of \"search_document\", \"search_query\", \"classification\", "
                          "\"clustering\"",
                          s);
    p->req->input_type = s;
    return true;
}

/* Cohere's "truncate": "NONE" (413 over the limit), "START" (cut the
 * start) or "END" (cut the end), in any case. */
static bool parse_truncate_side(struct parse *p)
{
    struct proto_request *req = p->req;
    const char *s = NULL;
    if (!get_string(p, PROTO_PARAM_TRUNCATE_SIDE, &s))
        return false;
    bool none = strcasecmp(s, "NONE") == 0, start = strcasecmp(s, "START") == 0;
    if (!none && !start && strcasecmp(s, "END") != 0)
        return bad_choice(p, PROTO_PARAM_TRUNCATE_SIDE, "one of \"NONE\", \"START\", \"END\"",
                          s);
    req->has_truncate = true;
    req->truncate = !none;
    req->truncation_side = start ? BERT_TRUNCATE_LEFT : BERT_TRUNCATE_RIGHT;
    return true;
}

/* vLLM's pooling "task"; whether the checkpoint can run it is checked when
 * preparing. vLLM's "plugin" (IOProcessor plugins) and
 * "embed&token_classify" (BGE-M3's heads) have no checkpoint here. */
static bool parse_pooling_task(struct parse *p)
{
    const char *s = NULL;
    if (!get_string(p, PROTO_PARAM_POOLING_TASK, &s))
        return false;
    if (proto_pooling_task_parse(s, &p->req->pooling_task))
        return true;
    return bad_choice(p, PROTO_PARAM_POOLING_TASK,
                      "one of \"embed\", \"classify\", \"token_embed\", \"token_classify\"", s);
}

/* Cohere's "embedding_types" -> PROTO_EMBEDDING_* bits. */
static bool parse_embedding_types(struct parse *p)
{
    static const struct {
        const char *name;
        unsigned bit;
    } types[] = {{"float", PROTO_EMBEDDING_FLOAT},
                 {"base64", PROTO_EMBEDDING_BASE64},
                 {"binary", PROTO_EMBEDDING_BINARY},
                 {"ubinary", PROTO_EMBEDDING_UBINARY}};
    const size_t n_types = sizeof types / sizeof types[0];
    const char **names = NULL;
    size_t n = 0;
    bool ok = parse_string_list(p, PROTO_PARAM_EMBEDDING_TYPES, &names, &n);
    if (ok && n == 0) {
        proto_error_set(p->err, PROTO_ERR_INVALID,
                        "\"embedding_types\" must not be an empty list");
        ok = false;
    }
    for (size_t k = 0; ok && k < n; k++) {
        size_t t = 0;
        while (t < n_types && strcmp(names[k], types[t].name) != 0)
            t++;
        if (t < n_types) {
            p->req->embedding_types |= types[t].bit;
        } else if (strcmp(names[k], "int8") == 0 || strcmp(names[k], "uint8") == 0) {
            proto_error_set(p->err, PROTO_ERR_INVALID,
                            "\"embedding_types\": \"%s\" is not served: its scale is Cohere's "
                            "own; ask for \"float\", \"base64\", \"binary\" or \"ubinary\"",
                            names[k]);
            ok = false;
        } else {
            ok = bad_choice(p, PROTO_PARAM_EMBEDDING_TYPES,
                            "a list of \"float\", \"base64\", \"binary\", \"ubinary\"",
                            names[k]);
        }
    }
    free(names);
    return ok;
}

/* The parameters of the client ecosystems' own fields: OpenAI's and Jina's
 * embeddings, Cohere's embed and rerank, Jina's rerank, TEI's /decode and
 * prompts. */
static bool parse_client_param(struct parse *p, enum proto_param i)
{
    struct proto_request *req = p->req;
    bool ok = true;
    const char *s = NULL;
    json_int_t x = 0;
    switch (i) {
    case PROTO_PARAM_ENCODING_FORMAT:
    case PROTO_PARAM_EMBEDDING_TYPE: /* Jina's name for it */
        ok = get_string(p, i, &s);
        if (!ok)
            break;
        if (strcmp(s, "base64") == 0)
            req->base64 = true;
        else if (strcmp(s, "float") != 0)
            ok = bad_choice(p, i, "\"float\" or \"base64\"", s);
        break;
    case PROTO_PARAM_NORMALIZED:
        ok = get_bool(p, PROTO_PARAM_NORMALIZED, &req->normalize);
        req->has_normalize = true;
        break;
    case PROTO_PARAM_POOLING_TASK:
        ok = parse_pooling_task(p);
        break;
    case PROTO_PARAM_TASK:
        /* Jina's adapters (retrieval.query, ...) belong to its own
         * checkpoints; any name is accepted and changes nothing. */
        ok = get_string(p, PROTO_PARAM_TASK, &s);
        break;
    case PROTO_PARAM_THRESHOLD:
        if (!json_is_number(p->params[i])) {
            ok = request_wrong_type(p, "threshold", "a number", p->params[i]);
        } else if (json_number_value(p->params[i]) < 0) {
            proto_error_set(p->err, PROTO_ERR_INVALID, "\"threshold\" must be at least 0, got %g",
                            json_number_value(p->params[i]));
            ok = false;
        } else {
            req->sparse_threshold = (float)json_number_value(p->params[i]);
        }
        break;
    case PROTO_PARAM_INPUT_TYPE:
        ok = parse_input_type(p);
        break;
    case PROTO_PARAM_TRUNCATE_SIDE:
        ok = parse_truncate_side(p);
        break;
    case PROTO_PARAM_EMBEDDING_TYPES:
        ok = parse_embedding_types(p);
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
            ok = request_wrong_type(p, "prompt", "a string", p->params[PROTO_PARAM_PROMPT]);
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
    default:
        break;
    }
    return ok;
}

/* raw_scores is text-embeddings-inference's spelling of function_to_apply
 * "none": false with err set when both are given and disagree. */
static bool apply_raw_scores(struct parse *p, bool function_given)
{
    struct proto_request *req = p->req;
    if (!req->raw_scores)
        return true;
    if (function_given && req->function_to_apply != PROTO_ACTIVATION_NONE) {
        proto_error_set(p->err, PROTO_ERR_INVALID,
                        "\"raw_scores\": true conflicts with \"function_to_apply\": \"%s\"",
                        json_string_value(p->params[PROTO_PARAM_FUNCTION_TO_APPLY]));
        return false;
    }
    req->function_to_apply = PROTO_ACTIVATION_NONE;
    return true;
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
        case PROTO_PARAM_TRUNCATION_SIDE: /* vLLM's name */
            /* text-embeddings-inference spells them "Right" / "Left". */
            ok = get_string(p, (enum proto_param)i, &s);
            if (!ok)
                break;
            if (strcmp(s, "right") == 0 || strcmp(s, "Right") == 0)
                req->truncation_side = BERT_TRUNCATE_RIGHT;
            else if (strcmp(s, "left") == 0 || strcmp(s, "Left") == 0)
                req->truncation_side = BERT_TRUNCATE_LEFT;
            else
                ok = bad_choice(p, (enum proto_param)i, "\"right\" or \"left\"", s);
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
        case PROTO_PARAM_EMBEDDING_TYPE:
        case PROTO_PARAM_NORMALIZED:
        case PROTO_PARAM_TASK:
        case PROTO_PARAM_POOLING_TASK:
        case PROTO_PARAM_RANK_FIELDS:
        case PROTO_PARAM_MAX_CHUNKS_PER_DOC:
        case PROTO_PARAM_MAX_TOKENS_PER_DOC:
        case PROTO_PARAM_PROMPT_NAME:
        case PROTO_PARAM_PROMPT:
        case PROTO_PARAM_SKIP_SPECIAL_TOKENS:
        case PROTO_PARAM_LATE_CHUNKING:
        case PROTO_PARAM_THRESHOLD:
        case PROTO_PARAM_INPUT_TYPE:
        case PROTO_PARAM_EMBEDDING_TYPES:
        case PROTO_PARAM_TRUNCATE_SIDE:
            ok = parse_client_param(p, (enum proto_param)i);
            break;
        case PROTO_PARAM_TRUNCATE_PROMPT_TOKENS:
            /* vLLM's: -1 cuts to the model's limit, k > 0 to k tokens. */
            ok = get_integer(p, PROTO_PARAM_TRUNCATE_PROMPT_TOKENS, -1, UINT32_MAX, &x);
            if (ok && x == 0) {
                proto_error_set(p->err, PROTO_ERR_INVALID,
                                "\"truncate_prompt_tokens\" must be -1 (cut to the model's "
                                "limit) or a number of tokens, got 0");
                ok = false;
            }
            req->has_truncate = req->truncate = ok;
            req->max_tokens = ok && x > 0 ? (uint32_t)x : 0;
            break;
        case PROTO_PARAM_MAX_TOKENS:
            ok = get_integer(p, PROTO_PARAM_MAX_TOKENS, 1, 0, &x);
            req->max_tokens = x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
            break;
        case PROTO_PARAM_OUTPUT_DIMENSION:
            ok = get_integer(p, PROTO_PARAM_OUTPUT_DIMENSION, 1, 0, &x);
            req->dimensions = x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
            break;
        case PROTO_PARAM_PRIORITY: /* one queue serves every request */
            ok = get_integer(p, PROTO_PARAM_PRIORITY, 0, 0, &x);
            break;
        case PROTO_PARAM_USE_ACTIVATION: {
            /* vLLM's pooler activation: a classifier's sigmoid, or on the
             * embedding route (the one that takes Jina's "normalized") the
             * normalisation; /pooling's task may be either. */
            bool activate = true;
            ok = get_bool(p, PROTO_PARAM_USE_ACTIVATION, &activate);
            if (p->route->params & (PROTO_PARAM(NORMALIZED) | PROTO_PARAM(POOLING_TASK))) {
                req->has_normalize = true;
                req->normalize = activate;
            }
            if (!(p->route->params & PROTO_PARAM(NORMALIZED)))
                req->raw_scores = !activate;
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
                ok = request_wrong_type(p, "query", "a string", p->params[PROTO_PARAM_QUERY]);
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
        case PROTO_PARAM_AGGREGATION_STRATEGY:
        case PROTO_PARAM_IGNORE_LABELS:
        case PROTO_PARAM_STRIDE:
        case PROTO_PARAM_TOP_K_ANSWERS:
        case PROTO_PARAM_DOC_STRIDE:
        case PROTO_PARAM_MAX_ANSWER_LEN:
        case PROTO_PARAM_MAX_SEQ_LEN:
        case PROTO_PARAM_MAX_QUESTION_LEN:
        case PROTO_PARAM_HANDLE_IMPOSSIBLE_ANSWER:
        case PROTO_PARAM_ALIGN_TO_WORDS:
        case PROTO_PARAM_CANDIDATE_LABELS:
        case PROTO_PARAM_HYPOTHESIS_TEMPLATE:
        case PROTO_PARAM_MULTI_LABEL:
            ok = parse_extraction_param(p, (enum proto_param)i);
            break;
        case PROTO_PARAM_COUNT:
            break;
        }
        if (!ok)
            return false;
    }
    /* Cohere truncates at the end unless told "NONE". */
    if ((p->route->params & PROTO_PARAM(TRUNCATE_SIDE)) && !req->has_truncate)
        req->has_truncate = req->truncate = true;
    return apply_raw_scores(p, function_given);
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
    req->qa_top_k = 1;
    req->max_answer_len = 15;
    req->max_question_len = 64;
    req->align_to_words = true;
    req->hypothesis_template = "This example is {}.";
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
    if (json_is_object(req->root) && proto_routes[route].alt_field != NULL &&
        json_object_get(req->root, proto_routes[route].alt_field) != NULL &&
        json_object_get(req->root, proto_routes[route].inputs_name) == NULL)
        req->route = route = proto_routes[route].alt_route;
    struct parse p = {
        .route = &proto_routes[route],
        .limits = limits,
        .req = req,
        .err = err,
        .inputs_name = proto_routes[route].inputs_name,
    };
    bool ok;
    if (!json_is_object(req->root))
        ok = request_wrong_type(&p, "request body", "a JSON object", req->root);
    else
        ok = collect_fields(&p, req->root) && request_parse_inputs(&p) && parse_params(&p) &&
             pair_with_query(&p);
    if (!ok) {
        proto_request_free(req);
        req->route = route; /* the shape it was read as names the error's envelope */
    }
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
    free(req->candidate_labels);
    free(req->labels_text);
    free(req->rank_fields);
    memset(req, 0, sizeof *req);
}
