/* The extraction routes' whole chain against tests/extraction's goldens
 * (transformers pipelines over a float64 PyTorch reference): for every
 * golden, the checkpoint bert_synth_write makes from its `bert init`
 * options (checksums), then per input
 *   - the windows: the C tokenizer's whole encoding cut as the pipeline
 *     cuts it (extract_cut_plan), equal token for token to the golden's
 *     (ids, character offsets, QA word ids);
 *   - the logits of every window from the engine (BERT_TASK_TOKENS, or
 *     BERT_TASK_CLASSIFY for the NLI pairs), within 1e-4 of the reference;
 *   - the answers post-processed from the engine's logits
 *     (proto/extract*.c) equal to the pipeline's: labels, words, offsets and
 *     order exactly, scores within 2e-5.
 *
 * Usage: test_extract_golden GOLDEN_DIR TESTS_DATA_DIR WORK_DIR [NAME...] */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bert.h"
#include "check.h"
#include "extract.h"
#include "extract_cut.h"
#include "golden_init.h"
#include "proto.h"

#define LOGIT_TOLERANCE 1e-4
#define SCORE_TOLERANCE 2e-5

static double worst_logit, worst_score;

/* One window the engine ran, with everything the post-processing reads. */
struct win {
    size_t n;
    int32_t *ids, *types;
    uint8_t *special, *sequence;
    uint32_t *word, *start, *end;
    const char **tokens;
    float *logits;
};

struct input {
    struct extract_cut cut;
    struct extract_text text, pair;
    struct win *w;
    size_t n_windows;
};

static char *decode(const void *ctx, const char *const *tokens, size_t n)
{
    return bert_tokenizer_decode_tokens(ctx, tokens, n);
}

static json_t *get(json_t *o, const char *k) { return json_object_get(o, k); }

/* Python's str.format with one "{}" (the templates the goldens use). */
static char *hypothesis(const char *tmpl, const char *label)
{
    const char *at = strstr(tmpl, "{}");
    size_t n = strlen(tmpl) + strlen(label) + 1;
    char *s = golden_xcalloc(n, 1);
    snprintf(s, n, "%.*s%s%s", (int)(at - tmpl), tmpl, label, at + 2);
    return s;
}

/* Encode (text, pair) whole and cut the windows with the routes' own
 * planner: `part` is the sequence cut (0 the text, 1 the pair); has_stride
 * false keeps the first window. */
static void make_windows(const struct bert_model *m, const char *text, const char *pair,
                         uint8_t part, size_t max_len, bool has_stride, size_t stride,
                         size_t width, struct input *in)
{
    struct bert_encode_options o = bert_encode_options_default();
    struct bert_error err;
    CHECK(bert_tokenizer_encode(m->tokenizer, text, strlen(text), pair, pair ? strlen(pair) : 0,
                                &o, &in->cut.whole, &err) == BERT_OK);
    extract_text_init(&in->text, text, strlen(text));
    extract_text_init(&in->pair, pair ? pair : "", pair ? strlen(pair) : 0);
    CHECK(extract_cut_plan(&in->cut, part, max_len, has_stride, stride) == EXTRACT_CUT_OK);
    const struct bert_encoding *e = &in->cut.whole;
    const size_t p0 = in->cut.p0, p1 = p0 + in->cut.n_part, n_part = in->cut.n_part;
    const struct extract_span *sp = in->cut.spans;
    in->n_windows = in->cut.n_windows;
    in->w = golden_xcalloc(in->n_windows, sizeof *in->w);
    for (size_t k = 0; k < in->n_windows; k++) {
        struct win *w = &in->w[k];
        w->n = e->n - n_part + (sp[k].end - sp[k].begin);
        w->ids = golden_xcalloc(w->n, sizeof *w->ids);
        w->types = golden_xcalloc(w->n, sizeof *w->types);
        w->special = golden_xcalloc(w->n, 1);
        w->sequence = golden_xcalloc(w->n, 1);
        w->word = golden_xcalloc(w->n, sizeof *w->word);
        w->start = golden_xcalloc(w->n, sizeof *w->start);
        w->end = golden_xcalloc(w->n, sizeof *w->end);
        w->tokens = golden_xcalloc(w->n, sizeof *w->tokens);
        w->logits = golden_xcalloc(w->n * width, sizeof *w->logits);
        size_t j = 0;
        for (size_t i = 0; i < e->n; i++) {
            if (i >= p0 && i < p1 && (i - p0 < sp[k].begin || i - p0 >= sp[k].end))
                continue;
            const struct extract_text *src = e->sequence[i] == 1 ? &in->pair : &in->text;
            w->ids[j] = e->ids[i];
            w->types[j] = m->config.type_vocab_size == 1 ? 0 : e->type_ids[i];
            w->special[j] = e->special[i];
            w->sequence[j] = e->sequence[i];
            w->word[j] = e->word[i];
            w->start[j] = e->special[i] ? 0 : extract_text_char(src, e->start[i]);
            w->end[j] = e->special[i] ? 0 : extract_text_char(src, e->stop[i]);
            w->tokens[j] = bert_tokenizer_id_to_token(m->tokenizer, e->ids[i]);
            j++;
        }
    }
}

