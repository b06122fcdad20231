/* bert_tokenizer_decode: Hugging Face's Tokenizer::decode (ids to token
 * strings, special tokens optionally skipped, the decoder), then
 * transformers' clean_up_tokenization when the checkpoint asks for it. */
#include <stdlib.h>
#include <string.h>

#include "bytelevel.h"
#include "internal.h"
#include "utf8.h"

struct text {
    char *p;
    size_t len, cap;
    bool failed;
};

static void append(struct text *t, const char *s, size_t len)
{
    if (t->failed)
        return;
    if (t->len + len + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 64;
        while (cap < t->len + len + 1)
            cap *= 2;
        char *p = realloc(t->p, cap);
        if (p == NULL) {
            t->failed = true;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->len, s, len);
    t->len += len;
    t->p[t->len] = '\0';
}

/* Replace every occurrence of `from` by `to`, left to right and without
 * overlaps, as Rust's and Python's str.replace do. False when out of memory
 * (`t` is then unchanged). */
static bool replace_all(struct text *t, const char *from, const char *to)
{
    size_t nf = strlen(from), nt = strlen(to);
    const char *hit = t->len >= nf ? memmem(t->p, t->len, from, nf) : NULL;
    if (hit == NULL)
        return true;
    struct text out = {0};
    size_t i = 0;
    /* Copy the runs between matches whole: a fill-mask response decodes a
     * sequence per candidate, so this runs often on long texts. */
    while (hit != NULL) {
        size_t at = (size_t)(hit - t->p);
        append(&out, t->p + i, at - i);
        append(&out, to, nt);
        i = at + nf;
        hit = t->len - i >= nf ? memmem(t->p + i, t->len - i, from, nf) : NULL;
    }
    append(&out, t->p + i, t->len - i);
    if (out.failed) {
        free(out.p);
        return false;
    }
    free(t->p);
    *t = out;
    return true;
}

/* The WordPiece decoder's cleanup (tokenizers/src/decoders/wordpiece.rs). */
static const char *const decoder_cleanup[][2] = {
    {" .", "."},   {" ?", "?"},     {" !", "!"},   {" ,", ","},   {" ' ", "'"},  {" n't", "n't"},
    {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
};

/* transformers' PreTrainedTokenizerBase.clean_up_tokenization. */
static const char *const transformers_cleanup[][2] = {
    {" .", "."},   {" ?", "?"},   {" !", "!"},   {" ,", ","},   {" ' ", "'"},
    {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
};

static bool cleanup(struct text *t, const char *const (*rules)[2], size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!replace_all(t, rules[i][0], rules[i][1]))
            return false;
    return true;
}

/* The ByteLevel decoder: every token's characters back to bytes (a token
 * with a character outside the byte alphabet stays as it is), all of them
 * joined, invalid UTF-8 replaced. */
static void decode_bytelevel(struct text *out, const char *const *tokens, size_t n)
{
    struct text raw = {0};
    for (size_t t = 0; t < n; t++) {
        const uint8_t *p = (const uint8_t *)tokens[t];
        size_t len = strlen(tokens[t]), cl;
        bool bytes = true;
        for (size_t i = 0; i < len && bytes; i += cl)
            bytes = tok_bytelevel_byte(utf8_decode(p + i, &cl)) >= 0;
        if (!bytes) {
            append(&raw, tokens[t], len);
            continue;
        }
        for (size_t i = 0; i < len; i += cl) {
            char b = (char)tok_bytelevel_byte(utf8_decode(p + i, &cl));
            append(&raw, &b, 1);
        }
    }
    for (size_t i = 0; i < raw.len && !raw.failed;) {
        const uint8_t *s = (const uint8_t *)raw.p + i;
        size_t k = utf8_sequence_length(s, raw.len - i);
        if (k > 0) {
            append(out, raw.p + i, k);
            i += k;
        } else {
            /* One U+FFFD per maximal subpart, as Rust's from_utf8_lossy. */
            append(out, "\xEF\xBF\xBD", 3);
            i += utf8_invalid_length(s, raw.len - i);
        }
    }
    if (raw.failed)
        out->failed = true;
    free(raw.p);
}

/* The Metaspace decoder: the replacement character becomes a space, except
 * in the first token when a prefix is prepended, where it is dropped. */
static void decode_metaspace(struct text *out, const struct tok_metaspace *m,
                             const char *const *tokens, size_t n)
{
    size_t rl = m->replacement_len;
    for (size_t t = 0; t < n; t++) {
        const char *p = tokens[t];
        size_t len = strlen(p);
        for (size_t i = 0; i < len;) {
            if (len - i >= rl && memcmp(p + i, m->replacement_utf8, rl) == 0) {
                if (t > 0 || m->prepend == TOK_PREPEND_NEVER)
                    append(out, " ", 1);
                i += rl;
            } else {
                append(out, p + i, 1);
                i++;
            }
        }
    }
}

static void decode_wordpiece(const struct bert_tokenizer *tok, struct text *out,
                             const char *const *tokens, size_t n)
{
    size_t plen = tok->decoder_prefix ? strlen(tok->decoder_prefix) : 0;
    for (size_t t = 0; t < n && !out->failed; t++) {
        const char *token = tokens[t];
        /* Each token is cleaned up on its own, after its joining space. */
        struct text piece = {0};
        if (t > 0) {
            if (tok->decoder_prefix && strncmp(token, tok->decoder_prefix, plen) == 0)
                token += plen;
            else
                append(&piece, " ", 1);
        }
        append(&piece, token, strlen(token));
        if (!piece.failed && tok->decoder_cleanup &&
            !cleanup(&piece, decoder_cleanup, sizeof decoder_cleanup / sizeof *decoder_cleanup))
            piece.failed = true;
        if (piece.failed)
            out->failed = true;
        else
            append(out, piece.p, piece.len);
        free(piece.p);
    }
}

/* The decoder on token strings (the tokenizer's own, or spaces between). */
static void decode_strings(const struct bert_tokenizer *tok, struct text *out,
                           const char *const *tokens, size_t n)
{
    switch (tok->decoder) {
    case TOK_DECODER_WORDPIECE:
        decode_wordpiece(tok, out, tokens, n);
        break;
    case TOK_DECODER_BYTELEVEL:
        decode_bytelevel(out, tokens, n);
        break;
    case TOK_DECODER_METASPACE:
        decode_metaspace(out, &tok->decoder_metaspace, tokens, n);
        break;
    default:
        for (size_t t = 0; t < n; t++) {
            if (t > 0)
                append(out, " ", 1);
            append(out, tokens[t], strlen(tokens[t]));
        }
    }
}

char *bert_tokenizer_decode_tokens(const struct bert_tokenizer *tok, const char *const *tokens,
                                   size_t n)
{
    struct text out = {0};
    append(&out, "", 0);
    decode_strings(tok, &out, tokens, n);
    if (out.failed) {
        free(out.p);
        return NULL;
    }
    return out.p;
}

char *bert_tokenizer_decode(const struct bert_tokenizer *tok, const int32_t *ids, size_t n,
                            bool skip_special)
{
    struct text out = {0};
    append(&out, "", 0);
    /* The token strings, unknown ids and skipped specials left out. */
    const char **tokens = malloc((n ? n : 1) * sizeof *tokens);
    if (tokens == NULL) {
        free(out.p);
        return NULL;
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        const char *token = bert_tokenizer_id_to_token(tok, ids[i]);
        if (token && !(skip_special && bert_tokenizer_is_special(tok, ids[i])))
            tokens[kept++] = token;
    }
    decode_strings(tok, &out, tokens, kept);
    free(tokens);
    if (!out.failed && tok->cleanup_spaces &&
        !cleanup(&out, transformers_cleanup, sizeof transformers_cleanup / sizeof *transformers_cleanup))
        out.failed = true;
    if (out.failed) {
        free(out.p);
        return NULL;
    }
    return out.p;
}
