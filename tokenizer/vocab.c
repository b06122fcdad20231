#include "vocab.h"

#include <stdlib.h>
#include <string.h>

struct tok_vocab_entry {
    uint32_t off, len;
    int32_t id;
};

#define EMPTY UINT32_MAX

/* The slot index comes from the 32-bit tag alone, so growing the table
 * re-places every key without hashing its bytes again: a vocabulary holds
 * every prefix of every token, and rehashing them all would be quadratic in
 * a token's length. */
static size_t slot_index(uint32_t tag, size_t mask)
{
    /* FNV's low bits are weak; mix before masking (MurmurHash3's fmix32). */
    uint32_t h = tag;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return (size_t)h & mask;
}

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = TOK_VOCAB_HASH_INIT;
    for (size_t i = 0; i < len; i++)
        h = tok_vocab_hash_step(h, (uint8_t)s[i]);
    return h;
}

bool tok_vocab_add(struct tok_vocab *v, const char *token, size_t len, int32_t id)
{
    if (len > TOK_VOCAB_MAX_TOKEN_BYTES || v->arena_len + len + 1 >= UINT32_MAX)
        return false;
    if (v->arena_len + len + 1 > v->arena_cap) {
        size_t cap = v->arena_cap ? v->arena_cap : 4096;
        while (cap < v->arena_len + len + 1)
            cap *= 2;
        char *p = realloc(v->arena, cap);
        if (p == NULL)
            return false;
        v->arena = p;
        v->arena_cap = cap;
    }
    if (v->n_entries == v->entries_cap) {
        size_t cap = v->entries_cap ? v->entries_cap * 2 : 1024;
        struct tok_vocab_entry *p = realloc(v->entries, cap * sizeof *p);
        if (p == NULL)
            return false;
        v->entries = p;
        v->entries_cap = cap;
    }
    memcpy(v->arena + v->arena_len, token, len);
    v->arena[v->arena_len + len] = '\0';
    v->entries[v->n_entries++] = (struct tok_vocab_entry){(uint32_t)v->arena_len, (uint32_t)len, id};
    v->arena_len += len + 1;
    return true;
}

static struct tok_vocab_slot *find_slot(const struct tok_vocab *v, uint64_t h, const char *key,
                                        size_t len)
{
    size_t i = slot_index((uint32_t)h, v->mask);
    for (;;) {
        struct tok_vocab_slot *s = &v->slots[i];
        if (s->key_len == EMPTY)
            return s;
        if (s->tag == (uint32_t)h && s->key_len == len &&
            memcmp(v->arena + s->key_off, key, len) == 0)
            return s;
        i = (i + 1) & v->mask;
    }
}

static bool grow(struct tok_vocab *v)
{
    size_t n = (v->mask + 1) * 2;
    struct tok_vocab_slot *old = v->slots;
    size_t old_n = v->slots ? v->mask + 1 : 0;
    struct tok_vocab_slot *slots = malloc(n * sizeof *slots);
    if (slots == NULL)
        return false;
    for (size_t i = 0; i < n; i++)
        slots[i].key_len = EMPTY;
    v->slots = slots;
    v->mask = n - 1;
    for (size_t i = 0; i < old_n; i++) {
        if (old[i].key_len == EMPTY)
            continue;
        size_t k = slot_index(old[i].tag, v->mask);
        while (slots[k].key_len != EMPTY) /* keys are distinct: no compare */
            k = (k + 1) & v->mask;
        slots[k] = old[i];
    }
    free(old);
    return true;
}

/* Insert key = arena[off, off+len), whose hash is `h`. A token overwrites
 * whatever is there; a prefix only fills an empty slot. */
static bool insert(struct tok_vocab *v, uint32_t off, uint32_t len, uint64_t h, int32_t id,
                   bool is_token)
{
    if ((v->n_used + 1) * 2 > v->mask + 1 && !grow(v))
        return false;
    const char *key = v->arena + off;
    struct tok_vocab_slot *s = find_slot(v, h, key, len);
    if (s->key_len == EMPTY) {
        *s = (struct tok_vocab_slot){(uint32_t)h, off, len, id};
        v->n_used++;
    } else if (is_token) {
        s->id = id;
    }
    return true;
}

bool tok_vocab_build(struct tok_vocab *v)
{
    v->mask = 1023;
    v->slots = malloc((v->mask + 1) * sizeof *v->slots);
    if (v->slots == NULL)
        return false;
    for (size_t i = 0; i <= v->mask; i++)
        v->slots[i].key_len = EMPTY;
    int32_t max_id = -1;
    for (size_t i = 0; i < v->n_entries; i++) {
        const struct tok_vocab_entry *e = &v->entries[i];
        if (!insert(v, e->off, e->len, hash_bytes(v->arena + e->off, e->len), e->id, true))
            return false;
        if (e->id > max_id)
            max_id = e->id;
    }
    for (size_t i = 0; i < v->n_entries; i++) {
        const struct tok_vocab_entry *e = &v->entries[i];
        const uint8_t *s = (const uint8_t *)v->arena + e->off;
        uint64_t h = TOK_VOCAB_HASH_INIT; /* of s[0, k), extended byte by byte */
        for (uint32_t k = 1; k < e->len; k++) {
            h = tok_vocab_hash_step(h, s[k - 1]);
            if ((s[k] & 0xC0) != 0x80 && !insert(v, e->off, k, h, -1, false))
                return false;
        }
    }
    /* Ids come from the final map, so an id whose string was overwritten by a
     * later duplicate has no token, as in Hugging Face's reverse vocab. */
    v->n_ids = (size_t)(max_id + 1);
    v->id_off = malloc((v->n_ids ? v->n_ids : 1) * sizeof *v->id_off);
    if (v->id_off == NULL)
        return false;
    for (size_t i = 0; i < v->n_ids; i++)
        v->id_off[i] = EMPTY;
    for (size_t i = 0; i <= v->mask; i++)
        if (v->slots[i].key_len != EMPTY && v->slots[i].id >= 0)
            v->id_off[v->slots[i].id] = v->slots[i].key_off;
    free(v->entries);
    v->entries = NULL;
    v->n_entries = v->entries_cap = 0;
    return true;
}

void tok_vocab_free(struct tok_vocab *v)
{
    free(v->arena);
    free(v->entries);
    free(v->id_off);
    free(v->slots);
    memset(v, 0, sizeof *v);
}

const struct tok_vocab_slot *tok_vocab_probe(const struct tok_vocab *v, uint64_t h,
                                             const char *key, size_t len)
{
    const struct tok_vocab_slot *s = find_slot(v, h, key, len);
    return s->key_len == EMPTY ? NULL : s;
}

int32_t tok_vocab_get(const struct tok_vocab *v, const char *s, size_t len)
{
    if (v->slots == NULL)
        return -1;
    const struct tok_vocab_slot *slot = tok_vocab_probe(v, hash_bytes(s, len), s, len);
    return slot ? slot->id : -1;
}

const char *tok_vocab_token(const struct tok_vocab *v, int32_t id)
{
    if (id < 0 || (size_t)id >= v->n_ids || v->id_off[id] == EMPTY)
        return NULL;
    return v->arena + v->id_off[id];
}
