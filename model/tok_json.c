/* tokenizer.json (Hugging Face `tokenizers` serialization) for BERT-style
 * pipelines: BertNormalizer, BertPreTokenizer, WordPiece, TemplateProcessing
 * or BertProcessing, the WordPiece decoder, added tokens. Every field is
 * checked before it is trusted; errors name the file and the field. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

/* Largest accepted id: real vocabularies are far smaller, and the id table
 * is sized by the largest id. */
#define MAX_ID ((1 << 24) - 1)

struct ctx {
    const char *path;
    struct bert_error *err;
};

static enum bert_status fail(const struct ctx *c, enum bert_status st, const char *what,
                             const char *detail)
{
    return bert_error_set(c->err, st, "%s: %s: %s", c->path, what, detail);
}

/* Optional boolean member; absent or null gives `dflt`. */
static enum bert_status get_bool(const struct ctx *c, const json_t *obj, const char *what,
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
        return fail(c, BERT_E_FORMAT, field, "expected true or false");
    }
    *out = json_is_true(v);
    return BERT_OK;
}

/* Optional string member; absent gives a copy of `dflt` (NULL allowed). */
static enum bert_status get_string(const struct ctx *c, const json_t *obj, const char *what,
                                   const char *key, const char *dflt, char **out)
{
    const json_t *v = json_object_get(obj, key);
    const char *s = dflt;
    size_t len = dflt ? strlen(dflt) : 0;
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_string(v)) {
            char field[128];
            snprintf(field, sizeof field, "%s.%s", what, key);
            return fail(c, BERT_E_FORMAT, field, "expected a string");
        }
        s = json_string_value(v);
        len = json_string_length(v);
    }
    *out = NULL;
    if (s && (*out = tok_strndup(s, len)) == NULL)
        return fail(c, BERT_E_NOMEM, what, "out of memory");
    return BERT_OK;
}

static enum bert_status get_id(const struct ctx *c, const json_t *v, const char *what,
                               int32_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > MAX_ID)
        return fail(c, BERT_E_FORMAT, what, "expected an integer id from 0 to 16777215");
    *out = (int32_t)json_integer_value(v);
    return BERT_OK;
}

/* The "type" of an optional pipeline component; *type is NULL when the
 * component is absent or null. */
static enum bert_status component_type(const struct ctx *c, const json_t *obj, const char *what,
                                       const char **type)
{
    *type = NULL;
    if (obj == NULL || json_is_null(obj))
        return BERT_OK;
    *type = json_string_value(json_object_get(obj, "type"));
    if (!json_is_object(obj) || *type == NULL)
        return fail(c, BERT_E_FORMAT, what, "expected an object with a \"type\"");
    return BERT_OK;
}

static enum bert_status unsupported(const struct ctx *c, const char *what, const char *type,
                                    const char *supported)
{
    return bert_error_set(c->err, BERT_E_UNSUPPORTED,
                          "%s: %s type \"%.64s\" is not supported (only %s)", c->path, what,
                          type, supported);
}

static enum bert_status load_model(const struct ctx *c, const json_t *model,
                                   struct tok_wordpiece *wp)
{
    if (!json_is_object(model))
        return fail(c, BERT_E_FORMAT, "model", "expected an object");
    /* Older files omit "type"; a WordPiece model is recognised by its fields. */
    const json_t *type = json_object_get(model, "type");
    if (type && !json_is_null(type) && !json_is_string(type))
        return fail(c, BERT_E_FORMAT, "model.type", "expected a string");
    if (type && json_is_string(type) && strcmp(json_string_value(type), "WordPiece") != 0)
        return unsupported(c, "model", json_string_value(type), "WordPiece");
    if (json_object_get(model, "merges"))
        return fail(c, BERT_E_UNSUPPORTED, "model", "a BPE model is not supported (only WordPiece)");
    json_t *vocab = json_object_get(model, "vocab");
    if (!json_is_object(vocab))
        return fail(c, BERT_E_FORMAT, "model.vocab", "expected an object mapping tokens to ids");
    if (json_object_size(vocab) == 0)
        return fail(c, BERT_E_FORMAT, "model.vocab", "the vocabulary is empty");
    const char *key;
    size_t key_len;
    json_t *value;
    json_object_keylen_foreach(vocab, key, key_len, value)
    {
        if (!json_is_integer(value) || json_integer_value(value) < 0 ||
            json_integer_value(value) > MAX_ID)
            return bert_error_set(c->err, BERT_E_FORMAT,
                                  "%s: model.vocab[\"%.64s\"]: expected an integer id from 0 to "
                                  "16777215",
                                  c->path, key);
        if (!tok_vocab_add(&wp->vocab, key, key_len, (int32_t)json_integer_value(value)))
            return fail(c, BERT_E_NOMEM, "model.vocab", "out of memory");
    }
    if (!tok_vocab_build(&wp->vocab))
        return fail(c, BERT_E_NOMEM, "model.vocab", "out of memory");
    enum bert_status st = get_string(c, model, "model", "unk_token", "[UNK]", &wp->unk_token);
    if (st == BERT_OK)
        st = get_string(c, model, "model", "continuing_subword_prefix", "##", &wp->prefix);
    if (st != BERT_OK)
        return st;
    wp->prefix_len = strlen(wp->prefix);
    const json_t *max = json_object_get(model, "max_input_chars_per_word");
    wp->max_input_chars_per_word = 100;
    if (max && !json_is_null(max)) {
        if (!json_is_integer(max) || json_integer_value(max) < 0)
            return fail(c, BERT_E_FORMAT, "model.max_input_chars_per_word",
                        "expected a non-negative integer");
        wp->max_input_chars_per_word = (size_t)json_integer_value(max);
    }
    return BERT_OK;
}

