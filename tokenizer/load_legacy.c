/* The older checkpoint layout: vocab.txt plus tokenizer_config.json and
 * special_tokens_map.json, turned into the pipeline transformers' converter
 * (BertConverter) builds for the fast tokenizer. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "build.h"
#include "fileutil.h"
#include "loaders.h"

/* A special token given as "[CLS]" or {"content": "[CLS]", ...}. */
static const char *token_string(const json_t *v)
{
    if (json_is_object(v))
        v = json_object_get(v, "content");
    return json_string_value(v);
}

static bool set_string(char **slot, const char *value)
{
    if (value == NULL)
        return true;
    free(*slot);
    return (*slot = tok_strndup(value, strlen(value))) != NULL;
}

static int tri_bool(const json_t *v, int current)
{
    return json_is_boolean(v) ? json_is_true(v) : current;
}

static bool read_json_config(const json_t *root, struct tok_hf_config *cfg)
{
    cfg->do_lower_case = tri_bool(json_object_get(root, "do_lower_case"), cfg->do_lower_case);
    cfg->tokenize_chinese_chars =
        tri_bool(json_object_get(root, "tokenize_chinese_chars"), cfg->tokenize_chinese_chars);
    const json_t *strip = json_object_get(root, "strip_accents");
    if (strip) {
        cfg->has_strip_accents = true;
        cfg->strip_accents = tri_bool(strip, -1);
    }
    cfg->clean_up_tokenization_spaces = tri_bool(json_object_get(root, "clean_up_tokenization_spaces"),
                                                 cfg->clean_up_tokenization_spaces);
    cfg->add_prefix_space = tri_bool(json_object_get(root, "add_prefix_space"), cfg->add_prefix_space);
    cfg->trim_offsets = tri_bool(json_object_get(root, "trim_offsets"), cfg->trim_offsets);
    const json_t *names = json_object_get(root, "model_input_names");
    if (json_is_array(names)) {
        cfg->uses_type_ids = 0;
        for (size_t i = 0; i < json_array_size(names); i++) {
            const char *name = json_string_value(json_array_get(names, i));
            if (name && strcmp(name, "token_type_ids") == 0)
                cfg->uses_type_ids = 1;
        }
    }
    static const char *const keys[] = {"unk_token",  "sep_token", "pad_token", "cls_token",
                                       "mask_token", "bos_token", "eos_token"};
    char **slots[] = {&cfg->unk_token,  &cfg->sep_token, &cfg->pad_token, &cfg->cls_token,
                      &cfg->mask_token, &cfg->bos_token, &cfg->eos_token};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (!set_string(slots[i], token_string(json_object_get(root, keys[i]))))
            return false;
    const json_t *extra = json_object_get(root, "additional_special_tokens");
    if (json_is_array(extra)) {
        for (size_t i = 0; i < cfg->n_additional_special; i++)
            free(cfg->additional_special[i]);
        free(cfg->additional_special);
        cfg->n_additional_special = 0;
        cfg->additional_special = calloc(json_array_size(extra) + 1, sizeof(char *));
        if (cfg->additional_special == NULL)
            return false;
        for (size_t i = 0; i < json_array_size(extra); i++) {
            const char *s = token_string(json_array_get(extra, i));
            if (s && (cfg->additional_special[cfg->n_additional_special++] =
                          tok_strndup(s, strlen(s))) == NULL)
                return false;
        }
    }
    return true;
}

/* Merge dir/name into cfg when the file exists. */
static enum bert_status read_config_file(const char *dir, const char *name,
                                         struct tok_hf_config *cfg, struct bert_error *err)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return bert_error_set(err, BERT_E_INVALID, "%s: path too long", dir);
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT)
        return BERT_OK;
    char *text;
    size_t len;
    enum bert_status st = file_read_all(path, &text, &len, err);
    if (st != BERT_OK)
        return st;
    json_error_t je;
    json_t *root = file_parse_json(text, len, 0, &je);
    free(text);
    if (root == NULL)
        return bert_error_set(err, BERT_E_FORMAT, "%s: line %d column %d: %s", path, je.line,
                              je.column, je.text);
    bool ok = read_json_config(root, cfg);
    json_decref(root);
    return ok ? BERT_OK : bert_error_set(err, BERT_E_NOMEM, "%s: out of memory", path);
}

enum bert_status tok_hf_config_read(const char *dir, struct tok_hf_config *cfg,
                                    struct bert_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->do_lower_case = cfg->tokenize_chinese_chars = cfg->strip_accents = -1;
    cfg->clean_up_tokenization_spaces = -1;
    cfg->add_prefix_space = cfg->trim_offsets = cfg->uses_type_ids = -1;
    /* special_tokens_map.json is read last: transformers lets it override. */
    enum bert_status st = read_config_file(dir, "tokenizer_config.json", cfg, err);
    if (st == BERT_OK)
        st = read_config_file(dir, "special_tokens_map.json", cfg, err);
    return st;
}