static void free_input(struct input *in)
{
    for (size_t k = 0; k < in->n_windows; k++) {
        struct win *w = &in->w[k];
        free(w->ids);
        free(w->types);
        free(w->special);
        free(w->sequence);
        free(w->word);
        free(w->start);
        free(w->end);
        free(w->tokens);
        free(w->logits);
    }
    free(in->w);
    extract_cut_free(&in->cut);
    extract_text_free(&in->text);
    extract_text_free(&in->pair);
}

/* The golden window against ours, token by token. */
static void check_window(const char *where, const struct win *w, json_t *g)
{
    json_t *ids = get(g, "ids"), *offs = get(g, "offsets"), *words = get(g, "word_ids");
    CHECK_INT_EQ(w->n, json_array_size(ids));
    bool same = w->n == json_array_size(ids);
    for (size_t i = 0; same && i < w->n; i++) {
        same = w->ids[i] == json_integer_value(json_array_get(ids, i));
        if (offs)
            same = same &&
                   w->start[i] == json_integer_value(json_array_get(json_array_get(offs, i), 0)) &&
                   w->end[i] == json_integer_value(json_array_get(json_array_get(offs, i), 1));
        if (words) {
            json_t *wd = json_array_get(words, i);
            same = same && w->word[i] == (json_is_null(wd) ? UINT32_MAX : json_integer_value(wd));
        }
        if (!same)
            fprintf(stderr, "%s: window token %zu differs (id %d, [%u, %u), word %u)\n", where, i,
                    w->ids[i], w->start[i], w->end[i], w->word[i]);
    }
    CHECK(same);
}

/* Run every window of the input through the engine, one batch. */
static void run_windows(const struct bert_model *m, struct bert_scratch *s, struct input *in,
                        bool nli)
{
    size_t total = 0;
    for (size_t k = 0; k < in->n_windows; k++)
        total += in->w[k].n;
    int32_t *ids = golden_xcalloc(total, sizeof *ids), *types = golden_xcalloc(total, sizeof *types);
    size_t *starts = golden_xcalloc(in->n_windows + 1, sizeof *starts);
    struct bert_seq_task *tasks = golden_xcalloc(in->n_windows, sizeof *tasks);
    for (size_t k = 0, at = 0; k < in->n_windows; k++) {
        memcpy(ids + at, in->w[k].ids, in->w[k].n * sizeof *ids);
        memcpy(types + at, in->w[k].types, in->w[k].n * sizeof *types);
        starts[k] = at;
        at += in->w[k].n;
        starts[k + 1] = at;
        tasks[k] = nli ? (struct bert_seq_task){.task = BERT_TASK_CLASSIFY, .logits = in->w[k].logits}
                       : (struct bert_seq_task){.task = BERT_TASK_TOKENS,
                                                .token_logits = in->w[k].logits};
    }
    struct bert_batch b = {in->n_windows, total, ids, types, starts};
    struct bert_error err;
    CHECK(bert_run(m, s, &b, tasks, &err) == BERT_OK);
    free(ids);
    free(types);
    free(starts);
    free(tasks);
}

static void check_logits(const struct win *w, json_t *g, size_t rows, size_t width)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < width; c++) {
            double d = fabs(w->logits[r * width + c] -
                            json_number_value(json_array_get(json_array_get(g, r), c)));
            worst_logit = d > worst_logit ? d : worst_logit;
            CHECK(d <= LOGIT_TOLERANCE);
        }
}

