/* The extraction routes' post-processing (proto/extract*.c) against the
 * goldens of tests/extraction/make_goldens.py, on the goldens' own logits:
 * every answer must equal the pipeline's (labels, words, offsets, order
 * exactly; scores within 1e-6, the logits being stored to 9 digits).
 *
 * Usage: test_extract_post GOLDEN_DIR TESTS_DATA_DIR [NAME...] */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extract.h"
#include "tokenizer.h"

static int failures;
static double worst_score;
static size_t words_checked, words_skipped;

#define FAIL(...)                                                                                 \
    do {                                                                                          \
        if (failures++ < 20) {                                                                    \
            fprintf(stderr, __VA_ARGS__);                                                         \
            fputc('\n', stderr);                                                                  \
        }                                                                                         \
    } while (0)

/* The tokenizer's decoder on token strings through bert_tokenizer_decode:
 * strings that are not vocabulary tokens (words decoded before, the text of
 * an unknown token) cannot go that way, and are answered NULL_WORD so the
 * comparison skips them. */
static const char NULL_WORD[] = "\x01unchecked";

static char *decode(const void *ctx, const char *const *tokens, size_t n)
{
    return bert_tokenizer_decode_tokens(ctx, tokens, n);
}

static float *floats(json_t *rows, size_t cols, size_t *n_rows)
{
    *n_rows = json_array_size(rows);
    float *out = malloc((*n_rows * cols + 1) * sizeof *out);
    for (size_t i = 0; i < *n_rows; i++)
        for (size_t j = 0; j < cols; j++)
            out[i * cols + j] = (float)json_number_value(json_array_get(json_array_get(rows, i), j));
    return out;
}

static uint32_t *offsets(json_t *win, size_t k)
{
    json_t *o = json_object_get(win, "offsets");
    uint32_t *out = malloc((json_array_size(o) + 1) * sizeof *out);
    for (size_t i = 0; i < json_array_size(o); i++)
        out[i] = (uint32_t)json_integer_value(json_array_get(json_array_get(o, i), k));
    return out;
}

static int32_t *ints(json_t *a)
{
    int32_t *out = malloc((json_array_size(a) + 1) * sizeof *out);
    for (size_t i = 0; i < json_array_size(a); i++)
        out[i] = json_is_null(json_array_get(a, i)) ? -1
                                                    : (int32_t)json_integer_value(json_array_get(a, i));
    return out;
}

static void check_score(const char *where, double got, double want)
{
    double d = fabs(got - want);
    worst_score = fmax(worst_score, d);
    if (d > 1e-6)
        FAIL("%s: score %.9g, want %.9g", where, got, want);
}

