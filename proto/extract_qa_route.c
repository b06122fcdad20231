/* POST /question-answering: the transformers QuestionAnsweringPipeline's
 * answer (4.57, proto/extract.h) from a *ForQuestionAnswering head. Each
 * (question, context) is encoded whole and its context cut into chunks of
 * max_seq_len tokens, doc_stride of them shared by neighbours, as
 * `tokenizers` cuts with truncation "only_second"; every chunk is one
 * sequence of the job, so the chunks of a long context batch together. */
#include <stdlib.h>
#include <string.h>

#include "extract.h"
#include "extract_cut.h"
#include "json_writer.h"
#include "proto.h"
#include "proto_internal.h"
#include "route_table.h"

bool proto_check_question_answering(const struct proto_request *r,
                                    const struct bert_model *model, struct proto_error *err)
{
    (void)r;
    if (!model->can_answer_questions) {
        proto_error_set(err, PROTO_ERR_INVALID,
                        "this model cannot answer questions: the checkpoint has no "
                        "question-answering head (its architecture is %s, not a "
                        "*ForQuestionAnswering)",
                        model->config.architecture[0] ? model->config.architecture : "unnamed");
        return false;
    }
    return true;
}

/* The pipeline's chunk length: max_seq_len, by default the model's limit up
 * to 384; never more than the model takes. */
static bool chunk_length(const struct proto_request *r, size_t limit, size_t *out,
                         struct proto_error *err)
{
    if (r->max_seq_len == 0) {
        *out = limit < 384 ? limit : 384;
        return true;
    }
    if (r->max_seq_len > limit) {
        proto_error_set(err, PROTO_ERR_INVALID,
                        "\"max_seq_len\" %u is more than the %zu tokens this model takes",
                        r->max_seq_len, limit);
        return false;
    }
    *out = r->max_seq_len;
    return true;
}

static bool plan_input(const struct proto_request *r, size_t i, struct extract_cut *c,
                       size_t max_seq, size_t stride, struct proto_error *err)
{
    size_t question = 0;
    for (size_t k = 0; k < c->whole.n; k++)
        question += c->whole.sequence[k] == 0;
    if (question > r->max_question_len) {
        proto_error_set(err, PROTO_ERR_TOO_LARGE,
                        "inputs[%zu].question is %zu tokens long, more than \"max_question_len\" "
                        "%u",
                        i, question, r->max_question_len);
        return false;
    }
    switch (extract_cut_plan(c, 1, max_seq, true, stride)) {
    case EXTRACT_CUT_OK:
        if (c->n_part > 0)
            return true;
        proto_error_set(err, PROTO_ERR_INVALID,
                        "inputs[%zu].context has no tokens (only characters the tokenizer drops)",
                        i);
        return false;
    case EXTRACT_CUT_NO_ROOM:
        proto_error_set(err, PROTO_ERR_INVALID,
                        "inputs[%zu]: the question and special tokens take %zu of the %zu tokens "
                        "of a chunk (\"max_seq_len\"), leaving no room for the context",
                        i, c->whole.n - c->n_part, max_seq);
        return false;
    case EXTRACT_CUT_STRIDE:
        proto_error_set(err, PROTO_ERR_INVALID,
                        "\"doc_stride\" %zu must be less than the %zu context tokens a chunk "
                        "holds for inputs[%zu]",
                        stride, c->budget, i);
        return false;
    case EXTRACT_CUT_NO_MEMORY:
        break;
    }
    proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory");
    return false;
}

bool proto_tokenize_chunks(struct proto_job *job, const struct bert_model *model,
                           const struct proto_limits *limits,
                           const struct proto_defaults *defaults, struct proto_error *err)
{
    (void)defaults;
    const struct proto_request *r = &job->req;
    size_t max_seq;
    if (!chunk_length(r, extract_max_tokens(model, limits), &max_seq, err))
        return false;
    const size_t stride = r->has_doc_stride ? r->doc_stride : max_seq / 2 < 128 ? max_seq / 2 : 128;
    struct bert_encode_options o = {.add_special_tokens = true};
    struct extract_cut *cuts = calloc(r->n_inputs, sizeof *cuts);
    bool ok = cuts != NULL;
    if (!ok)
        proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory");
    for (size_t i = 0; ok && i < r->n_inputs; i++) {
        const struct proto_input *in = &r->inputs[i];
        struct bert_error berr = {0};
        if (bert_tokenizer_encode(model->tokenizer, in->text, in->text_len, in->pair,
                                  in->pair_len, &o, &cuts[i].whole, &berr) != BERT_OK) {
            proto_error_set(err, PROTO_ERR_MALFORMED, "inputs[%zu]: %s", i, berr.message);
            ok = false;
        } else {
            ok = plan_input(r, i, &cuts[i], max_seq, stride, err);
        }
    }
    if (ok)
        ok = extract_cut_to_job(job, cuts, r->n_inputs, model->config.type_vocab_size == 1, err);
    for (size_t i = 0; cuts && i < r->n_inputs; i++)
        extract_cut_free(&cuts[i]);
    free(cuts);
    return ok;
}

