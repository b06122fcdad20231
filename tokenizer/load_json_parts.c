/* tokenizer.json components beyond BERT's: the BPE and Unigram models, the
 * normalizers of normseq.h, the Metaspace pre-tokenizer/decoder fields.
 * Every field is checked before it is trusted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "load_json_parts.h"
#include "utf8.h"

static enum bert_status optional_string(const struct tok_json_ctx *c, const json_t *obj,
                                        const char *what, const char *key, char **out,
                                        size_t *len)
{
    /* An empty prefix or suffix is the same as none. */
    enum bert_status st = tok_json_string(c, obj, what, key, NULL, out, len);
    if (st == BERT_OK && *out && **out == '\0') {
        free(*out);
        *out = NULL;
        *len = 0;
    }
    return st;
}

/* One merge: "a b" (exactly one space) or ["a", "b"]. */
static bool merge_parts(const json_t *m, const char **a, size_t *a_len, const char **b,
                        size_t *b_len)
{
    if (json_is_string(m)) {
        const char *s = json_string_value(m);
        size_t len = json_string_length(m);
        const char *sp = memchr(s, ' ', len);
        if (sp == NULL || memchr(sp + 1, ' ', len - (size_t)(sp + 1 - s)) != NULL)
            return false;
        *a = s;
        *a_len = (size_t)(sp - s);
        *b = sp + 1;
        *b_len = len - *a_len - 1;
        return true;
    }
    if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
        json_is_string(json_array_get(m, 1))) {
        *a = json_string_value(json_array_get(m, 0));
        *a_len = json_string_length(json_array_get(m, 0));
        *b = json_string_value(json_array_get(m, 1));
        *b_len = json_string_length(json_array_get(m, 1));
        return true;
    }
    return false;
}

enum bert_status tok_json_bpe_model(const struct tok_json_ctx *c, const json_t *model,
                                    struct tok_bpe *bpe)
{
    const json_t *merges = json_object_get(model, "merges");
    if (!json_is_array(merges))
        return tok_json_fail(c, BERT_E_FORMAT, "model.merges", "expected an array");
    const json_t *dropout = json_object_get(model, "dropout");
    if (dropout && !json_is_null(dropout) &&
        (!json_is_number(dropout) || json_number_value(dropout) != 0.0))
        return tok_json_fail(c, BERT_E_UNSUPPORTED, "model.dropout",
                             "BPE dropout is random; only null or 0 is supported");
    enum bert_status st = tok_json_vocab(c, model, &bpe->vocab);
    if (st == BERT_OK)
        st = optional_string(c, model, "model", "continuing_subword_prefix",
                                          &bpe->prefix, &bpe->prefix_len);
    if (st == BERT_OK)
        st = optional_string(c, model, "model", "end_of_word_suffix", &bpe->suffix,
                             &bpe->suffix_len);
    if (st == BERT_OK)
        st = tok_json_string(c, model, "model", "unk_token", NULL, &bpe->unk_token, NULL);
    if (st == BERT_OK)
        st = tok_json_bool(c, model, "model", "fuse_unk", false, &bpe->fuse_unk);
    if (st == BERT_OK)
        st = tok_json_bool(c, model, "model", "byte_fallback", false, &bpe->byte_fallback);
    if (st == BERT_OK)
        st = tok_json_bool(c, model, "model", "ignore_merges", false, &bpe->ignore_merges);
    if (st != BERT_OK)
        return st;
    size_t i;
    const json_t *m;
    json_array_foreach(merges, i, m)
    {
        const char *a, *b;
        size_t a_len, b_len;
        char what[64];
        snprintf(what, sizeof what, "model.merges[%zu]", i);
        if (!merge_parts(m, &a, &a_len, &b, &b_len))
            return tok_json_fail(c, BERT_E_FORMAT, what,
                                 "expected \"a b\" (one space) or [\"a\", \"b\"]");
        int r = tok_bpe_add_merge(bpe, a, a_len, b, b_len, (uint32_t)i);
        if (r == 1)
            return tok_json_fail(c, BERT_E_FORMAT, what,
                                 "a token of the merge or the merged token is not in the "
                                 "vocabulary");
        if (r == 2)
            return tok_json_fail(c, BERT_E_NOMEM, what, "out of memory");
    }
    if (!tok_bpe_finish(bpe))
        return tok_json_fail(c, BERT_E_FORMAT, "model.unk_token",
                             "the unknown token is not in the vocabulary");
    return BERT_OK;
}

