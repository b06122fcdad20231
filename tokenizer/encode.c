/* bert_tokenizer_encode: added-token split, normalization, pre-tokenization,
 * the model, then truncation, offset trimming and the post-processor
 * template, in the order of Hugging Face's TokenizerImpl::encode. */
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "bytelevel.h"
#include "internal.h"
#include "xform.h"

/* Work buffers of one call. They start on the stack, which covers a
 * sentence or a short paragraph without touching the heap. */
struct scratch {
    struct tok_normalized norm;
    struct tok_normseq_work norm_work;
    struct tok_normalized pre, word; /* pre-tokenizer output, one byte-level word */
    struct tok_buf wp_word;
    struct tok_bpe_work bpe;
    struct tok_unigram_work unigram;
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
    memset(s, 0, sizeof *s);
    tok_buf_init(&s->norm.bytes, st->norm, sizeof st->norm);
    tok_buf_init(&s->norm.al_start, st->al_start, sizeof st->al_start);
    tok_buf_init(&s->norm.al_end, st->al_end, sizeof st->al_end);
    tok_buf_init(&s->wp_word, st->word, sizeof st->word);
    tok_buf_init(&s->spans_raw, st->spans_raw, sizeof st->spans_raw);
    tok_buf_init(&s->spans_norm, st->spans_norm, sizeof st->spans_norm);
    for (int k = 0; k < 2; k++) {
        tok_buf_init(&s->seq[k].ids, st->ids[k], sizeof st->ids[k]);
        tok_buf_init(&s->seq[k].start, st->start[k], sizeof st->start[k]);
        tok_buf_init(&s->seq[k].stop, st->stop[k], sizeof st->stop[k]);
        tok_buf_init(&s->seq[k].flags, st->flags[k], sizeof st->flags[k]);
    }
}

static void scratch_release(struct scratch *s)
{
    tok_normalized_release(&s->norm);
    tok_normalized_release(&s->norm_work.tmp);
    tok_buf_release(&s->norm_work.changes);
    tok_normalized_release(&s->pre);
    tok_normalized_release(&s->word);
    tok_buf_release(&s->wp_word);
    tok_buf_release(&s->bpe.symbols);
    tok_buf_release(&s->bpe.heap);
    tok_buf_release(&s->bpe.key);
    tok_buf_release(&s->unigram.best);
    tok_buf_release(&s->unigram.path);
    tok_buf_release(&s->spans_raw);
    tok_buf_release(&s->spans_norm);
    tok_tokens_release(&s->seq[0]);
    tok_tokens_release(&s->seq[1]);
}

/* The model on one pre-tokenized word w[from, to). */
static bool encode_word(const struct bert_tokenizer *tok, const struct tok_normalized *w,
                        size_t from, size_t to, struct scratch *s, struct tok_tokens *out)
{
    switch (tok->kind) {
    case BERT_TOKENIZER_BPE:
        return tok_bpe_encode(&tok->bpe, w, from, to, &s->bpe, out);
    case BERT_TOKENIZER_UNIGRAM:
        return tok_unigram_encode(&tok->unigram, w, from, to, &s->unigram, out);
    default:
        return tok_wordpiece_encode(&tok->wp, false, w, from, to, &s->wp_word, out);
    }
}

/* ByteLevel: optional leading space, GPT-2's split, bytes to characters. */
static bool encode_bytelevel(const struct bert_tokenizer *tok, struct scratch *s, size_t from,
                             size_t to, struct tok_tokens *out)
{
    const struct tok_normalized *src = &s->norm;
    const uint8_t *bytes = src->bytes.data;
    if (tok->bytelevel_prefix_space && bytes[from] != ' ') {
        /* NormalizedString::prepend(" "): the space and the first character
         * share that character's alignment. */
        const uint32_t *as = src->al_start.data, *ae = src->al_end.data;
        struct tok_normalized *p = &s->pre;
        size_t n = to - from + 1;
        p->len = 0;
        if (!tok_normalized_reserve(p, n))
            return false;
        ((uint8_t *)p->bytes.data)[0] = ' ';
        ((uint32_t *)p->al_start.data)[0] = as[from];
        ((uint32_t *)p->al_end.data)[0] = ae[from];
        memcpy((uint8_t *)p->bytes.data + 1, bytes + from, n - 1);
        memcpy((uint32_t *)p->al_start.data + 1, as + from, (n - 1) * sizeof(uint32_t));
        memcpy((uint32_t *)p->al_end.data + 1, ae + from, (n - 1) * sizeof(uint32_t));
        p->len = n;
        src = p;
        from = 0;
        to = n;
        bytes = src->bytes.data;
    }
    for (size_t i = from; i < to;) {
        size_t end = tok->bytelevel_use_regex ? tok_bytelevel_next(bytes, i, to) : to;
        if (!tok_bytelevel_map(src, i, end, &s->word) ||
            !encode_word(tok, &s->word, 0, s->word.len, s, out))
            return false;
        i = end;
    }
    return true;
}

