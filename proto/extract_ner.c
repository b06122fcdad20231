/* Token classification post-processing: transformers'
 * TokenClassificationPipeline (5.2) on one text's windows (extract.h;
 * tests/extraction/pipelines.py token_classification is the reference). */
#include "extract.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool ner_strategy_parse(const char *name, enum ner_strategy *out)
{
    static const char *const names[] = {"none", "simple", "first", "average", "max"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = (enum ner_strategy)i;
            return true;
        }
    return false;
}

const char *ner_group_name(const char *label)
{
    const char *dash = strchr(label, '-');
    return dash ? dash + 1 : label;
}

/* A token after gathering: its probabilities and what aggregation reads. */
struct pre {
    const double *probs;
    const char *word;    /* token string, or NULL: the text [start, end) (unknown token) */
    uint32_t start, end, index;
    bool is_subword;
};

static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static bool is_space_at(const struct extract_text *t, uint32_t c)
{
    return c < t->n_chars && t->s[t->char_start[c]] == ' ';
}

static bool subword(const struct extract_text *t, const char *token, uint32_t start, uint32_t end,
                    bool word_aware)
{
    if (word_aware) /* "##ing" is longer than "ing" */
        return utf8_chars(token) != (size_t)(end - start);
    /* No word-aware model: a word starts after a space or with one. */
    return start > 0 && !is_space_at(t, start - 1) && !is_space_at(t, start);
}

static size_t argmax(const double *p, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (p[i] > p[best])
            best = i;
    return best;
}

static char *slice(const struct extract_text *t, uint32_t start, uint32_t end)
{
    size_t a = t->char_start[start], b = t->char_start[end];
    char *s = malloc(b - a + 1);
    if (s) {
        memcpy(s, t->s + a, b - a);
        s[b - a] = '\0';
    }
    return s;
}

static bool push(struct ner_result *r, struct ner_entity e)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        struct ner_entity *p = realloc(r->e, cap * sizeof *p);
        if (p == NULL)
            return false;
        r->e = p;
        r->cap = cap;
    }
    r->e[r->n++] = e;
    return true;
}

void ner_result_free(struct ner_result *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->e[i].word);
    free(r->e);
    memset(r, 0, sizeof *r);
}

/* The word strings of entities [from, to) decoded as one. */
static char *decode_words(const struct ner_options *o, const struct ner_entity *e, size_t n)
{
    const char **words = malloc((n ? n : 1) * sizeof *words);
    if (words == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++)
        words[i] = e[i].word;
    char *s = o->decode(o->decode_ctx, words, n);
    free(words);
    return s;
}

/* first / average / max: one entity per word (a token that is not a
 * sub-word starts a word). */
static bool aggregate_word(const struct extract_text *t, const struct ner_options *o,
                           const struct pre *g, size_t n, double *avg, struct ner_result *out)
{
    const double *p = g[0].probs;
    if (o->strategy == NER_STRATEGY_MAX) {
        for (size_t i = 1; i < n; i++)
            if (g[i].probs[argmax(g[i].probs, o->n_labels)] > p[argmax(p, o->n_labels)])
                p = g[i].probs;
    } else if (o->strategy == NER_STRATEGY_AVERAGE) {
        for (size_t l = 0; l < o->n_labels; l++) {
            double s = 0.0;
            for (size_t i = 0; i < n; i++)
                s += g[i].probs[l];
            avg[l] = s / (double)n;
        }
        p = avg;
    }
    const char **toks = malloc(n * sizeof *toks);
    char **owned = calloc(n, sizeof *owned);
    bool ok = toks && owned;
    for (size_t i = 0; ok && i < n; i++) {
        if (g[i].word == NULL)
            ok = (owned[i] = slice(t, g[i].start, g[i].end)) != NULL;
        toks[i] = g[i].word ? g[i].word : owned[i];
    }
    char *word = ok ? o->decode(o->decode_ctx, toks, n) : NULL;
    for (size_t i = 0; owned && i < n; i++)
        free(owned[i]);
    free(owned);
    free(toks);
    size_t l = argmax(p, o->n_labels);
    struct ner_entity e = {(int32_t)l, p[l], 0, word, g[0].start, g[n - 1].end};
    if (word == NULL || !push(out, e)) {
        free(word);
        return false;
    }
    return true;
}

/* (B or I, type): a label without B- / I- counts as I-label. */
static void tag(const char *label, bool *is_b, const char **type)
{
    *is_b = strncmp(label, "B-", 2) == 0;
    *type = (*is_b || strncmp(label, "I-", 2) == 0) ? label + 2 : label;
}

/* Group entities [0, n) in place: a token joins the group when its type is
 * the last member's and it is not B-. */
static bool group(const struct ner_options *o, struct ner_result *r)
{
    size_t w = 0;
    for (size_t i = 0; i < r->n;) {
        size_t j = i + 1;
        for (; j < r->n; j++) {
            bool b, lb;
            const char *ty, *lt;
            tag(o->id2label[r->e[j].label], &b, &ty);
            tag(o->id2label[r->e[j - 1].label], &lb, &lt);
            if (b || strcmp(ty, lt) != 0)
                break;
        }
        double score = 0.0;
        for (size_t k = i; k < j; k++)
            score += r->e[k].score;
        char *word = decode_words(o, r->e + i, j - i);
        if (word == NULL)
            return false;
        struct ner_entity g = {r->e[i].label, score / (double)(j - i), 0, word,
                               r->e[i].start, r->e[j - 1].end};
        for (size_t k = i; k < j; k++)
            free(r->e[k].word);
        r->e[w++] = g;
        /* Words of entities not yet grouped stay where they are. */
        for (size_t k = w; k < j; k++)
            r->e[k].word = NULL;
        i = j;
    }
    r->n = w;
    return true;
}