enum bert_status tok_json_unigram_model(const struct tok_json_ctx *c, const json_t *model,
                                        struct tok_unigram *u)
{
    const json_t *vocab = json_object_get(model, "vocab");
    if (!json_is_array(vocab) || json_array_size(vocab) == 0)
        return tok_json_fail(c, BERT_E_FORMAT, "model.vocab",
                             "expected a non-empty array of [piece, score]");
    size_t i;
    const json_t *item;
    json_array_foreach(vocab, i, item)
    {
        const json_t *piece = json_array_get(item, 0), *score = json_array_get(item, 1);
        if (!json_is_array(item) || json_array_size(item) != 2 || !json_is_string(piece) ||
            !json_is_number(score)) {
            char what[64];
            snprintf(what, sizeof what, "model.vocab[%zu]", i);
            return tok_json_fail(c, BERT_E_FORMAT, what, "expected [piece, score]");
        }
        if (json_string_length(piece) > TOK_VOCAB_MAX_TOKEN_BYTES)
            return bert_error_set(c->err, BERT_E_FORMAT,
                                  "%s: model.vocab[%zu]: a piece of %zu bytes, more than %u",
                                  c->path, i, json_string_length(piece), TOK_VOCAB_MAX_TOKEN_BYTES);
        if (!tok_unigram_push(u, json_string_value(piece), json_string_length(piece),
                              json_number_value(score)))
            return tok_json_fail(c, BERT_E_NOMEM, "model.vocab", "out of memory or too large");
    }
    const json_t *unk = json_object_get(model, "unk_id");
    if (unk == NULL || json_is_null(unk))
        return tok_json_fail(c, BERT_E_UNSUPPORTED, "model.unk_id",
                             "a Unigram model without an unknown piece is not supported");
    if (!json_is_integer(unk) || json_integer_value(unk) < 0 ||
        (size_t)json_integer_value(unk) >= u->n)
        return tok_json_fail(c, BERT_E_FORMAT, "model.unk_id",
                             "expected the index of a piece of model.vocab");
    u->unk_id = (int32_t)json_integer_value(unk);
    enum bert_status st = tok_json_bool(c, model, "model", "byte_fallback", false, &u->byte_fallback);
    if (st == BERT_OK && !tok_unigram_finish(u))
        st = tok_json_fail(c, BERT_E_NOMEM, "model.vocab", "out of memory");
    return st;
}

/* For a regex "c+" or "c{n,}" (c one character, a metacharacter escaped):
 * the least count; 0 for anything else. */
static size_t repeat_count(const char *p, size_t len)
{
    const char *meta = "\\^$.|?*+()[]{}";
    size_t i = 0;
    if (p[0] == '\\') {
        if (len < 2 || strchr(meta, p[1]) == NULL)
            return 0;
        i = 1;
    } else if (strchr(meta, p[0])) {
        return 0;
    }
    size_t cl;
    utf8_decode((const uint8_t *)p + i, &cl);
    i += cl;
    if (len - i == 1 && p[i] == '+')
        return 1;
    if (len - i < 4 || p[i] != '{' || p[len - 2] != ',' || p[len - 1] != '}')
        return 0;
    size_t n = 0;
    for (size_t k = i + 1; k < len - 2; k++) {
        if (p[k] < '0' || p[k] > '9' || n > 100000)
            return 0;
        n = n * 10 + (size_t)(p[k] - '0');
    }
    return n;
}

/* A Replace pattern: {"String": s} or {"Regex": r}, the regex limited to a
 * literal or one character repeated ("c{n,}", "c+"). */
static enum bert_status replace_pattern(const struct tok_json_ctx *c, const json_t *n,
                                        const char *what, struct tok_norm_step *st)
{
    const json_t *pattern = json_object_get(n, "pattern");
    const json_t *lit = json_object_get(pattern, "String"), *re = json_object_get(pattern, "Regex");
    const json_t *v = lit ? lit : re;
    if (!json_is_string(v) || json_string_length(v) == 0)
        return tok_json_fail(c, BERT_E_FORMAT, what,
                             "expected \"pattern\": {\"String\" or \"Regex\": a non-empty string}");
    const char *p = json_string_value(v);
    size_t len = json_string_length(v);
    if (re && strcspn(p, "\\^$.|?*+()[]{}") != len) {
        size_t min = repeat_count(p, len);
        if (min == 0) {
            char detail[160];
            snprintf(detail, sizeof detail,
                     "the regex \"%.48s\" is not supported (only a literal or one character "
                     "repeated: \"c+\", \"c{n,}\")",
                     p);
            return tok_json_fail(c, BERT_E_UNSUPPORTED, what, detail);
        }
        st->min_repeat = min;
        if (p[0] == '\\')
            p++;
        len = 0;
        utf8_decode((const uint8_t *)p, &len);
    }
    if ((st->pattern = tok_strndup(p, len)) == NULL)
        return tok_json_fail(c, BERT_E_NOMEM, what, "out of memory");
    st->pattern_len = len;
    return tok_json_string(c, n, what, "content", "", &st->content, &st->content_len);
}

