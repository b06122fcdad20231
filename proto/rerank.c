/* Rerank: the cross-encoder's one logit per (query, document) pair, as a
 * score, best first. /rerank answers like text-embeddings-inference
 * ([{"index", "score", "text"?}], sigmoid unless "raw_scores"); /v1/rerank
 * and /v2/rerank like Cohere's and Jina's rerank APIs ({"id", "results":
 * [{"index", "relevance_score", "document"?}], "meta"}, with Jina's "model"
 * and "usage" beside them), with the checkpoint's CrossEncoder activation
 * as sentence-transformers' rank() and vLLM's /rerank apply it (the
 * sigmoid unless its config names another). The documents of those two are read here too: object
 * documents, Cohere's "rank_fields", "max_tokens_per_doc" and
 * "max_chunks_per_doc". */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "json_writer.h"
#include "proto.h"
#include "proto_internal.h"
#include "route_table.h"

/* --- documents -> sequences -------------------------------------------- */

struct doc_text {
    const char *text;
    size_t len;
    char *owned;    /* the "rank_fields" lines, when composed */
};

/* Cohere v1: the values of "rank_fields", in order, as "field: value"
 * lines (the YAML form Cohere recommends for structured documents). */
static bool compose_fields(const struct proto_request *r, size_t i, struct doc_text *d,
                           struct proto_error *err)
{
    const json_t *doc = r->inputs[i].document;
    size_t cap = 1;
    for (size_t f = 0; f < r->n_rank_fields; f++) {
        const json_t *v = json_object_get(doc, r->rank_fields[f]);
        if (v != NULL && !json_is_string(v)) {
            char q[PROTO_QUOTE_SIZE];
            proto_error_set(err, PROTO_ERR_INVALID,
                            "\"documents[%zu]\" field %s must be a string, got another type", i,
                            proto_quote(q, r->rank_fields[f], strlen(r->rank_fields[f])));
            return false;
        }
        if (v != NULL)
            cap += strlen(r->rank_fields[f]) + 3 + json_string_length(v);
    }
    if (cap == 1) {
        proto_error_set(err, PROTO_ERR_INVALID,
                        "\"documents[%zu]\" has none of the \"rank_fields\"", i);
        return false;
    }
    d->owned = malloc(cap);
    if (d->owned == NULL) {
        proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory");
        return false;
    }
    size_t n = 0;
    for (size_t f = 0; f < r->n_rank_fields; f++) {
        const json_t *v = json_object_get(doc, r->rank_fields[f]);
        if (v == NULL)
            continue;
        size_t klen = strlen(r->rank_fields[f]), vlen = json_string_length(v);
        if (n > 0)
            d->owned[n++] = '\n';
        memcpy(d->owned + n, r->rank_fields[f], klen);
        memcpy(d->owned + n + klen, ": ", 2);
        memcpy(d->owned + n + klen + 2, json_string_value(v), vlen);
        n += klen + 2 + vlen;
    }
    d->text = d->owned;
    d->len = n;
    return true;
}

/* The text document i is ranked on. */
static bool document_text(const struct proto_request *r, size_t i, struct doc_text *d,
                          struct proto_error *err)
{
    const struct proto_input *in = &r->inputs[i];
    memset(d, 0, sizeof *d);
    if (in->document != NULL && r->n_rank_fields > 0)
        return compose_fields(r, i, d, err);
    if (in->pair == NULL) {
        proto_error_set(err, PROTO_ERR_INVALID,
                        "\"documents[%zu]\" must be a string or an object {\"text\": string}, "
                        "got an object without \"text\" (or name its fields in "
                        "\"rank_fields\")",
                        i);
        return false;
    }
    d->text = in->pair;
    d->len = in->pair_len;
    return true;
}