static void check_ner(const char *name, json_t *c, json_t *res, const struct bert_tokenizer *tok,
                      char **labels, size_t n_labels)
{
    json_t *p = json_object_get(res, "parameters"), *want = json_object_get(res, "output");
    const char *text = json_string_value(json_object_get(c, "inputs"));
    struct extract_text t;
    extract_text_init(&t, text, strlen(text));
    json_t *wins = json_object_get(c, "windows"), *logits = json_object_get(c, "logits");
    size_t nw = json_array_size(wins);
    struct ner_window *w = calloc(nw, sizeof *w);
    for (size_t i = 0; i < nw; i++) {
        json_t *win = json_array_get(wins, i);
        size_t rows;
        w[i].ids = ints(json_object_get(win, "ids"));
        w[i].n = json_array_size(json_object_get(win, "ids"));
        const char **toks = malloc(w[i].n * sizeof *toks);
        uint8_t *special = malloc(w[i].n);
        uint32_t *st = offsets(win, 0), *en = offsets(win, 1);
        for (size_t k = 0; k < w[i].n; k++) {
            toks[k] = bert_tokenizer_id_to_token(tok, w[i].ids[k]);
            /* Template specials: [0, 0] offsets at the ends of the window. */
            special[k] = (k == 0 || k == w[i].n - 1) && st[k] == 0 && en[k] == 0;
        }
        w[i].tokens = toks;
        w[i].special = special;
        w[i].start = st;
        w[i].end = en;
        w[i].logits = floats(json_array_get(logits, i), n_labels, &rows);
    }
    const char *strategy = json_string_value(json_object_get(p, "aggregation_strategy"));
    json_t *ig = json_object_get(p, "ignore_labels");
    const char *def_ignore[] = {"O"};
    const char **ignore = def_ignore;
    size_t n_ignore = 1;
    if (ig) {
        n_ignore = json_array_size(ig);
        ignore = malloc((n_ignore + 1) * sizeof *ignore);
        for (size_t i = 0; i < n_ignore; i++)
            ignore[i] = json_string_value(json_array_get(ig, i));
    }
    struct ner_options o = {0};
    ner_strategy_parse(strategy, &o.strategy);
    o.n_labels = n_labels;
    o.id2label = (const char *const *)labels;
    o.ignore = ignore;
    o.n_ignore = n_ignore;
    o.word_aware = bert_tokenizer_kind(tok) == BERT_TOKENIZER_WORDPIECE;
    o.unk_id = bert_tokenizer_unk_id(tok);
    o.decode = decode;
    o.decode_ctx = tok;
    struct ner_result r;
    ner_postprocess(&t, w, nw, &o, &r);
    char where[200];
    snprintf(where, sizeof where, "%s %.30s %s", name, text, strategy);
    if (r.n != json_array_size(want))
        FAIL("%s: %zu entities, want %zu", where, r.n, json_array_size(want));
    for (size_t i = 0; i < r.n && i < json_array_size(want); i++) {
        json_t *e = json_array_get(want, i);
        const char *label = labels[r.e[i].label];
        bool none = o.strategy == NER_STRATEGY_NONE;
        const char *wl = json_string_value(json_object_get(e, none ? "entity" : "entity_group"));
        if (strcmp(none ? label : ner_group_name(label), wl) != 0)
            FAIL("%s #%zu: label %s, want %s", where, i, label, wl);
        const char *ww = json_string_value(json_object_get(e, "word"));
        if (strcmp(r.e[i].word, NULL_WORD) == 0)
            words_skipped++;
        else if (words_checked++, strcmp(r.e[i].word, ww) != 0)
            FAIL("%s #%zu: word \"%s\", want \"%s\"", where, i, r.e[i].word, ww);
        if (r.e[i].start != json_integer_value(json_object_get(e, "start")) ||
            r.e[i].end != json_integer_value(json_object_get(e, "end")))
            FAIL("%s #%zu: span %u-%u", where, i, r.e[i].start, r.e[i].end);
        if (none && r.e[i].index != json_integer_value(json_object_get(e, "index")))
            FAIL("%s #%zu: index %u", where, i, r.e[i].index);
        check_score(where, r.e[i].score, json_number_value(json_object_get(e, "score")));
    }
    ner_result_free(&r);
    if (ig)
        free(ignore);
    for (size_t i = 0; i < nw; i++) {
        free((void *)w[i].ids);
        free((void *)w[i].tokens);
        free((void *)w[i].special);
        free((void *)w[i].start);
        free((void *)w[i].end);
        free((void *)w[i].logits);
    }
    free(w);
    extract_text_free(&t);
}

