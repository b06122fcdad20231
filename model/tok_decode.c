/* bert_tokenizer_decode: Hugging Face's Tokenizer::decode (ids to token
 * strings, special tokens optionally skipped, the WordPiece decoder), then
 * transformers' clean_up_tokenization when the checkpoint asks for it. */
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

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
    if (t->len < nf)
        return true;
    struct text out = {0};
    size_t i = 0;
    while (i < t->len) {
        if (i + nf <= t->len && memcmp(t->p + i, from, nf) == 0) {
            append(&out, to, nt);
            i += nf;
        } else {
            append(&out, t->p + i, 1);
            i++;
        }
    }
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

char *bert_tokenizer_decode(const struct bert_tokenizer *tok, const int32_t *ids, size_t n,
                            bool skip_special)
{
    struct text out = {0};
    append(&out, "", 0);
    size_t emitted = 0;
    size_t plen = tok->decoder_prefix ? strlen(tok->decoder_prefix) : 0;
    for (size_t i = 0; i < n && !out.failed; i++) {
        /* Unknown ids are skipped, as in `tokenizers`. */
        const char *token = bert_tokenizer_id_to_token(tok, ids[i]);
        if (token == NULL || (skip_special && bert_tokenizer_is_special(tok, ids[i])))
            continue;
        if (!tok->has_decoder) {
            if (emitted++ > 0)
                append(&out, " ", 1);
            append(&out, token, strlen(token));
            continue;
        }
        /* Each token is cleaned up on its own, after its joining space. */
        struct text piece = {0};
        if (emitted++ > 0) {
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
            out.failed = true;
        else
            append(&out, piece.p, piece.len);
        free(piece.p);
    }
    if (!out.failed && tok->cleanup_spaces &&
        !cleanup(&out, transformers_cleanup, sizeof transformers_cleanup / sizeof *transformers_cleanup))
        out.failed = true;
    if (out.failed) {
        free(out.p);
        return NULL;
    }
    return out.p;
}
