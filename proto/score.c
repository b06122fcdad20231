/* POST /score and /v1/score: vLLM's Score API. Each pair (a text of
 * "text_1", a text of "text_2") gets one score: a cross-encoder's (a
 * one-label classifier) reads the pair as one sequence and answers its
 * logit through the checkpoint's CrossEncoder activation (the sigmoid unless
 * its config names another, as vLLM's score task), or the logit when
 * "use_activation" is false; any
 * other model without a classifier embeds both texts alone and answers
 * their cosine, as vLLM scores with embedding models. The answer is
 * vLLM's {"id", "object": "list", "created", "model", "data": [{"index",
 * "object": "score", "score"}], "usage"}, in the order of the pairs; its
 * head and usage writers serve vLLM's /classify answer too (render.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "json_writer.h"
#include "proto.h"
#include "proto_internal.h"
#include "route_table.h"

static bool cross_encoder(const struct bert_model *model)
{
    return model->can_classify && model->config.num_labels == 1;
}

bool proto_can_score(const struct bert_model *model)
{
    return !model->can_classify || cross_encoder(model);
}

bool proto_check_score(const struct proto_request *r, const struct bert_model *model,
                       struct proto_error *err)
{
    (void)r;
    if (!proto_can_score(model)) {
        proto_error_set(err, PROTO_ERR_INVALID,
                        "this model cannot score pairs: its classifier has %zu labels; a "
                        "cross-encoder has one (a model without a classifier scores by the "
                        "cosine of the two texts' embeddings)",
                        model->config.num_labels);
        return false;
    }
    return true;
}

/* The texts of sequence k and its name in messages. A cross-encoder reads
 * input k's pair; an embedding model reads every first text, then every
 * second, each alone. */
struct score_seq {
    const char *text, *pair;
    size_t text_len, pair_len;
    char name[96];
};

static void seq_texts(const struct proto_request *r, bool cross, size_t k, struct score_seq *s)
{
    const char *first = r->score_names[0], *second = r->score_names[1];
    const size_t n_firsts = r->n_score_firsts;
    memset(s, 0, sizeof *s);
    if (cross) {
        const struct proto_input *in = &r->inputs[k];
        s->text = in->text;
        s->text_len = in->text_len;
        s->pair = in->pair;
        s->pair_len = in->pair_len;
        snprintf(s->name, sizeof s->name, "the pair %s[%zu], %s[%zu]", first,
                 n_firsts == 1 ? 0 : k, second, k);
    } else if (k < n_firsts) {
        s->text = r->inputs[k].text;
        s->text_len = r->inputs[k].text_len;
        snprintf(s->name, sizeof s->name, "%s[%zu]", first, k);
    } else {
        const struct proto_input *in = &r->inputs[k - n_firsts];
        s->text = in->pair;
        s->text_len = in->pair_len;
        snprintf(s->name, sizeof s->name, "%s[%zu]", second, k - n_firsts);
    }
}

static bool encode_failed(const struct bert_model *model, const struct proto_request *r,
                          const struct score_seq *s, const struct bert_encode_options *o,
                          enum bert_status st, const struct bert_error *berr,
                          struct proto_error *err)
{
    if (st == BERT_E_TOO_LONG && !o->truncate) {
        struct bert_encode_options whole = *o;
        whole.max_length = 0;
        struct bert_encoding enc = {0};
        struct bert_error ignored = {0};
        size_t n = bert_tokenizer_encode(model->tokenizer, s->text, s->text_len, s->pair,
                                         s->pair_len, &whole, &enc, &ignored) == BERT_OK
                       ? enc.n
                       : 0;
        bert_encoding_free(&enc);
        proto_error_set(err, PROTO_ERR_TOO_LARGE,
                        "%s is %zu tokens long, more than the limit of %zu; send "
                        "\"truncate_prompt_tokens\": -1 to cut it",
                        s->name, n, o->max_length);
    } else if (st == BERT_E_TOO_LONG) {
        proto_error_set(err, PROTO_ERR_TOO_LARGE, "%s: %s", s->name, berr->message);
    } else if (st == BERT_E_INVALID && r->max_tokens) {
        /* The only length the tokenizer refuses: less than its specials. */
        proto_error_set(err, PROTO_ERR_INVALID,
                        "\"truncate_prompt_tokens\" %u is too few for %s: %s",
                        (unsigned)r->max_tokens, s->name, berr->message);
    } else if (st == BERT_E_INVALID) {
        proto_error_set(err, PROTO_ERR_MALFORMED, "%s: %s", s->name, berr->message);
    } else {
        proto_error_set(err, PROTO_ERR_INTERNAL, "tokenizing %s failed: %s", s->name,
                        berr->message);
    }
    return false;
}

