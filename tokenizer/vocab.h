/* The WordPiece vocabulary: token strings by id, and an open-addressing hash
 * map from byte strings to ids that also holds every prefix (at character
 * boundaries) of every token. The prefixes let WordPiece find the longest
 * vocabulary match at a position in one left-to-right walk, extending an
 * incremental hash byte by byte and stopping as soon as no token can
 * continue: linear in the match length instead of one hash of every
 * candidate substring.
 *
 * Built once at load time; read-only afterwards (any number of threads). */
#ifndef BERT_TOK_VOCAB_H
#define BERT_TOK_VOCAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tok_vocab_slot {
    uint32_t tag;     /* low bits of the key's hash, checked before the bytes */
    uint32_t key_off; /* key bytes in the arena (a token or a prefix of one) */
    uint32_t key_len; /* UINT32_MAX: empty slot */
    int32_t id;       /* -1: a prefix only */
};

struct tok_vocab {
    char *arena; /* NUL-terminated token strings */
    size_t arena_len, arena_cap;
    struct tok_vocab_entry *entries; /* in insertion order until built */
    size_t n_entries, entries_cap;
    uint32_t *id_off; /* (n_ids) arena offset of each id's token, UINT32_MAX: none */
    size_t n_ids;     /* largest id + 1 */
    struct tok_vocab_slot *slots;
    size_t mask;   /* slot count - 1 */
    size_t n_used; /* occupied slots */
};

/* The longest token a vocabulary may hold. Real vocabularies stay at or
 * under a kilobyte (ModernBERT's BPE has one of 1,024 bytes; WordPiece never
 * matches a word of more than max_input_chars_per_word, 100 by default); a
 * far longer one is a broken or hostile file, refused at load with its
 * place named. */
#define TOK_VOCAB_MAX_TOKEN_BYTES 65536u

/* Append `token` (len bytes) with `id`. A later duplicate of the same string
 * wins, as in a JSON object or Python dict. False when out of memory, when
 * `len` exceeds TOK_VOCAB_MAX_TOKEN_BYTES (callers check first to name the
 * token) or when the arena would exceed 4 GiB. */
bool tok_vocab_add(struct tok_vocab *v, const char *token, size_t len, int32_t id);

/* Build the map (tokens, then their prefixes) and the id table. Call once,
 * after the last tok_vocab_add. False when out of memory. */
bool tok_vocab_build(struct tok_vocab *v);

void tok_vocab_free(struct tok_vocab *v);

/* The id of exactly `s` (len bytes), or -1. */
int32_t tok_vocab_get(const struct tok_vocab *v, const char *s, size_t len);

/* The token of `id`, or NULL. */
const char *tok_vocab_token(const struct tok_vocab *v, int32_t id);

/* Incremental FNV-1a: hash a key byte by byte, probing after each character. */
#define TOK_VOCAB_HASH_INIT UINT64_C(0xcbf29ce484222325)
static inline uint64_t tok_vocab_hash_step(uint64_t h, uint8_t byte)
{
    return (h ^ byte) * UINT64_C(0x100000001b3);
}

/* The slot holding `key` (whose hash is `h`), or NULL when `key` is neither a
 * token nor a prefix of one. */
const struct tok_vocab_slot *tok_vocab_probe(const struct tok_vocab *v, uint64_t h,
                                             const char *key, size_t len);

#endif
