/* Extractive question answering post-processing: transformers'
 * QuestionAnsweringPipeline (4.57, fast tokenizer) on one question's chunks
 * (extract.h; tests/extraction/pipelines.py question_answering is the
 * reference). */
#include "extract.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

struct span {
    double score;
    uint32_t s, e;
};

/* The pipeline's candidate order: best score first, then by start and end. */
static bool better(const struct span *x, const struct span *y)
{
    if (x->score != y->score)
        return x->score > y->score;
    return x->s != y->s ? x->s < y->s : x->e < y->e;
}

/* Keep `span` among the best `k` of best[0..*n) (sorted by `better`): one
 * comparison for the many spans that do not make it. */
static void keep_best(struct span *best, size_t *n, size_t k, struct span span)
{
    if (*n == k && !better(&span, &best[k - 1]))
        return;
    size_t i = *n < k ? (*n)++ : k - 1;
    while (i > 0 && better(&span, &best[i - 1])) {
        best[i] = best[i - 1];
        i--;
    }
    best[i] = span;
}

/* Softmax of logits column `col` over the allowed tokens (the context and
 * every CLS-id token); the others get 0. */
static void probs(const struct qa_window *w, const struct qa_options *o, size_t col, double *p)
{
    double m = -INFINITY, sum = 0.0;
    for (size_t i = 0; i < w->n; i++)
        if (w->sequence[i] == 1 || w->ids[i] == o->cls_id)
            m = fmax(m, w->logits[2 * i + col]);
    for (size_t i = 0; i < w->n; i++) {
        bool ok = w->sequence[i] == 1 || w->ids[i] == o->cls_id;
        sum += p[i] = ok ? exp((double)w->logits[2 * i + col] - m) : 0.0;
    }
    for (size_t i = 0; i < w->n; i++)
        p[i] /= sum;
}

/* Encoding.word_to_chars(word, sequence 1) inside the chunk. */
static void word_chars(const struct qa_window *w, uint32_t word, uint32_t *a, uint32_t *b)
{
    bool first = true;
    for (size_t i = 0; i < w->n; i++)
        if (w->sequence[i] == 1 && w->word[i] == word) {
            if (first)
                *a = w->start[i];
            *b = w->end[i];
            first = false;
        }
}

/* Python's str.lower, character by character: the simple lowercase
 * mapping, with U+0130 (I with dot above) to "i" + U+0307 as its full
 * mapping has it. (Greek final sigma is not special-cased: "Σ" lowers to
 * "σ" everywhere.) Returns the number of code points written. */
static size_t lower(const struct extract_text *t, uint32_t a, uint32_t b, int32_t *out)
{
    const size_t n_chars = t->n_chars; /* clipped as Python slices */
    size_t n = 0, hi = b < n_chars ? b : n_chars;
    for (size_t c = a; c < hi; c++) {
        utf8proc_int32_t cp;
        utf8proc_iterate((const utf8proc_uint8_t *)t->s + t->char_start[c],
                         (utf8proc_ssize_t)(t->char_start[c + 1] - t->char_start[c]), &cp);
        if (cp == 0x130) {
            out[n++] = 'i';
            out[n++] = 0x307;
        } else {
            out[n++] = utf8proc_tolower(cp);
        }
    }
    return n;
}

static bool same_lower(const struct extract_text *t, uint32_t a0, uint32_t b0, uint32_t a1,
                       uint32_t b1, int32_t *buf0, int32_t *buf1)
{
    size_t n0 = lower(t, a0, b0, buf0), n1 = lower(t, a1, b1, buf1);
    return n0 == n1 && memcmp(buf0, buf1, n0 * sizeof *buf0) == 0;
}

static int answer_order(const void *a, const void *b)
{
    const struct qa_answer *x = a, *y = b;
    return x->score > y->score ? -1 : x->score < y->score;
}

bool qa_postprocess(const struct extract_text *context, const struct qa_window *windows,
                    size_t n_windows, const struct qa_options *o, struct qa_answer **out,
                    size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    size_t pre_topk = o->align_to_words ? (size_t)o->top_k * 2 + 10 : o->top_k, most = 0;
    for (size_t i = 0; i < n_windows; i++)
        most = windows[i].n > most ? windows[i].n : most;
    size_t cap = n_windows * pre_topk + 1;
    double *ps = malloc((most + 1) * sizeof *ps), *pe = malloc((most + 1) * sizeof *pe);
    struct span *spans = malloc(pre_topk * sizeof *spans);
    struct qa_answer *ans = malloc(cap * sizeof *ans);
    int32_t *l0 = malloc(2 * (context->n_chars + 1) * sizeof *l0);
    int32_t *l1 = malloc(2 * (context->n_chars + 1) * sizeof *l1);
    bool ok = ps && pe && spans && ans && l0 && l1;
    size_t n_ans = 0;
    double min_null = 1000000.0;
    for (size_t wi = 0; ok && wi < n_windows; wi++) {
        const struct qa_window *w = &windows[wi];
        probs(w, o, 0, ps);
        probs(w, o, 1, pe);
        min_null = fmin(min_null, ps[0] * pe[0]);
        ps[0] = pe[0] = 0.0;
        size_t n = 0;
        for (size_t s = 0; s < w->n; s++) {
            if (ps[s] == 0.0)
                continue;
            for (size_t e = s; e < w->n && e < s + o->max_answer_len; e++)
                if (pe[e] > 0.0)
                    keep_best(spans, &n, pre_topk,
                              (struct span){ps[s] * pe[e], (uint32_t)s, (uint32_t)e});
        }
        /* Fewer real spans than asked for: the pipeline would add zero-score
         * ones; bertserve keeps the real ones (tests/extraction/README.md). */
        for (size_t k = 0; k < n; k++) {
            uint32_t s = spans[k].s, e = spans[k].e, a = w->start[s], b = w->end[e];
            if (o->align_to_words && w->word[s] != UINT32_MAX && w->word[e] != UINT32_MAX) {
                uint32_t unused;
                word_chars(w, w->word[s], &a, &unused);
                word_chars(w, w->word[e], &unused, &b);
            }
            size_t j = 0;
            while (j < n_ans && !same_lower(context, ans[j].start, ans[j].end, a, b, l0, l1))
                j++;
            if (j < n_ans) {
                ans[j].score += spans[k].score;
            } else {
                ans[n_ans] = (struct qa_answer){spans[k].score, a, b};
                n_ans++;
            }
        }
    }
    if (ok && o->handle_impossible_answer)
        ans[n_ans++] = (struct qa_answer){min_null, 0, 0};
    if (ok) {
        /* Stable by score: insertion sort (answers are few). */
        for (size_t i = 1; i < n_ans; i++) {
            struct qa_answer x = ans[i];
            size_t j = i;
            while (j > 0 && answer_order(&ans[j - 1], &x) > 0) {
                ans[j] = ans[j - 1];
                j--;
            }
            ans[j] = x;
        }
        *n_out = n_ans < o->top_k ? n_ans : o->top_k;
        *out = ans;
        ans = NULL;
    }
    free(ps);
    free(pe);
    free(spans);
    free(ans);
    free(l0);
    free(l1);
    return ok;
}
