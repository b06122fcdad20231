/* Rerank responses: the cross-encoder's one logit per (query, document)
 * pair, as a score, best first. /rerank answers like
 * text-embeddings-inference ([{"index", "score", "text"?}], sigmoid unless
 * "raw_scores"); /v1/rerank like Jina's and Cohere's rerank APIs
 * ({"model", "results": [{"index", "relevance_score", "document"?}],
 * "usage"}), always with the sigmoid, whose 0..1 range their clients expect. */
#include <math.h>
#include <stdlib.h>

#include "json_writer.h"
#include "proto.h"
#include "route_table.h"

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

static void write_document(struct json_writer *w, const struct proto_input *in, bool v1)
{
    if (v1) {
        json_writer_key(w, "document");
        json_writer_begin_object(w);
        json_writer_key(w, "text");
        json_writer_string(w, in->pair, in->pair_len);
        json_writer_end_object(w);
    } else {
        json_writer_key(w, "text");
        json_writer_string(w, in->pair, in->pair_len);
    }
}

static bool render(struct json_writer *w, const struct proto_job *job, bool v1)
{
    const struct proto_request *r = &job->req;
    struct ranked *ranked = malloc((job->n_seqs ? job->n_seqs : 1) * sizeof *ranked);
    if (ranked == NULL)
        return false;
    for (size_t i = 0; i < job->n_seqs; i++) {
        double logit = job->seqs[i].task.logits[0];
        ranked[i].index = i;
        ranked[i].score = r->raw_scores && !v1 ? (float)logit : (float)(1.0 / (1.0 + exp(-logit)));
        if (!isfinite(ranked[i].score)) {
            free(ranked);
            return false;
        }
    }
    qsort(ranked, job->n_seqs, sizeof *ranked, by_score);
    size_t keep = r->top_n && r->top_n < job->n_seqs ? r->top_n : job->n_seqs;

    if (v1) {
        json_writer_begin_object(w);
        json_writer_key(w, "model");
        json_writer_cstring(w, job->model_name ? job->model_name : "");
        json_writer_key(w, "results");
    }
    json_writer_begin_array(w);
    for (size_t k = 0; k < keep; k++) {
        json_writer_begin_object(w);
        json_writer_key(w, "index");
        json_writer_int(w, (int64_t)ranked[k].index);
        json_writer_key(w, v1 ? "relevance_score" : "score");
        json_writer_float(w, ranked[k].score);
        if (r->return_text)
            write_document(w, &r->inputs[ranked[k].index], v1);
        json_writer_end_object(w);
    }
    json_writer_end_array(w);
    if (v1) {
        json_writer_key(w, "usage");
        json_writer_begin_object(w);
        json_writer_key(w, "total_tokens");
        json_writer_int(w, (int64_t)job->n_tokens);
        json_writer_end_object(w);
        json_writer_end_object(w);
    }
    free(ranked);
    return true;
}

bool proto_render_rerank(struct json_writer *w, const struct proto_job *job,
                         const struct bert_model *model)
{
    (void)model;
    return render(w, job, false);
}

bool proto_render_v1_rerank(struct json_writer *w, const struct proto_job *job,
                            const struct bert_model *model)
{
    (void)model;
    return render(w, job, true);
}