static enum bert_status one_normalizer(const struct tok_json_ctx *c, const json_t *n,
                                       const char *what, struct tok_normseq *seq, int depth)
{
    const char *type;
    enum bert_status st = tok_json_type(c, n, what, &type);
    if (st != BERT_OK || type == NULL)
        return st;
    if (strcmp(type, "Sequence") == 0 && depth < 8) {
        const json_t *list = json_object_get(n, "normalizers");
        if (!json_is_array(list))
            return tok_json_fail(c, BERT_E_FORMAT, what, "expected \"normalizers\": [...]");
        size_t i;
        const json_t *item;
        json_array_foreach(list, i, item)
        {
            char sub[96];
            snprintf(sub, sizeof sub, "%s.normalizers[%zu]", what, i);
            if ((st = one_normalizer(c, item, sub, seq, depth + 1)) != BERT_OK)
                return st;
        }
        return BERT_OK;
    }
    static const struct {
        const char *name;
        enum tok_norm_kind kind;
    } kinds[] = {
        {"NFC", TOK_NORM_NFC},          {"NFD", TOK_NORM_NFD},
        {"NFKC", TOK_NORM_NFKC},        {"NFKD", TOK_NORM_NFKD},
        {"Lowercase", TOK_NORM_LOWERCASE}, {"Strip", TOK_NORM_STRIP},
        {"Replace", TOK_NORM_REPLACE},  {"Prepend", TOK_NORM_PREPEND},
        {"Precompiled", TOK_NORM_PRECOMPILED},
    };
    size_t k = 0;
    while (k < sizeof kinds / sizeof *kinds && strcmp(kinds[k].name, type) != 0)
        k++;
    if (k == sizeof kinds / sizeof *kinds)
        return tok_json_unsupported(c, "normalizer", type, TOK_JSON_NORMALIZERS);
    struct tok_norm_step *step = tok_normseq_add(seq, kinds[k].kind);
    if (step == NULL)
        return tok_json_fail(c, BERT_E_NOMEM, what, "out of memory");
    switch (step->kind) {
    case TOK_NORM_STRIP:
        st = tok_json_bool(c, n, what, "strip_left", true, &step->left);
        if (st == BERT_OK)
            st = tok_json_bool(c, n, what, "strip_right", true, &step->right);
        return st;
    case TOK_NORM_REPLACE:
        return replace_pattern(c, n, what, step);
    case TOK_NORM_PREPEND:
        return tok_json_string(c, n, what, "prepend", "", &step->content, &step->content_len);
    case TOK_NORM_PRECOMPILED: {
        const json_t *map = json_object_get(n, "precompiled_charsmap");
        const char *why = "expected a base64 string";
        if (!json_is_string(map) ||
            !tok_precompiled_load(&step->precompiled, json_string_value(map),
                                  json_string_length(map), &why)) {
            char field[128];
            snprintf(field, sizeof field, "%s.precompiled_charsmap", what);
            return tok_json_fail(c, BERT_E_FORMAT, field, why);
        }
        return BERT_OK;
    }
    default:
        return BERT_OK;
    }
}

enum bert_status tok_json_normseq(const struct tok_json_ctx *c, const json_t *n,
                                  struct tok_normseq *seq)
{
    return one_normalizer(c, n, "normalizer", seq, 0);
}

enum bert_status tok_json_metaspace(const struct tok_json_ctx *c, const json_t *obj,
                                    const char *what, struct tok_metaspace *m)
{
    char *rep = NULL;
    size_t len = 0;
    enum bert_status st = tok_json_string(c, obj, what, "replacement", "\xE2\x96\x81", &rep, &len);
    if (st != BERT_OK)
        return st;
    size_t cl = 0;
    if (len > 0)
        m->replacement = utf8_decode((const uint8_t *)rep, &cl);
    free(rep);
    if (len == 0 || cl != len) {
        char field[96];
        snprintf(field, sizeof field, "%s.replacement", what);
        return tok_json_fail(c, BERT_E_FORMAT, field, "expected one character");
    }
    m->replacement_len = utf8_encode(m->replacement, (uint8_t *)m->replacement_utf8);
    m->replacement_utf8[m->replacement_len] = '\0';
    st = tok_json_bool(c, obj, what, "split", true, &m->split);
    if (st != BERT_OK)
        return st;
    /* prepend_scheme, or the older add_prefix_space (true: always). */
    const json_t *scheme = json_object_get(obj, "prepend_scheme");
    if (scheme && !json_is_null(scheme)) {
        const char *s = json_string_value(scheme);
        if (s && strcmp(s, "always") == 0)
            m->prepend = TOK_PREPEND_ALWAYS;
        else if (s && strcmp(s, "first") == 0)
            m->prepend = TOK_PREPEND_FIRST;
        else if (s && strcmp(s, "never") == 0)
            m->prepend = TOK_PREPEND_NEVER;
        else {
            char field[96];
            snprintf(field, sizeof field, "%s.prepend_scheme", what);
            return tok_json_fail(c, BERT_E_FORMAT, field,
                                 "expected \"always\", \"first\" or \"never\"");
        }
        return BERT_OK;
    }
    bool add = true;
    st = tok_json_bool(c, obj, what, "add_prefix_space", true, &add);
    m->prepend = add ? TOK_PREPEND_ALWAYS : TOK_PREPEND_NEVER;
    return st;
}
