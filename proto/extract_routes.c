/* POST /token-classification: the transformers TokenClassificationPipeline's
 * answer (proto/extract.h) from a per-token head. Each text is encoded
 * whole; a text over the model's length is cut into windows (`stride`
 * tokens overlapping, as tokenizers cuts them) or, with `truncate`, to the
 * first window; each window is one sequence of the job, so windows batch
 * with everything else. */
#include <stdlib.h>
#include <string.h>

#include "extract.h"
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

/* Copy tokens [from, to) of `e` into `out`. False when out of memory. */
static bool copy_tokens(const struct bert_encoding *e, size_t from, size_t to,
                        struct bert_encoding *out, size_t *at)
{
    for (size_t i = from; i < to; i++) {
        size_t k = (*at)++;
        out->ids[k] = e->ids[i];
        out->type_ids[k] = e->type_ids[i];
        out->start[k] = e->start[i];
        out->stop[k] = e->stop[i];
        out->special[k] = e->special[i];
        out->sequence[k] = e->sequence[i];
        out->word[k] = e->word[i];
    }
    return true;
}

static bool alloc_encoding(struct bert_encoding *e, size_t n)
{
    memset(e, 0, sizeof *e);
    e->ids = malloc(n * sizeof *e->ids);
    e->type_ids = malloc(n * sizeof *e->type_ids);
    e->start = malloc(n * sizeof *e->start);
    e->stop = malloc(n * sizeof *e->stop);
    e->special = malloc(n);
    e->sequence = malloc(n);
    e->word = malloc(n * sizeof *e->word);
    e->n = e->cap = n;
    return e->ids && e->type_ids && e->start && e->stop && e->special && e->sequence && e->word;
}

bool proto_tokenize_windows(struct proto_job *job, const struct bert_model *model,
                            const struct proto_limits *limits,
                            const struct proto_defaults *defaults, struct proto_error *err)
{
    const struct proto_request *r = &job->req;
    size_t max_len = model->max_input_tokens;
    if (limits->max_input_tokens && limits->max_input_tokens < max_len)
        max_len = limits->max_input_tokens;
    const bool truncate = r->has_truncate ? r->truncate : defaults->truncate;
    /* Specials on, no limit: the whole text (the windows are cut below). */
    struct bert_encode_options o = {.add_special_tokens = true};
    struct bert_encoding *whole = calloc(r->n_inputs, sizeof *whole);
    struct extract_span **spans = calloc(r->n_inputs, sizeof *spans);
    size_t *counts = calloc(r->n_inputs, sizeof *counts), total = 0;
    bool ok = whole && spans && counts;
    if (!ok)
        proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory");
    for (size_t i = 0; ok && i < r->n_inputs; i++) {
        struct bert_error berr = {0};
        const struct proto_input *in = &r->inputs[i];
        if (bert_tokenizer_encode(model->tokenizer, in->text, in->text_len, NULL, 0, &o,
                                  &whole[i], &berr) != BERT_OK) {
            proto_error_set(err, PROTO_ERR_MALFORMED, "inputs[%zu]: %s", i, berr.message);
            ok = false;
            break;
        }
        const struct bert_encoding *e = &whole[i];
        size_t specials = 0;
        for (size_t k = 0; k < e->n; k++)
            specials += e->special[k] != 0;
        const size_t n_text = e->n - specials;
        if (e->n > max_len && !r->has_stride && !truncate) {
            proto_error_set(err, PROTO_ERR_TOO_LARGE,
                            "inputs[%zu] is %zu tokens long, more than the limit of %zu; send "
                            "\"stride\" to read it in windows or \"truncate\": true to cut it",
                            i, e->n, max_len);
            ok = false;
            break;
        }
        size_t budget = e->n <= max_len ? n_text : max_len - specials;
        counts[i] = extract_window_count(n_text, budget, r->has_stride, r->stride);
        if (counts[i] == 0) {
            proto_error_set(err, PROTO_ERR_INVALID,
                            "\"stride\" %u must be less than the %zu text tokens a window holds",
                            r->stride, budget);
            ok = false;
            break;
        }
        spans[i] = calloc(counts[i], sizeof **spans);
        if (spans[i] == NULL) {
            proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory");
            ok = false;
            break;
        }
        extract_windows(n_text, budget, r->has_stride, r->stride, spans[i]);
        total += counts[i];
    }
    if (ok) {
        job->seqs = calloc(total ? total : 1, sizeof *job->seqs);
        job->seq_input = calloc(total ? total : 1, sizeof *job->seq_input);
        ok = job->seqs && job->seq_input;
        if (!ok)
            proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory");
    }
    for (size_t i = 0; ok && i < r->n_inputs; i++) {
        const struct bert_encoding *e = &whole[i];
        /* The text's tokens sit between the template's leading and
         * trailing specials. */
        size_t lead = 0;
        while (lead < e->n && e->special[lead])
            lead++;
        size_t n_text = 0;
        for (size_t k = 0; k < e->n; k++)
            n_text += !e->special[k];
        for (size_t w = 0; ok && w < counts[i]; w++) {
            struct proto_seq *seq = &job->seqs[job->n_seqs];
            const size_t len = e->n - n_text + (spans[i][w].end - spans[i][w].begin);
            if (!alloc_encoding(&seq->enc, len)) {
                proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory");
                ok = false;
                break;
            }
            size_t at = 0;
            copy_tokens(e, 0, lead, &seq->enc, &at);
            copy_tokens(e, lead + spans[i][w].begin, lead + spans[i][w].end, &seq->enc, &at);
            copy_tokens(e, lead + n_text, e->n, &seq->enc, &at);
            seq->enc.truncated = !r->has_stride && spans[i][w].end < n_text;
            job->seq_input[job->n_seqs++] = i;
            job->n_tokens += len;
            job->n_truncated += seq->enc.truncated;
        }
    }
    for (size_t i = 0; whole && i < r->n_inputs; i++)
        bert_encoding_free(&whole[i]);
    for (size_t i = 0; spans && i < r->n_inputs; i++)
        free(spans[i]);
    free(whole);
    free(spans);
    free(counts);
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
    const size_t width = bert_token_head_width(model);
    size_t n = 0, tokens = 0;
    for (size_t s = 0; s < job->n_seqs; s++)
        if (job->seq_input[s] == i) {
            n++;
            tokens += job->seqs[s].enc.n;
        }
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
        for (size_t j = 0; j < e->n; j++, k++) {
            tk[k] = bert_tokenizer_id_to_token(model->tokenizer, e->ids[j]);
            st[k] = e->special[j] ? 0 : extract_text_char(t, e->start[j]);
            en[k] = e->special[j] ? 0 : extract_text_char(t, e->stop[j]);
        }
        (*n_w)++;
    }
    (void)width;
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
