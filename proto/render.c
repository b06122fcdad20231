/* A prepared job's results -> the response body of each route. The shapes
 * follow the Hugging Face pipelines (fill-mask, text-classification),
 * text-embeddings-inference (/embed, /tokenize) and OpenAI's embeddings API,
 * so their clients work unchanged. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "json_writer.h"
#include "proto.h"
#include "route_table.h"

/* TEI's /embed: one vector per input. */
bool proto_render_embed(struct json_writer *w, const struct proto_job *job,
                        const struct bert_model *model)
{
    size_t dims = proto_answer_dims(job, model);
    float *cut = malloc(dims * sizeof *cut);
    if (cut == NULL)
        return false;
    json_writer_begin_array(w);
    for (size_t i = 0; i < job->n_seqs; i++) {
        if (!proto_answer_vector(job, model, i, cut)) {
            free(cut);
            return false;
        }
        json_writer_float_array(w, cut, dims);
    }
    json_writer_end_array(w);
    free(cut);
    return true;
}

bool proto_render_openai(struct json_writer *w, const struct proto_job *job,
                         const struct bert_model *model)
{
    size_t dims = proto_answer_dims(job, model);
    float *cut = malloc(dims * sizeof *cut);
    if (cut == NULL)
        return false;
    json_writer_begin_object(w);
    json_writer_key(w, "object");
    json_writer_cstring(w, "list");
    json_writer_key(w, "data");
    json_writer_begin_array(w);
    for (size_t i = 0; i < job->n_seqs; i++) {
        if (!proto_answer_vector(job, model, i, cut)) {
            free(cut);
            return false;
        }
        json_writer_begin_object(w);
        json_writer_key(w, "object");
        json_writer_cstring(w, "embedding");
        json_writer_key(w, "index");
        json_writer_int(w, (int64_t)i);
        json_writer_key(w, "embedding");
        if (job->req.base64)
            proto_write_base64_f32le(w, cut, dims);
        else
            json_writer_float_array(w, cut, dims);
        json_writer_end_object(w);
    }
    free(cut);
    json_writer_end_array(w);
    json_writer_key(w, "model");
    json_writer_cstring(w, job->model_name ? job->model_name : "");
    proto_write_usage(w, job, false);
    json_writer_end_object(w);
    return true;
}

/* One fill-mask prediction: {"score","token","token_str","sequence"} where
 * sequence is the input with this mask replaced and padding removed,
 * decoded without specials only when the input has a single mask (as
 * transformers does, so other masks stay visible). */
static bool render_prediction(struct json_writer *w, const struct bert_tokenizer *tok,
                              const struct proto_seq *seq, size_t mask_pos, int32_t id,
                              float score, int32_t *scratch)
{
    int32_t pad_id = bert_tokenizer_pad_id(tok);
    size_t m = 0;
    for (size_t j = 0; j < seq->enc.n; j++) {
        int32_t v = j == mask_pos ? id : seq->enc.ids[j];
        if (v != pad_id)
            scratch[m++] = v;
    }
    char *sequence = bert_tokenizer_decode(tok, scratch, m, seq->n_masks == 1);
    char *token_str = bert_tokenizer_decode(tok, &id, 1, false);
    bool ok = sequence != NULL && token_str != NULL;
    if (ok) {
        json_writer_begin_object(w);
        json_writer_key(w, "score");
        json_writer_float(w, score);
        json_writer_key(w, "token");
        json_writer_int(w, id);
        json_writer_key(w, "token_str");
        json_writer_cstring(w, token_str);
        json_writer_key(w, "sequence");
        json_writer_cstring(w, sequence);
        json_writer_end_object(w);
    }
    free(sequence);
    free(token_str);
    return ok;
}