static void check_qa(const char *name, json_t *c, json_t *res, const struct bert_tokenizer *tok)
{
    json_t *p = json_object_get(res, "parameters"), *want = json_object_get(res, "output");
    const char *context = json_string_value(json_object_get(json_object_get(c, "inputs"), "context"));
    struct extract_text t;
    extract_text_init(&t, context, strlen(context));
    json_t *wins = json_object_get(c, "windows"), *logits = json_object_get(c, "logits");
    size_t nw = json_array_size(wins), rows;
    struct qa_window *w = calloc(nw, sizeof *w);
    for (size_t i = 0; i < nw; i++) {
        json_t *win = json_array_get(wins, i);
        w[i].ids = ints(json_object_get(win, "ids"));
        w[i].n = json_array_size(json_object_get(win, "ids"));
        int32_t *seq = ints(json_object_get(win, "sequence_ids"));
        int32_t *words = ints(json_object_get(win, "word_ids"));
        uint8_t *s8 = malloc(w[i].n);
        uint32_t *wd = malloc(w[i].n * sizeof *wd);
        for (size_t k = 0; k < w[i].n; k++) {
            s8[k] = seq[k] < 0 ? 255 : (uint8_t)seq[k];
            wd[k] = words[k] < 0 ? UINT32_MAX : (uint32_t)words[k];
        }
        free(seq);
        free(words);
        w[i].sequence = s8;
        w[i].word = wd;
        w[i].start = offsets(win, 0);
        w[i].end = offsets(win, 1);
        w[i].logits = floats(json_array_get(logits, i), 2, &rows);
    }
    struct qa_options o = {1, 15, false, true, bert_tokenizer_cls_id(tok)};
    json_t *v;
    if ((v = json_object_get(p, "top_k")))
        o.top_k = (uint32_t)json_integer_value(v);
    if ((v = json_object_get(p, "max_answer_len")))
        o.max_answer_len = (uint32_t)json_integer_value(v);
    if ((v = json_object_get(p, "handle_impossible_answer")))
        o.handle_impossible_answer = json_is_true(v);
    if ((v = json_object_get(p, "align_to_words")))
        o.align_to_words = json_is_true(v);
    struct qa_answer *a;
    size_t n;
    qa_postprocess(&t, w, nw, &o, &a, &n);
    size_t nwant = json_is_array(want) ? json_array_size(want) : 1;
    char where[200], *params = json_dumps(p, JSON_COMPACT);
    snprintf(where, sizeof where, "%s %.40s %s", name,
             json_string_value(json_object_get(json_object_get(c, "inputs"), "question")), params);
    free(params);
    if (n != nwant || (n == 1) != !json_is_array(want))
        FAIL("%s: %zu answers, want %zu", where, n, nwant);
    for (size_t i = 0; i < n && i < nwant; i++) {
        json_t *e = json_is_array(want) ? json_array_get(want, i) : want;
        if (a[i].start != json_integer_value(json_object_get(e, "start")) ||
            a[i].end != json_integer_value(json_object_get(e, "end")))
            FAIL("%s #%zu: span %u-%u, want %s", where, i, a[i].start, a[i].end,
                 json_string_value(json_object_get(e, "answer")));
        check_score(where, a[i].score, json_number_value(json_object_get(e, "score")));
    }
    free(a);
    for (size_t i = 0; i < nw; i++) {
        free((void *)w[i].ids);
        free((void *)w[i].sequence);
        free((void *)w[i].word);
        free((void *)w[i].start);
        free((void *)w[i].end);
        free((void *)w[i].logits);
    }
    free(w);
    extract_text_free(&t);
}

static void check_zs(const char *name, json_t *c, json_t *res, char **labels, size_t n_classes)
{
    json_t *p = json_object_get(res, "parameters"), *want = json_object_get(res, "output");
    json_t *wl = json_object_get(want, "labels"), *ws = json_object_get(want, "scores");
    size_t n = json_array_size(json_object_get(c, "logits")), rows;
    float *lg = malloc((n * n_classes + 1) * sizeof *lg);
    for (size_t i = 0; i < n; i++) {
        float *row = floats(json_array_get(json_object_get(c, "logits"), i), n_classes, &rows);
        memcpy(lg + i * n_classes, row, n_classes * sizeof *row);
        free(row);
    }
    int *ids = malloc(n_classes * sizeof *ids);
    for (size_t i = 0; i < n_classes; i++)
        ids[i] = (int)i;
    int entail = zs_entailment_id((const char *const *)labels, ids, n_classes);
    double *scores = malloc(n * sizeof *scores);
    size_t *order = malloc(n * sizeof *order);
    zs_scores(lg, n, n_classes, entail, json_is_true(json_object_get(p, "multi_label")), scores,
              order);
    /* The labels in request order, as the pipeline parsed them. */
    json_t *cl = json_object_get(json_object_get(c, "parameters"), "candidate_labels");
    char where[160];
    snprintf(where, sizeof where, "%s %.30s", name, json_string_value(json_object_get(c, "inputs")));
    for (size_t i = 0; i < n; i++) {
        const char *got = json_is_array(cl) ? json_string_value(json_array_get(cl, order[i])) : NULL;
        if (got && strcmp(got, json_string_value(json_array_get(wl, i))) != 0)
            FAIL("%s: label #%zu %s, want %s", where, i, got,
                 json_string_value(json_array_get(wl, i)));
        check_score(where, scores[order[i]], json_number_value(json_array_get(ws, i)));
    }
    free(lg);
    free(ids);
    free(scores);
    free(order);
}

