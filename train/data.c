#include "train_data.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fileutil.h"

static enum bert_status append(struct train_corpus *c, size_t *cap, const int32_t *ids, size_t n,
                               struct bert_error *err)
{
    if (c->n_ids + n > *cap) {
        size_t new_cap = *cap ? *cap : 1 << 16;
        while (new_cap < c->n_ids + n)
            new_cap *= 2;
        int32_t *grown = realloc(c->ids, new_cap * sizeof *grown);
        if (grown == NULL)
            return bert_error_set(err, BERT_E_NOMEM, "out of memory reading the corpus");
        c->ids = grown;
        *cap = new_cap;
    }
    memcpy(c->ids + c->n_ids, ids, n * sizeof *ids);
    c->n_ids += n;
    return BERT_OK;
}

static enum bert_status load_file(struct train_corpus *c, size_t *cap,
                                  const struct bert_tokenizer *tok, const char *path,
                                  struct bert_encoding *enc, struct bert_error *err)
{
    char *text;
    size_t len;
    enum bert_status st = file_read_all(path, &text, &len, err);
    if (st != BERT_OK)
        return st;
    struct bert_encode_options opts = bert_encode_options_default();
    opts.add_special_tokens = false;
    size_t line_no = 0;
    for (char *line = text; st == BERT_OK && line < text + len; line_no++) {
        char *end = memchr(line, '\n', (size_t)(text + len - line));
        size_t n = end ? (size_t)(end - line) : (size_t)(text + len - line);
        st = bert_tokenizer_encode(tok, line, n, NULL, 0, &opts, enc, err);
        if (st == BERT_OK)
            st = append(c, cap, enc->ids, enc->n, err);
        else
            bert_error_set(err, st, "%s:%zu: %s", path, line_no + 1, err->message);
        line = line + n + 1;
    }
    free(text);
    return st;
}

enum bert_status train_corpus_load(struct train_corpus *c, const struct bert_tokenizer *tok,
                                   const char *const *files, size_t n_files, size_t max_len,
                                   struct bert_error *err)
{
    memset(c, 0, sizeof *c);
    c->cls_id = bert_tokenizer_cls_id(tok);
    c->sep_id = bert_tokenizer_sep_id(tok);
    if (c->cls_id < 0 || c->sep_id < 0)
        return bert_error_set(err, BERT_E_INVALID, "the tokenizer has no [CLS] or [SEP] token");
    if (max_len < 3)
        return bert_error_set(err, BERT_E_INVALID, "max length %zu is below 3", max_len);
    c->chunk = max_len - 2;
    struct bert_encoding enc = {0};
    size_t cap = 0;
    enum bert_status st = BERT_OK;
    for (size_t i = 0; i < n_files && st == BERT_OK; i++)
        st = load_file(c, &cap, tok, files[i], &enc, err);
    bert_encoding_free(&enc);
    if (st == BERT_OK && c->n_ids == 0)
        st = bert_error_set(err, BERT_E_INVALID, "the corpus has no tokens");
    if (st != BERT_OK) {
        train_corpus_free(c);
        return st;
    }
    c->n_seqs = (c->n_ids + c->chunk - 1) / c->chunk;
    return BERT_OK;
}

size_t train_corpus_sequence(const struct train_corpus *c, size_t i, int32_t *out)
{
    size_t begin = i * c->chunk;
    size_t n = c->n_ids - begin < c->chunk ? c->n_ids - begin : c->chunk;
    out[0] = c->cls_id;
    memcpy(out + 1, c->ids + begin, n * sizeof *out);
    out[n + 1] = c->sep_id;
    return n + 2;
}

void train_corpus_free(struct train_corpus *c)
{
    free(c->ids);
    memset(c, 0, sizeof *c);
}

/* The label field of one row, `field` (NUL-terminated, any '\r' removed),
 * into *label or target (width floats). Returns a description of what was
 * expected, or NULL when the field is valid. */
