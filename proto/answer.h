/* Pieces of answers that several APIs' renderers share: an answer's id,
 * embeddings as answered (cut, renormalised, base64), the cosine of two
 * embeddings, a classifier's activations, and the heads of vLLM's and
 * Cohere's answers. Private to
 * proto/; pure functions over a job's results, any thread. */
#ifndef PROTO_ANSWER_H
#define PROTO_ANSWER_H

#include <stdbool.h>
#include <stddef.h>

#include "proto.h"

struct json_writer;

/* An answer's "id" (Cohere's, vLLM's): `prefix` (at most 16 bytes), then
 * the time and a counter, unique per answer of this process (not a
 * secret). Returns out. */
#define PROTO_ANSWER_ID_SIZE 64
const char *proto_answer_id(char out[PROTO_ANSWER_ID_SIZE], const char *prefix);

/* The cosine of a and b (n numbers each) as sentence-transformers' cos_sim:
 * sums in double; a zero vector gives 0, as torch's eps does. */
double proto_cosine(const float *a, const float *b, size_t n);

/* The width an embedding is answered with: "dimensions" (Cohere's
 * "output_dimension"), or the model's. */
size_t proto_answer_dims(const struct proto_job *job, const struct bert_model *model);
/* Sequence i's embedding as answered, into `out` (proto_answer_dims
 * floats): cut to the width asked for and, when the engine made the whole
 * vector unit length, made so again. False for a non-finite one. */
bool proto_answer_vector(const struct proto_job *job, const struct bert_model *model, size_t i,
                         float *out);
/* v (n numbers) scaled to unit length into out, as torch's F.normalize
 * (sums in double, eps 1e-12). False when v is not finite. */
bool proto_unit_vector(const float *v, size_t n, float *out);
/* The base64 of v's little-endian float32 bytes (OpenAI's and Cohere's). */
void proto_write_base64_f32le(struct json_writer *w, const float *v, size_t n);

/* The activation transformers' text-classification pipeline applies by
 * default: sigmoid for multi-label or one-label checkpoints, softmax for
 * single-label or several labels, else none. */
enum proto_activation proto_default_activation(const struct bert_config *cfg);
/* `act` of n logits into out (softmax and sigmoid in double; NONE copies). */
void proto_activate(enum proto_activation act, const float *logits, size_t n, float *out);

/* A cross-encoder's logit as sentence-transformers' CrossEncoder.predict
 * and vLLM's score task answer it: the checkpoint's activation
 * (config.ce_activation: sigmoid unless its config names another). */
double proto_cross_encoder_score(const struct bert_model *model, double logit);

/* vLLM's answers: "id" (prefix and a unique value), "object": "list",
 * "created" and "model" as keys of the object being written. */
void proto_write_vllm_head(struct json_writer *w, const struct proto_job *job,
                           const char *prefix);
/* OpenAI's "usage", every sequence's tokens as the prompt's, as a key of
 * the object being written; `vllm` adds vLLM's "completion_tokens" (0) and
 * "prompt_tokens_details" (null). */
void proto_write_usage(struct json_writer *w, const struct proto_job *job, bool vllm);

/* Cohere's meta "api_version": {"version": "1" or "2"}, as a key and value
 * of the object being written. */
void proto_write_cohere_version(struct json_writer *w, int version);

#endif
