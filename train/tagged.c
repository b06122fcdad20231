/* CoNLL token-classification data for the trainer, and conlleval's entity
 * scores (train_tagged.h). */
#include "train_tagged.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileutil.h"

/* A growing array of `size`-byte elements. */
struct grow {
    void *p;
    size_t n, cap, size;
};

static bool grow_push(struct grow *g, const void *v)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 256;
        void *p = realloc(g->p, cap * g->size);
        if (p == NULL)
            return false;
        g->p = p;
        g->cap = cap;
    }
    memcpy((char *)g->p + g->n++ * g->size, v, g->size);
    return true;
}

/* The label set from the data's tags: O, then B-/I- of each type as types
 * first appear, then other tags. */
static bool collect_names(char **tags, size_t n, char ***out, size_t *n_out)
{
    char **names = calloc(2 * n + 1, sizeof *names);
    size_t k = 0;
    if (names == NULL)
        return false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(tags[i], "O") == 0) {
            names[k++] = strdup("O");
            break;
        }
    for (size_t i = 0; i < n; i++) {
        const char *t = tags[i];
        char b[96], in[96];
        bool bio = (t[0] == 'B' || t[0] == 'I') && t[1] == '-';
        if (bio) {
            snprintf(b, sizeof b, "B-%s", t + 2);
            snprintf(in, sizeof in, "I-%s", t + 2);
        }
        bool seen = false;
        for (size_t j = 0; j < k && !seen; j++)
            seen = strcmp(names[j], bio ? b : t) == 0;
        if (seen)
            continue;
        names[k++] = strdup(bio ? b : t);
        if (bio)
            names[k++] = strdup(in);
    }
    for (size_t j = 0; j < k; j++)
        if (names[j] == NULL)
            return false;
    *out = names;
    *n_out = k;
    return true;
}

static int32_t find_name(char *const *names, size_t n, const char *tag)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], tag) == 0)
            return (int32_t)i;
    return -1;
}

/* The label of a word's later pieces with all_subtokens: B-X becomes I-X. */
static int32_t continuation(char *const *names, size_t n, int32_t label)
{
    const char *name = names[label];
    if (strncmp(name, "B-", 2) != 0)
        return label;
    char in[96];
    snprintf(in, sizeof in, "I-%s", name + 2);
    int32_t i = find_name(names, n, in);
    return i >= 0 ? i : label;
}

struct sentence {
    char **words, **tags;
    size_t n;
};

/* Tokenize one sentence into d's growing arrays. */
static enum bert_status add_sentence(struct grow *ids, struct grow *tags, struct grow *word_of,
                                     const struct bert_tokenizer *tok, const struct sentence *s,
                                     const int32_t *labels, size_t max_len, bool all_subtokens,
                                     char *const *names, size_t n_names, struct bert_error *err)
{
    size_t len = 0;
    for (size_t w = 0; w < s->n; w++)
        len += strlen(s->words[w]) + 1;
    char *text = malloc(len + 1);
    size_t *word_at = malloc((s->n + 1) * sizeof *word_at);
    if (text == NULL || word_at == NULL) {
        free(text);
        free(word_at);
        return bert_error_set(err, BERT_E_NOMEM, "out of memory");
    }
    size_t at = 0;
    for (size_t w = 0; w < s->n; w++) {
        if (w > 0)
            text[at++] = ' ';
        word_at[w] = at;
        memcpy(text + at, s->words[w], strlen(s->words[w]));
        at += strlen(s->words[w]);
    }
    word_at[s->n] = at + 1;
    struct bert_encoding e = {0};
    struct bert_encode_options o = bert_encode_options_default();
    o.max_length = max_len;
    o.truncate = true;
    enum bert_status st = bert_tokenizer_encode(tok, text, at, NULL, 0, &o, &e, err);
    size_t w = 0;
    for (size_t i = 0; st == BERT_OK && i < e.n; i++) {
        int32_t tag = -100, word = -1;
        if (!e.special[i]) {
            while (w + 1 < s->n && e.start[i] >= word_at[w + 1])
                w++;
            if (e.start[i] == word_at[w]) {
                tag = labels[w];
                word = (int32_t)w;
            } else if (all_subtokens) {
                tag = continuation(names, n_names, labels[w]);
            }
        }
        if (!grow_push(ids, &e.ids[i]) || !grow_push(tags, &tag) || !grow_push(word_of, &word))
            st = bert_error_set(err, BERT_E_NOMEM, "out of memory");
    }
    bert_encoding_free(&e);
    free(text);
    free(word_at);
    return st;
}