bool proto_render_fill_mask(struct json_writer *w, const struct proto_job *job,
                            const struct bert_model *model)
{
    const struct bert_tokenizer *tok = model->tokenizer;
    int32_t mask_id = bert_tokenizer_mask_id(tok);
    size_t longest = 1;
    for (size_t i = 0; i < job->n_seqs; i++)
        if (job->seqs[i].enc.n > longest)
            longest = job->seqs[i].enc.n;
    int32_t *scratch = malloc(longest * sizeof *scratch);
    if (scratch == NULL)
        return false;
    bool ok = true;
    if (job->req.batched)
        json_writer_begin_array(w);
    for (size_t i = 0; i < job->n_seqs && ok; i++) {
        const struct proto_seq *seq = &job->seqs[i];
        const struct bert_seq_task *t = &seq->task;
        /* One mask: its list; several: a list per mask. */
        if (seq->n_masks != 1)
            json_writer_begin_array(w);
        size_t k = 0;
        for (size_t pos = 0; pos < seq->enc.n && ok; pos++) {
            if (seq->enc.ids[pos] != mask_id)
                continue;
            json_writer_begin_array(w);
            for (uint32_t r = 0; r < t->top_k && ok; r++)
                ok = render_prediction(w, tok, seq, pos, t->top_ids[k * t->top_k + r],
                                       t->top_probs[k * t->top_k + r], scratch);
            json_writer_end_array(w);
            k++;
        }
        if (seq->n_masks != 1)
            json_writer_end_array(w);
    }
    if (job->req.batched)
        json_writer_end_array(w);
    free(scratch);
    return ok;
}

/* id2label's name of `label`, or transformers' LABEL_<i>. */
static void write_label(struct json_writer *w, const struct bert_config *cfg, size_t label)
{
    if (cfg->id2label && cfg->id2label[label]) {
        json_writer_cstring(w, cfg->id2label[label]);
    } else {
        char name[32];
        snprintf(name, sizeof name, "LABEL_%zu", label);
        json_writer_cstring(w, name);
    }
}

/* Every input's labels, best first; one list per input, inside a list when
 * the request was a batch or `nest_single`. */
static bool render_labels(struct json_writer *w, const struct proto_job *job,
                          const struct bert_model *model, bool nest_single)
{
    const struct bert_config *cfg = &model->config;
    size_t n = cfg->num_labels;
    enum proto_activation act = job->req.function_to_apply;
    if (act == PROTO_ACTIVATION_DEFAULT)
        act = proto_default_activation(cfg);
    float *scores = malloc((n ? n : 1) * sizeof *scores);
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    bool ok = scores != NULL && order != NULL;
    size_t keep = job->req.classify_top_k && job->req.classify_top_k < n ? job->req.classify_top_k
                                                                         : n;
    bool nest = job->req.batched || nest_single;
    if (nest)
        json_writer_begin_array(w);
    for (size_t i = 0; i < job->n_seqs && ok; i++) {
        proto_activate(act, job->seqs[i].task.logits, n, scores);
        /* Insertion sort: stable, so equal scores keep label order. */
        for (size_t a = 0; a < n; a++) {
            size_t b = a;
            while (b > 0 && scores[order[b - 1]] < scores[a]) {
                order[b] = order[b - 1];
                b--;
            }
            order[b] = a;
        }
        json_writer_begin_array(w);
        for (size_t r = 0; r < keep; r++) {
            size_t label = order[r];
            json_writer_begin_object(w);
            json_writer_key(w, "label");
            write_label(w, cfg, label);
            json_writer_key(w, "score");
            json_writer_float(w, scores[label]);
            json_writer_end_object(w);
        }
        json_writer_end_array(w);
    }
    if (nest)
        json_writer_end_array(w);
    free(scores);
    free(order);
    return ok;
}

/* The Hugging Face Inference API's text-classification answer: a list of
 * label lists even for one text ([[{label, score}, ...]]), the shape its
 * client (@huggingface/inference textClassification) reads. */
bool proto_render_classify(struct json_writer *w, const struct proto_job *job,
                           const struct bert_model *model)
{
    return render_labels(w, job, model, true);
}

/* text-embeddings-inference's /predict: one input answers its list alone,
 * a batch a list of lists. */