/* One more sequence of input i: (query, doc) encoded with `o`. */
static bool add_sequence(struct proto_job *job, const struct bert_model *model, size_t i,
                         const char *doc, size_t doc_len, const struct bert_encode_options *o,
                         size_t *cap, struct bert_error *berr, enum bert_status *st)
{
    if (job->n_seqs == *cap) {
        size_t grown = *cap * 2;
        struct proto_seq *seqs = realloc(job->seqs, grown * sizeof *seqs);
        if (seqs != NULL)
            job->seqs = seqs;
        size_t *owner = realloc(job->seq_input, grown * sizeof *owner);
        if (owner != NULL)
            job->seq_input = owner;
        if (seqs == NULL || owner == NULL) {
            *st = BERT_E_NOMEM;
            return false;
        }
        memset(job->seqs + *cap, 0, (grown - *cap) * sizeof *seqs);
        *cap = grown;
    }
    const struct proto_request *r = &job->req;
    struct proto_seq *seq = &job->seqs[job->n_seqs];
    *st = bert_tokenizer_encode(model->tokenizer, r->query, r->query_len, doc, doc_len, o,
                                &seq->enc, berr);
    if (*st != BERT_OK) {
        bert_encoding_free(&seq->enc); /* the slot is past n_seqs: nothing else frees it */
        return false;
    }
    proto_job_add_encoding(job, model, &seq->enc);
    job->seq_input[job->n_seqs++] = i;
    return true;
}

/* Cohere v1's "max_chunks_per_doc": a document too long to pair with the
 * query is read in consecutive chunks of its tokens, each paired with the
 * query, at most max_chunks_per_doc of them. */
static bool add_chunks(struct proto_job *job, const struct bert_model *model, size_t i,
                       const struct doc_text *d, size_t whole_n, size_t max_len, size_t *cap,
                       struct proto_error *err)
{
    const struct proto_request *r = &job->req;
    struct bert_encode_options bare = {.add_special_tokens = false};
    struct bert_encoding doc = {0}, query = {0};
    struct bert_error berr = {0};
    enum bert_status st = bert_tokenizer_encode(model->tokenizer, d->text, d->len, NULL, 0, &bare,
                                                &doc, &berr);
    if (st == BERT_OK)
        st = bert_tokenizer_encode(model->tokenizer, r->query, r->query_len, NULL, 0, &bare,
                                   &query, &berr);
    size_t fixed = whole_n - doc.n; /* the query and the template's specials */
    bool ok = st == BERT_OK;
    if (ok && fixed >= max_len) {
        proto_error_set(err, PROTO_ERR_TOO_LARGE,
                        "the query is %zu tokens long: with the specials it leaves no room for "
                        "documents[%zu] within the limit of %zu",
                        query.n, i, max_len);
        ok = false;
    }
    size_t room = ok ? max_len - fixed : 0;
    struct bert_encode_options o = {.add_special_tokens = true, .max_length = max_len,
                                    .truncate = true, .side = BERT_TRUNCATE_RIGHT};
    for (size_t k = 0; ok && k < r->max_chunks_per_doc && k * room < doc.n; k++) {
        size_t first = k * room, last = first + room < doc.n ? first + room - 1 : doc.n - 1;
        size_t from = doc.start[first], to = doc.stop[last];
        ok = add_sequence(job, model, i, d->text + from, to - from, &o, cap, &berr, &st);
    }
    if (!ok && st != BERT_OK)
        proto_error_set(err, st == BERT_E_INVALID ? PROTO_ERR_MALFORMED : PROTO_ERR_INTERNAL,
                        "documents[%zu]: %s", i, berr.message);
    bert_encoding_free(&doc);
    bert_encoding_free(&query);
    return ok;
}

/* Cohere v2's "max_tokens_per_doc": the document's first N tokens. */
static bool cut_document(const struct bert_model *model, size_t i, struct doc_text *d,
                         uint32_t max_tokens, struct proto_error *err)
{
    struct bert_encode_options bare = {.add_special_tokens = false};
    struct bert_encoding doc = {0};
    struct bert_error berr = {0};
    if (bert_tokenizer_encode(model->tokenizer, d->text, d->len, NULL, 0, &bare, &doc, &berr) !=
        BERT_OK) {
        proto_error_set(err, PROTO_ERR_MALFORMED, "documents[%zu]: %s", i, berr.message);
        bert_encoding_free(&doc);
        return false;
    }
    if (doc.n > max_tokens)
        d->len = doc.stop[max_tokens - 1];
    bert_encoding_free(&doc);
    return true;
}

