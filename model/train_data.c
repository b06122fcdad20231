#include "train_data.h"

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

enum bert_status train_labeled_load(struct train_labeled *d, const struct bert_tokenizer *tok,
                                    const char *path, size_t max_len, size_t num_labels,
                                    struct bert_error *err)
{
    memset(d, 0, sizeof *d);
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
    d->max_label = -1;
    for (char *line = text; st == BERT_OK && line < text + len; line_no++) {
        char *end = memchr(line, '\n', (size_t)(text + len - line));
        size_t n = end ? (size_t)(end - line) : (size_t)(text + len - line);
        char *next = line + n + 1;
        if (line_no == 0 || n == 0) { /* header, blank */
            line = next;
            continue;
        }
        line[n] = '\0';
        char *tab = strrchr(line, '\t'), *stop;
        long label = tab ? strtol(tab + 1, &stop, 10) : -1;
        if (tab == NULL || stop == tab + 1 || (*stop != '\0' && *stop != '\r') || label < 0 ||
            label > 1000000 || (num_labels > 0 && (size_t)label >= num_labels)) {
            st = bert_error_set(err, BERT_E_FORMAT,
                                "%s:%zu: expected text<TAB>label with a label in [0, %zu)", path,
                                line_no + 1, num_labels ? num_labels : 1000000);
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
        if (d->n + 2 > rows_cap || n_ids + enc.n > ids_cap) {
            rows_cap = rows_cap ? 2 * rows_cap : 1024;
            ids_cap = 2 * (ids_cap > n_ids + enc.n ? ids_cap : n_ids + enc.n);
            size_t *start = realloc(d->start, rows_cap * sizeof *start);
            if (start != NULL)
                d->start = start;
            int32_t *labels = realloc(d->labels, rows_cap * sizeof *labels);
            if (labels != NULL)
                d->labels = labels;
            int32_t *ids = realloc(d->ids, ids_cap * sizeof *ids);
            if (ids != NULL)
                d->ids = ids;
            int32_t *types = realloc(d->types, ids_cap * sizeof *types);
            if (types != NULL)
                d->types = types;
            if (start == NULL || labels == NULL || ids == NULL || types == NULL) {
                st = bert_error_set(err, BERT_E_NOMEM, "out of memory reading %s", path);
                break;
            }
        }
        d->start[d->n] = n_ids;
        memcpy(d->ids + n_ids, enc.ids, enc.n * sizeof *enc.ids);
        memcpy(d->types + n_ids, enc.type_ids, enc.n * sizeof *enc.type_ids);
        n_ids += enc.n;
        d->labels[d->n++] = (int32_t)label;
        d->start[d->n] = n_ids;
        d->max_label = (int32_t)label > d->max_label ? (int32_t)label : d->max_label;
        line = next;
    }
    bert_encoding_free(&enc);
    free(text);
    if (st == BERT_OK && d->n == 0)
        st = bert_error_set(err, BERT_E_FORMAT, "%s: no labelled rows", path);
    if (st != BERT_OK)
        train_labeled_free(d);
    return st;
}

void train_labeled_free(struct train_labeled *d)
{
    free(d->ids);
    free(d->types);
    free(d->start);
    free(d->labels);
    memset(d, 0, sizeof *d);
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
        double f1 = tp ? 2.0 * (double)tp / (double)(2 * tp + fp + fn) : 0.0;
        s.macro_f1 += f1 / (double)C;
        if (C == 2 && c == 1)
            s.f1_positive = f1;
    }
    return s;
}
