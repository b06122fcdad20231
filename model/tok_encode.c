/* bert_tokenizer_encode: added-token split, normalization, WordPiece, then
 * truncation and the post-processor template, in the order of Hugging Face's
 * TokenizerImpl::encode. */
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

/* Work buffers of one call. They start on the stack, which covers a
 * sentence or a short paragraph without touching the heap. */
struct scratch {
    struct tok_normalized norm;
    struct tok_buf word;
    struct tok_buf spans_raw, spans_norm;
    struct tok_tokens seq[2];
};

#define STACK_NORM_BYTES 1024
#define STACK_TOKENS 256
#define STACK_SPANS 16

struct scratch_storage {
    uint8_t norm[STACK_NORM_BYTES];
    uint32_t al_start[STACK_NORM_BYTES], al_end[STACK_NORM_BYTES];
    uint8_t word[128];
    struct tok_span spans_raw[STACK_SPANS], spans_norm[STACK_SPANS];
    int32_t ids[2][STACK_TOKENS];
    uint32_t start[2][STACK_TOKENS], stop[2][STACK_TOKENS];
    uint8_t flags[2][STACK_TOKENS];
};

static void scratch_init(struct scratch *s, struct scratch_storage *st)
{
    tok_buf_init(&s->norm.bytes, st->norm, sizeof st->norm);
    tok_buf_init(&s->norm.al_start, st->al_start, sizeof st->al_start);
    tok_buf_init(&s->norm.al_end, st->al_end, sizeof st->al_end);
    s->norm.len = 0;
    tok_buf_init(&s->word, st->word, sizeof st->word);
    tok_buf_init(&s->spans_raw, st->spans_raw, sizeof st->spans_raw);
    tok_buf_init(&s->spans_norm, st->spans_norm, sizeof st->spans_norm);
    for (int k = 0; k < 2; k++) {
        tok_buf_init(&s->seq[k].ids, st->ids[k], sizeof st->ids[k]);
        tok_buf_init(&s->seq[k].start, st->start[k], sizeof st->start[k]);
        tok_buf_init(&s->seq[k].stop, st->stop[k], sizeof st->stop[k]);
        tok_buf_init(&s->seq[k].flags, st->flags[k], sizeof st->flags[k]);
        s->seq[k].n = 0;
    }
}

static void scratch_release(struct scratch *s)
{
    tok_buf_release(&s->norm.bytes);
    tok_buf_release(&s->norm.al_start);
    tok_buf_release(&s->norm.al_end);
    tok_buf_release(&s->word);
    tok_buf_release(&s->spans_raw);
    tok_buf_release(&s->spans_norm);
    tok_tokens_release(&s->seq[0]);
    tok_tokens_release(&s->seq[1]);
}

/* Tokens of normalized text [from, to) that may hold normalized added tokens. */
static bool encode_normalized(const struct bert_tokenizer *tok, struct scratch *s, size_t from,
                              size_t to, struct tok_tokens *out)
{
    const struct tok_normalized *norm = &s->norm;
    if (!tok->added.any_normalized)
        return tok_wordpiece_encode(&tok->wp, tok->bert_pretokenize, norm, from, to, &s->word, out);
    size_t n = 0;
    if (!tok_added_split(&tok->added, true, norm->bytes.data, from, to, &s->spans_norm, &n))
        return false;
    const uint32_t *al_start = norm->al_start.data, *al_end = norm->al_end.data;
    for (size_t i = 0; i < n; i++) {
        struct tok_span sp = ((const struct tok_span *)s->spans_norm.data)[i];
        bool ok = sp.id >= 0 ? tok_tokens_push(out, sp.id, al_start[sp.start], al_end[sp.end - 1], 0)
                             : tok_wordpiece_encode(&tok->wp, tok->bert_pretokenize, norm,
                                                    sp.start, sp.end, &s->word, out);
        if (!ok)
            return false;
    }
    return true;
}

