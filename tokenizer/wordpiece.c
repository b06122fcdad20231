#include "wordpiece.h"

#include <stdlib.h>
#include <string.h>

#include "unicode.h"

/* Byte length of the UTF-8 character starting with `b`. */
static size_t char_len(uint8_t b)
{
    return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

/* The longest vocabulary piece of w[start, len): the token itself when
 * start == 0, prefix + token otherwise. The caller has written the prefix
 * just before w + start. Returns the end of the piece (0: none) and its id. */
static size_t longest_piece(const struct tok_wordpiece *wp, const uint8_t *w, size_t start,
                            size_t len, int32_t *id)
{
    const char *key = (const char *)w + start;
    uint64_t h = TOK_VOCAB_HASH_INIT;
    size_t key_extra = 0;
    if (start > 0) {
        key -= wp->prefix_len;
        h = wp->prefix_hash;
        key_extra = wp->prefix_len;
    }
    size_t best = 0;
    size_t j = start;
    while (j < len) {
        size_t n = char_len(w[j]);
        for (size_t k = 0; k < n; k++)
            h = tok_vocab_hash_step(h, w[j + k]);
        j += n;
        const struct tok_vocab_slot *s = tok_vocab_probe(&wp->vocab, h, key, j - start + key_extra);
        if (s == NULL)
            break; /* no token continues this prefix */
        if (s->id >= 0) {
            best = j;
            *id = s->id;
        }
    }
    return best;
}

static bool encode_word(const struct tok_wordpiece *wp, const struct tok_normalized *norm,
                        size_t ws, size_t we, struct tok_buf *word, struct tok_tokens *out)
{
    const uint8_t *text = (const uint8_t *)norm->bytes.data + ws;
    const uint32_t *al_start = (const uint32_t *)norm->al_start.data;
    const uint32_t *al_end = (const uint32_t *)norm->al_end.data;
    size_t len = we - ws;
    uint32_t word_start = al_start[ws], word_end = al_end[we - 1];

    size_t n_chars = 0;
    for (size_t i = 0; i < len; i++)
        n_chars += (text[i] & 0xC0) != 0x80;
    const uint8_t whole = TOK_WORD_FIRST | TOK_WORD_LAST;
    if (n_chars > wp->max_input_chars_per_word)
        return tok_tokens_push(out, wp->unk_id, word_start, word_end, whole);

    /* Most words are whole vocabulary entries. */
    int32_t id = tok_vocab_get(&wp->vocab, (const char *)text, len);
    if (id >= 0)
        return tok_tokens_push(out, id, word_start, word_end, whole);

    /* Copy with room for the prefix in front: each continuation lookup writes
     * the prefix over bytes already consumed, so "##" + rest is contiguous. */
    if (!tok_buf_reserve(word, 0, wp->prefix_len + len))
        return false;
    uint8_t *w = (uint8_t *)word->data + wp->prefix_len;
    memcpy(w, text, len);
    size_t first = out->n;
    size_t start = 0;
    while (start < len) {
        if (start > 0)
            memcpy(w + start - wp->prefix_len, wp->prefix, wp->prefix_len);
        size_t end = longest_piece(wp, w, start, len, &id);
        if (end == 0) {
            out->n = first; /* a word that cannot be covered is one unknown token */
            return tok_tokens_push(out, wp->unk_id, word_start, word_end, whole);
        }
        uint8_t flags = (start == 0 ? TOK_WORD_FIRST : 0) | (end == len ? TOK_WORD_LAST : 0);
        if (!tok_tokens_push(out, id, al_start[ws + start], al_end[ws + end - 1], flags))
            return false;
        start = end;
    }
    return true;
}

bool tok_wordpiece_encode(const struct tok_wordpiece *wp, bool bert_pretokenize,
                          const struct tok_normalized *norm, size_t from, size_t to,
                          struct tok_buf *word, struct tok_tokens *out)
{
    if (!bert_pretokenize)
        return from == to || encode_word(wp, norm, from, to, word, out);
    const uint8_t *text = norm->bytes.data;
    size_t word_start = from;
    size_t i = from;
    while (i < to) {
        size_t n;
        uint32_t c = utf8_decode(text + i, &n);
        bool space = tok_unicode_is_whitespace(c);
        if (space || tok_unicode_is_punctuation(c)) {
            if (word_start < i && !encode_word(wp, norm, word_start, i, word, out))
                return false;
            if (!space && !encode_word(wp, norm, i, i + n, word, out))
                return false;
            word_start = i + n;
        }
        i += n;
    }
    return word_start >= to || encode_word(wp, norm, word_start, to, word, out);
}

void tok_wordpiece_free(struct tok_wordpiece *wp)
{
    tok_vocab_free(&wp->vocab);
    free(wp->unk_token);
    free(wp->prefix);
    memset(wp, 0, sizeof *wp);
}