static enum bert_status load_normalizer(const struct ctx *c, const json_t *n,
                                        struct tok_norm_cfg *cfg, bool *bert)
{
    memset(cfg, 0, sizeof *cfg);
    *bert = false;
    const char *type;
    enum bert_status st = component_type(c, n, "normalizer", &type);
    if (st != BERT_OK || type == NULL)
        return st;
    if (strcmp(type, "BertNormalizer") != 0)
        return unsupported(c, "normalizer", type, "BertNormalizer");
    *bert = true;
    st = get_bool(c, n, "normalizer", "clean_text", true, &cfg->clean_text);
    if (st == BERT_OK)
        st = get_bool(c, n, "normalizer", "handle_chinese_chars", true, &cfg->handle_chinese_chars);
    if (st == BERT_OK)
        st = get_bool(c, n, "normalizer", "lowercase", true, &cfg->lowercase);
    /* strip_accents: null follows lowercase, as in the original BERT. */
    if (st == BERT_OK)
        st = get_bool(c, n, "normalizer", "strip_accents", cfg->lowercase, &cfg->strip_accents);
    return st;
}

static enum bert_status load_pre_tokenizer(const struct ctx *c, const json_t *p, bool *bert)
{
    const char *type;
    enum bert_status st = component_type(c, p, "pre_tokenizer", &type);
    *bert = type != NULL;
    if (st != BERT_OK || type == NULL)
        return st;
    if (strcmp(type, "BertPreTokenizer") != 0)
        return unsupported(c, "pre_tokenizer", type, "BertPreTokenizer");
    return BERT_OK;
}

static enum bert_status load_added_tokens(const struct ctx *c, const json_t *list,
                                          struct tok_added *added)
{
    if (list == NULL || json_is_null(list))
        return BERT_OK;
    if (!json_is_array(list))
        return fail(c, BERT_E_FORMAT, "added_tokens", "expected an array");
    size_t i;
    const json_t *t;
    json_array_foreach(list, i, t)
    {
        char what[64];
        snprintf(what, sizeof what, "added_tokens[%zu]", i);
        const json_t *content = json_object_get(t, "content");
        if (!json_is_object(t) || !json_is_string(content))
            return fail(c, BERT_E_FORMAT, what, "expected an object with a string \"content\"");
        int32_t id = 0;
        bool special = false, single_word = false, lstrip = false, rstrip = false,
             normalized = false;
        enum bert_status st = get_id(c, json_object_get(t, "id"), what, &id);
        if (st == BERT_OK)
            st = get_bool(c, t, what, "special", false, &special);
        if (st == BERT_OK)
            st = get_bool(c, t, what, "single_word", false, &single_word);
        if (st == BERT_OK)
            st = get_bool(c, t, what, "lstrip", false, &lstrip);
        if (st == BERT_OK)
            st = get_bool(c, t, what, "rstrip", false, &rstrip);
        if (st == BERT_OK)
            st = get_bool(c, t, what, "normalized", !special, &normalized);
        if (st != BERT_OK)
            return st;
        if (!tok_added_push(added, json_string_value(content), json_string_length(content), id,
                            special, single_word, lstrip, rstrip, normalized))
            return fail(c, BERT_E_NOMEM, what, "out of memory");
    }
    return BERT_OK;
}

