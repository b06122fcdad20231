/* Helpers the tokenizer tests share. */
#ifndef TEST_TOKENIZER_UTIL_H
#define TEST_TOKENIZER_UTIL_H

#include "tokenizer.h"

/* A folder ("dir"), a tokenizer.json ("json") or a lowercasing vocab.txt
 * ("vocab"); exits the test when it does not load. */
struct bert_tokenizer *tok_load_or_die(const char *kind, const char *path);

/* bert_tokenizer_encode on NUL-terminated text (and pair, or NULL). */
enum bert_status tok_encode_str(const struct bert_tokenizer *tok, const char *text,
                                const char *pair, const struct bert_encode_options *o,
                                struct bert_encoding *enc, struct bert_error *err);

#endif
