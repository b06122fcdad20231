/* Typed reads of tokenizer.json fields (json_fields.h). */
#include "json_fields.h"

#include <stdio.h>
#include <string.h>

enum bert_status tok_json_fail(const struct tok_json_ctx *c, enum bert_status st, const char *what,
                               const char *detail)
{
    return bert_error_set(c->err, st, "%s: %s: %s", c->path, what, detail);
}

enum bert_status tok_json_bool(const struct tok_json_ctx *c, const json_t *obj, const char *what,
                                 const char *key, bool dflt, bool *out)
{
    const json_t *v = json_object_get(obj, key);
    if (v == NULL || json_is_null(v)) {
        *out = dflt;
        return BERT_OK;
    }
    if (!json_is_boolean(v)) {
        char field[128];
        snprintf(field, sizeof field, "%s.%s", what, key);
        return tok_json_fail(c, BERT_E_FORMAT, field, "expected true or false");
    }
    *out = json_is_true(v);
    return BERT_OK;
}

enum bert_status tok_json_string(const struct tok_json_ctx *c, const json_t *obj, const char *what,
                                 const char *key, const char *dflt, char **out, size_t *out_len)
{
    const json_t *v = json_object_get(obj, key);
    const char *s = dflt;
    size_t len = dflt ? strlen(dflt) : 0;
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_string(v)) {
            char field[128];
            snprintf(field, sizeof field, "%s.%s", what, key);
            return tok_json_fail(c, BERT_E_FORMAT, field, "expected a string");
        }
        s = json_string_value(v);
        len = json_string_length(v);
    }
    *out = NULL;
    if (out_len)
        *out_len = len;
    if (s && (*out = tok_strndup(s, len)) == NULL)
        return tok_json_fail(c, BERT_E_NOMEM, what, "out of memory");
    return BERT_OK;
}

enum bert_status tok_json_id(const struct tok_json_ctx *c, const json_t *v, const char *what,
                               int32_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > TOK_JSON_MAX_ID)
        return tok_json_fail(c, BERT_E_FORMAT, what, "expected an integer id from 0 to 16777215");
    *out = (int32_t)json_integer_value(v);
    return BERT_OK;
}

enum bert_status tok_json_type(const struct tok_json_ctx *c, const json_t *obj, const char *what,
                                       const char **type)
{
    *type = NULL;
    if (obj == NULL || json_is_null(obj))
        return BERT_OK;
    *type = json_string_value(json_object_get(obj, "type"));
    if (!json_is_object(obj) || *type == NULL)
        return tok_json_fail(c, BERT_E_FORMAT, what, "expected an object with a \"type\"");
    return BERT_OK;
}

enum bert_status tok_json_unsupported(const struct tok_json_ctx *c, const char *what, const char *type,
                                      const char *supported)
{
    return bert_error_set(c->err, BERT_E_UNSUPPORTED,
                          "%s: %s type \"%.64s\" is not supported (only %s)", c->path, what,
                          type, supported);
}

enum bert_status tok_json_vocab(const struct tok_json_ctx *c, const json_t *model,
                                struct tok_vocab *v)
{
    json_t *vocab = json_object_get(model, "vocab");
    if (!json_is_object(vocab))
        return tok_json_fail(c, BERT_E_FORMAT, "model.vocab", "expected an object mapping tokens to ids");
    if (json_object_size(vocab) == 0)
        return tok_json_fail(c, BERT_E_FORMAT, "model.vocab", "the vocabulary is empty");
    const char *key;
    size_t key_len;
    json_t *value;
    json_object_keylen_foreach(vocab, key, key_len, value)
    {
        if (!json_is_integer(value) || json_integer_value(value) < 0 ||
            json_integer_value(value) > TOK_JSON_MAX_ID)
            return bert_error_set(c->err, BERT_E_FORMAT,
                                  "%s: model.vocab[\"%.64s\"]: expected an integer id from 0 to "
                                  "16777215",
                                  c->path, key);
        if (key_len > TOK_VOCAB_MAX_TOKEN_BYTES)
            return bert_error_set(c->err, BERT_E_FORMAT,
                                  "%s: model.vocab: token \"%.32s...\" has %zu bytes, more than %u",
                                  c->path, key, key_len, TOK_VOCAB_MAX_TOKEN_BYTES);
        if (!tok_vocab_add(v, key, key_len, (int32_t)json_integer_value(value)))
            return tok_json_fail(c, BERT_E_NOMEM, "model.vocab", "out of memory");
    }
    if (!tok_vocab_build(v))
        return tok_json_fail(c, BERT_E_NOMEM, "model.vocab", "out of memory");
    return BERT_OK;
}
