/* tokenizer.json (Hugging Face `tokenizers` serialization): the document,
 * the model dispatch, the WordPiece model, BertNormalizer and
 * BertPreTokenizer, the added tokens, the post-processors and the WordPiece
 * decoder. The other components are in load_json_parts.c, the typed field
 * reads in json_fields.c. Every field is checked before it is trusted;
 * errors name the file and the field. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "fileutil.h"
#include "json_fields.h"
#include "load_json_parts.h"
#include "loaders.h"

static enum bert_status load_wordpiece(const struct tok_json_ctx *c, const json_t *model,
                                       struct tok_wordpiece *wp)
{
    enum bert_status st = tok_json_vocab(c, model, &wp->vocab);
    if (st != BERT_OK)
        return st;
    st = tok_json_string(c, model, "model", "unk_token", "[UNK]", &wp->unk_token, NULL);
    if (st == BERT_OK)
        st = tok_json_string(c, model, "model", "continuing_subword_prefix", "##", &wp->prefix, NULL);
    if (st != BERT_OK)
        return st;
    wp->prefix_len = strlen(wp->prefix);
    const json_t *max = json_object_get(model, "max_input_chars_per_word");
    wp->max_input_chars_per_word = 100;
    if (max && !json_is_null(max)) {
        if (!json_is_integer(max) || json_integer_value(max) < 0)
            return tok_json_fail(c, BERT_E_FORMAT, "model.max_input_chars_per_word",
                        "expected a non-negative integer");
        wp->max_input_chars_per_word = (size_t)json_integer_value(max);
    }
    return BERT_OK;
}

static enum bert_status load_model(const struct tok_json_ctx *c, const json_t *model,
                                   struct bert_tokenizer *tok)
{
    if (!json_is_object(model))
        return tok_json_fail(c, BERT_E_FORMAT, "model", "expected an object");
    /* Older files omit "type"; the model is then recognised by its fields. */
    const json_t *type = json_object_get(model, "type");
    if (type && !json_is_null(type) && !json_is_string(type))
        return tok_json_fail(c, BERT_E_FORMAT, "model.type", "expected a string");
    const char *name = json_string_value(type);
    if (name == NULL)
        name = json_object_get(model, "merges") ? "BPE"
               : json_is_array(json_object_get(model, "vocab")) ? "Unigram"
                                                                 : "WordPiece";
    if (strcmp(name, "WordPiece") == 0) {
        tok->kind = BERT_TOKENIZER_WORDPIECE;
        return load_wordpiece(c, model, &tok->wp);
    }
    if (strcmp(name, "BPE") == 0) {
        tok->kind = BERT_TOKENIZER_BPE;
        return tok_json_bpe_model(c, model, &tok->bpe);
    }
    if (strcmp(name, "Unigram") == 0) {
        tok->kind = BERT_TOKENIZER_UNIGRAM;
        return tok_json_unigram_model(c, model, &tok->unigram);
    }
    return tok_json_unsupported(c, "model", name, "WordPiece, BPE and Unigram");
}

static enum bert_status load_normalizer(const struct tok_json_ctx *c, const json_t *n,
                                        struct bert_tokenizer *tok)
{
    struct tok_norm_cfg *cfg = &tok->norm;
    memset(cfg, 0, sizeof *cfg);
    tok->bert_normalizer = false;
    const char *type;
    enum bert_status st = tok_json_type(c, n, "normalizer", &type);
    if (st != BERT_OK || type == NULL)
        return st;
    if (strcmp(type, "BertNormalizer") != 0)
        return tok_json_normseq(c, n, &tok->normseq);
    tok->bert_normalizer = true;
    st = tok_json_bool(c, n, "normalizer", "clean_text", true, &cfg->clean_text);
    if (st == BERT_OK)
        st = tok_json_bool(c, n, "normalizer", "handle_chinese_chars", true, &cfg->handle_chinese_chars);
    if (st == BERT_OK)
        st = tok_json_bool(c, n, "normalizer", "lowercase", true, &cfg->lowercase);
    /* strip_accents: null follows lowercase, as in the original BERT. */
    if (st == BERT_OK)
        st = tok_json_bool(c, n, "normalizer", "strip_accents", cfg->lowercase, &cfg->strip_accents);
    return st;
}