static char **split_labels(const char *csv, size_t *n)
{
    char *copy = strdup(csv), *save = NULL;
    char **out = malloc(64 * sizeof *out);
    *n = 0;
    for (char *tokp = strtok_r(copy, ",", &save); tokp && *n < 64; tokp = strtok_r(NULL, ",", &save))
        out[(*n)++] = strdup(tokp);
    free(copy);
    return out;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s GOLDEN_DIR TESTS_DATA_DIR [NAME...]\n", argv[0]);
        return 2;
    }
    const char *all[] = {"bert-ner", "distilbert-ner", "roberta-ner", "xlmr-ner", "electra-ner",
                         "modernbert-ner", "bert-qa", "distilbert-qa", "roberta-qa", "electra-qa",
                         "modernbert-qa", "roberta-nli", "bert-nli", "distilbert-nli",
                         "electra-nli", "modernbert-nli"};
    const char **names = argc > 3 ? (const char **)argv + 3 : all;
    size_t n_names = argc > 3 ? (size_t)argc - 3 : sizeof all / sizeof all[0];
    for (size_t f = 0; f < n_names; f++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.json", argv[1], names[f]);
        json_error_t jerr;
        json_t *g = json_load_file(path, 0, &jerr);
        if (g == NULL) {
            FAIL("%s: %s", path, jerr.text);
            continue;
        }
        snprintf(path, sizeof path, "%s/%s/tokenizer.json", argv[2],
                 json_string_value(json_object_get(g, "tokenizer")));
        struct bert_tokenizer *tok;
        struct bert_error err;
        if (bert_tokenizer_load_json(path, &tok, &err) != BERT_OK) {
            FAIL("%s: %s", path, err.message);
            json_decref(g);
            continue;
        }
        const char *task = json_string_value(json_object_get(g, "task"));
        json_t *labels_j = json_object_get(json_object_get(g, "init"), "labels");
        size_t n_labels = 0;
        char **labels = json_is_string(labels_j) ? split_labels(json_string_value(labels_j), &n_labels)
                                                 : calloc(1, sizeof *labels);
        size_t idx;
        json_t *c;
        json_array_foreach(json_object_get(g, "cases"), idx, c)
        {
            size_t k;
            json_t *res;
            json_array_foreach(json_object_get(c, "results"), k, res)
            {
                if (strcmp(task, "token-classification") == 0)
                    check_ner(names[f], c, res, tok, labels, n_labels);
                else if (strcmp(task, "question-answering") == 0)
                    check_qa(names[f], c, res, tok);
                else
                    check_zs(names[f], c, res, labels, n_labels);
            }
        }
        for (size_t i = 0; i < n_labels; i++)
            free(labels[i]);
        free(labels);
        bert_tokenizer_free(tok);
        json_decref(g);
        printf("%s: checked\n", names[f]);
    }
    printf("words compared %zu (%zu not decodable through ids, skipped); worst score "
           "difference %.3g; %d failures\n", words_checked, words_skipped, worst_score, failures);
    return failures ? 1 : 0;
}