static const char *parse_label(char *field, const struct train_label_spec *spec, int32_t *label,
                               float *target)
{
    char *stop;
    *label = 0;
    if (spec->problem == BERT_PROBLEM_REGRESSION) {
        double v = strtod(field, &stop);
        if (stop == field || *stop != '\0' || !isfinite(v) || fabs(v) > 1e30)
            return "a number as the score";
        target[0] = (float)v;
        return NULL;
    }
    if (spec->problem == BERT_PROBLEM_MULTI_LABEL) {
        memset(target, 0, spec->num_labels * sizeof *target);
        if (*field == '\0') /* the empty set */
            return NULL;
        for (char *name = field;;) {
            char *comma = strchr(name, ',');
            size_t len = comma ? (size_t)(comma - name) : strlen(name);
            while (len > 0 && name[0] == ' ')
                name++, len--;
            while (len > 0 && name[len - 1] == ' ')
                len--;
            size_t k = 0;
            while (k < spec->num_labels &&
                   (strlen(spec->names[k]) != len || memcmp(spec->names[k], name, len) != 0))
                k++;
            if (len == 0 || k == spec->num_labels)
                return "label names from --labels separated by ','";
            target[k] = 1.0f;
            if (comma == NULL)
                return NULL;
            name = comma + 1;
        }
    }
    long id = strtol(field, &stop, 10);
    if (stop == field || *stop != '\0' || id < 0 || id > 1000000 ||
        (spec->num_labels > 0 && (size_t)id >= spec->num_labels))
        return "an integer label id in range";
    *label = (int32_t)id;
    return NULL;
}

static size_t target_width(const struct train_label_spec *spec)
{
    if (spec->problem == BERT_PROBLEM_MULTI_LABEL)
        return spec->num_labels;
    return spec->problem == BERT_PROBLEM_REGRESSION ? 1 : 0;
}

/* Room for one more row of `n_tokens` tokens. */
static bool grow_rows(struct train_labeled *d, size_t *rows_cap, size_t *ids_cap, size_t n_ids,
                      size_t n_tokens)
{
    if (d->n + 2 <= *rows_cap && n_ids + n_tokens <= *ids_cap)
        return true;
    *rows_cap = *rows_cap ? 2 * *rows_cap : 1024;
    *ids_cap = 2 * (*ids_cap > n_ids + n_tokens ? *ids_cap : n_ids + n_tokens);
    size_t *start = realloc(d->start, *rows_cap * sizeof *start);
    if (start != NULL)
        d->start = start;
    int32_t *labels = realloc(d->labels, *rows_cap * sizeof *labels);
    if (labels != NULL)
        d->labels = labels;
    float *targets = d->targets;
    if (d->width > 0 && (targets = realloc(d->targets, *rows_cap * d->width * sizeof *targets)))
        d->targets = targets;
    int32_t *ids = realloc(d->ids, *ids_cap * sizeof *ids);
    if (ids != NULL)
        d->ids = ids;
    int32_t *types = realloc(d->types, *ids_cap * sizeof *types);
    if (types != NULL)
        d->types = types;
    return start && labels && (d->width == 0 || targets) && ids && types;
}

