/* POST /v1/embed and /v2/embed: Cohere's embed API, as its clients
 * (cohere-ai's CohereClient.embed and CohereClientV2.embed) read it.
 * v1 without "embedding_types" answers {"id", "embeddings": [[float]],
 * "texts", "meta", "response_type": "embeddings_floats"}; with them, and
 * v2 always, "embeddings" is an object with one list per type asked for
 * ("float", "base64", "binary", "ubinary") and "response_type" is
 * "embeddings_by_type". The binary types are sentence-transformers'
 * quantize_embeddings: one bit per component, set when it is positive,
 * packed most significant bit first, the last byte padded with zeros;
 * "binary" is each byte minus 128 (int8), "ubinary" the byte (uint8). */
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "json_writer.h"
#include "proto.h"
#include "route_table.h"

/* The sign bits of v (n components) packed into ceil(n / 8) bytes. */
static void pack_signs(const float *v, size_t n, unsigned char *bytes)
{
    memset(bytes, 0, (n + 7) / 8);
    for (size_t k = 0; k < n; k++)
        if (v[k] > 0)
            bytes[k / 8] |= (unsigned char)(0x80u >> (k % 8));
}

static void write_packed(struct json_writer *w, const unsigned char *bytes, size_t n, bool sign)
{
    json_writer_begin_array(w);
    for (size_t k = 0; k < n; k++)
        json_writer_int(w, sign ? (int)bytes[k] - 128 : (int)bytes[k]);
    json_writer_end_array(w);
}

/* One list per type asked for, each with every input's embedding: the
 * vectors are cut once into `rows` (n x dims). */
static void write_by_type(struct json_writer *w, const struct proto_job *job, unsigned types,
                          const float *rows, size_t dims, unsigned char *bytes)
{
    static const struct {
        const char *key;
        unsigned bit;
    } order[] = {{"float", PROTO_EMBEDDING_FLOAT},
                 {"base64", PROTO_EMBEDDING_BASE64},
                 {"binary", PROTO_EMBEDDING_BINARY},
                 {"ubinary", PROTO_EMBEDDING_UBINARY}};
    json_writer_begin_object(w);
    for (size_t t = 0; t < sizeof order / sizeof order[0]; t++) {
        if (!(types & order[t].bit))
            continue;
        json_writer_key(w, order[t].key);
        json_writer_begin_array(w);
        for (size_t i = 0; i < job->n_seqs; i++) {
            const float *v = rows + i * dims;
            if (order[t].bit == PROTO_EMBEDDING_FLOAT) {
                json_writer_float_array(w, v, dims);
            } else if (order[t].bit == PROTO_EMBEDDING_BASE64) {
                proto_write_base64_f32le(w, v, dims);
            } else {
                pack_signs(v, dims, bytes);
                write_packed(w, bytes, (dims + 7) / 8, order[t].bit == PROTO_EMBEDDING_BINARY);
            }
        }
        json_writer_end_array(w);
    }
    json_writer_end_object(w);
}

static bool render(struct json_writer *w, const struct proto_job *job,
                   const struct bert_model *model, int version)
{
    const struct proto_request *r = &job->req;
    const size_t dims = proto_answer_dims(job, model);
    float *rows = malloc((job->n_seqs ? job->n_seqs : 1) * dims * sizeof *rows);
    unsigned char *bytes = malloc(dims / 8 + 1);
    bool ok = rows != NULL && bytes != NULL;
    for (size_t i = 0; ok && i < job->n_seqs; i++)
        ok = proto_answer_vector(job, model, i, rows + i * dims);
    if (ok) {
        char id[PROTO_ANSWER_ID_SIZE];
        /* v1 without "embedding_types" is the bare float lists. */
        const bool by_type = version == 2 || r->embedding_types != 0;
        const unsigned types = r->embedding_types ? r->embedding_types : PROTO_EMBEDDING_FLOAT;
        json_writer_begin_object(w);
        json_writer_key(w, "id");
        json_writer_cstring(w, proto_answer_id(id, ""));
        json_writer_key(w, "embeddings");
        if (by_type) {
            write_by_type(w, job, types, rows, dims, bytes);
        } else {
            json_writer_begin_array(w);
            for (size_t i = 0; i < job->n_seqs; i++)
                json_writer_float_array(w, rows + i * dims, dims);
            json_writer_end_array(w);
        }
        json_writer_key(w, "texts");
        json_writer_begin_array(w);
        for (size_t i = 0; i < r->n_inputs; i++)
            json_writer_string(w, r->inputs[i].text, r->inputs[i].text_len);
        json_writer_end_array(w);
        json_writer_key(w, "meta");
        json_writer_begin_object(w);
        proto_write_cohere_version(w, version);
        json_writer_key(w, "billed_units");
        json_writer_begin_object(w);
        json_writer_key(w, "input_tokens");
        json_writer_int(w, (int64_t)job->n_tokens);
        json_writer_end_object(w);
        json_writer_end_object(w);
        json_writer_key(w, "response_type");
        json_writer_cstring(w, by_type ? "embeddings_by_type" : "embeddings_floats");
        json_writer_end_object(w);
    }
    free(rows);
    free(bytes);
    return ok && json_writer_ok(w);
}

bool proto_render_cohere_embed(struct json_writer *w, const struct proto_job *job,
                               const struct bert_model *model)
{
    return render(w, job, model, 1);
}

bool proto_render_cohere_v2_embed(struct json_writer *w, const struct proto_job *job,
                                  const struct bert_model *model)
{
    return render(w, job, model, 2);
}
