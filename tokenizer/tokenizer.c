/* Loading entry points (which loader runs for a checkpoint folder) and
 * accessors. The loaders are load_*.c, the steps they share build.c;
 * encoding is in encode.c, decoding in decode.c. */
#include "tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "fileutil.h"
#include "loaders.h"

struct bert_encode_options bert_encode_options_default(void)
{
    return (struct bert_encode_options){
        .add_special_tokens = true, .max_length = 0, .truncate = false, .side = BERT_TRUNCATE_RIGHT};
}

void bert_encoding_free(struct bert_encoding *enc)
{
    if (enc == NULL)
        return;
    free(enc->ids);
    free(enc->type_ids);
    free(enc->start);
    free(enc->stop);
    free(enc->special);
    free(enc->sequence);
    free(enc->word);
    memset(enc, 0, sizeof *enc);
}

void bert_tokenizer_free(struct bert_tokenizer *tok)
{
    if (tok == NULL)
        return;
    tok_release(tok);
    free(tok);
}

/* Replace the role string *slot with `value` when `value` is set. */
static bool set_role(char **slot, const char *value)
{
    if (value == NULL)
        return true;
    char *copy = tok_strndup(value, strlen(value));
    if (copy == NULL)
        return false;
    free(*slot);
    *slot = copy;
    return true;
}

/* transformers rebuilds a Bert-style normalizer from tokenizer_config.json
 * when the two disagree (BertTokenizerFast.__init__); do the same, but only
 * on keys the config actually sets. */
static void apply_config_normalizer(struct bert_tokenizer *tok, const struct tok_hf_config *cfg)
{
    if (!tok->bert_normalizer)
        return;
    bool lower = cfg->do_lower_case >= 0 ? cfg->do_lower_case : tok->norm.lowercase;
    bool chinese = cfg->tokenize_chinese_chars >= 0 ? cfg->tokenize_chinese_chars
                                                     : tok->norm.handle_chinese_chars;
    if (cfg->do_lower_case < 0 && cfg->tokenize_chinese_chars < 0 && !cfg->has_strip_accents)
        return;
    bool strip = cfg->strip_accents >= 0 ? cfg->strip_accents : lower;
    if (lower == tok->norm.lowercase && chinese == tok->norm.handle_chinese_chars &&
        (!cfg->has_strip_accents || strip == tok->norm.strip_accents))
        return;
    tok->norm.lowercase = lower;
    tok->norm.handle_chinese_chars = chinese;
    tok->norm.strip_accents = strip;
}

static enum bert_status finish_load(struct bert_tokenizer *tok, enum bert_status status,
                                    const char *source, struct bert_tokenizer **out,
                                    struct bert_error *err)
{
    if (status == BERT_OK)
        status = tok_finish(tok, source, err);
    if (status != BERT_OK) {
        bert_tokenizer_free(tok);
        return status;
    }
    *out = tok;
    return BERT_OK;
}

/* tokenizer.json won over a vocab.txt beside it: note the ids at which the
 * two disagree (transformers' fast tokenizer reads only tokenizer.json). A
 * vocab.txt that cannot be read changes nothing. */
static void note_vocab_txt_conflicts(struct bert_tokenizer *tok, const char *vocab_path)
{
    char *text;
    size_t len;
    struct bert_error ignored = {0};
    if (tok->kind != BERT_TOKENIZER_WORDPIECE || !file_exists(vocab_path) ||
        file_read_all(vocab_path, &text, &len, &ignored) != BERT_OK)
        return;
    size_t differ = 0, id = 0, first = 0;
    char first_txt[64] = "";
    for (char *line = text; line < text + len; id++) {
        char *end = memchr(line, '\n', (size_t)(text + len - line));
        size_t n = end ? (size_t)(end - line) : (size_t)(text + len - line);
        if (n > 0 && line[n - 1] == '\r')
            n--;
        const char *json = bert_tokenizer_id_to_token(tok, (int32_t)id);
        if (json == NULL || strlen(json) != n || memcmp(json, line, n) != 0) {
            if (differ++ == 0) {
                first = id;
                snprintf(first_txt, sizeof first_txt, "%.*s", (int)(n < 40 ? n : 40), line);
            }
        }
        line = end ? end + 1 : text + len;
    }
    free(text);
    if (differ > 0) {
        const char *json = bert_tokenizer_id_to_token(tok, (int32_t)first);
        snprintf(tok->load_note, sizeof tok->load_note,
                 "%s and tokenizer.json disagree at %zu ids (first: id %zu is '%s' in "
                 "vocab.txt, '%.40s' in tokenizer.json); tokenizer.json wins",
                 vocab_path, differ, first, first_txt, json ? json : "(none)");
    }
}

