#include "proto_fake_tokenizer.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

struct bert_tokenizer {
    bool no_mask;
};

static struct bert_tokenizer the_fake;

static const char *const vocab[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "dog", ".",
    "paris", "is", "capital", "of", "france", "##s", "a", ",", "hello", "world", "!", "é",
};
#define VOCAB_SIZE (sizeof vocab / sizeof vocab[0])

struct bert_tokenizer *fake_tokenizer(void) { return &the_fake; }

void fake_tokenizer_set_has_mask(bool has_mask) { the_fake.no_mask = !has_mask; }

int32_t bert_tokenizer_token_to_id(const struct bert_tokenizer *tok, const char *token)
{
    (void)tok;
    for (size_t i = 0; i < VOCAB_SIZE; i++)
        if (strcmp(vocab[i], token) == 0)
            return (int32_t)i;
    return -1;
}

const char *bert_tokenizer_id_to_token(const struct bert_tokenizer *tok, int32_t id)
{
    (void)tok;
    return id >= 0 && (size_t)id < VOCAB_SIZE ? vocab[id] : NULL;
}

size_t bert_tokenizer_vocab_size(const struct bert_tokenizer *tok)
{
    (void)tok;
    return VOCAB_SIZE;
}

int32_t bert_tokenizer_mask_id(const struct bert_tokenizer *tok)
{
    return tok->no_mask ? -1 : FAKE_MASK;
}
int32_t bert_tokenizer_pad_id(const struct bert_tokenizer *tok) { (void)tok; return FAKE_PAD; }
const char *bert_tokenizer_mask_token(const struct bert_tokenizer *tok)
{
    (void)tok;
    return "[MASK]";
}

void bert_encoding_free(struct bert_encoding *enc)
{
    free(enc->ids);
    free(enc->type_ids);
    free(enc->start);
    free(enc->stop);
    free(enc->special);
    free(enc->sequence);
    memset(enc, 0, sizeof *enc);
}

static bool grow(struct bert_encoding *enc, size_t n)
{
    if (n <= enc->cap)
        return true;
    size_t cap = n * 2;
    enc->ids = realloc(enc->ids, cap * sizeof *enc->ids);
    enc->type_ids = realloc(enc->type_ids, cap * sizeof *enc->type_ids);
    enc->start = realloc(enc->start, cap * sizeof *enc->start);
    enc->stop = realloc(enc->stop, cap * sizeof *enc->stop);
    enc->special = realloc(enc->special, cap * sizeof *enc->special);
    enc->sequence = realloc(enc->sequence, cap * sizeof *enc->sequence);
    enc->cap = cap;
    return enc->ids && enc->type_ids && enc->start && enc->stop && enc->special && enc->sequence;
}

static void push(struct bert_encoding *enc, int32_t id, int32_t type, uint32_t start,
                 uint32_t stop, uint8_t special, uint8_t seq)
{
    size_t i = enc->n++;
    enc->ids[i] = id;
    enc->type_ids[i] = type;
    enc->start[i] = start;
    enc->stop[i] = stop;
    enc->special[i] = special;
    enc->sequence[i] = seq;
}

/* Split text into tokens appended to enc (content only). */
static void split(const char *text, size_t len, int32_t type, uint8_t seq,
                  struct bert_encoding *enc)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)text[i];
        if (isspace(c)) {
            i++;
            continue;
        }
        grow(enc, enc->n + 2);
        if (len - i >= 6 && memcmp(text + i, "[MASK]", 6) == 0) {
            push(enc, FAKE_MASK, type, (uint32_t)i, (uint32_t)i + 6, 0, seq);
            i += 6;
            continue;
        }
        if (c < 0x80 && ispunct(c)) {
            char p[2] = {(char)c, 0};
            int32_t id = bert_tokenizer_token_to_id(NULL, p);
            push(enc, id < 0 ? FAKE_UNK : id, type, (uint32_t)i, (uint32_t)i + 1, 0, seq);
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && !isspace((unsigned char)text[j]) &&
               !((unsigned char)text[j] < 0x80 && ispunct((unsigned char)text[j])))
            j++;
        char word[64];
        size_t wl = j - i < sizeof word - 1 ? j - i : sizeof word - 1;
        for (size_t k = 0; k < wl; k++)
            word[k] = (char)tolower((unsigned char)text[i + k]);
        word[wl] = '\0';
        int32_t id = bert_tokenizer_token_to_id(NULL, word);
        if (id >= 0) {
            push(enc, id, type, (uint32_t)i, (uint32_t)j, 0, seq);
        } else if (wl > 1 && word[wl - 1] == 's') {
            word[wl - 1] = '\0';
            id = bert_tokenizer_token_to_id(NULL, word);
            push(enc, id < 0 ? FAKE_UNK : id, type, (uint32_t)i, (uint32_t)j - 1, 0, seq);
            if (id >= 0)
                push(enc, FAKE_S, type, (uint32_t)j - 1, (uint32_t)j, 0, seq);
            else
                enc->stop[enc->n - 1] = (uint32_t)j;
        } else {
            push(enc, FAKE_UNK, type, (uint32_t)i, (uint32_t)j, 0, seq);
        }
        i = j;
    }
}

static bool valid_utf8(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] == 0xFF)
            return false; /* enough for the tests */
    return true;
}