/* One TemplateProcessing template ("single" or "pair"). */
static enum bert_status load_template(const struct ctx *c, const json_t *pp, const char *name,
                                      struct tok_template *t, char **first_special,
                                      char **last_special)
{
    const json_t *items = json_object_get(pp, name);
    const json_t *specials = json_object_get(pp, "special_tokens");
    char what[96];
    snprintf(what, sizeof what, "post_processor.%s", name);
    if (!json_is_array(items))
        return fail(c, BERT_E_FORMAT, what, "expected an array");
    t->items = calloc(json_array_size(items) + 1, sizeof *t->items);
    if (t->items == NULL)
        return fail(c, BERT_E_NOMEM, what, "out of memory");
    bool seen[2] = {false, false};
    size_t i;
    const json_t *item;
    json_array_foreach(items, i, item)
    {
        struct tok_template_item *it = &t->items[t->n++];
        snprintf(what, sizeof what, "post_processor.%s[%zu]", name, i);
        const json_t *seq = json_object_get(item, "Sequence");
        const json_t *sp = json_object_get(item, "SpecialToken");
        const json_t *body = seq ? seq : sp;
        const json_t *type_id = json_object_get(body, "type_id");
        const char *id = json_string_value(json_object_get(body, "id"));
        if (body == NULL || id == NULL || !json_is_integer(type_id) ||
            json_integer_value(type_id) < 0 || json_integer_value(type_id) > 255)
            return fail(c, BERT_E_FORMAT, what,
                        "expected {\"Sequence\" or \"SpecialToken\": {\"id\", \"type_id\"}}");
        it->type_id = (int32_t)json_integer_value(type_id);
        if (seq) {
            if (strcmp(id, "A") != 0 && strcmp(id, "B") != 0)
                return fail(c, BERT_E_FORMAT, what, "a sequence id must be \"A\" or \"B\"");
            it->is_sequence = true;
            it->sequence = id[0] == 'B';
            seen[it->sequence] = true;
            continue;
        }
        const json_t *def = json_object_get(specials, id);
        const json_t *ids = json_object_get(def, "ids");
        const json_t *tokens = json_object_get(def, "tokens");
        if (!json_is_array(ids) || json_array_size(ids) == 0)
            return bert_error_set(c->err, BERT_E_FORMAT,
                                  "%s: %s: special token \"%.64s\" has no ids in "
                                  "post_processor.special_tokens",
                                  c->path, what, id);
        it->n_ids = json_array_size(ids);
        it->ids = malloc(it->n_ids * sizeof *it->ids);
        if (it->ids == NULL)
            return fail(c, BERT_E_NOMEM, what, "out of memory");
        for (size_t k = 0; k < it->n_ids; k++) {
            enum bert_status st = get_id(c, json_array_get(ids, k), what, &it->ids[k]);
            if (st != BERT_OK)
                return st;
        }
        t->n_added += it->n_ids;
        /* Roles for the single template: a lone special token first is the
         * [CLS] role, one last is the [SEP] role. */
        const char *only = json_array_size(tokens) == 1 ? json_string_value(json_array_get(tokens, 0)) : NULL;
        char **role = NULL;
        if (only && first_special && i == 0)
            role = first_special;
        else if (only && last_special && i + 1 == json_array_size(items))
            role = last_special;
        if (role && (*role = tok_strndup(only, strlen(only))) == NULL)
            return fail(c, BERT_E_NOMEM, what, "out of memory");
    }
    snprintf(what, sizeof what, "post_processor.%s", name);
    bool pair = strcmp(name, "pair") == 0;
    if (!seen[0] || seen[1] != pair)
        return fail(c, BERT_E_FORMAT, what,
                    pair ? "the pair template needs both $A and $B"
                         : "the single template needs $A and no $B");
    return BERT_OK;
}

static enum bert_status load_bert_processing(const struct ctx *c, const json_t *pp,
                                             struct bert_tokenizer *tok)
{
    const json_t *sep = json_object_get(pp, "sep"), *cls = json_object_get(pp, "cls");
    const char *sep_s = json_string_value(json_array_get(sep, 0));
    const char *cls_s = json_string_value(json_array_get(cls, 0));
    if (sep_s == NULL || cls_s == NULL)
        return fail(c, BERT_E_FORMAT, "post_processor",
                    "BertProcessing needs \"sep\" and \"cls\" as [token, id]");
    int32_t sep_id = 0, cls_id = 0;
    enum bert_status st = get_id(c, json_array_get(sep, 1), "post_processor.sep", &sep_id);
    if (st == BERT_OK)
        st = get_id(c, json_array_get(cls, 1), "post_processor.cls", &cls_id);
    if (st != BERT_OK)
        return st;
    if (!tok_template_bert(tok, cls_id, sep_id) ||
        (tok->cls_token = tok_strndup(cls_s, strlen(cls_s))) == NULL ||
        (tok->sep_token = tok_strndup(sep_s, strlen(sep_s))) == NULL)
        return fail(c, BERT_E_NOMEM, "post_processor", "out of memory");
    return BERT_OK;
}

