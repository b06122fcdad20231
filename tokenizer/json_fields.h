/* Typed reads of tokenizer.json fields, shared by its loader (load_json.c
 * for the document, the WordPiece model and the post-processors;
 * load_json_parts.c for the BPE and Unigram models, normalizers,
 * pre-tokenizers and decoders). Every error names the file and the field. */
#ifndef BERT_TOK_JSON_FIELDS_H
#define BERT_TOK_JSON_FIELDS_H

#include <jansson.h>
#include <stdbool.h>

#include "build.h"
#include "internal.h"

/* Largest accepted id: real vocabularies are far smaller, and the id tables
 * are sized by the largest id. */
#define TOK_JSON_MAX_ID ((1 << 24) - 1)

struct tok_json_ctx {
    const char *path;
    struct bert_error *err;
};

enum bert_status tok_json_fail(const struct tok_json_ctx *c, enum bert_status st,
                               const char *what, const char *detail);

/* Optional boolean member; absent or null gives `dflt`. */
enum bert_status tok_json_bool(const struct tok_json_ctx *c, const json_t *obj, const char *what,
                               const char *key, bool dflt, bool *out);

/* Optional string member; absent or null gives a copy of `dflt` (NULL
 * allowed). *len (may be NULL) receives the length. */
enum bert_status tok_json_string(const struct tok_json_ctx *c, const json_t *obj,
                                 const char *what, const char *key, const char *dflt, char **out,
                                 size_t *len);

enum bert_status tok_json_id(const struct tok_json_ctx *c, const json_t *v, const char *what,
                             int32_t *out);

/* The "type" of an optional component; *type is NULL when it is absent or
 * null. */
enum bert_status tok_json_type(const struct tok_json_ctx *c, const json_t *obj, const char *what,
                               const char **type);

enum bert_status tok_json_unsupported(const struct tok_json_ctx *c, const char *what,
                                      const char *type, const char *supported);

/* model.vocab as an object of token ids, into `v` (built). */
enum bert_status tok_json_vocab(const struct tok_json_ctx *c, const json_t *model,
                                struct tok_vocab *v);

#define TOK_JSON_NORMALIZERS \
    "BertNormalizer, NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace, Prepend, Precompiled " \
    "and a Sequence of those"

#endif