static void check_score(const char *where, double got, json_t *want)
{
    double d = fabs(got - json_number_value(want));
    worst_score = d > worst_score ? d : worst_score;
    if (d > SCORE_TOLERANCE)
        fprintf(stderr, "%s: score %.9g, want %.9g\n", where, got, json_number_value(want));
    CHECK(d <= SCORE_TOLERANCE);
}

static void check_ner(const char *name, const struct bert_model *m, const struct input *in,
                      json_t *res)
{
    json_t *p = get(res, "parameters"), *want = get(res, "output");
    struct ner_window *nw = golden_xcalloc(in->n_windows, sizeof *nw);
    for (size_t k = 0; k < in->n_windows; k++) {
        const struct win *w = &in->w[k];
        nw[k] = (struct ner_window){w->n, w->ids, w->tokens, w->special, w->start, w->end,
                                    w->logits};
    }
    json_t *ig = get(p, "ignore_labels");
    const char *def[] = {"O"}, **ignore = def;
    size_t n_ignore = 1;
    if (ig) {
        n_ignore = json_array_size(ig);
        ignore = golden_xcalloc(n_ignore, sizeof *ignore);
        for (size_t i = 0; i < n_ignore; i++)
            ignore[i] = json_string_value(json_array_get(ig, i));
    }
    struct ner_options o = {.n_labels = m->config.num_labels,
                            .id2label = (const char *const *)m->config.id2label,
                            .ignore = ignore, .n_ignore = n_ignore,
                            .word_aware = bert_tokenizer_kind(m->tokenizer) == BERT_TOKENIZER_WORDPIECE,
                            .unk_id = bert_tokenizer_unk_id(m->tokenizer), .decode = decode,
                            .decode_ctx = m->tokenizer};
    CHECK(ner_strategy_parse(json_string_value(get(p, "aggregation_strategy")), &o.strategy));
    struct ner_result r;
    CHECK(ner_postprocess(&in->text, nw, in->n_windows, &o, &r));
    char where[160];
    snprintf(where, sizeof where, "%s %.30s %s", name, in->text.s,
             json_string_value(get(p, "aggregation_strategy")));
    CHECK_INT_EQ(r.n, json_array_size(want));
    const bool none = o.strategy == NER_STRATEGY_NONE;
    for (size_t i = 0; i < r.n && i < json_array_size(want); i++) {
        json_t *e = json_array_get(want, i);
        const char *label = m->config.id2label[r.e[i].label];
        CHECK_STR_EQ(none ? label : ner_group_name(label),
                     json_string_value(get(e, none ? "entity" : "entity_group")));
        CHECK_STR_EQ(r.e[i].word, json_string_value(get(e, "word")));
        CHECK_INT_EQ(r.e[i].start, json_integer_value(get(e, "start")));
        CHECK_INT_EQ(r.e[i].end, json_integer_value(get(e, "end")));
        if (none)
            CHECK_INT_EQ(r.e[i].index, json_integer_value(get(e, "index")));
        check_score(where, r.e[i].score, get(e, "score"));
    }
    ner_result_free(&r);
    if (ig)
        free(ignore);
    free(nw);
}

static void check_qa(const char *name, const struct bert_model *m, const struct input *in,
                     json_t *res)
{
    json_t *p = get(res, "parameters"), *want = get(res, "output"), *v;
    struct qa_window *qw = golden_xcalloc(in->n_windows, sizeof *qw);
    for (size_t k = 0; k < in->n_windows; k++) {
        const struct win *w = &in->w[k];
        qw[k] = (struct qa_window){w->n, w->ids, w->sequence, w->word, w->start, w->end, w->logits};
    }
    struct qa_options o = {1, 15, false, true, bert_tokenizer_cls_id(m->tokenizer)};
    if ((v = get(p, "top_k")))
        o.top_k = (uint32_t)json_integer_value(v);
    if ((v = get(p, "max_answer_len")))
        o.max_answer_len = (uint32_t)json_integer_value(v);
    if ((v = get(p, "handle_impossible_answer")))
        o.handle_impossible_answer = json_is_true(v);
    if ((v = get(p, "align_to_words")))
        o.align_to_words = json_is_true(v);
    struct qa_answer *a;
    size_t n;
    CHECK(qa_postprocess(&in->pair, qw, in->n_windows, &o, &a, &n));
    size_t n_want = json_is_array(want) ? json_array_size(want) : 1;
    CHECK_INT_EQ(n, n_want);
    CHECK((n == 1) == !json_is_array(want));
    for (size_t i = 0; i < n && i < n_want; i++) {
        json_t *e = json_is_array(want) ? json_array_get(want, i) : want;
        CHECK_INT_EQ(a[i].start, json_integer_value(get(e, "start")));
        CHECK_INT_EQ(a[i].end, json_integer_value(get(e, "end")));
        check_score(name, a[i].score, get(e, "score"));
    }
    free(a);
    free(qw);
}