/* One document: its text, cut or chunked, paired with the query. */
static bool tokenize_document(struct proto_job *job, const struct bert_model *model, size_t i,
                              size_t max_len, bool truncate, size_t *cap,
                              struct proto_error *err)
{
    const struct proto_request *r = &job->req;
    struct doc_text d;
    if (!document_text(r, i, &d, err))
        return false;
    bool ok = r->max_tokens_per_doc == 0 || cut_document(model, i, &d, r->max_tokens_per_doc, err);
    struct bert_encode_options whole = {.add_special_tokens = true};
    struct bert_encode_options o = {.add_special_tokens = true, .max_length = max_len,
                                    .truncate = truncate, .side = r->truncation_side};
    struct bert_error berr = {0};
    enum bert_status st = BERT_OK;
    if (ok)
        ok = add_sequence(job, model, i, d.text, d.len, &o, cap, &berr, &st);
    if (!ok && st == BERT_E_TOO_LONG) {
        /* Measure the whole pair: for the message, or to chunk it. */
        struct bert_encoding all = {0};
        ok = bert_tokenizer_encode(model->tokenizer, r->query, r->query_len, d.text, d.len,
                                   &whole, &all, &berr) == BERT_OK;
        if (ok && r->max_chunks_per_doc > 0) {
            ok = add_chunks(job, model, i, &d, all.n, max_len, cap, err);
        } else if (ok) {
            proto_error_set(err, PROTO_ERR_TOO_LARGE,
                            "documents[%zu] is %zu tokens long with the query, more than the "
                            "limit of %zu; send \"truncate\": true to cut it%s",
                            i, all.n, max_len,
                            r->route == PROTO_ROUTE_V1_RERANK
                                ? " or \"max_chunks_per_doc\" to read it in chunks"
                                : "");
            ok = false;
        }
        bert_encoding_free(&all);
        st = BERT_OK;
    }
    if (!ok && st != BERT_OK)
        proto_error_set(err, st == BERT_E_INVALID ? PROTO_ERR_MALFORMED : PROTO_ERR_INTERNAL,
                        "documents[%zu]: %s", i, berr.message);
    free(d.owned);
    return ok;
}

bool proto_tokenize_documents(struct proto_job *job, const struct bert_model *model,
                              const struct proto_limits *limits,
                              const struct proto_defaults *defaults, struct proto_error *err)
{
    const struct proto_request *r = &job->req;
    size_t cap = r->n_inputs ? r->n_inputs : 1;
    job->seqs = calloc(cap, sizeof *job->seqs);
    job->seq_input = calloc(cap, sizeof *job->seq_input);
    if (job->seqs == NULL || job->seq_input == NULL) {
        proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory for %zu documents", r->n_inputs);
        return false;
    }
    size_t max_len = proto_max_tokens(model, limits);
    bool truncate = r->has_truncate ? r->truncate : defaults->truncate;
    for (size_t i = 0; i < r->n_inputs; i++)
        if (!tokenize_document(job, model, i, max_len, truncate, &cap, err))
            return false;
    return true;
}

/* --- answers ----------------------------------------------------------- */

struct ranked {
    size_t index;
    float score;
};

