/* Helpers shared by the proto/ sources; not part of the contract. */
#ifndef PROTO_INTERNAL_H
#define PROTO_INTERNAL_H

#include <stddef.h>

#include "proto.h"
#include "utf8.h"

/* The route table's types and the functions its rows name: route_table.h. */

/* The longest sequence a job may hold: the tighter of the configured limit
 * and the model's own (0: neither is set). */
size_t proto_max_tokens(const struct bert_model *model, const struct proto_limits *limits);

/* How the request's inputs are encoded: specials (unless it says not), at
 * most the limit of proto_max_tokens or the request's own max_tokens when
 * smaller, cut or refused beyond as it and the config say. */
struct bert_encode_options proto_encode_options(const struct proto_request *r,
                                                const struct bert_model *model,
                                                const struct proto_limits *limits,
                                                const struct proto_defaults *defaults);

/* Sequence `enc`, just encoded into the job, made the encoder's input (one
 * token type for models with one) and counted in n_tokens and
 * n_truncated. */
void proto_job_add_encoding(struct proto_job *job, const struct bert_model *model,
                            struct bert_encoding *enc);

/* vLLM's /pooling "task" name -> task; false for any other name
 * (pooling.c). */
bool proto_pooling_task_parse(const char *name, enum proto_pooling_task *out);

/* User text quoted for an error message: at most PROTO_QUOTE_MAX_CHARS
 * characters of it, then "..." when it was longer. */
#define PROTO_QUOTE_MAX_CHARS 64
#define PROTO_QUOTE_SIZE (PROTO_QUOTE_MAX_CHARS * 4 + 8)

/* Write `s` (`len` bytes, any content) into buf as "text" with '"' and '\\'
 * backslash-escaped, control characters and bytes of invalid UTF-8 as \xNN,
 * cut after PROTO_QUOTE_MAX_CHARS characters. Returns buf, for printf. */
const char *proto_quote(char buf[PROTO_QUOTE_SIZE], const char *s, size_t len);

/* Copy `len` bytes of src into dst (capacity cap, always NUL-terminated) with
 * control characters and invalid UTF-8 written as \xNN, so the result is one
 * valid UTF-8 line. Stops early when dst is full. */
void proto_sanitize(char *dst, size_t cap, const char *src, size_t len);

#endif