bool proto_tokenize_score(struct proto_job *job, const struct bert_model *model,
                          const struct proto_limits *limits,
                          const struct proto_defaults *defaults, struct proto_error *err)
{
    const struct proto_request *r = &job->req;
    const struct bert_encode_options o = proto_encode_options(r, model, limits, defaults);
    const bool cross = cross_encoder(model);
    const size_t n = cross ? r->n_inputs : r->n_score_firsts + r->n_inputs;
    job->seqs = calloc(n, sizeof *job->seqs);
    if (job->seqs == NULL) {
        proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory for %zu sequences", n);
        return false;
    }
    job->n_seqs = n;
    for (size_t k = 0; k < n; k++) {
        struct score_seq s;
        seq_texts(r, cross, k, &s);
        struct bert_encoding *enc = &job->seqs[k].enc;
        struct bert_error berr = {0};
        enum bert_status st = bert_tokenizer_encode(model->tokenizer, s.text, s.text_len, s.pair,
                                                    s.pair_len, &o, enc, &berr);
        if (st != BERT_OK)
            return encode_failed(model, r, &s, &o, st, &berr, err);
        proto_job_add_encoding(job, model, enc);
    }
    return true;
}

bool proto_setup_score(struct proto_job *job, const struct bert_model *model,
                       const struct proto_limits *limits, const struct proto_defaults *defaults,
                       struct proto_error *err)
{
    return cross_encoder(model) ? proto_setup_classify(job, model, limits, defaults, err)
                                : proto_setup_embed(job, model, limits, defaults, err);
}

/* Pair i's score; false when it is not a number JSON can carry. */
static bool pair_score(const struct proto_job *job, const struct bert_model *model, size_t i,
                       double *score)
{
    const struct proto_request *r = &job->req;
    if (cross_encoder(model)) {
        double logit = job->seqs[i].task.logits[0];
        *score = r->raw_scores ? logit : proto_cross_encoder_score(model, logit);
    } else {
        const float *a = job->seqs[r->n_score_firsts == 1 ? 0 : i].task.embedding;
        const float *b = job->seqs[r->n_score_firsts + i].task.embedding;
        *score = proto_cosine(a, b, model->embed_dims);
    }
    return isfinite(*score);
}

bool proto_render_score(struct json_writer *w, const struct proto_job *job,
                        const struct bert_model *model)
{
    const struct proto_request *r = &job->req;
    json_writer_begin_object(w);
    proto_write_vllm_head(w, job, "score-");
    json_writer_key(w, "data");
    json_writer_begin_array(w);
    for (size_t i = 0; i < r->n_inputs; i++) {
        double score;
        if (!pair_score(job, model, i, &score))
            return false;
        json_writer_begin_object(w);
        json_writer_key(w, "index");
        json_writer_int(w, (int64_t)i);
        json_writer_key(w, "object");
        json_writer_cstring(w, "score");
        json_writer_key(w, "score");
        json_writer_float(w, (float)score);
        json_writer_end_object(w);
    }
    json_writer_end_array(w);
    proto_write_usage(w, job, true);
    json_writer_end_object(w);
    return json_writer_ok(w);
}