/* A question token's offsets into the question, as the fast tokenizer's
 * Encoding.offsets has them (extract_char_offsets gave it 0, 0): a
 * [CLS]-id token in the question may start a span. */
static void question_offsets(const struct bert_encoding *e, const struct extract_text *q,
                             uint32_t *start, uint32_t *end)
{
    for (size_t j = 0; j < e->n; j++)
        if (e->sequence[j] == 0 && !e->special[j]) {
            start[j] = extract_text_char(q, e->start[j]);
            end[j] = extract_text_char(q, e->stop[j]);
        }
}

/* The chunks of input `i` as qa_postprocess reads them; the token offsets
 * go to *owned. */
static bool input_chunks(const struct proto_job *job, size_t i, const struct extract_text *ctx,
                         const struct extract_text *question, struct qa_window *w, size_t *n_w,
                         uint32_t **owned)
{
    size_t tokens = 0;
    for (size_t s = 0; s < job->n_seqs; s++)
        if (job->seq_input[s] == i)
            tokens += job->seqs[s].enc.n;
    uint32_t *offs = malloc((2 * tokens + 1) * sizeof *offs);
    if (offs == NULL)
        return false;
    *owned = offs;
    *n_w = 0;
    for (size_t s = 0, k = 0; s < job->n_seqs; s++) {
        if (job->seq_input[s] != i)
            continue;
        const struct bert_encoding *e = &job->seqs[s].enc;
        uint32_t *start = offs + k, *end = offs + tokens + k;
        extract_char_offsets(e, 1, ctx, start, end);
        question_offsets(e, question, start, end);
        w[(*n_w)++] = (struct qa_window){e->n, e->ids, e->sequence, e->word, start, end,
                                         job->seqs[s].task.token_logits};
        k += e->n;
    }
    return true;
}

static void write_answer(struct json_writer *w, const struct qa_answer *a,
                         const struct extract_text *ctx)
{
    size_t from, len;
    extract_text_slice(ctx, a->start, a->end, &from, &len);
    json_writer_begin_object(w);
    json_writer_key(w, "score");
    json_writer_float(w, (float)a->score);
    json_writer_key(w, "start");
    json_writer_int(w, a->start);
    json_writer_key(w, "end");
    json_writer_int(w, a->end);
    json_writer_key(w, "answer");
    json_writer_string(w, ctx->s + from, len);
    json_writer_end_object(w);
}

bool proto_render_question_answering(struct json_writer *w, const struct proto_job *job,
                                     const struct bert_model *model)
{
    const struct proto_request *r = &job->req;
    const struct qa_options o = {
        .top_k = r->qa_top_k,
        .max_answer_len = r->max_answer_len,
        .handle_impossible_answer = r->handle_impossible_answer,
        .align_to_words = r->align_to_words,
        .cls_id = bert_tokenizer_cls_id(model->tokenizer),
    };
    struct qa_window *wins = calloc(job->n_seqs ? job->n_seqs : 1, sizeof *wins);
    bool ok = wins != NULL;
    if (r->batched)
        json_writer_begin_array(w);
    for (size_t i = 0; ok && i < r->n_inputs; i++) {
        const struct proto_input *in = &r->inputs[i];
        struct extract_text ctx = {0}, question = {0};
        uint32_t *owned = NULL;
        struct qa_answer *a = NULL;
        size_t n_w = 0, n = 0;
        ok = extract_text_init(&ctx, in->pair, in->pair_len) &&
             extract_text_init(&question, in->text, in->text_len) &&
             input_chunks(job, i, &ctx, &question, wins, &n_w, &owned) &&
             qa_postprocess(&ctx, wins, n_w, &o, &a, &n);
        /* The pipeline answers one answer as an object, more as a list. */
        if (ok && n == 1) {
            write_answer(w, &a[0], &ctx);
        } else if (ok) {
            json_writer_begin_array(w);
            for (size_t k = 0; k < n; k++)
                write_answer(w, &a[k], &ctx);
            json_writer_end_array(w);
        }
        free(a);
        free(owned);
        extract_text_free(&ctx);
        extract_text_free(&question);
    }
    if (r->batched)
        json_writer_end_array(w);
    free(wins);
    return ok && json_writer_ok(w);
}