bool proto_render_predict(struct json_writer *w, const struct proto_job *job,
                          const struct bert_model *model)
{
    return render_labels(w, job, model, false);
}

/* vLLM's /classify: per input its "label" (the best), "probs" for every
 * label (the activation as the pipeline's default; "use_activation": false
 * the logits) and "num_classes", with vLLM's head and usage. */
bool proto_render_vllm_classify(struct json_writer *w, const struct proto_job *job,
                                const struct bert_model *model)
{
    const struct bert_config *cfg = &model->config;
    const size_t n = cfg->num_labels;
    enum proto_activation act = job->req.raw_scores ? PROTO_ACTIVATION_NONE
                                                    : proto_default_activation(cfg);
    float *probs = malloc((n ? n : 1) * sizeof *probs);
    if (probs == NULL)
        return false;
    json_writer_begin_object(w);
    proto_write_vllm_head(w, job, "classify-");
    json_writer_key(w, "data");
    json_writer_begin_array(w);
    for (size_t i = 0; i < job->n_seqs; i++) {
        proto_activate(act, job->seqs[i].task.logits, n, probs);
        size_t best = 0;
        for (size_t k = 1; k < n; k++)
            best = probs[k] > probs[best] ? k : best;
        json_writer_begin_object(w);
        json_writer_key(w, "index");
        json_writer_int(w, (int64_t)i);
        json_writer_key(w, "label");
        write_label(w, cfg, best);
        json_writer_key(w, "probs");
        json_writer_float_array(w, probs, n);
        json_writer_key(w, "num_classes");
        json_writer_int(w, (int64_t)n);
        json_writer_end_object(w);
    }
    json_writer_end_array(w);
    proto_write_usage(w, job, true);
    json_writer_end_object(w);
    free(probs);
    return json_writer_ok(w);
}

/* /similarity: the cosine of the first input's embedding (the source
 * sentence) with each other's, as sentence-transformers' cos_sim. */
bool proto_render_similarity(struct json_writer *w, const struct proto_job *job,
                             const struct bert_model *model)
{
    size_t dims = model->embed_dims;
    const float *source = job->seqs[0].task.embedding;
    json_writer_begin_array(w);
    for (size_t i = 1; i < job->n_seqs; i++) {
        double cosine = proto_cosine(source, job->seqs[i].task.embedding, dims);
        if (!isfinite(cosine))
            return false;
        json_writer_float(w, (float)cosine);
    }
    json_writer_end_array(w);
    return true;
}

/* text-embeddings-inference's /embed_all: per input, one vector per token
 * (specials included), always in a list. */
bool proto_render_embed_all(struct json_writer *w, const struct proto_job *job,
                            const struct bert_model *model)
{
    size_t H = model->config.hidden_size;
    json_writer_begin_array(w);
    for (size_t i = 0; i < job->n_seqs; i++) {
        const float *rows = job->seqs[i].task.hidden_states;
        json_writer_begin_array(w);
        for (size_t t = 0; t < job->seqs[i].enc.n; t++)
            json_writer_float_array(w, rows + t * H, H);
        json_writer_end_array(w);
    }
    json_writer_end_array(w);
    return true;
}

/* text-embeddings-inference's /embed_sparse: per input, always in a list,
 * the entries above the threshold as {"index", "value"}, by index; never an
 * index past the tokenizer's vocabulary (a checkpoint's padded rows). */
bool proto_render_embed_sparse(struct json_writer *w, const struct proto_job *job,
                               const struct bert_model *model)
{
    size_t V = model->config.vocab_size, n_tok = bert_tokenizer_vocab_size(model->tokenizer);
    if (n_tok < V)
        V = n_tok;
    json_writer_begin_array(w);
    for (size_t i = 0; i < job->n_seqs; i++) {
        const float *v = job->seqs[i].task.sparse;
        if (!(v[0] == v[0])) /* the engine's mark of a non-finite sequence */
            return false;
        json_writer_begin_array(w);
        for (size_t j = 0; j < V; j++) {
            if (!(v[j] > job->req.sparse_threshold))
                continue;
            json_writer_begin_object(w);
            json_writer_key(w, "index");
            json_writer_int(w, (int64_t)j);
            json_writer_key(w, "value");
            json_writer_float(w, v[j]);
            json_writer_end_object(w);
        }
        json_writer_end_array(w);
    }
    json_writer_end_array(w);
    return true;
}

