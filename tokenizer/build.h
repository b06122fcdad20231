/* The steps every loader shares to assemble a tokenizer: role tokens,
 * post-processor templates, model lookups, and the last step of every load
 * (tok_finish). Private to tokenizer/; called by the loaders and by
 * tokenizer.c, never the other way round. */
#ifndef BERT_TOK_BUILD_H
#define BERT_TOK_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

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

/* malloc'd copy of s[0, len), NUL-terminated; NULL when out of memory. */
char *tok_strndup(const char *s, size_t len);

/* The id of an exact string among the added tokens, then the model's; -1
 * when neither has it. */
int32_t tok_lookup_id(const struct bert_tokenizer *tok, const char *s, size_t len);

#endif