static enum bert_status load_pre_tokenizer(const struct tok_json_ctx *c, const json_t *p,
                                           struct bert_tokenizer *tok)
{
    const char *type;
    enum bert_status st = tok_json_type(c, p, "pre_tokenizer", &type);
    tok->pretok = TOK_PRETOK_NONE;
    if (st != BERT_OK || type == NULL)
        return st;
    /* DeBERTa-v3's converter wraps its one Metaspace in a Sequence. */
    const json_t *list = json_object_get(p, "pretokenizers");
    if (strcmp(type, "Sequence") == 0)
        return json_array_size(list) == 1
                   ? load_pre_tokenizer(c, json_array_get(list, 0), tok)
                   : tok_json_fail(c, BERT_E_UNSUPPORTED, "pre_tokenizer",
                                   "a Sequence is supported with exactly one member (as "
                                   "DeBERTa-v3's Metaspace)");
    if (strcmp(type, "BertPreTokenizer") == 0) {
        if (tok->kind != BERT_TOKENIZER_WORDPIECE)
            return tok_json_fail(c, BERT_E_UNSUPPORTED, "pre_tokenizer",
                        "BertPreTokenizer is supported with a WordPiece model only");
        tok->pretok = TOK_PRETOK_BERT;
        return BERT_OK;
    }
    if (strcmp(type, "ByteLevel") == 0) {
        tok->pretok = TOK_PRETOK_BYTELEVEL;
        st = tok_json_bool(c, p, "pre_tokenizer", "add_prefix_space", true, &tok->bytelevel_prefix_space);
        if (st == BERT_OK)
            st = tok_json_bool(c, p, "pre_tokenizer", "use_regex", true, &tok->bytelevel_use_regex);
        return st;
    }
    if (strcmp(type, "Metaspace") == 0) {
        tok->pretok = TOK_PRETOK_METASPACE;
        return tok_json_metaspace(c, p, "pre_tokenizer", &tok->metaspace);
    }
    return tok_json_unsupported(c, "pre_tokenizer", type, "BertPreTokenizer, ByteLevel and Metaspace");
}

static enum bert_status load_added_tokens(const struct tok_json_ctx *c, const json_t *list,
                                          struct tok_added *added)
{
    if (list == NULL || json_is_null(list))
        return BERT_OK;
    if (!json_is_array(list))
        return tok_json_fail(c, BERT_E_FORMAT, "added_tokens", "expected an array");
    size_t i;
    const json_t *t;
    json_array_foreach(list, i, t)
    {
        char what[64];
        snprintf(what, sizeof what, "added_tokens[%zu]", i);
        const json_t *content = json_object_get(t, "content");
        if (!json_is_object(t) || !json_is_string(content))
            return tok_json_fail(c, BERT_E_FORMAT, what, "expected an object with a string \"content\"");
        int32_t id = 0;
        bool special = false, single_word = false, lstrip = false, rstrip = false,
             normalized = false;
        enum bert_status st = tok_json_id(c, json_object_get(t, "id"), what, &id);
        if (st == BERT_OK)
            st = tok_json_bool(c, t, what, "special", false, &special);
        if (st == BERT_OK)
            st = tok_json_bool(c, t, what, "single_word", false, &single_word);
        if (st == BERT_OK)
            st = tok_json_bool(c, t, what, "lstrip", false, &lstrip);
        if (st == BERT_OK)
            st = tok_json_bool(c, t, what, "rstrip", false, &rstrip);
        if (st == BERT_OK)
            st = tok_json_bool(c, t, what, "normalized", !special, &normalized);
        if (st != BERT_OK)
            return st;
        if (!tok_added_push(added, json_string_value(content), json_string_length(content), id,
                            special, single_word, lstrip, rstrip, normalized))
            return tok_json_fail(c, BERT_E_NOMEM, what, "out of memory");
    }
    return BERT_OK;
}