const char *bert_tokenizer_load_note(const struct bert_tokenizer *tok)
{
    return tok->load_note[0] ? tok->load_note : NULL;
}

enum bert_status bert_tokenizer_load(const char *dir, struct bert_tokenizer **out,
                                     struct bert_error *err)
{
    *out = NULL;
    size_t dlen = strlen(dir);
    char *json_path = malloc(dlen + 32), *vocab_path = malloc(dlen + 32);
    char *bpe_vocab = malloc(dlen + 32), *merges_path = malloc(dlen + 32);
    struct bert_tokenizer *tok = calloc(1, sizeof *tok);
    struct tok_hf_config cfg;
    if (json_path == NULL || vocab_path == NULL || bpe_vocab == NULL || merges_path == NULL ||
        tok == NULL) {
        free(json_path);
        free(vocab_path);
        free(bpe_vocab);
        free(merges_path);
        free(tok);
        return bert_error_set(err, BERT_E_NOMEM, "%s: out of memory loading the tokenizer", dir);
    }
    snprintf(json_path, dlen + 32, "%s/tokenizer.json", dir);
    snprintf(vocab_path, dlen + 32, "%s/vocab.txt", dir);
    snprintf(bpe_vocab, dlen + 32, "%s/vocab.json", dir);
    snprintf(merges_path, dlen + 32, "%s/merges.txt", dir);
    enum bert_status st = tok_hf_config_read(dir, &cfg, err);
    const char *source = json_path;
    if (st == BERT_OK && file_exists(json_path)) {
        st = tok_json_load(json_path, tok, err);
        if (st == BERT_OK) {
            apply_config_normalizer(tok, &cfg);
            tok->cleanup_spaces = cfg.clean_up_tokenization_spaces != 0;
        }
    } else if (st == BERT_OK && file_exists(vocab_path)) {
        source = vocab_path;
        st = tok_vocab_txt_load(vocab_path, &cfg, tok, err);
    } else if (st == BERT_OK && file_exists(bpe_vocab) && file_exists(merges_path)) {
        source = bpe_vocab;
        st = tok_bpe_files_load(bpe_vocab, merges_path, &cfg, tok, err);
    } else if (st == BERT_OK) {
        st = bert_error_set(err, BERT_E_IO,
                            "%s: no tokenizer.json, vocab.txt or vocab.json + merges.txt in the "
                            "folder",
                            dir);
    }
    if (st == BERT_OK &&
        (!set_role(&tok->unk_token, cfg.unk_token) || !set_role(&tok->sep_token, cfg.sep_token) ||
         !set_role(&tok->pad_token, cfg.pad_token) || !set_role(&tok->cls_token, cfg.cls_token) ||
         !set_role(&tok->mask_token, cfg.mask_token) || !set_role(&tok->bos_token, cfg.bos_token) ||
         !set_role(&tok->eos_token, cfg.eos_token)))
        st = bert_error_set(err, BERT_E_NOMEM, "%s: out of memory", source);
    if (st == BERT_OK)
        tok->uses_type_ids = cfg.uses_type_ids;
    st = finish_load(tok, st, source, out, err);
    if (st == BERT_OK && source == json_path)
        note_vocab_txt_conflicts(*out, vocab_path);
    tok_hf_config_free(&cfg);
    free(json_path);
    free(vocab_path);
    free(bpe_vocab);
    free(merges_path);
    return st;
}

