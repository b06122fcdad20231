/* Added tokens ([CLS], [MASK], user additions): split out of the text before
 * the model sees it, as Hugging Face's AddedVocabulary does. Tokens with
 * normalized == false match the raw text; the others match the normalized
 * text of what is left. Matching is leftmost-longest; single_word, lstrip
 * and rstrip behave as in `tokenizers`. */
#ifndef BERT_TOK_ADDED_H
#define BERT_TOK_ADDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct tok_added_token {
    char *content; /* NUL-terminated */
    size_t len;
    char *pattern; /* what is matched: content, or its normalized form */
    size_t pattern_len;
    int32_t id;
    bool special, single_word, lstrip, rstrip, normalized;
};

/* Candidates grouped by first byte, longest first. */
struct tok_added_index {
    uint32_t *order;    /* token indices */
    uint32_t head[257]; /* order[head[b] .. head[b+1]) start with byte b */
};

struct tok_added {
    struct tok_added_token *tokens;
    size_t n, cap;
    struct tok_added_index raw, normalized;
    bool any_normalized;
};

/* One piece of a split: an added token (id >= 0) or text to tokenize. */
struct tok_span {
    uint32_t start, end;
    int32_t id;
};

/* Append a token (content copied; pattern unset until tok_added_build).
 * False when out of memory. */
bool tok_added_push(struct tok_added *a, const char *content, size_t len, int32_t id,
                    bool special, bool single_word, bool lstrip, bool rstrip, bool normalized);

/* Index the tokens once their patterns are set (pattern == content for
 * raw tokens). False when out of memory. */
bool tok_added_build(struct tok_added *a);

/* The added token with exactly this content, or NULL. */
const struct tok_added_token *tok_added_find(const struct tok_added *a, const char *s, size_t len);

/* The added token with this id (the last one added wins), or NULL. */
const struct tok_added_token *tok_added_by_id(const struct tok_added *a, int32_t id);

/* Split s[start, end) with the raw (normalized == false) or normalized
 * tokens, covering the whole range with spans appended to `spans` (struct
 * tok_span, count in *n). An empty range gives no span. False when out of
 * memory. */
bool tok_added_split(const struct tok_added *a, bool normalized, const uint8_t *s, size_t start,
                     size_t end, struct tok_buf *spans, size_t *n);

void tok_added_free(struct tok_added *a);

#endif