/* The pre-tokenizer and the model on norm[from, to), a piece between added
 * tokens; `starts_input` when it begins at the input's first byte. */
static bool encode_piece(const struct bert_tokenizer *tok, struct scratch *s, size_t from,
                         size_t to, bool starts_input, struct tok_tokens *out)
{
    if (from >= to)
        return true;
    switch (tok->pretok) {
    case TOK_PRETOK_BYTELEVEL:
        return encode_bytelevel(tok, s, from, to, out);
    case TOK_PRETOK_METASPACE:
        if (!tok_metaspace_map(&tok->metaspace, &s->norm, from, to, starts_input, &s->pre))
            return false;
        for (size_t i = 0; i < s->pre.len;) {
            size_t end = tok_metaspace_next(&tok->metaspace, s->pre.bytes.data, i, s->pre.len);
            if (!encode_word(tok, &s->pre, i, end, s, out))
                return false;
            i = end;
        }
        return true;
    case TOK_PRETOK_BERT:
        return tok_wordpiece_encode(&tok->wp, true, &s->norm, from, to, &s->wp_word, out);
    default:
        return encode_word(tok, &s->norm, from, to, s, out);
    }
}

/* Tokens of the normalized segment (whose original start is `origin`),
 * which may hold normalized added tokens. */
static bool encode_normalized(const struct bert_tokenizer *tok, struct scratch *s,
                              uint32_t origin, struct tok_tokens *out)
{
    const struct tok_normalized *norm = &s->norm;
    if (!tok->added.any_normalized)
        return encode_piece(tok, s, 0, norm->len, origin == 0, out);
    size_t n = 0;
    if (!tok_added_split(&tok->added, true, norm->bytes.data, 0, norm->len, &s->spans_norm, &n))
        return false;
    const uint32_t *al_start = norm->al_start.data, *al_end = norm->al_end.data;
    for (size_t i = 0; i < n; i++) {
        struct tok_span sp = ((const struct tok_span *)s->spans_norm.data)[i];
        uint32_t piece_origin = sp.start == 0 ? origin : al_start[sp.start];
        bool ok = sp.id >= 0 ? tok_tokens_push(out, sp.id, al_start[sp.start], al_end[sp.end - 1],
                                               TOK_ADDED)
                             : encode_piece(tok, s, sp.start, sp.end, piece_origin == 0, out);
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
            if (!tok_tokens_push(out, sp.id, sp.start, sp.end, TOK_ADDED))
                return false;
            continue;
        }
        if (!tok_normalize_segment(tok, text, sp.start, sp.end, &s->norm, &s->norm_work) ||
            !encode_normalized(tok, s, sp.start, out))
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
    GROW(word);
#undef GROW
    out->cap = cap;
    return true;
}

static void put(struct bert_encoding *out, int32_t id, int32_t type_id, uint32_t start,
                uint32_t stop, uint8_t special, uint8_t sequence, uint32_t word)
{
    size_t i = out->n++;
    out->word[i] = word;
    out->ids[i] = id;
    out->type_ids[i] = type_id;
    out->start[i] = start;
    out->stop[i] = stop;
    out->special[i] = special;
    out->sequence[i] = sequence;
}

/* Append tokens [first, first + count) of `seq` (from `text`), their
 * offsets trimmed of surrounding spaces when the post-processor says so.
 * The trimmed string is the model's token, or for an added token the text
 * it matched (with the spaces lstrip/rstrip took along). */
