#include "train_mask.h"

#include <stdlib.h>
#include <string.h>

uint64_t train_rng_next(struct train_rng *r)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double train_rng_uniform(struct train_rng *r)
{
    return (double)(train_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t train_rng_below(struct train_rng *r, uint64_t n)
{
    /* Rejection keeps it exactly uniform. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = train_rng_next(r);
    while (x >= limit);
    return x % n;
}

struct train_rng train_rng_for(uint64_t seed, uint64_t step, uint64_t stream)
{
    /* The start state is a hash of all three. Adding step * the generator's
     * own increment (as an earlier version did) made step s + 1's stream
     * step s's shifted by one draw, so consecutive held-out sequences got
     * nearly the same masks. */
    struct train_rng r = {seed ^ (stream * 0xD1B54A32D192ED03ull)};
    r.state = train_rng_next(&r) ^ step;
    r.state = train_rng_next(&r);
    return r;
}

enum bert_status train_vocab_init(struct train_vocab *v, const struct bert_tokenizer *tok,
                                  struct bert_error *err)
{
    memset(v, 0, sizeof *v);
    v->size = bert_tokenizer_vocab_size(tok);
    v->mask_id = bert_tokenizer_mask_id(tok);
    if (v->mask_id < 0)
        return bert_error_set(err, BERT_E_INVALID, "the tokenizer has no mask token");
    v->never_pick = calloc(v->size, 1);
    v->continuation = calloc(v->size, 1);
    if (v->never_pick == NULL || v->continuation == NULL) {
        train_vocab_free(v);
        return bert_error_set(err, BERT_E_NOMEM, "out of memory");
    }
    const int32_t roles[] = {bert_tokenizer_cls_id(tok), bert_tokenizer_sep_id(tok),
                             bert_tokenizer_pad_id(tok), v->mask_id,
                             bert_tokenizer_bos_id(tok), bert_tokenizer_eos_id(tok)};
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++)
        if (roles[i] >= 0 && (size_t)roles[i] < v->size)
            v->never_pick[roles[i]] = 1;
    for (size_t id = 0; id < v->size; id++) {
        if (bert_tokenizer_is_special(tok, (int32_t)id))
            v->never_pick[id] = 1;
        const char *t = bert_tokenizer_id_to_token(tok, (int32_t)id);
        v->continuation[id] = t != NULL && t[0] == '#' && t[1] == '#' && t[2] != '\0';
    }
    return BERT_OK;
}

void train_vocab_free(struct train_vocab *v)
{
    free(v->never_pick);
    free(v->continuation);
    v->never_pick = v->continuation = NULL;
}

struct train_mask_options train_mask_options_default(void)
{
    return (struct train_mask_options){
        .mask_prob = 0.15, .replace_mask = 0.8, .replace_random = 0.1, .whole_word = false};
}

static enum train_mask_kind corrupt(const struct train_vocab *v,
                                    const struct train_mask_options *o, struct train_rng *rng,
                                    int32_t *id)
{
    double u = train_rng_uniform(rng);
    if (u < o->replace_mask) {
        *id = v->mask_id;
        return TRAIN_MASK_MASKED;
    }
    if (u < o->replace_mask + o->replace_random) {
        *id = (int32_t)train_rng_below(rng, v->size);
        return TRAIN_MASK_RANDOM;
    }
    return TRAIN_MASK_KEPT;
}

void train_mask_sequence(const struct train_vocab *v, const struct train_mask_options *o,
                         struct train_rng *rng, int32_t *ids, size_t n, int32_t *labels,
                         uint8_t *kinds)
{
    bool word_picked = false, in_word = false; /* in_word: the previous token was a word piece */
    for (size_t t = 0; t < n; t++) {
        const int32_t id = ids[t];
        bool picked;
        if (v->never_pick[id]) {
            picked = false;
            in_word = false;
        } else if (o->whole_word && in_word && v->continuation[id]) {
            picked = word_picked; /* a "##" piece follows its word's decision */
        } else {
            picked = word_picked = train_rng_uniform(rng) < o->mask_prob;
            in_word = true;
        }
        labels[t] = picked ? id : TRAIN_LABEL_IGNORE;
        enum train_mask_kind k = picked ? corrupt(v, o, rng, &ids[t]) : TRAIN_MASK_NONE;
        if (kinds != NULL)
            kinds[t] = (uint8_t)k;
    }
}

void train_next_token_labels(const int32_t *ids, size_t n, int32_t *labels)
{
    for (size_t t = 0; t + 1 < n; t++)
        labels[t] = ids[t + 1];
    if (n > 0)
        labels[n - 1] = -100;
}