/* One TemplateProcessing template ("single" or "pair"). */
static enum bert_status load_template(const struct tok_json_ctx *c, const json_t *pp, const char *name,
                                      struct tok_template *t, char **first_special,
                                      char **last_special)
{
    const json_t *items = json_object_get(pp, name);
    const json_t *specials = json_object_get(pp, "special_tokens");
    char what[96];
    snprintf(what, sizeof what, "post_processor.%s", name);
    if (!json_is_array(items))
        return tok_json_fail(c, BERT_E_FORMAT, what, "expected an array");
    t->items = calloc(json_array_size(items) + 1, sizeof *t->items);
    if (t->items == NULL)
        return tok_json_fail(c, BERT_E_NOMEM, what, "out of memory");
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
            return tok_json_fail(c, BERT_E_FORMAT, what,
                        "expected {\"Sequence\" or \"SpecialToken\": {\"id\", \"type_id\"}}");
        it->type_id = (int32_t)json_integer_value(type_id);
        if (seq) {
            if (strcmp(id, "A") != 0 && strcmp(id, "B") != 0)
                return tok_json_fail(c, BERT_E_FORMAT, what, "a sequence id must be \"A\" or \"B\"");
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
            return tok_json_fail(c, BERT_E_NOMEM, what, "out of memory");
        for (size_t k = 0; k < it->n_ids; k++) {
            enum bert_status st = tok_json_id(c, json_array_get(ids, k), what, &it->ids[k]);
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
            return tok_json_fail(c, BERT_E_NOMEM, what, "out of memory");
    }
    snprintf(what, sizeof what, "post_processor.%s", name);
    bool pair = strcmp(name, "pair") == 0;
    if (!seen[0] || seen[1] != pair)
        return tok_json_fail(c, BERT_E_FORMAT, what,
                    pair ? "the pair template needs both $A and $B"
                         : "the single template needs $A and no $B");
    return BERT_OK;
}

/* BertProcessing / RobertaProcessing: "sep" and "cls" as [token, id]. */
static enum bert_status load_cls_sep(const struct tok_json_ctx *c, const json_t *pp, const char *type,
                                     struct bert_tokenizer *tok, int32_t *cls_id, int32_t *sep_id)
{
    const json_t *sep = json_object_get(pp, "sep"), *cls = json_object_get(pp, "cls");
    const char *sep_s = json_string_value(json_array_get(sep, 0));
    const char *cls_s = json_string_value(json_array_get(cls, 0));
    if (sep_s == NULL || cls_s == NULL) {
        char detail[96];
        snprintf(detail, sizeof detail, "%s needs \"sep\" and \"cls\" as [token, id]", type);
        return tok_json_fail(c, BERT_E_FORMAT, "post_processor", detail);
    }
    enum bert_status st = tok_json_id(c, json_array_get(sep, 1), "post_processor.sep", sep_id);
    if (st == BERT_OK)
        st = tok_json_id(c, json_array_get(cls, 1), "post_processor.cls", cls_id);
    if (st != BERT_OK)
        return st;
    free(tok->cls_token);
    free(tok->sep_token);
    if ((tok->cls_token = tok_strndup(cls_s, strlen(cls_s))) == NULL ||
        (tok->sep_token = tok_strndup(sep_s, strlen(sep_s))) == NULL)
        return tok_json_fail(c, BERT_E_NOMEM, "post_processor", "out of memory");
    return BERT_OK;
}

static enum bert_status load_post_processor(const struct tok_json_ctx *c, const json_t *pp,
                                            struct bert_tokenizer *tok, bool in_sequence)
{
    const char *type;
    enum bert_status st = tok_json_type(c, pp, "post_processor", &type);
    if (st != BERT_OK || type == NULL)
        return st;
    const char *supported = "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel "
                            "and a Sequence of those";
    if (tok->has_template &&
        (strcmp(type, "ByteLevel") != 0 && strcmp(type, "Sequence") != 0))
        return tok_json_fail(c, BERT_E_UNSUPPORTED, "post_processor",
                    "a Sequence with more than one template is not supported");
    int32_t cls_id = 0, sep_id = 0;
    if (strcmp(type, "BertProcessing") == 0) {
        st = load_cls_sep(c, pp, type, tok, &cls_id, &sep_id);
        if (st == BERT_OK && !tok_template_bert(tok, cls_id, sep_id))
            st = tok_json_fail(c, BERT_E_NOMEM, "post_processor", "out of memory");
        return st;
    }
    if (strcmp(type, "RobertaProcessing") == 0) {
        st = load_cls_sep(c, pp, type, tok, &cls_id, &sep_id);
        if (st == BERT_OK)
            st = tok_json_bool(c, pp, "post_processor", "trim_offsets", true, &tok->trim_offsets);
        if (st == BERT_OK)
            st = tok_json_bool(c, pp, "post_processor", "add_prefix_space", true, &tok->trim_prefix_space);
        if (st == BERT_OK && !tok_template_roberta(tok, cls_id, sep_id))
            st = tok_json_fail(c, BERT_E_NOMEM, "post_processor", "out of memory");
        return st;
    }
    if (strcmp(type, "ByteLevel") == 0) {
        /* As a post-processor ByteLevel only trims offsets. */
        st = tok_json_bool(c, pp, "post_processor", "trim_offsets", true, &tok->trim_offsets);
        if (st == BERT_OK)
            st = tok_json_bool(c, pp, "post_processor", "add_prefix_space", true, &tok->trim_prefix_space);
        return st;
    }
    if (strcmp(type, "Sequence") == 0 && !in_sequence) {
        const json_t *list = json_object_get(pp, "processors");
        if (!json_is_array(list))
            return tok_json_fail(c, BERT_E_FORMAT, "post_processor.processors", "expected an array");
        size_t i;
        const json_t *item;
        json_array_foreach(list, i, item)
        {
            if ((st = load_post_processor(c, item, tok, true)) != BERT_OK)
                return st;
        }
        return BERT_OK;
    }
    if (strcmp(type, "TemplateProcessing") != 0)
        return tok_json_unsupported(c, "post_processor", type, supported);
    st = load_template(c, pp, "single", &tok->single, &tok->cls_token, &tok->sep_token);
    if (st == BERT_OK)
        st = load_template(c, pp, "pair", &tok->pair, NULL, NULL);
    tok->has_template = st == BERT_OK;
    return st;
}

static enum bert_status load_decoder(const struct tok_json_ctx *c, const json_t *d,
                                     struct bert_tokenizer *tok)
{
    const char *type;
    enum bert_status st = tok_json_type(c, d, "decoder", &type);
    if (st != BERT_OK || type == NULL)
        return st;
    if (strcmp(type, "WordPiece") == 0) {
        tok->decoder = TOK_DECODER_WORDPIECE;
        st = tok_json_string(c, d, "decoder", "prefix", "##", &tok->decoder_prefix, NULL);
        if (st == BERT_OK)
            st = tok_json_bool(c, d, "decoder", "cleanup", true, &tok->decoder_cleanup);
        return st;
    }
    if (strcmp(type, "ByteLevel") == 0) {
        tok->decoder = TOK_DECODER_BYTELEVEL;
        return BERT_OK;
    }
    if (strcmp(type, "Metaspace") == 0) {
        tok->decoder = TOK_DECODER_METASPACE;
        return tok_json_metaspace(c, d, "decoder", &tok->decoder_metaspace);
    }
    return tok_json_unsupported(c, "decoder", type, "WordPiece, ByteLevel and Metaspace");
}

/* The first of the candidate strings the tokenizer knows, else the first. */
static enum bert_status default_role(const struct tok_json_ctx *c, const struct bert_tokenizer *tok,
                                     char **slot, const char *a, const char *b)
{
    if (*slot != NULL)
        return BERT_OK;
    const char *pick = a;
    if (b && tok_added_find(&tok->added, a, strlen(a)) == NULL &&
        tok_model_token_to_id(tok, a, strlen(a)) < 0 &&
        (tok_added_find(&tok->added, b, strlen(b)) != NULL ||
         tok_model_token_to_id(tok, b, strlen(b)) >= 0))
        pick = b;
    if ((*slot = tok_strndup(pick, strlen(pick))) == NULL)
        return tok_json_fail(c, BERT_E_NOMEM, "roles", "out of memory");
    return BERT_OK;
}

static enum bert_status load_root(const struct tok_json_ctx *c, const json_t *root,
                                  struct bert_tokenizer *tok)
{
    if (!json_is_object(root))
        return tok_json_fail(c, BERT_E_FORMAT, "top level", "expected a JSON object");
    if (json_object_get(root, "model") == NULL)
        return tok_json_fail(c, BERT_E_FORMAT, "model", "missing");
    enum bert_status st = load_model(c, json_object_get(root, "model"), tok);
    if (st == BERT_OK)
        st = load_normalizer(c, json_object_get(root, "normalizer"), tok);
    if (st == BERT_OK)
        st = load_pre_tokenizer(c, json_object_get(root, "pre_tokenizer"), tok);
    if (st == BERT_OK)
        st = load_added_tokens(c, json_object_get(root, "added_tokens"), &tok->added);
    if (st == BERT_OK)
        st = load_post_processor(c, json_object_get(root, "post_processor"), tok, false);
    if (st == BERT_OK)
        st = load_decoder(c, json_object_get(root, "decoder"), tok);
    if (st != BERT_OK)
        return st;

    const json_t *trunc = json_object_get(root, "truncation");
    if (trunc && !json_is_null(trunc)) {
        const json_t *max = json_object_get(trunc, "max_length");
        if (!json_is_integer(max) || json_integer_value(max) < 0)
            return tok_json_fail(c, BERT_E_FORMAT, "truncation.max_length", "expected a non-negative integer");
        tok->json_max_length = (size_t)json_integer_value(max);
    }
    const json_t *padding = json_object_get(root, "padding");
    if (json_is_object(padding))
        st = tok_json_string(c, padding, "padding", "pad_token", NULL, &tok->pad_token, NULL);
    if (st == BERT_OK)
        st = default_role(c, tok, &tok->pad_token, "[PAD]", "<pad>");
    if (st == BERT_OK)
        st = default_role(c, tok, &tok->mask_token, "[MASK]", "<mask>");
    if (st == BERT_OK)
        st = default_role(c, tok, &tok->cls_token, "[CLS]", "<s>");
    if (st == BERT_OK)
        st = default_role(c, tok, &tok->sep_token, "[SEP]", "</s>");
    if (st == BERT_OK)
        st = default_role(c, tok, &tok->bos_token, "<s>", NULL);
    if (st == BERT_OK)
        st = default_role(c, tok, &tok->eos_token, "</s>", NULL);
    return st;
}

enum bert_status tok_json_load(const char *path, struct bert_tokenizer *tok,
                               struct bert_error *err)
{
    struct tok_json_ctx c = {path, err};
    char *text;
    size_t len;
    enum bert_status read = file_read_all(path, &text, &len, err);
    if (read != BERT_OK)
        return read;
    json_error_t je;
    json_t *root = file_parse_json(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    free(text);
    if (root == NULL)
        return bert_error_set(err, BERT_E_FORMAT, "%s: line %d column %d: %s", path, je.line,
                              je.column, je.text);
    enum bert_status st = load_root(&c, root, tok);
    json_decref(root);
    return st;
}
