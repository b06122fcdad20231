/* The tokenizer's private state, shared by its loaders, encoder and
 * decoder. Nothing outside model/tok*.c and tokenizer/tokenizer.c includes it
 * (tests aside). */
#ifndef BERT_TOK_INTERNAL_H
#define BERT_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "added.h"
#include "bpe.h"
#include "metaspace.h"
#include "normalize.h"
#include "normseq.h"
#include "unigram.h"
#include "wordpiece.h"
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

enum tok_pretok {
    TOK_PRETOK_NONE,
    TOK_PRETOK_BERT,      /* BertPreTokenizer (WordPiece only) */
    TOK_PRETOK_BYTELEVEL, /* ByteLevel */
    TOK_PRETOK_METASPACE, /* Metaspace */
};

enum tok_decoder {
    TOK_DECODER_NONE, /* tokens joined by spaces */
    TOK_DECODER_WORDPIECE,
    TOK_DECODER_BYTELEVEL,
    TOK_DECODER_METASPACE,
};

struct bert_tokenizer {
    enum bert_tokenizer_kind kind; /* the model */

    /* Normalizer: BertNormalizer (norm), a sequence of others, or none. */
    struct tok_norm_cfg norm;
    bool bert_normalizer;
    struct tok_normseq normseq;

    enum tok_pretok pretok;
    bool bytelevel_prefix_space, bytelevel_use_regex;
    struct tok_metaspace metaspace;

    struct tok_wordpiece wp;
    struct tok_bpe bpe;
    struct tok_unigram unigram;
    struct tok_added added;

    bool has_template; /* a post-processor adds special tokens */
    struct tok_template single, pair;
    bool zero_type_ids;    /* RobertaProcessing: every type id is 0, specials or not */
    bool trim_offsets;     /* ByteLevel / RobertaProcessing offset trimming */
    bool trim_prefix_space;

    enum tok_decoder decoder;
    char *decoder_prefix; /* WordPiece */
    bool decoder_cleanup;
    struct tok_metaspace decoder_metaspace;
    bool cleanup_spaces; /* transformers' clean_up_tokenization_spaces */

    /* Role token strings (NULL: the role is absent); ids resolved at the end. */
    char *unk_token, *sep_token, *pad_token, *cls_token, *mask_token, *bos_token, *eos_token;
    int32_t unk_id, sep_id, pad_id, cls_id, mask_id, bos_id, eos_id;
    int uses_type_ids; /* -1: decided from the template */

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
    char *unk_token, *sep_token, *pad_token, *cls_token, *mask_token, *bos_token, *eos_token;
    char **additional_special;
    size_t n_additional_special;
    int add_prefix_space, trim_offsets; /* byte-level BPE options, -1: absent */
    int uses_type_ids; /* from model_input_names, -1: absent */
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

/* RobertaProcessing: <s> $A </s> / <s> $A </s> </s> $B </s>, every type id
 * 0. False when out of memory. */
bool tok_template_roberta(struct bert_tokenizer *tok, int32_t cls_id, int32_t sep_id);

/* BERT's or RoBERTa's template from the cls and sep role tokens, already
 * registered as added tokens. `source` names the file for messages. */
enum bert_status tok_template_from_roles(struct bert_tokenizer *tok, bool roberta,
                                         const char *source, struct bert_error *err);

/* Fill `tok` from vocab.json + merges.txt in `dir`, as transformers'
 * RobertaConverter builds the fast tokenizer (byte-level BPE, ByteLevel
 * pre-tokenizer and decoder, RobertaProcessing with trimmed offsets, the
 * role tokens as special added tokens, <mask> with lstrip). */
enum bert_status tok_bpe_files_load(const char *vocab_path, const char *merges_path,
                                    const struct tok_hf_config *cfg, struct bert_tokenizer *tok,
                                    struct bert_error *err);

/* The model's id for an exact string, or -1; its string for an id, or NULL;
 * its id range (largest id + 1). */
int32_t tok_model_token_to_id(const struct bert_tokenizer *tok, const char *s, size_t len);
const char *tok_model_id_to_token(const struct bert_tokenizer *tok, int32_t id);
size_t tok_model_size(const struct bert_tokenizer *tok);

/* Normalize text[start, end) with the tokenizer's normalizer into `out`
 * (alignments absolute). False when out of memory. */
bool tok_normalize_segment(const struct bert_tokenizer *tok, const uint8_t *text, size_t start,
                           size_t end, struct tok_normalized *out, struct tok_normseq_work *work);

/* Register a role token as a special added token (id from the vocabulary,
 * or a new id after it, as `tokenizers` assigns them), unless already added;
 * `lstrip` takes the whitespace before it along (RoBERTa's <mask>). False
 * when out of memory. */
bool tok_add_special(struct bert_tokenizer *tok, const char *content, bool lstrip);

/* Last step of every load: build the vocabulary index, normalize added-token
 * patterns, resolve role ids and the vocabulary size. `source` names the
 * file for messages. */
enum bert_status tok_finish(struct bert_tokenizer *tok, const char *source,
                            struct bert_error *err);

/* Release everything `tok` owns (not `tok` itself). */
void tok_release(struct bert_tokenizer *tok);

/* Read a whole file into a malloc'd buffer (caller frees). */
enum bert_status tok_read_file(const char *path, char **out, size_t *len, struct bert_error *err);

/* malloc'd copy of s[0, len), NUL-terminated; NULL when out of memory. */
char *tok_strndup(const char *s, size_t len);

#endif