/* Best first; equal scores keep document order. */
static int by_score(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Cohere's "document": the object as given, or {"text"} for a string. */
static void write_document(struct json_writer *w, const struct proto_input *in, bool v1)
{
    if (v1) {
        json_writer_key(w, "document");
        if (in->document != NULL) {
            json_writer_json(w, in->document);
            return;
        }
        json_writer_begin_object(w);
        json_writer_key(w, "text");
        json_writer_string(w, in->pair, in->pair_len);
        json_writer_end_object(w);
    } else {
        json_writer_key(w, "text");
        json_writer_string(w, in->pair, in->pair_len);
    }
}

/* The score a pair's logit is answered as: TEI's /rerank (version 0) the
 * sigmoid, or the logit with "raw_scores"; Cohere's and Jina's shapes the
 * checkpoint's CrossEncoder activation. */
static double answer_score(const struct proto_job *job, const struct bert_model *model,
                           int version, double logit)
{
    if (version > 0)
        return proto_cross_encoder_score(model, logit);
    return job->req.raw_scores ? logit : 1.0 / (1.0 + exp(-logit));
}

/* Each input's score: the best of its sequences (chunks of one document;
 * every activation is increasing, so the best logit's). */
static bool input_scores(const struct proto_job *job, const struct bert_model *model,
                         int version, struct ranked *ranked)
{
    const struct proto_request *r = &job->req;
    for (size_t i = 0; i < r->n_inputs; i++) {
        ranked[i].index = i;
        ranked[i].score = -INFINITY;
    }
    for (size_t s = 0; s < job->n_seqs; s++) {
        double logit = job->seqs[s].task.logits[0];
        float score = (float)answer_score(job, model, version, logit);
        if (!isfinite(score))
            return false;
        size_t i = job->seq_input ? job->seq_input[s] : s;
        if (score > ranked[i].score)
            ranked[i].score = score;
    }
    return true;
}

static bool render(struct json_writer *w, const struct proto_job *job,
                   const struct bert_model *model, int version)
{
    const struct proto_request *r = &job->req;
    size_t n = r->n_inputs;
    struct ranked *ranked = malloc((n ? n : 1) * sizeof *ranked);
    if (ranked == NULL)
        return false;
    if (!input_scores(job, model, version, ranked)) {
        free(ranked);
        return false;
    }
    qsort(ranked, n, sizeof *ranked, by_score);
    size_t keep = r->top_n && r->top_n < n ? r->top_n : n;

    if (version > 0) {
        json_writer_begin_object(w);
        char id[PROTO_ANSWER_ID_SIZE];
        json_writer_key(w, "id");
        json_writer_cstring(w, proto_answer_id(id, ""));
        json_writer_key(w, "model");
        json_writer_cstring(w, job->model_name ? job->model_name : "");
        json_writer_key(w, "results");
    }
    json_writer_begin_array(w);
    for (size_t k = 0; k < keep; k++) {
        json_writer_begin_object(w);
        json_writer_key(w, "index");
        json_writer_int(w, (int64_t)ranked[k].index);
        json_writer_key(w, version > 0 ? "relevance_score" : "score");
        json_writer_float(w, ranked[k].score);
        if (r->return_text)
            write_document(w, &r->inputs[ranked[k].index], version > 0);
        json_writer_end_object(w);
    }
    json_writer_end_array(w);
    if (version > 0) {
        json_writer_key(w, "usage");
        json_writer_begin_object(w);
        json_writer_key(w, "total_tokens");
        json_writer_int(w, (int64_t)job->n_tokens);
        json_writer_end_object(w);
        json_writer_key(w, "meta");
        json_writer_begin_object(w);
        proto_write_cohere_version(w, version);
        json_writer_key(w, "billed_units");
        json_writer_begin_object(w);
        json_writer_key(w, "search_units");
        json_writer_int(w, 1);
        json_writer_end_object(w);
        json_writer_key(w, "tokens");
        json_writer_begin_object(w);
        json_writer_key(w, "input_tokens");
        json_writer_int(w, (int64_t)job->n_tokens);
        json_writer_end_object(w);
        json_writer_end_object(w);
        json_writer_end_object(w);
    }
    free(ranked);
    return true;
}

bool proto_render_rerank(struct json_writer *w, const struct proto_job *job,
                         const struct bert_model *model)
{
    return render(w, job, model, 0);
}

bool proto_render_v1_rerank(struct json_writer *w, const struct proto_job *job,
                            const struct bert_model *model)
{
    return render(w, job, model, 1);
}

bool proto_render_v2_rerank(struct json_writer *w, const struct proto_job *job,
                            const struct bert_model *model)
{
    return render(w, job, model, 2);
}