/* got against want: numbers that are floats (scores) within the
 * tolerance, everything else (labels, words, offsets, order) exactly. */
static void check_json(const char *where, json_t *got, json_t *want)
{
    if (json_is_real(want)) {
        CHECK(json_is_number(got));
        check_score(where, json_number_value(got), want);
    } else if (json_is_array(want)) {
        CHECK(json_is_array(got) && json_array_size(got) == json_array_size(want));
        for (size_t i = 0; json_is_array(got) && i < json_array_size(got) &&
                           i < json_array_size(want); i++)
            check_json(where, json_array_get(got, i), json_array_get(want, i));
    } else if (json_is_object(want)) {
        const char *key;
        json_t *v;
        CHECK(json_is_object(got) && json_object_size(got) == json_object_size(want));
        json_object_foreach(want, key, v)
            check_json(where, get(got, key), v);
    } else if (!json_equal(got, want)) {
        char *g = got ? json_dumps(got, JSON_ENCODE_ANY) : NULL;
        char *w = json_dumps(want, JSON_ENCODE_ANY);
        fprintf(stderr, "%s: got %s, want %s\n", where, g ? g : "nothing", w);
        free(g);
        free(w);
        CHECK(false);
    }
}

/* The same answer through the route: body -> proto_request_parse ->
 * proto_job_prepare -> bert_run -> proto_job_respond, against the golden's
 * JSON (scores as float32 JSON numbers, within the tolerance). Takes `body`. */
static void check_route(const char *name, const struct bert_model *m, struct bert_scratch *s,
                        enum proto_route route, json_t *body, json_t *want)
{
    char *b = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    struct proto_limits limits = {0};
    struct proto_defaults defaults = {.pooling = BERT_POOLING_CLS};
    struct proto_request req;
    struct proto_job job;
    struct proto_error perr;
    bool ok = proto_request_parse(route, b, strlen(b), &limits, &req, &perr) &&
              proto_job_prepare(&job, m, &limits, &defaults, &req, &perr);
    if (!ok) {
        fprintf(stderr, "%s: %s: %s\n", name, b, perr.message);
        CHECK(false);
        free(b);
        return;
    }
    size_t *starts = golden_xcalloc(job.n_seqs + 1, sizeof *starts);
    int32_t *ids = golden_xcalloc(job.n_tokens, sizeof *ids), *types = golden_xcalloc(job.n_tokens, sizeof *types);
    struct bert_seq_task *tasks = golden_xcalloc(job.n_seqs, sizeof *tasks);
    for (size_t i = 0, at = 0; i < job.n_seqs; i++) {
        memcpy(ids + at, job.seqs[i].enc.ids, job.seqs[i].enc.n * sizeof *ids);
        memcpy(types + at, job.seqs[i].enc.type_ids, job.seqs[i].enc.n * sizeof *types);
        tasks[i] = job.seqs[i].task;
        starts[i] = at;
        at += job.seqs[i].enc.n;
        starts[i + 1] = at;
    }
    struct bert_batch batch = {job.n_seqs, job.n_tokens, ids, types, starts};
    struct bert_error err;
    CHECK(bert_run(m, s, &batch, tasks, &err) == BERT_OK);
    size_t len;
    char *out = proto_job_respond(&job, m, &len);
    json_error_t je;
    json_t *got = out ? json_loadb(out, len, 0, &je) : NULL;
    char where[200];
    snprintf(where, sizeof where, "%s route %.60s", name, b);
    CHECK(got != NULL);
    check_json(where, got, want);
    json_decref(got);
    free(out);
    free(starts);
    free(ids);
    free(types);
    free(tasks);
    proto_job_free(&job);
    free(b);
}

/* The case's parameters with the result's on top: the request's. */
static json_t *request_parameters(json_t *c, json_t *res)
{
    json_t *p = json_deep_copy(get(c, "parameters"));
    json_object_update(p, get(res, "parameters"));
    return p;
}

