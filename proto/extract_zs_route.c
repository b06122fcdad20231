/* POST /zero-shot-classification: the transformers
 * ZeroShotClassificationPipeline's answer (proto/extract.h) from an NLI
 * *ForSequenceClassification head. A request of n texts and m candidate
 * labels is n x m (premise, hypothesis) pairs, each one sequence of the
 * job (text-major), so all of them batch together; the premise is cut
 * from the right when a pair is over the model's limit ("only_first"). */
#include <stdlib.h>
#include <string.h>

#include "extract.h"
#include "extract_cut.h"
#include "json_writer.h"
#include "proto.h"
#include "proto_internal.h"
#include "route_table.h"

static int entailment_id(const struct bert_model *model)
{
    const struct bert_config *c = &model->config;
    return zs_entailment_id((const char *const *)c->id2label, c->num_labels);
}

bool proto_can_zero_shot(const struct bert_model *model)
{
    return model->can_classify && model->config.num_labels >= 2 && entailment_id(model) >= 0;
}

bool proto_check_zero_shot(const struct proto_request *r, const struct bert_model *model,
                           struct proto_error *err)
{
    if (!model->can_classify || model->config.num_labels < 2) {
        proto_error_set(err, PROTO_ERR_INVALID,
                        "this model cannot classify zero-shot: the checkpoint has no NLI "
                        "classification head (a *ForSequenceClassification with an "
                        "\"entailment\" label)");
        return false;
    }
    if (!proto_can_zero_shot(model)) {
        proto_error_set(err, PROTO_ERR_INVALID,
                        "this model cannot classify zero-shot: none of its labels starts with "
                        "\"entail\" (id2label in config.json names the NLI classes)");
        return false;
    }
    if (r->n_candidate_labels == 0) {
        proto_error_set(err, PROTO_ERR_INVALID, "missing field \"candidate_labels\"");
        return false;
    }
    return true;
}

/* template with "{}" replaced by label: malloc'd, NULL when out of memory. */
static char *hypothesis(const char *template, const char *label, size_t *len)
{
    const char *at = strstr(template, "{}");
    size_t head = (size_t)(at - template), n_label = strlen(label);
    *len = strlen(template) - 2 + n_label;
    char *s = malloc(*len + 1);
    if (s == NULL)
        return NULL;
    memcpy(s, template, head);
    memcpy(s + head, label, n_label);
    strcpy(s + head + n_label, at + 2);
    return s;
}

static bool plan_pair(struct extract_cut *c, size_t i, size_t max_len, struct proto_error *err)
{
    switch (extract_cut_plan(c, 0, max_len, false, 0)) {
    case EXTRACT_CUT_OK:
        return true;
    case EXTRACT_CUT_NO_ROOM:
        proto_error_set(err, PROTO_ERR_TOO_LARGE,
                        "inputs[%zu]: a hypothesis with its special tokens is %zu tokens, which "
                        "leaves no room for the text in the limit of %zu",
                        i, c->whole.n - c->n_part, max_len);
        return false;
    case EXTRACT_CUT_STRIDE: /* no stride: cannot happen */
    case EXTRACT_CUT_NO_MEMORY:
        break;
    }
    proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory");
    return false;
}

bool proto_tokenize_hypotheses(struct proto_job *job, const struct bert_model *model,
                               const struct proto_limits *limits,
                               const struct proto_defaults *defaults, struct proto_error *err)
{
    (void)defaults;
    const struct proto_request *r = &job->req;
    const size_t m = r->n_candidate_labels, n = r->n_inputs * m;
    if (limits->max_client_batch && n > limits->max_client_batch) {
        proto_error_set(err, PROTO_ERR_TOO_LARGE,
                        "too many pairs: %zu texts x %zu candidate labels = %zu, at most %zu are "
                        "allowed per request",
                        r->n_inputs, m, n, limits->max_client_batch);
        return false;
    }
    const size_t max_len = extract_max_tokens(model, limits);
    struct bert_encode_options o = {.add_special_tokens = true};
    struct extract_cut *cuts = calloc(n, sizeof *cuts);
    bool ok = cuts != NULL;
    if (!ok)
        proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory");
    for (size_t k = 0; ok && k < n; k++) {
        const struct proto_input *in = &r->inputs[k / m];
        size_t len;
        char *h = hypothesis(r->hypothesis_template, r->candidate_labels[k % m], &len);
        struct bert_error berr = {0};
        if (h == NULL) {
            proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory");
            ok = false;
        } else if (bert_tokenizer_encode(model->tokenizer, in->text, in->text_len, h, len, &o,
                                         &cuts[k].whole, &berr) != BERT_OK) {
            proto_error_set(err, PROTO_ERR_MALFORMED, "inputs[%zu] with candidate_labels[%zu]: %s",
                            k / m, k % m, berr.message);
            ok = false;
        } else {
            ok = plan_pair(&cuts[k], k / m, max_len, err);
        }
        free(h);
    }
    if (ok)
        ok = extract_cut_to_job(job, cuts, n, model->config.type_vocab_size == 1, err);
    /* Sequences are pairs, text-major: the input of pair k is k / m. */
    for (size_t k = 0; ok && k < job->n_seqs; k++)
        job->seq_input[k] = k / m;
    for (size_t k = 0; cuts && k < n; k++)
        extract_cut_free(&cuts[k]);
    free(cuts);
    return ok;
}

bool proto_render_zero_shot(struct json_writer *w, const struct proto_job *job,
                            const struct bert_model *model)
{
    const struct proto_request *r = &job->req;
    const size_t m = r->n_candidate_labels, classes = model->config.num_labels;
    float *logits = malloc(m * classes * sizeof *logits);
    double *scores = malloc(m * sizeof *scores);
    size_t *order = malloc(m * sizeof *order);
    bool ok = logits && scores && order;
    const int entailment = entailment_id(model);
    ok = ok && entailment >= 0;
    if (r->batched)
        json_writer_begin_array(w);
    for (size_t i = 0; ok && i < r->n_inputs; i++) {
        for (size_t k = 0; k < m; k++)
            memcpy(logits + k * classes, job->seqs[i * m + k].task.logits,
                   classes * sizeof *logits);
        zs_scores(logits, m, classes, entailment, r->multi_label, scores, order);
        json_writer_begin_object(w);
        json_writer_key(w, "sequence");
        json_writer_string(w, r->inputs[i].text, r->inputs[i].text_len);
        json_writer_key(w, "labels");
        json_writer_begin_array(w);
        for (size_t k = 0; k < m; k++)
            json_writer_cstring(w, r->candidate_labels[order[k]]);
        json_writer_end_array(w);
        json_writer_key(w, "scores");
        json_writer_begin_array(w);
        for (size_t k = 0; k < m; k++)
            json_writer_float(w, (float)scores[order[k]]);
        json_writer_end_array(w);
        json_writer_end_object(w);
    }
    if (r->batched)
        json_writer_end_array(w);
    free(logits);
    free(scores);
    free(order);
    return ok && json_writer_ok(w);
}