void tok_hf_config_free(struct tok_hf_config *cfg)
{
    free(cfg->unk_token);
    free(cfg->sep_token);
    free(cfg->pad_token);
    free(cfg->cls_token);
    free(cfg->mask_token);
    free(cfg->bos_token);
    free(cfg->eos_token);
    for (size_t i = 0; i < cfg->n_additional_special; i++)
        free(cfg->additional_special[i]);
    free(cfg->additional_special);
    memset(cfg, 0, sizeof *cfg);
}

static enum bert_status load_vocab_lines(const char *path, struct tok_vocab *vocab,
                                         struct bert_error *err)
{
    size_t len = 0;
    char *text = NULL;
    enum bert_status st = file_read_all(path, &text, &len, err);
    if (st != BERT_OK)
        return st;
    /* One token per line, split on '\n' only: bert-base-chinese has U+2028
     * inside tokens. A trailing '\r' (CRLF files) is not part of the token. */
    size_t id = 0, i = 0;
    while (i < len && st == BERT_OK) {
        char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t tlen = end - i;
        if (tlen > 0 && text[end - 1] == '\r')
            tlen--;
        if (id > (1 << 24) - 1)
            st = bert_error_set(err, BERT_E_FORMAT, "%s: more than 16777216 lines", path);
        else if (tlen > TOK_VOCAB_MAX_TOKEN_BYTES)
            st = bert_error_set(err, BERT_E_FORMAT, "%s: line %zu: a token of %zu bytes, more "
                                "than %u", path, id + 1, tlen, TOK_VOCAB_MAX_TOKEN_BYTES);
        else if (!tok_vocab_add(vocab, text + i, tlen, (int32_t)id++))
            st = bert_error_set(err, BERT_E_NOMEM, "%s: out of memory", path);
        i = end + 1;
    }
    free(text);
    if (st == BERT_OK && id == 0)
        st = bert_error_set(err, BERT_E_FORMAT, "%s: the vocabulary is empty", path);
    if (st == BERT_OK && !tok_vocab_build(vocab))
        st = bert_error_set(err, BERT_E_NOMEM, "%s: out of memory", path);
    return st;
}

enum bert_status tok_vocab_txt_load(const char *path, const struct tok_hf_config *cfg,
                                    struct bert_tokenizer *tok, struct bert_error *err)
{
    enum bert_status st = load_vocab_lines(path, &tok->wp.vocab, err);
    if (st != BERT_OK)
        return st;
    bool lower = cfg->do_lower_case != 0;
    tok->norm = (struct tok_norm_cfg){
        .clean_text = true,
        .handle_chinese_chars = cfg->tokenize_chinese_chars != 0,
        .strip_accents = cfg->strip_accents >= 0 ? cfg->strip_accents : lower,
        .lowercase = lower,
    };
    tok->kind = BERT_TOKENIZER_WORDPIECE;
    tok->bert_normalizer = true;
    tok->pretok = TOK_PRETOK_BERT;
    tok->wp.max_input_chars_per_word = 100;
    tok->decoder = TOK_DECODER_WORDPIECE;
    tok->decoder_cleanup = true;
    tok->cleanup_spaces = cfg->clean_up_tokenization_spaces != 0;
    bool ok = set_string(&tok->wp.prefix, "##") && set_string(&tok->decoder_prefix, "##") &&
              set_string(&tok->unk_token, cfg->unk_token ? cfg->unk_token : "[UNK]") &&
              set_string(&tok->sep_token, cfg->sep_token ? cfg->sep_token : "[SEP]") &&
              set_string(&tok->pad_token, cfg->pad_token ? cfg->pad_token : "[PAD]") &&
              set_string(&tok->cls_token, cfg->cls_token ? cfg->cls_token : "[CLS]") &&
              set_string(&tok->mask_token, cfg->mask_token ? cfg->mask_token : "[MASK]") &&
              set_string(&tok->wp.unk_token, tok->unk_token);
    tok->wp.prefix_len = 2;
    /* transformers registers the special tokens in this order. */
    const char *roles[] = {tok->unk_token, tok->sep_token, tok->pad_token, tok->cls_token,
                           tok->mask_token};
    for (size_t i = 0; ok && i < 5; i++)
        ok = tok_add_special(tok, roles[i], false);
    for (size_t i = 0; ok && i < cfg->n_additional_special; i++)
        ok = tok_add_special(tok, cfg->additional_special[i], false);
    if (!ok)
        return bert_error_set(err, BERT_E_NOMEM, "%s: out of memory", path);
    return tok_template_from_roles(tok, false, path, err);
}
