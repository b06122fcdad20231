/* The loaders, one per checkpoint layout: tokenizer.json (load_json.c),
 * vocab.txt with tokenizer_config.json and special_tokens_map.json
 * (load_legacy.c), RoBERTa's vocab.json + merges.txt (load_legacy_bpe.c).
 * Each fills a zeroed `struct bert_tokenizer` with build.h's steps;
 * tokenizer.c picks one and runs tok_finish. Private to tokenizer/. */
#ifndef BERT_TOK_LOADERS_H
#define BERT_TOK_LOADERS_H

#include <stdbool.h>
#include <stddef.h>

#include "internal.h"

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

/* Fill `tok` from vocab.json + merges.txt in `dir`, as transformers'
 * RobertaConverter builds the fast tokenizer (byte-level BPE, ByteLevel
 * pre-tokenizer and decoder, RobertaProcessing with trimmed offsets, the
 * role tokens as special added tokens, <mask> with lstrip). */
enum bert_status tok_bpe_files_load(const char *vocab_path, const char *merges_path,
                                    const struct tok_hf_config *cfg, struct bert_tokenizer *tok,
                                    struct bert_error *err);

#endif