/* Zero-shot: one input per hypothesis, each a single window. */
static void check_zs(const char *name, const struct bert_model *m, struct input *ins,
                     size_t n_labels, json_t *labels, json_t *res)
{
    const size_t C = m->config.num_labels;
    float *lg = golden_xcalloc(n_labels * C, sizeof *lg);
    for (size_t i = 0; i < n_labels; i++)
        memcpy(lg + i * C, ins[i].w[0].logits, C * sizeof *lg);
    int entail = zs_entailment_id((const char *const *)m->config.id2label, C);
    double *scores = golden_xcalloc(n_labels, sizeof *scores);
    size_t *order = golden_xcalloc(n_labels, sizeof *order);
    zs_scores(lg, n_labels, C, entail, json_is_true(get(get(res, "parameters"), "multi_label")),
              scores, order);
    json_t *want = get(res, "output");
    for (size_t i = 0; i < n_labels; i++) {
        CHECK_STR_EQ(json_string_value(json_array_get(labels, order[i])),
                     json_string_value(json_array_get(get(want, "labels"), i)));
        check_score(name, scores[order[i]], json_array_get(get(want, "scores"), i));
    }
    free(lg);
    free(scores);
    free(order);
}

/* The candidate labels as the pipeline parses them: a string is split at
 * commas and stripped, empty parts dropped; a list is taken as is. */
static json_t *parse_labels(json_t *given)
{
    if (json_is_array(given))
        return json_incref(given);
    json_t *out = json_array();
    char *copy = strdup(json_string_value(given)), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ')
            t++;
        size_t n = strlen(t);
        while (n > 0 && t[n - 1] == ' ')
            n--;
        if (n > 0)
            json_array_append_new(out, json_stringn(t, n));
    }
    free(copy);
    return out;
}

static void check_case(const char *name, const char *task, const struct bert_model *m,
                       struct bert_scratch *s, size_t mml, json_t *c)
{
    json_t *in = get(c, "inputs"), *p = get(c, "parameters"), *v;
    json_t *gw = get(c, "windows"), *gl = get(c, "logits");
    if (strcmp(task, "zero-shot-classification") == 0) {
        json_t *labels = parse_labels(get(p, "candidate_labels"));
        const char *tmpl = json_is_string(get(p, "hypothesis_template"))
                               ? json_string_value(get(p, "hypothesis_template"))
                               : "This example is {}.";
        size_t n = json_array_size(labels);
        struct input *ins = golden_xcalloc(n, sizeof *ins);
        for (size_t i = 0; i < n; i++) {
            char *h = hypothesis(tmpl, json_string_value(json_array_get(labels, i)));
            make_windows(m, json_string_value(in), h, 0, mml, false, 0, m->config.num_labels,
                         &ins[i]);
            free(h);
            check_window(name, &ins[i].w[0], json_array_get(gw, i));
            run_windows(m, s, &ins[i], true);
            check_logits(&ins[i].w[0], json_array_get(gl, i), 1, m->config.num_labels);
        }
        size_t k;
        json_t *res;
        json_array_foreach(get(c, "results"), k, res) {
            check_zs(name, m, ins, n, labels, res);
            check_route(name, m, s, PROTO_ROUTE_ZERO_SHOT,
                        json_pack("{s:O, s:o}", "inputs", in, "parameters",
                                  request_parameters(c, res)),
                        get(res, "output"));
        }
        for (size_t i = 0; i < n; i++)
            free_input(&ins[i]);
        free(ins);
        json_decref(labels);
        return;
    }
    const bool qa = strcmp(task, "question-answering") == 0;
    const size_t width = bert_token_head_width(m);
    struct input one = {0};
    if (qa) {
        size_t max_seq = (v = get(p, "max_seq_len")) ? (size_t)json_integer_value(v)
                                                     : (mml < 384 ? mml : 384);
        size_t stride = (v = get(p, "doc_stride")) ? (size_t)json_integer_value(v)
                                                   : (max_seq / 2 < 128 ? max_seq / 2 : 128);
        make_windows(m, json_string_value(get(in, "question")),
                     json_string_value(get(in, "context")), 1, max_seq, true, stride, width, &one);
    } else {
        v = get(p, "stride");
        make_windows(m, json_string_value(in), NULL, 0, mml, v != NULL,
                     v ? (size_t)json_integer_value(v) : 0, width, &one);
    }
    CHECK_INT_EQ(one.n_windows, json_array_size(gw));
    for (size_t k = 0; k < one.n_windows && k < json_array_size(gw); k++)
        check_window(name, &one.w[k], json_array_get(gw, k));
    run_windows(m, s, &one, false);
    for (size_t k = 0; k < one.n_windows && k < json_array_size(gl); k++)
        check_logits(&one.w[k], json_array_get(gl, k), one.w[k].n, width);
    size_t k;
    json_t *res;
    json_array_foreach(get(c, "results"), k, res) {
        if (qa) {
            check_qa(name, m, &one, res);
            check_route(name, m, s, PROTO_ROUTE_QUESTION_ANSWERING,
                        json_pack("{s:O, s:o}", "inputs", in, "parameters",
                                  request_parameters(c, res)),
                        get(res, "output"));
        } else {
            check_ner(name, m, &one, res);
            check_route(name, m, s, PROTO_ROUTE_TOKEN_CLASSIFICATION,
                        json_pack("{s:O, s:o}", "inputs", in, "parameters",
                                  request_parameters(c, res)),
                        get(res, "output"));
        }
    }
    free_input(&one);
}