enum bert_status train_labeled_load_spec(struct train_labeled *d,
                                         const struct bert_tokenizer *tok, const char *path,
                                         size_t max_len, const struct train_label_spec *spec,
                                         struct bert_error *err)
{
    memset(d, 0, sizeof *d);
    d->width = target_width(spec);
    if (spec->problem == BERT_PROBLEM_MULTI_LABEL && (spec->num_labels == 0 || !spec->names))
        return bert_error_set(err, BERT_E_INVALID, "multi-label data needs the label names");
    char *text;
    size_t len;
    enum bert_status st = file_read_all(path, &text, &len, err);
    if (st != BERT_OK)
        return st;
    struct bert_encode_options opts = bert_encode_options_default();
    opts.max_length = max_len;
    opts.truncate = true;
    struct bert_encoding enc = {0};
    size_t rows_cap = 0, ids_cap = 0, n_ids = 0, line_no = 0;
    int32_t label = 0;
    float target[1];
    float *row_target = d->width > 1 ? malloc(d->width * sizeof *row_target) : target;
    if (row_target == NULL)
        st = bert_error_set(err, BERT_E_NOMEM, "out of memory reading %s", path);
    d->max_label = -1;
    for (char *line = text; st == BERT_OK && line < text + len; line_no++) {
        char *end = memchr(line, '\n', (size_t)(text + len - line));
        size_t n = end ? (size_t)(end - line) : (size_t)(text + len - line);
        char *next = line + n + 1;
        if (n > 0 && line[n - 1] == '\r')
            n--;
        if (line_no == 0 || n == 0) { /* header, blank */
            line = next;
            continue;
        }
        line[n] = '\0';
        char *tab = strrchr(line, '\t');
        const char *expected = tab ? parse_label(tab + 1, spec, &label, row_target)
                                   : "text<TAB>label";
        if (expected != NULL) {
            st = bert_error_set(err, BERT_E_FORMAT, "%s:%zu: expected %s, got \"%.60s\"", path,
                                line_no + 1, expected, tab ? tab + 1 : line);
            break;
        }
        /* A second tab before the label's splits a pair. */
        char *pair = memchr(line, '\t', (size_t)(tab - line));
        const size_t len_a = (size_t)((pair ? pair : tab) - line);
        st = bert_tokenizer_encode(tok, line, len_a, pair ? pair + 1 : NULL,
                                   pair ? (size_t)(tab - pair - 1) : 0, &opts, &enc, err);
        if (st != BERT_OK) {
            bert_error_set(err, st, "%s:%zu: %s", path, line_no + 1, err->message);
            break;
        }
        if (!grow_rows(d, &rows_cap, &ids_cap, n_ids, enc.n)) {
            st = bert_error_set(err, BERT_E_NOMEM, "out of memory reading %s", path);
            break;
        }
        d->start[d->n] = n_ids;
        memcpy(d->ids + n_ids, enc.ids, enc.n * sizeof *enc.ids);
        memcpy(d->types + n_ids, enc.type_ids, enc.n * sizeof *enc.type_ids);
        n_ids += enc.n;
        if (d->width > 0)
            memcpy(d->targets + d->n * d->width, row_target, d->width * sizeof *row_target);
        d->labels[d->n++] = label;
        d->start[d->n] = n_ids;
        d->max_label = label > d->max_label ? label : d->max_label;
        line = next;
    }
    if (row_target != target)
        free(row_target);
    bert_encoding_free(&enc);
    free(text);
    if (st == BERT_OK && d->n == 0)
        st = bert_error_set(err, BERT_E_FORMAT, "%s: no labelled rows", path);
    if (st != BERT_OK)
        train_labeled_free(d);
    return st;
}

enum bert_status train_labeled_load(struct train_labeled *d, const struct bert_tokenizer *tok,
                                    const char *path, size_t max_len, size_t num_labels,
                                    struct bert_error *err)
{
    const struct train_label_spec spec = {BERT_PROBLEM_SINGLE_LABEL, num_labels, NULL};
    return train_labeled_load_spec(d, tok, path, max_len, &spec, err);
}

void train_labeled_free(struct train_labeled *d)
{
    free(d->ids);
    free(d->types);
    free(d->start);
    free(d->labels);
    free(d->targets);
    memset(d, 0, sizeof *d);
}

static double f1_of(size_t tp, size_t fp, size_t fn)
{
    return tp ? 2.0 * (double)tp / (double)(2 * tp + fp + fn) : 0.0;
}