static bool put_sequence(const struct bert_tokenizer *tok, struct bert_encoding *out,
                         const struct tok_tokens *seq, const char *text, size_t text_len,
                         size_t first, size_t count, int32_t type_id, uint8_t sequence,
                         struct tok_buf *work)
{
    const int32_t *ids = seq->ids.data;
    const uint32_t *start = seq->start.data, *stop = seq->stop.data;
    const uint8_t *flags = seq->flags.data;
    /* Words are counted from the sequence's start, truncated tokens too:
     * each split the model tokenized begins with TOK_WORD_FIRST, and each
     * added token is a split of its own. */
    uint32_t word = UINT32_MAX;
    for (size_t i = 0; i < first; i++)
        word += (flags[i] & (TOK_WORD_FIRST | TOK_ADDED)) != 0;
    for (size_t i = first; i < first + count; i++) {
        word += (flags[i] & (TOK_WORD_FIRST | TOK_ADDED)) != 0;
        uint32_t a = start[i], b = stop[i];
        const char *token = NULL;
        if (tok->trim_offsets && (flags[i] & TOK_ADDED)) {
            if (!tok_buf_reserve(work, 0, b - a + 1))
                return false;
            memcpy(work->data, text + a, b - a);
            ((char *)work->data)[b - a] = '\0';
            token = work->data;
        } else if (tok->trim_offsets) {
            token = bert_tokenizer_id_to_token(tok, ids[i]);
        }
        if (token) {
            tok_bytelevel_trim(token, i == first, tok->trim_prefix_space, &a, &b);
            /* Trimming counts characters of the token but moves byte
             * offsets, which can land inside a character (the prefix space
             * shares the first character's span); the reference reports
             * character offsets, the character holding that byte. An offset
             * at the end of the text is a boundary: the text need not be
             * NUL-terminated, so never read there. */
            while (a > 0 && a < text_len && ((const uint8_t *)text)[a] >= 0x80 && (text[a] & 0xC0) == 0x80)
                a--;
            while (b > 0 && b < text_len && ((const uint8_t *)text)[b] >= 0x80 && (text[b] & 0xC0) == 0x80)
                b--;
        }
        put(out, ids[i], type_id, a, b, 0, sequence, word);
    }
    return true;
}

static enum bert_status check_input(const char *name, const char *s, size_t len,
                                    struct bert_error *err)
{
    if (s == NULL && len > 0)
        return bert_error_set(err, BERT_E_INVALID, "%s is NULL but its length is %zu", name, len);
    if (len >= UINT32_MAX)
        return bert_error_set(err, BERT_E_INVALID, "%s is %zu bytes, more than 4 GiB", name, len);
    size_t valid = len ? utf8_valid_prefix((const uint8_t *)s, len) : 0;
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

    /* The template orders the sequences and gives their type ids even
     * without its special tokens, as TemplateProcessing::apply_template. */
    const struct tok_template *tmpl = NULL;
    if (tok->has_template)
        tmpl = pair ? &tok->pair : &tok->single;
    bool specials = opts->add_special_tokens && tmpl;
    size_t n_added = specials ? tmpl->n_added : 0;
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
    const char *texts[2] = {text, pair};
    size_t text_lens[2] = {text_len, pair_len};
    bool ok = true;
    if (tmpl == NULL) {
        ok = put_sequence(tok, out, a, text, text_len, first[0], keep[0], 0, 0, &s.wp_word);
        if (pair && ok)
            ok = put_sequence(tok, out, b, pair, pair_len, first[1], keep[1],
                              tok->zero_type_ids ? 0 : 1, 1, &s.wp_word);
    } else {
        for (size_t i = 0; i < tmpl->n && ok; i++) {
            const struct tok_template_item *it = &tmpl->items[i];
            if (it->is_sequence)
                ok = put_sequence(tok, out, &s.seq[it->sequence], texts[it->sequence],
                                  text_lens[it->sequence], first[it->sequence], keep[it->sequence], it->type_id,
                                  it->sequence, &s.wp_word);
            else if (specials)
                for (size_t k = 0; k < it->n_ids; k++)
                    put(out, it->ids[k], it->type_id, 0, 0, 1, 255, UINT32_MAX);
        }
    }
    if (!ok) {
        out->n = 0;
        out->truncated = false;
        scratch_release(&s);
        return bert_error_set(err, BERT_E_NOMEM, "out of memory");
    }
    scratch_release(&s);
    return BERT_OK;
}

enum bert_status bert_encoding_from_ids(const struct bert_tokenizer *tok, const int32_t *ids,
                                        size_t n, const struct bert_encode_options *opts,
                                        struct bert_encoding *out, struct bert_error *err)
{
    out->n = 0;
    out->truncated = false;
    out->n_untruncated = n;
    size_t vocab = bert_tokenizer_vocab_size(tok);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= vocab)
            return bert_error_set(err, BERT_E_INVALID,
                                  "token id %ld at position %zu is not in the vocabulary (0 to "
                                  "%zu)",
                                  (long)ids[i], i, vocab - 1);
    size_t keep = n, first = 0;
    if (opts->max_length > 0 && n > opts->max_length) {
        if (!opts->truncate)
            return bert_error_set(err, BERT_E_TOO_LONG,
                                  "input is %zu tokens long, more than the limit of %zu (set "
                                  "truncate to true to cut it)",
                                  n, opts->max_length);
        keep = opts->max_length;
        first = opts->side == BERT_TRUNCATE_LEFT ? n - keep : 0;
        out->truncated = true;
    }
    if (!reserve_output(out, keep)) {
        out->truncated = false;
        return bert_error_set(err, BERT_E_NOMEM, "out of memory for %zu tokens", keep);
    }
    for (size_t i = 0; i < keep; i++)
        put(out, ids[first + i], 0, 0, 0, 0, 0, (uint32_t)i);
    return BERT_OK;
}
