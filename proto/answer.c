/* Pieces of answers several APIs share (answer.h). */
#include "answer.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json_writer.h"

const char *proto_answer_id(char out[PROTO_ANSWER_ID_SIZE], const char *prefix)
{
    static atomic_uint_fast64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t n = atomic_fetch_add(&counter, 1) + 1;
    snprintf(out, PROTO_ANSWER_ID_SIZE, "%.16s%016llx-%08llx", prefix,
             (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec,
             (unsigned long long)n);
    return out;
}

double proto_cosine(const float *a, const float *b, size_t n)
{
    double dot = 0, aa = 0, bb = 0;
    for (size_t k = 0; k < n; k++) {
        dot += (double)a[k] * b[k];
        aa += (double)a[k] * a[k];
        bb += (double)b[k] * b[k];
    }
    return dot / (fmax(sqrt(aa), 1e-8) * fmax(sqrt(bb), 1e-8));
}

enum proto_activation proto_default_activation(const struct bert_config *cfg)
{
    /* transformers' TextClassificationPipeline.postprocess, in its order. */
    if (cfg->problem_type == BERT_PROBLEM_MULTI_LABEL || cfg->num_labels == 1)
        return PROTO_ACTIVATION_SIGMOID;
    if (cfg->problem_type == BERT_PROBLEM_SINGLE_LABEL || cfg->num_labels > 1)
        return PROTO_ACTIVATION_SOFTMAX;
    return PROTO_ACTIVATION_NONE;
}

void proto_activate(enum proto_activation act, const float *logits, size_t n, float *out)
{
    if (act == PROTO_ACTIVATION_SOFTMAX) {
        double max = logits[0], sum = 0;
        for (size_t i = 1; i < n; i++)
            if (logits[i] > max)
                max = logits[i];
        for (size_t i = 0; i < n; i++)
            sum += exp((double)logits[i] - max);
        for (size_t i = 0; i < n; i++)
            out[i] = (float)(exp((double)logits[i] - max) / sum);
    } else if (act == PROTO_ACTIVATION_SIGMOID) {
        for (size_t i = 0; i < n; i++)
            out[i] = (float)(1.0 / (1.0 + exp(-(double)logits[i])));
    } else {
        memcpy(out, logits, n * sizeof *out);
    }
}

double proto_cross_encoder_score(const struct bert_model *model, double logit)
{
    switch (model->config.ce_activation) {
    case BERT_CE_IDENTITY: return logit;
    case BERT_CE_TANH: return tanh(logit);
    case BERT_CE_SIGMOID: break;
    }
    return 1.0 / (1.0 + exp(-logit));
}

static bool all_finite(const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return false;
    return true;
}

void proto_write_base64_f32le(struct json_writer *w, const float *v, size_t n)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    json_writer_base64(w, v, n * sizeof *v);
#else
    unsigned char *le = malloc(n * 4 + 1);
    if (le == NULL) {
        w->nomem = true;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, &v[i], 4);
        for (int k = 0; k < 4; k++)
            le[4 * i + k] = (unsigned char)(b >> (8 * k));
    }
    json_writer_base64(w, le, n * 4);
    free(le);
#endif
}

/* The first `dims` of `e` into `out`, scaled to unit length when `unit`
 * (sums in double): Matryoshka truncation as sentence-transformers'
 * truncate_dim then normalize. False for a zero or non-finite vector. */
static bool cut_vector(const float *e, size_t dims, bool unit, float *out)
{
    double sq = 0;
    for (size_t k = 0; k < dims; k++)
        sq += (double)e[k] * e[k];
    double scale = unit ? 1.0 / fmax(sqrt(sq), 1e-12) : 1.0; /* torch F.normalize's eps */
    for (size_t k = 0; k < dims; k++)
        out[k] = (float)(e[k] * scale);
    return isfinite(sq);
}

bool proto_unit_vector(const float *v, size_t n, float *out)
{
    return cut_vector(v, n, true, out);
}

size_t proto_answer_dims(const struct proto_job *job, const struct bert_model *model)
{
    return job->req.dimensions ? job->req.dimensions : model->embed_dims;
}

bool proto_answer_vector(const struct proto_job *job, const struct bert_model *model, size_t i,
                         float *out)
{
    const struct bert_seq_task *t = &job->seqs[i].task;
    size_t dims = proto_answer_dims(job, model);
    bool renormalize = t->normalize && dims < model->embed_dims;
    return cut_vector(t->embedding, dims, renormalize, out) && all_finite(out, dims);
}

void proto_write_vllm_head(struct json_writer *w, const struct proto_job *job,
                           const char *prefix)
{
    char id[PROTO_ANSWER_ID_SIZE];
    json_writer_key(w, "id");
    json_writer_cstring(w, proto_answer_id(id, prefix));
    json_writer_key(w, "object");
    json_writer_cstring(w, "list");
    json_writer_key(w, "created");
    json_writer_int(w, (int64_t)time(NULL));
    json_writer_key(w, "model");
    json_writer_cstring(w, job->model_name ? job->model_name : "");
}

void proto_write_usage(struct json_writer *w, const struct proto_job *job, bool vllm)
{
    json_writer_key(w, "usage");
    json_writer_begin_object(w);
    json_writer_key(w, "prompt_tokens");
    json_writer_int(w, (int64_t)job->n_tokens);
    json_writer_key(w, "total_tokens");
    json_writer_int(w, (int64_t)job->n_tokens);
    if (vllm) {
        json_writer_key(w, "completion_tokens");
        json_writer_int(w, 0);
        json_writer_key(w, "prompt_tokens_details");
        json_writer_null(w);
    }
    json_writer_end_object(w);
}

void proto_write_cohere_version(struct json_writer *w, int version)
{
    json_writer_key(w, "api_version");
    json_writer_begin_object(w);
    json_writer_key(w, "version");
    json_writer_cstring(w, version == 2 ? "2" : "1");
    json_writer_end_object(w);
}