static void check_golden(const char *dir, const char *data, const char *work, const char *name)
{
    char path[4200], tok_dir[4096], out[4096];
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    json_error_t je;
    json_t *g = json_load_file(path, 0, &je);
    if (g == NULL) {
        fprintf(stderr, "%s: %s\n", path, je.text);
        CHECK(false);
        return;
    }
    snprintf(tok_dir, sizeof tok_dir, "%s/%s", data, json_string_value(get(g, "tokenizer")));
    snprintf(out, sizeof out, "%s/%s", work, name);
    struct bert_synth_options o;
    struct bert_error err = {0};
    struct bert_model *m = NULL;
    if (!golden_synth_options(get(g, "init"), "f32", tok_dir, &o)) {
        CHECK(false);
        json_decref(g);
        return;
    }
    enum bert_status st = bert_synth_write(&o, out, &err);
    bert_config_free(&o.config);
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    if (st != BERT_OK || !golden_check_checksums(name, path, get(g, "checksums")) ||
        bert_model_load(out, &m, &err) != BERT_OK) {
        fprintf(stderr, "%s: %s\n", name, err.message);
        CHECK(false);
        json_decref(g);
        return;
    }
    const char *task = json_string_value(get(g, "task"));
    CHECK(strcmp(task, "token-classification") != 0 || m->can_classify_tokens);
    CHECK(strcmp(task, "question-answering") != 0 || m->can_answer_questions);
    const size_t mml = (size_t)json_integer_value(get(g, "model_max_length"));
    struct bert_scratch *s = bert_scratch_new(m, 8192, mml, 1, &err);
    CHECK(s != NULL);
    size_t i;
    json_t *c;
    json_array_foreach(get(g, "cases"), i, c)
        check_case(name, task, m, s, mml, c);
    printf("%s: %zu inputs; worst logit difference so far %.3g, score %.3g\n", name,
           json_array_size(get(g, "cases")), worst_logit, worst_score);
    bert_scratch_free(s);
    bert_model_free(m);
    json_decref(g);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s GOLDEN_DIR TESTS_DATA_DIR WORK_DIR [NAME...]\n", argv[0]);
        return 2;
    }
    static const char *const all[] = {
        "bert-ner",       "distilbert-ner", "roberta-ner",   "xlmr-ner",       "electra-ner",
        "modernbert-ner", "mpnet-ner",      "jina-ner",      "deberta-ner",    "gte-ner",
        "bert-qa",        "bert-qa-cls",    "distilbert-qa", "roberta-qa",     "electra-qa",
        "modernbert-qa",  "mpnet-qa",       "jina-qa",       "deberta-qa",     "gte-qa",
        "roberta-nli",    "bert-nli",       "distilbert-nli", "electra-nli",   "modernbert-nli",
        "deberta-nli"};
    if (argc > 4)
        for (int i = 4; i < argc; i++)
            check_golden(argv[1], argv[2], argv[3], argv[i]);
    else
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            check_golden(argv[1], argv[2], argv[3], all[i]);
    printf("worst logit difference %.3g (tolerance %g), worst score difference %.3g (%g)\n",
           worst_logit, LOGIT_TOLERANCE, worst_score, SCORE_TOLERANCE);
    return check_exit();
}