enum bert_status train_tagged_load(struct train_tagged *d, const struct bert_tokenizer *tok,
                                   const char *path, size_t max_len, bool all_subtokens,
                                   char *const *names, size_t n_names, struct bert_error *err)
{
    memset(d, 0, sizeof *d);
    char *text;
    size_t len;
    enum bert_status st = file_read_all(path, &text, &len, err);
    if (st != BERT_OK)
        return st;
    /* Pass 1: words and tags, lines split in place. */
    struct grow words = {.size = sizeof(char *)}, tags = {.size = sizeof(char *)},
                bounds = {.size = sizeof(size_t)};
    size_t zero = 0, line_no = 0;
    bool ok = grow_push(&bounds, &zero);
    for (char *line = text, *next; ok && line < text + len; line = next) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        next = nl ? nl + 1 : text + len;
        if (nl)
            *nl = '\0'; /* the buffer is NUL-terminated after its last line */
        line_no++;
        char *save = NULL;
        char *first = strtok_r(line, " \t\r", &save);
        if (first == NULL || strcmp(first, "-DOCSTART-") == 0) {
            if (first == NULL && words.n > ((size_t *)bounds.p)[bounds.n - 1])
                ok = grow_push(&bounds, &words.n);
            continue;
        }
        char *last = first, *tok_field;
        while ((tok_field = strtok_r(NULL, " \t\r", &save)) != NULL)
            last = tok_field;
        if (last == first) {
            st = bert_error_set(err, BERT_E_FORMAT, "%s:%zu: a word without a tag", path, line_no);
            break;
        }
        ok = grow_push(&words, &first) && grow_push(&tags, &last);
    }
    if (ok && st == BERT_OK && words.n > ((size_t *)bounds.p)[bounds.n - 1])
        ok = grow_push(&bounds, &words.n);
    if (!ok && st == BERT_OK)
        st = bert_error_set(err, BERT_E_NOMEM, "out of memory");
    char **all_tags = tags.p;
    if (st == BERT_OK) {
        if (names == NULL) {
            if (!collect_names(all_tags, tags.n, &d->names, &d->n_names))
                st = bert_error_set(err, BERT_E_NOMEM, "out of memory");
        } else {
            d->names = calloc(n_names, sizeof *d->names);
            d->n_names = n_names;
            for (size_t i = 0; d->names && i < n_names; i++)
                d->names[i] = strdup(names[i]);
            if (d->names == NULL)
                st = bert_error_set(err, BERT_E_NOMEM, "out of memory");
        }
    }
    struct grow gold = {.size = sizeof(int32_t)};
    for (size_t i = 0; st == BERT_OK && i < tags.n; i++) {
        int32_t id = find_name(d->names, d->n_names, all_tags[i]);
        if (id < 0)
            st = bert_error_set(err, BERT_E_FORMAT, "%s: tag \"%.40s\" is not one of the %zu "
                                "labels the training data has", path, all_tags[i], d->n_names);
        else if (!grow_push(&gold, &id))
            st = bert_error_set(err, BERT_E_NOMEM, "out of memory");
    }
    /* Pass 2: tokenize each sentence. */
    struct grow ids = {.size = sizeof(int32_t)}, lab = {.size = sizeof(int32_t)},
                word_of = {.size = sizeof(int32_t)}, starts = {.size = sizeof(size_t)};
    if (st == BERT_OK && !grow_push(&starts, &zero))
        st = bert_error_set(err, BERT_E_NOMEM, "out of memory");
    const size_t *b = bounds.p;
    for (size_t s = 0; st == BERT_OK && s + 1 < bounds.n; s++) {
        struct sentence sent = {(char **)words.p + b[s], all_tags + b[s], b[s + 1] - b[s]};
        st = add_sentence(&ids, &lab, &word_of, tok, &sent, (int32_t *)gold.p + b[s], max_len,
                          all_subtokens, d->names, d->n_names, err);
        if (st == BERT_OK && !grow_push(&starts, &ids.n))
            st = bert_error_set(err, BERT_E_NOMEM, "out of memory");
    }
    d->ids = ids.p;
    d->tags = lab.p;
    d->word_of = word_of.p;
    d->start = starts.p;
    d->gold = gold.p;
    d->word_start = bounds.p;
    d->n = bounds.n ? bounds.n - 1 : 0;
    free(words.p);
    free(tags.p);
    free(text);
    if (st != BERT_OK)
        train_tagged_free(d);
    return st;
}

void train_tagged_free(struct train_tagged *d)
{
    free(d->ids);
    free(d->tags);
    free(d->word_of);
    free(d->start);
    free(d->gold);
    free(d->word_start);
    for (size_t i = 0; i < d->n_names; i++)
        free(d->names[i]);
    free(d->names);
    memset(d, 0, sizeof *d);
}

/* ---- conlleval ----------------------------------------------------------- */

