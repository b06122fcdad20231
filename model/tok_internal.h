/* The tokenizer's private state, shared by its loaders, encoder and
 * decoder. Nothing outside model/tok*.c and model/tokenizer.c includes it
 * (tests aside). */
#ifndef BERT_TOK_INTERNAL_H
#define BERT_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tok_added.h"
#include "tok_normalize.h"
#include "tok_wordpiece.h"
#include "tokenizer.h"

/* One element of a TemplateProcessing template: a sequence ($A / $B) or
 * special tokens ([CLS] ...), each with its type id. */
struct tok_template_item {
    bool is_sequence;
    uint8_t sequence; /* 0: $A, 1: $B */
    int32_t type_id;
    int32_t *ids; /* special token ids (usually one) */
    size_t n_ids;
};

struct tok_template {
    struct tok_template_item *items;
    size_t n;
    size_t n_added; /* special tokens it adds */
};

struct bert_tokenizer {
    struct tok_norm_cfg norm;
    bool bert_normalizer;  /* tokenizer.json has a BertNormalizer */
    bool bert_pretokenize; /* BertPreTokenizer present */
    struct tok_wordpiece wp;
    struct tok_added added;

    bool has_template; /* a post-processor exists */
    struct tok_template single, pair;

    bool has_decoder; /* WordPiece decoder */
    char *decoder_prefix;
    bool decoder_cleanup;
    bool cleanup_spaces; /* transformers' clean_up_tokenization_spaces */

    /* Role token strings (NULL: the role is absent); ids resolved at the end. */
    char *unk_token, *sep_token, *pad_token, *cls_token, *mask_token;
    int32_t unk_id, sep_id, pad_id, cls_id, mask_id;

    size_t json_max_length;
    size_t vocab_size;
};

/* What tokenizer_config.json and special_tokens_map.json say; -1: absent. */
struct tok_hf_config {
    int do_lower_case;
    int tokenize_chinese_chars;
    int strip_accents; /* -1 absent or null */
    bool has_strip_accents;
    int clean_up_tokenization_spaces;
    char *unk_token, *sep_token, *pad_token, *cls_token, *mask_token;
    char **additional_special;
    size_t n_additional_special;
};

/* Read dir/tokenizer_config.json and dir/special_tokens_map.json (each
 * optional). A file that exists but is not valid JSON is BERT_E_FORMAT
 * naming it. */
enum bert_status tok_hf_config_read(const char *dir, struct tok_hf_config *cfg,
                                    struct bert_error *err);
void tok_hf_config_free(struct tok_hf_config *cfg);

/* Fill `tok` from a tokenizer.json file (`tok` zeroed by the caller). */
enum bert_status tok_json_load(const char *path, struct bert_tokenizer *tok,
                               struct bert_error *err);

/* Fill `tok` from a vocab.txt and the settings of the converted fast
 * tokenizer: BertNormalizer(lowercase, tokenize_chinese_chars,
 * strip_accents), BertPreTokenizer, WordPiece, [CLS] $A [SEP] $B:1 [SEP]:1,
 * the role tokens as special added tokens. */
enum bert_status tok_vocab_txt_load(const char *path, const struct tok_hf_config *cfg,
                                    struct bert_tokenizer *tok, struct bert_error *err);

/* The BERT template: [CLS]:0 $A:0 [SEP]:0 / ... $B:1 [SEP]:1. False when out
 * of memory. */
bool tok_template_bert(struct bert_tokenizer *tok, int32_t cls_id, int32_t sep_id);

/* Register the role tokens as special added tokens (ids from the vocabulary,
 * or new ids after it, as `tokenizers` assigns them), unless already added.
 * False when out of memory. */
bool tok_add_special(struct bert_tokenizer *tok, const char *content);

/* Last step of every load: build the vocabulary index, normalize added-token
 * patterns, resolve role ids and the vocabulary size. `source` names the
 * file for messages. */
enum bert_status tok_finish(struct bert_tokenizer *tok, const char *source,
                            struct bert_error *err);

/* Release everything `tok` owns (not `tok` itself). */
void tok_release(struct bert_tokenizer *tok);

/* malloc'd copy of s[0, len), NUL-terminated; NULL when out of memory. */
char *tok_strndup(const char *s, size_t len);

#endif
