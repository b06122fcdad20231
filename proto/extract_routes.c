/* POST /token-classification: the transformers TokenClassificationPipeline's
 * answer (proto/extract.h) from a per-token head. Each text is encoded
 * whole; a text over the model's length is cut into windows (`stride`
 * tokens overlapping, as tokenizers cuts them) or, with `truncate`, to the
 * first window; each window is one sequence of the job, so windows batch
 * with everything else. */
#include <stdlib.h>
#include <string.h>

#include "extract.h"
#include "extract_cut.h"
#include "json_writer.h"
#include "proto.h"
#include "proto_internal.h"
#include "route_table.h"

bool proto_check_token_classification(const struct proto_request *r,
                                      const struct bert_model *model, struct proto_error *err)
{
    if (!model->can_classify_tokens) {
        proto_error_set(err, PROTO_ERR_INVALID,
                        "this model cannot classify tokens: the checkpoint has no "
                        "token-classification head (its architecture is %s, not a "
                        "*ForTokenClassification)",
                        model->config.architecture[0] ? model->config.architecture : "unnamed");
        return false;
    }
    if (r->has_stride && r->ner_strategy == NER_STRATEGY_NONE) {
        proto_error_set(err, PROTO_ERR_INVALID,
                        "\"stride\" needs an \"aggregation_strategy\" other than \"none\" "
                        "(windows are merged by entity)");
        return false;
    }
    return true;
}

bool proto_tokenize_windows(struct proto_job *job, const struct bert_model *model,
                            const struct proto_limits *limits,
                            const struct proto_defaults *defaults, struct proto_error *err)
{
    const struct proto_request *r = &job->req;
    const size_t max_len = extract_max_tokens(model, limits);
    const bool truncate = r->has_truncate ? r->truncate : defaults->truncate;
    /* Specials on, no limit: the whole text (the windows are cut below). */
    struct bert_encode_options o = {.add_special_tokens = true};
    struct extract_cut *cuts = calloc(r->n_inputs, sizeof *cuts);
    bool ok = cuts != NULL;
    if (!ok)
        proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory");
    for (size_t i = 0; ok && i < r->n_inputs; i++) {
        struct bert_error berr = {0};
        const struct proto_input *in = &r->inputs[i];
        struct extract_cut *c = &cuts[i];
        if (bert_tokenizer_encode(model->tokenizer, in->text, in->text_len, NULL, 0, &o,
                                  &c->whole, &berr) != BERT_OK) {
            proto_error_set(err, PROTO_ERR_MALFORMED, "inputs[%zu]: %s", i, berr.message);
            ok = false;
            break;
        }
        if (c->whole.n > max_len && !r->has_stride && !truncate) {
            proto_error_set(err, PROTO_ERR_TOO_LARGE,
                            "inputs[%zu] is %zu tokens long, more than the limit of %zu; send "
                            "\"stride\" to read it in windows or \"truncate\": true to cut it",
                            i, c->whole.n, max_len);
            ok = false;
            break;
        }
        switch (extract_cut_plan(c, 0, max_len, r->has_stride, r->stride)) {
        case EXTRACT_CUT_OK:
            break;
        case EXTRACT_CUT_STRIDE:
            proto_error_set(err, PROTO_ERR_INVALID,
                            "\"stride\" %u must be less than the %zu text tokens a window holds",
                            r->stride, c->budget);
            ok = false;
            break;
        case EXTRACT_CUT_NO_ROOM:
            proto_error_set(err, PROTO_ERR_INVALID,
                            "inputs[%zu]: a window of %zu tokens has no room for text", i,
                            max_len);
            ok = false;
            break;
        case EXTRACT_CUT_NO_MEMORY:
            proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory");
            ok = false;
            break;
        }
    }
    if (ok)
        ok = extract_cut_to_job(job, cuts, r->n_inputs, false, err);
    for (size_t i = 0; cuts && i < r->n_inputs; i++)
        extract_cut_free(&cuts[i]);
    free(cuts);
    return ok;
}

bool proto_setup_tokens(struct proto_job *job, const struct bert_model *model,
                        const struct proto_limits *limits, const struct proto_defaults *defaults,
                        struct proto_error *err)
{
    (void)limits;
    (void)defaults;
    const size_t width = bert_token_head_width(model);
    size_t n = 0;
    for (size_t i = 0; i < job->n_seqs; i++)
        n += job->seqs[i].enc.n * width;
    job->outputs = malloc((n ? n : 1) * sizeof *job->outputs);
    if (job->outputs == NULL) {
        proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory for %zu results", n);
        return false;
    }
    job->n_outputs = n;
    for (size_t i = 0, at = 0; i < job->n_seqs; i++) {
        job->seqs[i].task.task = BERT_TASK_TOKENS;
        job->seqs[i].task.token_logits = job->outputs + at;
        at += job->seqs[i].enc.n * width;
    }
    return true;
}