struct train_scores train_score(const int32_t *pred, const int32_t *gold, size_t n, size_t C)
{
    struct train_scores s = {0};
    size_t right = 0;
    for (size_t i = 0; i < n; i++)
        right += pred[i] == gold[i];
    s.accuracy = n ? (double)right / (double)n : 0.0;
    for (size_t c = 0; c < C; c++) {
        size_t tp = 0, fp = 0, fn = 0;
        for (size_t i = 0; i < n; i++) {
            tp += pred[i] == (int32_t)c && gold[i] == (int32_t)c;
            fp += pred[i] == (int32_t)c && gold[i] != (int32_t)c;
            fn += pred[i] != (int32_t)c && gold[i] == (int32_t)c;
        }
        double f1 = f1_of(tp, fp, fn);
        s.macro_f1 += f1 / (double)C;
        if (C == 2 && c == 1)
            s.f1_positive = f1;
    }
    return s;
}

struct train_multi_scores train_score_multi(const float *logits, const float *targets, size_t n,
                                            size_t C)
{
    struct train_multi_scores s = {0};
    size_t tp = 0, fp = 0, fn = 0, exact = 0;
    for (size_t c = 0; c < C; c++) {
        size_t ctp = 0, cfp = 0, cfn = 0;
        for (size_t i = 0; i < n; i++) {
            const bool p = logits[i * C + c] > 0.0f, g = targets[i * C + c] > 0.5f;
            ctp += p && g;
            cfp += p && !g;
            cfn += !p && g;
        }
        s.macro_f1 += f1_of(ctp, cfp, cfn) / (double)C;
        tp += ctp;
        fp += cfp;
        fn += cfn;
    }
    for (size_t i = 0; i < n; i++) {
        size_t c = 0;
        while (c < C && (logits[i * C + c] > 0.0f) == (targets[i * C + c] > 0.5f))
            c++;
        exact += c == C;
    }
    s.micro_f1 = f1_of(tp, fp, fn);
    s.exact_match = n ? (double)exact / (double)n : 0.0;
    return s;
}

static double pearson(const double *x, const double *y, size_t n)
{
    double mx = 0.0, my = 0.0;
    for (size_t i = 0; i < n; i++) {
        mx += x[i];
        my += y[i];
    }
    mx /= (double)n;
    my /= (double)n;
    double sxy = 0.0, sxx = 0.0, syy = 0.0;
    for (size_t i = 0; i < n; i++) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    return sxx > 0.0 && syy > 0.0 ? sxy / sqrt(sxx * syy) : 0.0;
}

struct keyed {
    double key;
    size_t index;
};

static int by_key(const void *a, const void *b)
{
    const double x = ((const struct keyed *)a)->key, y = ((const struct keyed *)b)->key;
    return (x > y) - (x < y);
}

/* rank[i] = 1-based rank of v[i], ties sharing their mean rank (as
 * scipy.stats.rankdata). */
static void ranks(const double *v, size_t n, struct keyed *order, double *rank)
{
    for (size_t i = 0; i < n; i++)
        order[i] = (struct keyed){v[i], i};
    qsort(order, n, sizeof *order, by_key);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && order[j + 1].key == order[i].key)
            j++;
        for (size_t k = i; k <= j; k++)
            rank[order[k].index] = (double)(i + j) / 2.0 + 1.0;
        i = j + 1;
    }
}

struct train_regression_scores train_score_regression(const float *pred, const float *gold,
                                                      size_t n)
{
    struct train_regression_scores s = {0};
    double *buf = malloc(4 * n * sizeof *buf + 1);
    struct keyed *order = malloc(n * sizeof *order + 1);
    if (buf == NULL || order == NULL || n == 0) {
        free(buf);
        free(order);
        s.mse = NAN;
        return s;
    }
    double *x = buf, *y = buf + n, *rx = buf + 2 * n, *ry = buf + 3 * n;
    for (size_t i = 0; i < n; i++) {
        x[i] = pred[i];
        y[i] = gold[i];
        s.mse += (x[i] - y[i]) * (x[i] - y[i]) / (double)n;
    }
    s.pearson = pearson(x, y, n);
    ranks(x, n, order, rx);
    ranks(y, n, order, ry);
    s.spearman = pearson(rx, ry, n);
    free(buf);
    free(order);
    return s;
}
