/* Windows, character offsets and zero-shot scores for the extraction routes
 * (extract.h). */
#include "extract.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t extract_window_count(size_t n_part, size_t budget, bool has_stride, size_t stride)
{
    if (n_part <= budget)
        return 1;
    if (budget == 0 || (has_stride && stride >= budget))
        return 0;
    if (!has_stride)
        return 1;
    size_t step = budget - stride;
    /* Windows start at 0, step, 2 step, ... until one reaches the end. */
    return 1 + (n_part - budget + step - 1) / step;
}

size_t extract_windows(size_t n_part, size_t budget, bool has_stride, size_t stride,
                       struct extract_span *out)
{
    size_t n = extract_window_count(n_part, budget, has_stride, stride);
    if (n_part <= budget) {
        out[0] = (struct extract_span){0, n_part};
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        size_t begin = i * (budget - (has_stride ? stride : 0));
        size_t end = begin + budget < n_part ? begin + budget : n_part;
        out[i] = (struct extract_span){begin, end};
    }
    return n;
}

bool extract_text_init(struct extract_text *t, const char *s, size_t len)
{
    memset(t, 0, sizeof *t);
    t->char_start = malloc((len + 1) * sizeof *t->char_start);
    if (t->char_start == NULL)
        return false;
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            t->char_start[n++] = (uint32_t)i;
    t->char_start[n] = (uint32_t)len;
    t->s = s;
    t->len = len;
    t->n_chars = n;
    return true;
}

void extract_text_free(struct extract_text *t)
{
    free(t->char_start);
    memset(t, 0, sizeof *t);
}

uint32_t extract_text_char(const struct extract_text *t, uint32_t byte_offset)
{
    size_t lo = 0, hi = t->n_chars; /* first character starting at or after the offset */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->char_start[mid] < byte_offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (uint32_t)lo;
}

void extract_text_slice(const struct extract_text *t, uint32_t a, uint32_t b, size_t *from,
                        size_t *len)
{
    size_t n = t->n_chars, lo = a < n ? a : n, hi = b < n ? b : n;
    *from = t->char_start[lo];
    *len = hi > lo ? t->char_start[hi] - t->char_start[lo] : 0;
}

int zs_entailment_id(const char *const *id2label, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (id2label[i] != NULL && strncasecmp(id2label[i], "entail", 6) == 0)
            return (int)i;
    return -1;
}

/* exp(a) / (exp(a) + exp(b)), overflow-free. */
static double softmax2(double a, double b)
{
    return a >= b ? 1.0 / (1.0 + exp(b - a)) : exp(a - b) / (1.0 + exp(a - b));
}

void zs_scores(const float *logits, size_t n_labels, size_t n_classes, int entailment,
               bool multi_label, double *scores, size_t *order)
{
    size_t e = (size_t)entailment;
    if (multi_label || n_labels == 1) {
        size_t c = entailment == 0 ? n_classes - 1 : 0;
        for (size_t i = 0; i < n_labels; i++)
            scores[i] = softmax2(logits[i * n_classes + e], logits[i * n_classes + c]);
    } else {
        double m = -INFINITY, sum = 0.0;
        for (size_t i = 0; i < n_labels; i++)
            m = fmax(m, logits[i * n_classes + e]);
        for (size_t i = 0; i < n_labels; i++)
            sum += scores[i] = exp(logits[i * n_classes + e] - m);
        for (size_t i = 0; i < n_labels; i++)
            scores[i] /= sum;
    }
    /* Insertion sort, best first; a tie puts the later label first (numpy's
     * stable argsort, reversed). Labels are few. */
    for (size_t i = 0; i < n_labels; i++) {
        size_t j = i;
        while (j > 0 && scores[order[j - 1]] <= scores[i])
            j--;
        memmove(order + j + 1, order + j, (i - j) * sizeof *order);
        order[j] = i;
    }
}