enum bert_status bert_tokenizer_encode(const struct bert_tokenizer *tok, const char *text,
                                       size_t text_len, const char *pair, size_t pair_len,
                                       const struct bert_encode_options *opts,
                                       struct bert_encoding *out, struct bert_error *err)
{
    (void)tok;
    if (!valid_utf8(text, text_len) || (pair && !valid_utf8(pair, pair_len)))
        return bert_error_set(err, BERT_E_INVALID, "invalid UTF-8");
    struct bert_encoding a = {0}, b = {0};
    split(text, text_len, 0, 0, &a);
    if (pair)
        split(pair, pair_len, 1, 1, &b);
    size_t specials = opts->add_special_tokens ? (pair ? 3 : 2) : 0;
    size_t total = a.n + b.n + specials;
    out->n_untruncated = total;
    out->truncated = false;
    if (opts->max_length && total > opts->max_length) {
        if (!opts->truncate) {
            bert_encoding_free(&a);
            bert_encoding_free(&b);
            return bert_error_set(err, BERT_E_TOO_LONG, "%zu tokens, limit %zu", total,
                                  opts->max_length);
        }
        /* Longest first, as the Hugging Face default strategy. */
        while (a.n + b.n + specials > opts->max_length) {
            struct bert_encoding *cut = b.n > a.n ? &b : &a;
            if (opts->side == BERT_TRUNCATE_LEFT) {
                memmove(cut->ids, cut->ids + 1, (cut->n - 1) * sizeof *cut->ids);
                memmove(cut->start, cut->start + 1, (cut->n - 1) * sizeof *cut->start);
                memmove(cut->stop, cut->stop + 1, (cut->n - 1) * sizeof *cut->stop);
            }
            cut->n--;
        }
        out->truncated = true;
    }
    out->n = 0;
    grow(out, a.n + b.n + specials + 1);
    if (opts->add_special_tokens)
        push(out, FAKE_CLS, 0, 0, 0, 1, 255);
    for (size_t i = 0; i < a.n; i++)
        push(out, a.ids[i], 0, a.start[i], a.stop[i], 0, 0);
    if (opts->add_special_tokens)
        push(out, FAKE_SEP, 0, 0, 0, 1, 255);
    for (size_t i = 0; i < b.n; i++)
        push(out, b.ids[i], 1, b.start[i], b.stop[i], 0, 1);
    if (pair && opts->add_special_tokens)
        push(out, FAKE_SEP, 1, 0, 0, 1, 255);
    bert_encoding_free(&a);
    bert_encoding_free(&b);
    return BERT_OK;
}

char *bert_tokenizer_decode(const struct bert_tokenizer *tok, const int32_t *ids, size_t n,
                            bool skip_special)
{
    (void)tok;
    size_t cap = 1;
    for (size_t i = 0; i < n; i++) {
        const char *t = bert_tokenizer_id_to_token(NULL, ids[i]);
        cap += 1 + (t ? strlen(t) : 0);
    }
    char *out = malloc(cap), *o = out;
    if (out == NULL)
        return NULL;
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        const char *t = bert_tokenizer_id_to_token(NULL, ids[i]);
        if (t == NULL || (skip_special && ids[i] <= FAKE_MASK))
            continue;
        bool join = strncmp(t, "##", 2) == 0;
        bool tight = strchr(".,!", t[0]) != NULL && t[1] == '\0';
        if (join)
            t += 2;
        else if (!first && !tight)
            *o++ = ' ';
        size_t l = strlen(t);
        memcpy(o, t, l);
        o += l;
        first = false;
    }
    *o = '\0';
    return out;
}

/* The routes that post-process per-token heads (proto/extract_routes.c)
 * link these; the fake has no such head, so they are never reached. */
char *bert_tokenizer_decode_tokens(const struct bert_tokenizer *tok, const char *const *tokens,
                                   size_t n)
{
    (void)tok;
    size_t cap = 1;
    for (size_t i = 0; i < n; i++)
        cap += strlen(tokens[i]) + 1;
    char *out = calloc(cap, 1);
    for (size_t i = 0; out && i < n; i++) {
        if (i > 0)
            strcat(out, " ");
        strcat(out, tokens[i]);
    }
    return out;
}

enum bert_tokenizer_kind bert_tokenizer_kind(const struct bert_tokenizer *tok)
{
    (void)tok;
    return BERT_TOKENIZER_WORDPIECE;
}

int32_t bert_tokenizer_unk_id(const struct bert_tokenizer *tok)
{
    (void)tok;
    return -1;
}

int32_t bert_tokenizer_cls_id(const struct bert_tokenizer *tok)
{
    (void)tok;
    return FAKE_CLS;
}

/* The real one's contract (tokenizer.h), enough for the proto tests: the
 * range check and the limit; no truncation. */
enum bert_status bert_encoding_from_ids(const struct bert_tokenizer *tok, const int32_t *ids,
                                        size_t n, const struct bert_encode_options *opts,
                                        struct bert_encoding *out, struct bert_error *err)
{
    (void)tok;
    out->n = 0;
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= VOCAB_SIZE)
            return bert_error_set(err, BERT_E_INVALID,
                                  "token id %ld at position %zu is not in the vocabulary (0 to "
                                  "%zu)",
                                  (long)ids[i], i, VOCAB_SIZE - 1);
    if (opts->max_length && n > opts->max_length)
        return bert_error_set(err, BERT_E_TOO_LONG, "%zu tokens, limit %zu", n, opts->max_length);
    grow(out, n + 1);
    for (size_t i = 0; i < n; i++)
        push(out, ids[i], 0, 0, 0, 0, 0);
    return BERT_OK;
}