static bool encode_sequence(const struct bert_tokenizer *tok, const uint8_t *text, size_t len,
                            struct scratch *s, struct tok_tokens *out)
{
    out->n = 0;
    size_t n = 0;
    if (!tok_added_split(&tok->added, false, text, 0, len, &s->spans_raw, &n))
        return false;
    for (size_t i = 0; i < n; i++) {
        struct tok_span sp = ((const struct tok_span *)s->spans_raw.data)[i];
        if (sp.id >= 0) {
            if (!tok_tokens_push(out, sp.id, sp.start, sp.end, 0))
                return false;
            continue;
        }
        if (!tok_normalize(&tok->norm, text, sp.start, sp.end, &s->norm) ||
            !encode_normalized(tok, s, 0, s->norm.len, out))
            return false;
    }
    return true;
}

/* How many tokens of `seq` the reference considers before truncating a pair:
 * it stops tokenizing a sequence once a word the model tokenized brings the
 * count to max_length (added tokens count but do not stop it), reading from
 * the end for left truncation. Not in `tokenizers`' truncation.rs, but in
 * every output of the reference (tests/tokenizer/README.md). */
static size_t considered(const struct tok_tokens *seq, size_t max_length, bool left)
{
    const uint8_t *flags = seq->flags.data;
    for (size_t k = 1; k <= seq->n; k++) {
        size_t i = left ? seq->n - k : k - 1;
        if (k >= max_length && (flags[i] & (left ? TOK_WORD_FIRST : TOK_WORD_LAST)))
            return k;
    }
    return seq->n;
}

/* Hugging Face's LongestFirst for a pair (truncate_encodings in
 * tokenizers/src/utils/truncation.rs): the shorter sequence stays whole if
 * the longer can take the rest of the budget, otherwise the budget is split
 * in half, the odd token to the longer one. */
static void longest_first(size_t n1, size_t n2, size_t limit, size_t *keep1, size_t *keep2)
{
    *keep1 = n1;
    *keep2 = n2;
    if (n1 + n2 <= limit)
        return;
    bool swap = n1 > n2;
    size_t a = swap ? n2 : n1, b;
    if (a > limit)
        b = a;
    else
        b = a > limit - a ? a : limit - a;
    if (a + b > limit) {
        a = limit / 2;
        b = a + limit % 2;
    }
    if ((swap ? b : a) < *keep1)
        *keep1 = swap ? b : a;
    if ((swap ? a : b) < *keep2)
        *keep2 = swap ? a : b;
}

static bool reserve_output(struct bert_encoding *out, size_t n)
{
    if (n <= out->cap)
        return true;
    size_t cap = out->cap ? out->cap : 16;
    while (cap < n)
        cap *= 2;
    /* A failure leaves the arrays grown so far in place; `cap` stays valid. */
#define GROW(field)                                                        \
    do {                                                                   \
        void *p_ = realloc(out->field, cap * sizeof *out->field);          \
        if (p_ == NULL)                                                    \
            return false;                                                  \
        out->field = p_;                                                   \
    } while (0)
    GROW(ids);
    GROW(type_ids);
    GROW(start);
    GROW(stop);
    GROW(special);
    GROW(sequence);
#undef GROW
    out->cap = cap;
    return true;
}

static void put(struct bert_encoding *out, int32_t id, int32_t type_id, uint32_t start,
                uint32_t stop, uint8_t special, uint8_t sequence)
{
    size_t i = out->n++;
    out->ids[i] = id;
    out->type_ids[i] = type_id;
    out->start[i] = start;
    out->stop[i] = stop;
    out->special[i] = special;
    out->sequence[i] = sequence;
}

/* Append tokens [first, first + count) of `seq`. */
static void put_sequence(struct bert_encoding *out, const struct tok_tokens *seq, size_t first,
                         size_t count, int32_t type_id, uint8_t sequence)
{
    const int32_t *ids = seq->ids.data;
    const uint32_t *start = seq->start.data, *stop = seq->stop.data;
    for (size_t i = first; i < first + count; i++)
        put(out, ids[i], type_id, start[i], stop[i], 0, sequence);
}