/* (prefix, type) of a label: "B-PER" -> ('B', "PER"), "O" -> ('O', ""). */
static char split_tag(const char *name, const char **type)
{
    if (strcmp(name, "O") == 0) {
        *type = "";
        return 'O';
    }
    const char *dash = strchr(name, '-');
    *type = dash ? dash + 1 : name;
    return dash ? name[0] : 'I';
}

static bool chunk_ends(char prev, char tag, const char *pt, const char *t)
{
    return prev == 'E' || prev == 'S' || ((prev == 'B' || prev == 'I') &&
                                          (tag == 'B' || tag == 'S' || tag == 'O')) ||
           (prev != 'O' && prev != '.' && strcmp(pt, t) != 0);
}

static bool chunk_starts(char prev, char tag, const char *pt, const char *t)
{
    return tag == 'B' || tag == 'S' ||
           ((prev == 'E' || prev == 'S' || prev == 'O') && (tag == 'E' || tag == 'I')) ||
           (tag != 'O' && tag != '.' && strcmp(pt, t) != 0);
}

struct chunk {
    size_t first, last;
    const char *type;
};

/* Chunks of one sentence's labels into out (room for n); returns how many. */
static size_t chunks(char *const *names, const int32_t *labels, size_t n, struct chunk *out)
{
    size_t k = 0, start = 0;
    bool open = false;
    char prev = 'O';
    const char *pt = "";
    for (size_t i = 0; i <= n; i++) {
        const char *t = "";
        char tag = i < n ? split_tag(names[labels[i]], &t) : 'O';
        if (open && chunk_ends(prev, tag, pt, t)) {
            out[k++] = (struct chunk){start, i - 1, pt};
            open = false;
        }
        if (i < n && chunk_starts(prev, tag, pt, t)) {
            start = i;
            open = true;
        }
        prev = tag;
        pt = t;
    }
    return k;
}

static struct train_entity_scores prf(size_t correct, size_t predicted, size_t gold)
{
    double p = predicted ? (double)correct / (double)predicted : 0.0;
    double r = gold ? (double)correct / (double)gold : 0.0;
    return (struct train_entity_scores){p, r, p + r > 0 ? 2 * p * r / (p + r) : 0.0, correct,
                                        predicted, gold};
}

static size_t type_index(struct train_ner_scores *s, const char *type)
{
    for (size_t i = 0; i < s->n_types; i++)
        if (strcmp(s->type_names[i], type) == 0)
            return i;
    if (s->n_types == 32)
        return 31;
    s->type_names[s->n_types] = type;
    return s->n_types++;
}

void train_ner_score(const struct train_tagged *d, const int32_t *pred,
                     struct train_ner_scores *out)
{
    memset(out, 0, sizeof *out);
    size_t most = 0, tokens = 0, right = 0;
    for (size_t s = 0; s < d->n; s++) {
        size_t n = d->word_start[s + 1] - d->word_start[s];
        most = n > most ? n : most;
    }
    for (size_t i = 0; i < d->n_names; i++) /* types in label order */
        if (strcmp(d->names[i], "O") != 0) {
            const char *t;
            split_tag(d->names[i], &t);
            type_index(out, t);
        }
    size_t c[32] = {0}, p[32] = {0}, g[32] = {0};
    struct chunk *gc = malloc((most + 1) * sizeof *gc), *pc = malloc((most + 1) * sizeof *pc);
    for (size_t s = 0; gc && pc && s < d->n; s++) {
        const size_t w0 = d->word_start[s], n = d->word_start[s + 1] - w0;
        for (size_t i = 0; i < n; i++)
            right += d->gold[w0 + i] == pred[w0 + i];
        tokens += n;
        size_t ng = chunks(d->names, d->gold + w0, n, gc), np = chunks(d->names, pred + w0, n, pc);
        for (size_t i = 0; i < ng; i++)
            g[type_index(out, gc[i].type)]++;
        for (size_t j = 0; j < np; j++) {
            size_t t = type_index(out, pc[j].type);
            p[t]++;
            for (size_t i = 0; i < ng; i++)
                if (gc[i].first == pc[j].first && gc[i].last == pc[j].last &&
                    strcmp(gc[i].type, pc[j].type) == 0)
                    c[t]++;
        }
    }
    free(gc);
    free(pc);
    size_t tc = 0, tp = 0, tg = 0;
    for (size_t t = 0; t < out->n_types; t++) {
        out->types[t] = prf(c[t], p[t], g[t]);
        tc += c[t];
        tp += p[t];
        tg += g[t];
    }
    out->overall = prf(tc, tp, tg);
    out->token_accuracy = tokens ? (double)right / (double)tokens : 0.0;
}
