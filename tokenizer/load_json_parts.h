/* tokenizer.json components beyond BERT's (load_json_parts.c), read by
 * load_json.c. */
#ifndef BERT_TOK_LOAD_JSON_PARTS_H
#define BERT_TOK_LOAD_JSON_PARTS_H

#include "json_fields.h"

enum bert_status tok_json_bpe_model(const struct tok_json_ctx *c, const json_t *model,
                                    struct tok_bpe *bpe);
enum bert_status tok_json_unigram_model(const struct tok_json_ctx *c, const json_t *model,
                                        struct tok_unigram *u);
/* A normalizer other than BertNormalizer (Sequence included). */
enum bert_status tok_json_normseq(const struct tok_json_ctx *c, const json_t *n,
                                  struct tok_normseq *seq);
enum bert_status tok_json_metaspace(const struct tok_json_ctx *c, const json_t *obj,
                                    const char *what, struct tok_metaspace *m);

#endif