static bool ignored(const struct ner_options *o, const struct ner_entity *e)
{
    const char *label = o->id2label[e->label];
    const char *shown = o->strategy == NER_STRATEGY_NONE ? label : ner_group_name(label);
    for (size_t i = 0; i < o->n_ignore; i++)
        if (strcmp(o->ignore[i], shown) == 0)
            return true;
    return false;
}

static bool one_window(const struct extract_text *t, const struct ner_window *w,
                       const struct ner_options *o, double *probs, struct pre *pre,
                       struct ner_result *out)
{
    size_t L = o->n_labels, n = 0;
    for (size_t i = 0; i < w->n; i++) {
        if (w->special[i])
            continue;
        const float *z = w->logits + i * L;
        double m = z[0], s = 0.0, *p = probs + n * L;
        for (size_t l = 1; l < L; l++)
            m = fmax(m, z[l]);
        for (size_t l = 0; l < L; l++)
            s += p[l] = exp((double)z[l] - m);
        for (size_t l = 0; l < L; l++)
            p[l] /= s;
        bool unk = w->ids[i] == o->unk_id;
        pre[n] = (struct pre){p, unk ? NULL : w->tokens[i], w->start[i], w->end[i], (uint32_t)i,
                              !unk && subword(t, w->tokens[i], w->start[i], w->end[i], o->word_aware)};
        n++;
    }
    struct ner_result ents = {0};
    bool ok = true;
    if (o->strategy == NER_STRATEGY_NONE || o->strategy == NER_STRATEGY_SIMPLE) {
        for (size_t i = 0; ok && i < n; i++) {
            size_t l = argmax(pre[i].probs, L);
            char *word = pre[i].word ? strdup(pre[i].word) : slice(t, pre[i].start, pre[i].end);
            struct ner_entity e = {(int32_t)l, pre[i].probs[l], pre[i].index, word,
                                   pre[i].start, pre[i].end};
            ok = word && push(&ents, e);
            if (!ok)
                free(word);
        }
    } else {
        double *avg = malloc(L * sizeof *avg);
        ok = avg != NULL;
        for (size_t i = 0; ok && i < n;) {
            size_t j = i + 1;
            while (j < n && pre[j].is_subword)
                j++;
            ok = aggregate_word(t, o, pre + i, j - i, avg, &ents);
            i = j;
        }
        free(avg);
    }
    if (ok && o->strategy != NER_STRATEGY_NONE)
        ok = group(o, &ents);
    for (size_t i = 0; ok && i < ents.n; i++) {
        if (ignored(o, &ents.e[i]))
            continue;
        ok = push(out, ents.e[i]);
        if (ok)
            ents.e[i].word = NULL;
    }
    ner_result_free(&ents);
    return ok;
}

static int by_start(const void *a, const void *b)
{
    const struct ner_entity *x = a, *y = b;
    /* Stable through the index tie-break set by the caller. */
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Entities of overlapping windows: sorted by start (stably), one starting
 * inside the previous replaces it when longer, or as long and better. */
static void merge_overlapping(struct ner_result *r)
{
    if (r->n == 0)
        return;
    for (size_t i = 0; i < r->n; i++)
        r->e[i].index = (uint32_t)i; /* order of arrival, for a stable sort */
    qsort(r->e, r->n, sizeof *r->e, by_start);
    size_t w = 0;
    struct ner_entity prev = r->e[0];
    for (size_t i = 1; i < r->n; i++) {
        struct ner_entity e = r->e[i];
        if (prev.start <= e.start && e.start < prev.end) {
            uint32_t lp = prev.end - prev.start, le = e.end - e.start;
            if (le > lp || (le == lp && e.score > prev.score)) {
                free(prev.word);
                prev = e;
            } else {
                free(e.word);
            }
        } else {
            r->e[w++] = prev;
            prev = e;
        }
    }
    r->e[w++] = prev;
    r->n = w;
}

bool ner_postprocess(const struct extract_text *text, const struct ner_window *windows,
                     size_t n_windows, const struct ner_options *o, struct ner_result *out)
{
    memset(out, 0, sizeof *out);
    size_t most = 0;
    for (size_t i = 0; i < n_windows; i++)
        most = windows[i].n > most ? windows[i].n : most;
    double *probs = malloc((most ? most : 1) * o->n_labels * sizeof *probs);
    struct pre *pre = malloc((most ? most : 1) * sizeof *pre);
    bool ok = probs && pre;
    for (size_t i = 0; ok && i < n_windows; i++)
        ok = one_window(text, &windows[i], o, probs, pre, out);
    free(probs);
    free(pre);
    if (ok && n_windows > 1)
        merge_overlapping(out);
    if (!ok)
        ner_result_free(out);
    return ok;
}
