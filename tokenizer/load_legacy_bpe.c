/* RoBERTa's older checkpoint layout, vocab.json + merges.txt (with
 * tokenizer_config.json and special_tokens_map.json), turned into the
 * pipeline transformers' RobertaConverter builds for the fast tokenizer:
 * BPE(vocab, merges) without unk token or prefixes, ByteLevel
 * pre-tokenizer (add_prefix_space from the config, default false) and
 * decoder, RobertaProcessing(<s>, </s>) with trimmed offsets, the role
 * tokens as special added tokens and <mask> taking the space before it. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "fileutil.h"
#include "loaders.h"

static enum bert_status load_vocab_json(const char *path, struct tok_bpe *bpe,
                                        struct bert_error *err)
{
    json_error_t je;
    json_t *root = json_load_file(path, JSON_ALLOW_NUL, &je);
    if (root == NULL)
        return bert_error_set(err, BERT_E_FORMAT, "%s: line %d column %d: %s", path, je.line,
                              je.column, je.text);
    enum bert_status st = BERT_OK;
    if (!json_is_object(root) || json_object_size(root) == 0)
        st = bert_error_set(err, BERT_E_FORMAT, "%s: expected a non-empty object of token ids",
                            path);
    const char *key;
    size_t key_len;
    json_t *value;
    json_object_keylen_foreach(root, key, key_len, value)
    {
        if (st != BERT_OK)
            break;
        if (!json_is_integer(value) || json_integer_value(value) < 0 ||
            json_integer_value(value) > (1 << 24) - 1)
            st = bert_error_set(err, BERT_E_FORMAT,
                                "%s: \"%.64s\": expected an integer id from 0 to 16777215", path,
                                key);
        else if (key_len > TOK_VOCAB_MAX_TOKEN_BYTES)
            st = bert_error_set(err, BERT_E_FORMAT,
                                "%s: token \"%.32s...\" has %zu bytes, more than %u", path, key,
                                key_len, TOK_VOCAB_MAX_TOKEN_BYTES);
        else if (!tok_vocab_add(&bpe->vocab, key, key_len, (int32_t)json_integer_value(value)))
            st = bert_error_set(err, BERT_E_NOMEM, "%s: out of memory", path);
    }
    json_decref(root);
    if (st == BERT_OK && !tok_vocab_build(&bpe->vocab))
        st = bert_error_set(err, BERT_E_NOMEM, "%s: out of memory", path);
    return st;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* merges.txt as transformers reads it: the first line (#version) and the
 * text after the last newline are dropped, each other line is two tokens
 * separated by whitespace. */
static enum bert_status load_merges(const char *path, struct tok_bpe *bpe, struct bert_error *err)
{
    char *text = NULL;
    size_t len = 0;
    enum bert_status st = file_read_all(path, &text, &len, err);
    if (st != BERT_OK)
        return st;
    char *nl = memchr(text, '\n', len);
    size_t i = nl ? (size_t)(nl - text) + 1 : len;
    uint32_t rank = 0;
    while (st == BERT_OK && i < len) {
        char *end = memchr(text + i, '\n', len - i);
        if (end == NULL)
            break; /* the last piece is not a merge */
        size_t e = (size_t)(end - text);
        const char *parts[3];
        size_t part_len[3], n = 0;
        for (size_t k = i; k < e && n < 3;) {
            while (k < e && is_space(text[k]))
                k++;
            if (k == e)
                break;
            size_t s = k;
            while (k < e && !is_space(text[k]))
                k++;
            parts[n] = text + s;
            part_len[n++] = k - s;
        }
        int r = n == 2 ? tok_bpe_add_merge(bpe, parts[0], part_len[0], parts[1], part_len[1], rank)
                       : 3;
        if (r == 1)
            st = bert_error_set(err, BERT_E_FORMAT,
                                "%s: merge %u: a token or the merged token is not in vocab.json",
                                path, rank + 1);
        else if (r == 2)
            st = bert_error_set(err, BERT_E_NOMEM, "%s: out of memory", path);
        else if (r == 3)
            st = bert_error_set(err, BERT_E_FORMAT, "%s: merge %u: expected two tokens", path,
                                rank + 1);
        rank++;
        i = e + 1;
    }
    free(text);
    return st;
}

static bool set_default(char **slot, const char *cfg_value, const char *dflt)
{
    const char *v = cfg_value ? cfg_value : dflt;
    free(*slot);
    return (*slot = tok_strndup(v, strlen(v))) != NULL;
}

enum bert_status tok_bpe_files_load(const char *vocab_path, const char *merges_path,
                                    const struct tok_hf_config *cfg, struct bert_tokenizer *tok,
                                    struct bert_error *err)
{
    tok->kind = BERT_TOKENIZER_BPE;
    enum bert_status st = load_vocab_json(vocab_path, &tok->bpe, err);
    if (st == BERT_OK)
        st = load_merges(merges_path, &tok->bpe, err);
    if (st != BERT_OK)
        return st;
    tok_bpe_finish(&tok->bpe);
    tok->pretok = TOK_PRETOK_BYTELEVEL;
    tok->bytelevel_prefix_space = cfg->add_prefix_space == 1;
    tok->bytelevel_use_regex = true;
    tok->decoder = TOK_DECODER_BYTELEVEL;
    tok->trim_offsets = cfg->trim_offsets != 0;
    tok->trim_prefix_space = tok->bytelevel_prefix_space;
    tok->cleanup_spaces = cfg->clean_up_tokenization_spaces != 0;
    bool ok = set_default(&tok->bos_token, cfg->bos_token, "<s>") &&
              set_default(&tok->eos_token, cfg->eos_token, "</s>") &&
              set_default(&tok->unk_token, cfg->unk_token, "<unk>") &&
              set_default(&tok->sep_token, cfg->sep_token, "</s>") &&
              set_default(&tok->pad_token, cfg->pad_token, "<pad>") &&
              set_default(&tok->cls_token, cfg->cls_token, "<s>") &&
              set_default(&tok->mask_token, cfg->mask_token, "<mask>");
    /* transformers registers the special tokens in this order. */
    const char *roles[] = {tok->bos_token, tok->eos_token, tok->unk_token, tok->sep_token,
                           tok->pad_token, tok->cls_token, tok->mask_token};
    for (size_t i = 0; ok && i < 7; i++)
        ok = tok_add_special(tok, roles[i], i == 6);
    for (size_t i = 0; ok && i < cfg->n_additional_special; i++)
        ok = tok_add_special(tok, cfg->additional_special[i], false);
    if (!ok)
        return bert_error_set(err, BERT_E_NOMEM, "%s: out of memory", vocab_path);
    return tok_template_from_roles(tok, true, vocab_path, err);
}