/* text-embeddings-inference's /decode: one string per list of ids, always
 * in a list. */
bool proto_render_decode(struct json_writer *w, const struct proto_job *job,
                         const struct bert_model *model)
{
    json_writer_begin_array(w);
    for (size_t i = 0; i < job->n_seqs; i++) {
        const struct bert_encoding *enc = &job->seqs[i].enc;
        char *text = bert_tokenizer_decode(model->tokenizer, enc->ids, enc->n,
                                           job->req.skip_special_tokens);
        if (text == NULL)
            return false;
        json_writer_cstring(w, text);
        free(text);
    }
    json_writer_end_array(w);
    return true;
}

/* text-embeddings-inference's /tokenize: template specials carry their
 * token text and null offsets; other tokens the input bytes they cover.
 * /replaced-tokens adds each token's "probability" of having been replaced
 * (false when one is not finite). */
static bool render_tokens(struct json_writer *w, const struct proto_job *job,
                          const struct bert_model *model, bool replaced)
{
    json_writer_begin_array(w);
    for (size_t i = 0; i < job->n_seqs; i++) {
        const struct bert_encoding *enc = &job->seqs[i].enc;
        const struct proto_input *in = &job->req.inputs[i];
        json_writer_begin_array(w);
        for (size_t j = 0; j < enc->n; j++) {
            json_writer_begin_object(w);
            json_writer_key(w, "id");
            json_writer_int(w, enc->ids[j]);
            json_writer_key(w, "text");
            bool special = enc->special[j] != 0;
            if (special) {
                const char *t = bert_tokenizer_id_to_token(model->tokenizer, enc->ids[j]);
                json_writer_cstring(w, t ? t : "");
            } else {
                const char *src = enc->sequence[j] == 1 ? in->pair : in->text;
                size_t src_len = enc->sequence[j] == 1 ? in->pair_len : in->text_len;
                size_t start = enc->start[j], stop = enc->stop[j];
                if (src == NULL || stop > src_len || start > stop)
                    start = stop = 0;
                json_writer_string(w, src ? src + start : "", stop - start);
            }
            json_writer_key(w, "special");
            json_writer_bool(w, special);
            json_writer_key(w, "start");
            if (special)
                json_writer_null(w);
            else
                json_writer_int(w, enc->start[j]);
            json_writer_key(w, "stop");
            if (special)
                json_writer_null(w);
            else
                json_writer_int(w, enc->stop[j]);
            if (replaced) {
                const float p = job->seqs[i].task.replaced[j];
                if (!isfinite(p))
                    return false;
                json_writer_key(w, "probability");
                json_writer_float(w, p);
            }
            json_writer_end_object(w);
        }
        json_writer_end_array(w);
    }
    json_writer_end_array(w);
    return true;
}

bool proto_render_tokenize(struct json_writer *w, const struct proto_job *job,
                           const struct bert_model *model)
{
    return render_tokens(w, job, model, false);
}

bool proto_render_replaced(struct json_writer *w, const struct proto_job *job,
                           const struct bert_model *model)
{
    return render_tokens(w, job, model, true);
}

char *proto_job_respond(const struct proto_job *job, const struct bert_model *model,
                        size_t *len)
{
    if (job->req.route >= PROTO_ROUTE_COUNT)
        return NULL;
    struct json_writer w;
    /* Sized once for the common case: about 12 bytes a number. */
    json_writer_init(&w, job->n_seqs * 256 + job->n_outputs * 12 + 256);
    if (!proto_routes[job->req.route].render(&w, job, model)) {
        json_writer_free(&w);
        return NULL;
    }
    return json_writer_finish(&w, len);
}