static enum bert_status load_post_processor(const struct ctx *c, const json_t *pp,
                                            struct bert_tokenizer *tok)
{
    const char *type;
    enum bert_status st = component_type(c, pp, "post_processor", &type);
    if (st != BERT_OK || type == NULL)
        return st;
    if (strcmp(type, "BertProcessing") == 0)
        return load_bert_processing(c, pp, tok);
    if (strcmp(type, "TemplateProcessing") != 0)
        return unsupported(c, "post_processor", type, "TemplateProcessing and BertProcessing");
    st = load_template(c, pp, "single", &tok->single, &tok->cls_token, &tok->sep_token);
    if (st == BERT_OK)
        st = load_template(c, pp, "pair", &tok->pair, NULL, NULL);
    tok->has_template = st == BERT_OK;
    return st;
}

static enum bert_status load_decoder(const struct ctx *c, const json_t *d,
                                     struct bert_tokenizer *tok)
{
    const char *type;
    enum bert_status st = component_type(c, d, "decoder", &type);
    if (st != BERT_OK || type == NULL)
        return st;
    if (strcmp(type, "WordPiece") != 0)
        return unsupported(c, "decoder", type, "WordPiece");
    tok->has_decoder = true;
    st = get_string(c, d, "decoder", "prefix", "##", &tok->decoder_prefix);
    if (st == BERT_OK)
        st = get_bool(c, d, "decoder", "cleanup", true, &tok->decoder_cleanup);
    return st;
}

static enum bert_status load_root(const struct ctx *c, const json_t *root,
                                  struct bert_tokenizer *tok)
{
    if (!json_is_object(root))
        return fail(c, BERT_E_FORMAT, "top level", "expected a JSON object");
    if (json_object_get(root, "model") == NULL)
        return fail(c, BERT_E_FORMAT, "model", "missing");
    enum bert_status st = load_model(c, json_object_get(root, "model"), &tok->wp);
    if (st == BERT_OK)
        st = load_normalizer(c, json_object_get(root, "normalizer"), &tok->norm,
                             &tok->bert_normalizer);
    if (st == BERT_OK)
        st = load_pre_tokenizer(c, json_object_get(root, "pre_tokenizer"), &tok->bert_pretokenize);
    if (st == BERT_OK)
        st = load_added_tokens(c, json_object_get(root, "added_tokens"), &tok->added);
    if (st == BERT_OK)
        st = load_post_processor(c, json_object_get(root, "post_processor"), tok);
    if (st == BERT_OK)
        st = load_decoder(c, json_object_get(root, "decoder"), tok);
    if (st != BERT_OK)
        return st;

    const json_t *trunc = json_object_get(root, "truncation");
    if (trunc && !json_is_null(trunc)) {
        const json_t *max = json_object_get(trunc, "max_length");
        if (!json_is_integer(max) || json_integer_value(max) < 0)
            return fail(c, BERT_E_FORMAT, "truncation.max_length", "expected a non-negative integer");
        tok->json_max_length = (size_t)json_integer_value(max);
    }
    const json_t *padding = json_object_get(root, "padding");
    st = get_string(c, json_is_object(padding) ? padding : NULL, "padding", "pad_token", "[PAD]",
                    &tok->pad_token);
    if (st == BERT_OK)
        st = get_string(c, NULL, "roles", "mask", "[MASK]", &tok->mask_token);
    if (st == BERT_OK && tok->cls_token == NULL)
        st = get_string(c, NULL, "roles", "cls", "[CLS]", &tok->cls_token);
    if (st == BERT_OK && tok->sep_token == NULL)
        st = get_string(c, NULL, "roles", "sep", "[SEP]", &tok->sep_token);
    return st;
}

enum bert_status tok_json_load(const char *path, struct bert_tokenizer *tok,
                               struct bert_error *err)
{
    struct ctx c = {path, err};
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return bert_error_set(err, BERT_E_IO, "%s: cannot open: %s", path, strerror(errno));
    json_error_t je;
    json_t *root = json_loadf(f, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    fclose(f);
    if (root == NULL)
        return bert_error_set(err, BERT_E_FORMAT, "%s: line %d column %d: %s", path, je.line,
                              je.column, je.text);
    enum bert_status st = load_root(&c, root, tok);
    json_decref(root);
    return st;
}