static enum bert_status check_input(const char *name, const char *s, size_t len,
                                    struct bert_error *err)
{
    if (s == NULL && len > 0)
        return bert_error_set(err, BERT_E_INVALID, "%s is NULL but its length is %zu", name, len);
    if (len >= UINT32_MAX)
        return bert_error_set(err, BERT_E_INVALID, "%s is %zu bytes, more than 4 GiB", name, len);
    size_t valid = len ? tok_utf8_valid_prefix((const uint8_t *)s, len) : 0;
    if (valid < len)
        return bert_error_set(err, BERT_E_INVALID,
                              "%s is not valid UTF-8: bad byte 0x%02X at byte offset %zu", name,
                              (unsigned)(uint8_t)s[valid], valid);
    return BERT_OK;
}

enum bert_status bert_tokenizer_encode(const struct bert_tokenizer *tok, const char *text,
                                       size_t text_len, const char *pair, size_t pair_len,
                                       const struct bert_encode_options *opts,
                                       struct bert_encoding *out, struct bert_error *err)
{
    struct bert_encode_options defaults = bert_encode_options_default();
    if (opts == NULL)
        opts = &defaults;
    out->n = 0;
    out->n_untruncated = 0;
    out->truncated = false;
    enum bert_status st = check_input("text", text, text_len, err);
    if (st == BERT_OK && pair)
        st = check_input("pair", pair, pair_len, err);
    if (st != BERT_OK)
        return st;

    struct scratch_storage storage;
    struct scratch s;
    scratch_init(&s, &storage);
    const struct tok_tokens *a = &s.seq[0], *b = &s.seq[1];
    if (!encode_sequence(tok, (const uint8_t *)text, text_len, &s, &s.seq[0]) ||
        (pair && !encode_sequence(tok, (const uint8_t *)pair, pair_len, &s, &s.seq[1]))) {
        scratch_release(&s);
        return bert_error_set(err, BERT_E_NOMEM, "out of memory tokenizing %zu bytes",
                              text_len + pair_len);
    }

    const struct tok_template *tmpl = NULL;
    if (opts->add_special_tokens && tok->has_template)
        tmpl = pair ? &tok->pair : &tok->single;
    size_t n_added = tmpl ? tmpl->n_added : 0;
    size_t keep[2] = {a->n, b->n};
    size_t total = a->n + b->n + n_added;
    out->n_untruncated = total;
    if (opts->max_length > 0 && total > opts->max_length) {
        if (!opts->truncate)
            st = bert_error_set(err, BERT_E_TOO_LONG,
                                "input is %zu tokens long, more than the limit of %zu (set "
                                "truncate to true to cut it)",
                                total, opts->max_length);
        else if (opts->max_length < n_added)
            st = bert_error_set(err, BERT_E_INVALID,
                                "max_length %zu cannot hold the %zu special tokens the template "
                                "adds",
                                opts->max_length, n_added);
        else if (pair) {
            bool left = opts->side == BERT_TRUNCATE_LEFT;
            longest_first(considered(a, opts->max_length, left),
                          considered(b, opts->max_length, left), opts->max_length - n_added,
                          &keep[0], &keep[1]);
        }
        else
            keep[0] = opts->max_length - n_added;
        out->truncated = true;
    }
    if (st == BERT_OK && !reserve_output(out, keep[0] + keep[1] + n_added))
        st = bert_error_set(err, BERT_E_NOMEM, "out of memory for %zu tokens",
                            keep[0] + keep[1] + n_added);
    if (st != BERT_OK) {
        out->truncated = false;
        scratch_release(&s);
        return st;
    }

    /* Right truncation keeps the head of each sequence, left the tail. */
    size_t first[2];
    for (int k = 0; k < 2; k++)
        first[k] = opts->side == BERT_TRUNCATE_LEFT ? s.seq[k].n - keep[k] : 0;
    if (tmpl == NULL) {
        put_sequence(out, a, first[0], keep[0], 0, 0);
        if (pair)
            put_sequence(out, b, first[1], keep[1], 1, 1);
    } else {
        for (size_t i = 0; i < tmpl->n; i++) {
            const struct tok_template_item *it = &tmpl->items[i];
            if (it->is_sequence)
                put_sequence(out, &s.seq[it->sequence], first[it->sequence],
                             keep[it->sequence], it->type_id, it->sequence);
            else
                for (size_t k = 0; k < it->n_ids; k++)
                    put(out, it->ids[k], it->type_id, 0, 0, 1, 255);
        }
    }
    scratch_release(&s);
    return BERT_OK;
}