enum bert_status bert_tokenizer_load_json(const char *path, struct bert_tokenizer **out,
                                          struct bert_error *err)
{
    *out = NULL;
    struct bert_tokenizer *tok = calloc(1, sizeof *tok);
    if (tok == NULL)
        return bert_error_set(err, BERT_E_NOMEM, "%s: out of memory", path);
    tok->uses_type_ids = -1;
    return finish_load(tok, tok_json_load(path, tok, err), path, out, err);
}

enum bert_status bert_tokenizer_load_vocab(const char *vocab_path, bool lowercase,
                                           struct bert_tokenizer **out,
                                           struct bert_error *err)
{
    *out = NULL;
    struct bert_tokenizer *tok = calloc(1, sizeof *tok);
    if (tok == NULL)
        return bert_error_set(err, BERT_E_NOMEM, "%s: out of memory", vocab_path);
    struct tok_hf_config cfg = {.do_lower_case = lowercase, .tokenize_chinese_chars = -1,
                                .strip_accents = -1, .clean_up_tokenization_spaces = -1,
                                .add_prefix_space = -1, .trim_offsets = -1, .uses_type_ids = -1};
    tok->uses_type_ids = -1;
    return finish_load(tok, tok_vocab_txt_load(vocab_path, &cfg, tok, err), vocab_path, out, err);
}

size_t bert_tokenizer_vocab_size(const struct bert_tokenizer *tok)
{
    return tok->vocab_size;
}

const char *bert_tokenizer_id_to_token(const struct bert_tokenizer *tok, int32_t id)
{
    /* A normalized added token answers with its normalized form, as
     * `tokenizers` does ("Hello World" -> "hello world"). */
    const struct tok_added_token *t = tok_added_by_id(&tok->added, id);
    return t ? t->pattern : tok_model_id_to_token(tok, id);
}

int32_t bert_tokenizer_token_to_id(const struct bert_tokenizer *tok, const char *token)
{
    return tok_lookup_id(tok, token, strlen(token));
}

int32_t bert_tokenizer_mask_id(const struct bert_tokenizer *tok) { return tok->mask_id; }
int32_t bert_tokenizer_pad_id(const struct bert_tokenizer *tok) { return tok->pad_id; }
int32_t bert_tokenizer_cls_id(const struct bert_tokenizer *tok) { return tok->cls_id; }
int32_t bert_tokenizer_sep_id(const struct bert_tokenizer *tok) { return tok->sep_id; }
int32_t bert_tokenizer_unk_id(const struct bert_tokenizer *tok) { return tok->unk_id; }
int32_t bert_tokenizer_bos_id(const struct bert_tokenizer *tok) { return tok->bos_id; }
int32_t bert_tokenizer_eos_id(const struct bert_tokenizer *tok) { return tok->eos_id; }

enum bert_tokenizer_kind bert_tokenizer_kind(const struct bert_tokenizer *tok)
{
    return tok->kind;
}

const char *bert_tokenizer_kind_name(enum bert_tokenizer_kind kind)
{
    switch (kind) {
    case BERT_TOKENIZER_WORDPIECE:
        return "WordPiece";
    case BERT_TOKENIZER_BPE:
        return "BPE";
    case BERT_TOKENIZER_UNIGRAM:
        return "Unigram";
    }
    return "unknown";
}

bool bert_tokenizer_uses_type_ids(const struct bert_tokenizer *tok)
{
    if (tok->uses_type_ids >= 0)
        return tok->uses_type_ids != 0;
    if (!tok->has_template)
        return !tok->zero_type_ids; /* a pair's second sequence gets type 1 */
    for (size_t i = 0; i < tok->pair.n; i++)
        if (tok->pair.items[i].type_id != 0)
            return true;
    return false;
}

bool bert_tokenizer_is_special(const struct bert_tokenizer *tok, int32_t id)
{
    const struct tok_added_token *t = tok_added_by_id(&tok->added, id);
    return t && t->special;
}

const char *bert_tokenizer_mask_token(const struct bert_tokenizer *tok)
{
    return tok->mask_id >= 0 ? tok->mask_token : NULL;
}

size_t bert_tokenizer_json_max_length(const struct bert_tokenizer *tok)
{
    return tok->json_max_length;
}
