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

/* User text quoted for an error message: at most PROTO_QUOTE_MAX_CHARS
 * characters of it, then "..." when it was longer. */
#define PROTO_QUOTE_MAX_CHARS 64
#define PROTO_QUOTE_SIZE (PROTO_QUOTE_MAX_CHARS * 4 + 8)

/* Write `s` (`len` bytes, any content) into buf as "text" with '"' and '\\'
 * backslash-escaped, control characters and bytes of invalid UTF-8 as \xNN,
 * cut after PROTO_QUOTE_MAX_CHARS characters. Returns buf, for printf. */
const char *proto_quote(char buf[PROTO_QUOTE_SIZE], const char *s, size_t len);

/* An answer's "id" (Cohere's, vLLM's): `prefix`, then the time and a
 * counter, unique per answer of this process (not a secret). Returns out. */
#define PROTO_ANSWER_ID_SIZE 64
const char *proto_answer_id(char out[PROTO_ANSWER_ID_SIZE], const char *prefix);

/* The cosine of a and b (n numbers each) as sentence-transformers' cos_sim:
 * sums in double; a zero vector gives 0, as torch's eps does. */
double proto_cosine(const float *a, const float *b, size_t n);

/* Embedding answers (render.c). The width answered: "dimensions" (Cohere's
 * "output_dimension"), or the model's. */
size_t proto_answer_dims(const struct proto_job *job, const struct bert_model *model);
/* Sequence i's embedding as answered, into `out` (proto_answer_dims
 * floats): cut to the width asked for and, when the engine made the whole
 * vector unit length, made so again. False for a non-finite one. */
bool proto_answer_vector(const struct proto_job *job, const struct bert_model *model, size_t i,
                         float *out);
/* The base64 of v's little-endian float32 bytes (OpenAI's and Cohere's). */
struct json_writer;
void proto_write_base64_f32le(struct json_writer *w, const float *v, size_t n);

/* vLLM's answers (score.c): "id" (prefix and a unique value), "object":
 * "list", "created" and "model" as keys of the object being written; and
 * its "usage" with every sequence's tokens as the prompt's. */
void proto_write_vllm_head(struct json_writer *w, const struct proto_job *job,
                           const char *prefix);
void proto_write_vllm_usage(struct json_writer *w, const struct proto_job *job);

/* Cohere's meta "api_version": {"version": "1" or "2"}, as a key and value
 * of the object being written (cohere_embed.c; rerank.c uses it too). */
void proto_write_cohere_version(struct json_writer *w, int version);

/* Copy `len` bytes of src into dst (capacity cap, always NUL-terminated) with
 * control characters and invalid UTF-8 written as \xNN, so the result is one
 * valid UTF-8 line. Stops early when dst is full. */
void proto_sanitize(char *dst, size_t cap, const char *src, size_t len);

#endif