static char *decode_tokens(const void *ctx, const char *const *tokens, size_t n)
{
    return bert_tokenizer_decode_tokens(ctx, tokens, n);
}

/* The windows of input `i` as the post-processing reads them. */
static bool input_windows(const struct proto_job *job, const struct bert_model *model, size_t i,
                          const struct extract_text *t, struct ner_window *w, size_t *n_w,
                          void **owned)
{
    size_t tokens = 0;
    for (size_t s = 0; s < job->n_seqs; s++)
        if (job->seq_input[s] == i)
            tokens += job->seqs[s].enc.n;
    char *mem = malloc(tokens * (2 * sizeof(uint32_t) + sizeof(char *)) + 1);
    if (mem == NULL)
        return false;
    *owned = mem;
    uint32_t *st = (uint32_t *)mem, *en = st + tokens;
    const char **tk = (const char **)(en + tokens);
    size_t k = 0;
    *n_w = 0;
    for (size_t s = 0; s < job->n_seqs; s++) {
        if (job->seq_input[s] != i)
            continue;
        const struct bert_encoding *e = &job->seqs[s].enc;
        w[*n_w] = (struct ner_window){e->n, e->ids, tk + k, e->special, st + k, en + k,
                                      job->seqs[s].task.token_logits};
        extract_char_offsets(e, 0, t, st + k, en + k);
        for (size_t j = 0; j < e->n; j++, k++)
            tk[k] = bert_tokenizer_id_to_token(model->tokenizer, e->ids[j]);
        (*n_w)++;
    }
    return true;
}

static void write_entity(struct json_writer *w, const struct ner_entity *e, const char *label,
                         bool none)
{
    json_writer_begin_object(w);
    json_writer_key(w, none ? "entity" : "entity_group");
    json_writer_cstring(w, none ? label : ner_group_name(label));
    json_writer_key(w, "score");
    json_writer_float(w, (float)e->score);
    if (none) {
        json_writer_key(w, "index");
        json_writer_int(w, e->index);
    }
    json_writer_key(w, "word");
    json_writer_cstring(w, e->word);
    json_writer_key(w, "start");
    json_writer_int(w, e->start);
    json_writer_key(w, "end");
    json_writer_int(w, e->end);
    json_writer_end_object(w);
}

bool proto_render_token_classification(struct json_writer *w, const struct proto_job *job,
                                       const struct bert_model *model)
{
    const struct proto_request *r = &job->req;
    const char *def[] = {"O"};
    struct ner_options o = {
        .strategy = (enum ner_strategy)r->ner_strategy,
        .n_labels = model->config.num_labels,
        .id2label = (const char *const *)model->config.id2label,
        .ignore = r->ignore_labels ? r->ignore_labels : def,
        .n_ignore = r->ignore_labels ? r->n_ignore_labels : 1,
        .word_aware = bert_tokenizer_kind(model->tokenizer) == BERT_TOKENIZER_WORDPIECE,
        .unk_id = bert_tokenizer_unk_id(model->tokenizer),
        .decode = decode_tokens,
        .decode_ctx = model->tokenizer,
    };
    struct ner_window *wins = calloc(job->n_seqs ? job->n_seqs : 1, sizeof *wins);
    bool ok = wins != NULL;
    if (r->batched)
        json_writer_begin_array(w);
    for (size_t i = 0; ok && i < r->n_inputs; i++) {
        struct extract_text t;
        void *owned = NULL;
        size_t n_w = 0;
        struct ner_result res = {0};
        ok = extract_text_init(&t, r->inputs[i].text, r->inputs[i].text_len) &&
             input_windows(job, model, i, &t, wins, &n_w, &owned) &&
             ner_postprocess(&t, wins, n_w, &o, &res);
        json_writer_begin_array(w);
        for (size_t k = 0; ok && k < res.n; k++)
            write_entity(w, &res.e[k], model->config.id2label[res.e[k].label],
                         o.strategy == NER_STRATEGY_NONE);
        json_writer_end_array(w);
        ner_result_free(&res);
        free(owned);
        extract_text_free(&t);
    }
    if (r->batched)
        json_writer_end_array(w);
    free(wins);
    return ok && json_writer_ok(w);
}
