#include "added.h"

#include <stdlib.h>
#include <string.h>

#include "unicode.h"
#include "utf8.h"

bool tok_added_push(struct tok_added *a, const char *content, size_t len, int32_t id,
                    bool special, bool single_word, bool lstrip, bool rstrip, bool normalized)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 8;
        struct tok_added_token *p = realloc(a->tokens, cap * sizeof *p);
        if (p == NULL)
            return false;
        a->tokens = p;
        a->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return false;
    memcpy(copy, content, len);
    copy[len] = '\0';
    a->tokens[a->n++] = (struct tok_added_token){
        .content = copy, .len = len, .id = id, .special = special, .single_word = single_word,
        .lstrip = lstrip, .rstrip = rstrip, .normalized = normalized};
    return true;
}

struct sort_key {
    uint8_t first;
    size_t len;
    uint32_t index;
};

/* First byte ascending, then longest first, then insertion order. */
static int compare_keys(const void *x, const void *y)
{
    const struct sort_key *a = x, *b = y;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    if (a->len != b->len)
        return a->len > b->len ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

static bool build_index(struct tok_added *a, struct tok_added_index *ix, bool normalized)
{
    size_t cap = a->n ? a->n : 1;
    ix->order = malloc(cap * sizeof *ix->order);
    struct sort_key *keys = malloc(cap * sizeof *keys);
    if (ix->order == NULL || keys == NULL) {
        free(keys);
        return false;
    }
    uint32_t n = 0;
    for (size_t i = 0; i < a->n; i++) {
        const struct tok_added_token *t = &a->tokens[i];
        if (t->normalized == normalized && t->pattern_len > 0)
            keys[n++] = (struct sort_key){(uint8_t)t->pattern[0], t->pattern_len, (uint32_t)i};
    }
    qsort(keys, n, sizeof *keys, compare_keys);
    uint32_t k = 0;
    for (uint32_t b = 0; b < 256; b++) {
        ix->head[b] = k;
        for (; k < n && keys[k].first == b; k++)
            ix->order[k] = keys[k].index;
    }
    ix->head[256] = n;
    free(keys);
    return true;
}

bool tok_added_build(struct tok_added *a)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->tokens[i].normalized && a->tokens[i].pattern_len > 0)
            a->any_normalized = true;
    return build_index(a, &a->raw, false) && build_index(a, &a->normalized, true);
}

const struct tok_added_token *tok_added_find(const struct tok_added *a, const char *s, size_t len)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->tokens[i].len == len && memcmp(a->tokens[i].content, s, len) == 0)
            return &a->tokens[i];
    return NULL;
}

const struct tok_added_token *tok_added_by_id(const struct tok_added *a, int32_t id)
{
    for (size_t i = a->n; i-- > 0;)
        if (a->tokens[i].id == id)
            return &a->tokens[i];
    return NULL;
}

/* Start of the character that ends just before s + i (i > 0). */
static size_t prev_char(const uint8_t *s, size_t i)
{
    do
        i--;
    while (i > 0 && (s[i] & 0xC0) == 0x80);
    return i;
}

static bool word_before(const uint8_t *s, size_t lo, size_t i)
{
    if (i == lo)
        return false;
    size_t n;
    return tok_unicode_is_word(utf8_decode(s + prev_char(s, i), &n));
}

static bool word_after(const uint8_t *s, size_t i, size_t hi)
{
    size_t n;
    return i < hi && tok_unicode_is_word(utf8_decode(s + i, &n));
}

static bool push_span(struct tok_buf *spans, size_t *n, size_t start, size_t end, int32_t id)
{
    if (!tok_buf_reserve(spans, *n * sizeof(struct tok_span), (*n + 1) * sizeof(struct tok_span)))
        return false;
    ((struct tok_span *)spans->data)[(*n)++] = (struct tok_span){(uint32_t)start, (uint32_t)end, id};
    return true;
}

bool tok_added_split(const struct tok_added *a, bool normalized, const uint8_t *s, size_t start,
                     size_t end, struct tok_buf *spans, size_t *n)
{
    const struct tok_added_index *ix = normalized ? &a->normalized : &a->raw;
    size_t done = start; /* end of the last piece pushed */
    size_t p = start;
    while (p < end) {
        uint32_t first = ix->head[s[p]], last = ix->head[s[p] + 1];
        const struct tok_added_token *t = NULL;
        for (uint32_t k = first; k < last; k++) {
            const struct tok_added_token *c = &a->tokens[ix->order[k]];
            if (c->pattern_len <= end - p && memcmp(s + p, c->pattern, c->pattern_len) == 0) {
                t = c;
                break;
            }
        }
        if (t == NULL) {
            p++;
            continue;
        }
        size_t m_start = p, m_end = p + t->pattern_len;
        p = m_end; /* the search resumes after the match, even a discarded one */
        if (t->single_word && (word_before(s, start, m_start) || word_after(s, m_end, end)))
            continue;
        if (t->lstrip) {
            while (m_start > done) {
                size_t q = prev_char(s, m_start), len;
                if (!tok_unicode_is_whitespace(utf8_decode(s + q, &len)))
                    break;
                m_start = q;
            }
        }
        if (t->rstrip) {
            size_t len;
            while (m_end < end && tok_unicode_is_whitespace(utf8_decode(s + m_end, &len)))
                m_end += len;
            p = m_end;
        }
        if (done < m_start && !push_span(spans, n, done, m_start, -1))
            return false;
        if (!push_span(spans, n, m_start, m_end, t->id))
            return false;
        done = m_end;
    }
    return done >= end || push_span(spans, n, done, end, -1);
}

void tok_added_free(struct tok_added *a)
{
    for (size_t i = 0; i < a->n; i++) {
        if (a->tokens[i].pattern != a->tokens[i].content)
            free(a->tokens[i].pattern);
        free(a->tokens[i].content);
    }
    free(a->tokens);
    free(a->raw.order);
    free(a->normalized.order);
    memset(a, 0, sizeof *a);
}
