/* BERT masking rule over >= 100,000 tokens of random WordPiece ids framed
 * by specials: rates, labels, specials and whole-word grouping.
 * argv[1]: a WordPiece tokenizer folder. */
#include <stdint.h>

#include "check.h"
#include "train_mask.h"

#define SEQS 1200
#define LEN 128

static int32_t pick_word_id(const struct train_vocab *v, struct train_rng *r)
{
    for (;;) {
        int32_t id = (int32_t)train_rng_below(r, v->size);
        if (!v->never_pick[id])
            return id;
    }
}

/* [CLS] a... [SEP] b... [SEP]: the second [SEP] at a random place. */
static void make_sequence(const struct bert_tokenizer *tok, const struct train_vocab *v,
                          struct train_rng *r, int32_t *ids)
{
    ids[0] = bert_tokenizer_cls_id(tok);
    size_t mid = 8 + train_rng_below(r, LEN - 16);
    for (size_t t = 1; t < LEN - 1; t++)
        ids[t] = t == mid ? bert_tokenizer_sep_id(tok) : pick_word_id(v, r);
    ids[LEN - 1] = bert_tokenizer_sep_id(tok);
}

static void run(const struct bert_tokenizer *tok, const struct train_vocab *v, bool whole_word)
{
    struct train_mask_options o = train_mask_options_default();
    o.whole_word = whole_word;
    struct train_rng data = {1}, rng = {42};
    size_t eligible = 0, picked = 0, counts[4] = {0}, split_words = 0, bad = 0;
    int32_t orig[LEN], ids[LEN], labels[LEN];
    uint8_t kinds[LEN];
    for (size_t s = 0; s < SEQS; s++) {
        make_sequence(tok, v, &data, orig);
        memcpy(ids, orig, sizeof ids);
        train_mask_sequence(v, &o, &rng, ids, LEN, labels, kinds);
        for (size_t t = 0; t < LEN; t++) {
            bool is_picked = kinds[t] != TRAIN_MASK_NONE;
            if (v->never_pick[orig[t]]) {
                bad += is_picked || ids[t] != orig[t];
                continue;
            }
            eligible++;
            picked += is_picked;
            counts[kinds[t]]++;
            bad += labels[t] != (is_picked ? orig[t] : TRAIN_LABEL_IGNORE);
            bad += kinds[t] == TRAIN_MASK_NONE && ids[t] != orig[t];
            bad += kinds[t] == TRAIN_MASK_KEPT && ids[t] != orig[t];
            bad += kinds[t] == TRAIN_MASK_MASKED && ids[t] != v->mask_id;
            /* A "##" piece after a word piece belongs to that word. */
            if (t > 0 && v->continuation[orig[t]] && !v->never_pick[orig[t - 1]])
                split_words += (kinds[t] == TRAIN_MASK_NONE) != (kinds[t - 1] == TRAIN_MASK_NONE);
        }
    }
    double frac = (double)picked / (double)eligible;
    printf("%s: %zu tokens, picked %.4f, [MASK] %.4f, random %.4f, kept %.4f, split words %zu\n",
           whole_word ? "whole-word" : "token", eligible, frac,
           (double)counts[TRAIN_MASK_MASKED] / (double)picked,
           (double)counts[TRAIN_MASK_RANDOM] / (double)picked,
           (double)counts[TRAIN_MASK_KEPT] / (double)picked, split_words);
    CHECK(eligible >= 100000);
    CHECK_NEAR(frac, 0.15, 0.003);
    CHECK_NEAR((double)counts[TRAIN_MASK_MASKED] / (double)picked, 0.8, 0.01);
    CHECK_NEAR((double)counts[TRAIN_MASK_RANDOM] / (double)picked, 0.1, 0.01);
    CHECK_NEAR((double)counts[TRAIN_MASK_KEPT] / (double)picked, 0.1, 0.01);
    CHECK_INT_EQ(bad, 0);
    if (whole_word)
        CHECK_INT_EQ(split_words, 0);
    else
        CHECK(split_words > 0); /* token masking does split words: the check can see it */
}

/* The same seed gives the same corruption; another seed does not. */
static void check_seeded(const struct bert_tokenizer *tok, const struct train_vocab *v)
{
    struct train_mask_options o = train_mask_options_default();
    int32_t a[LEN], b[LEN], c[LEN], la[LEN], lb[LEN], lc[LEN];
    struct train_rng data = {7}, r1 = {5}, r2 = {5}, r3 = {6};
    make_sequence(tok, v, &data, a);
    memcpy(b, a, sizeof a);
    memcpy(c, a, sizeof a);
    train_mask_sequence(v, &o, &r1, a, LEN, la, NULL);
    train_mask_sequence(v, &o, &r2, b, LEN, lb, NULL);
    train_mask_sequence(v, &o, &r3, c, LEN, lc, NULL);
    CHECK(memcmp(a, b, sizeof a) == 0 && memcmp(la, lb, sizeof la) == 0);
    CHECK(memcmp(la, lc, sizeof la) != 0);
}

/* Generators for neighbouring steps are unrelated: no stream is another's
 * shifted by a few draws (which made consecutive held-out sequences share
 * their masks), and the same (seed, step, stream) repeats exactly. */
static void check_step_streams(void)
{
    enum { DRAWS = 64 };
    uint64_t prev[DRAWS];
    for (uint64_t step = 0; step < 100; step++) {
        struct train_rng r = train_rng_for(9, step, TRAIN_STREAM_HELDOUT);
        uint64_t cur[DRAWS];
        for (size_t i = 0; i < DRAWS; i++)
            cur[i] = train_rng_next(&r);
        struct train_rng copy = train_rng_for(9, step, TRAIN_STREAM_HELDOUT);
        CHECK(train_rng_next(&copy) == cur[0]);
        for (size_t shift = 0; step > 0 && shift < DRAWS; shift++)
            CHECK(cur[0] != prev[shift]);
        memcpy(prev, cur, sizeof cur);
    }
    struct train_rng a = train_rng_for(9, 3, TRAIN_STREAM_BATCH);
    struct train_rng b = train_rng_for(9, 3, TRAIN_STREAM_HELDOUT);
    CHECK(train_rng_next(&a) != train_rng_next(&b));
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s TOKENIZER_DIR\n", argv[0]);
        return 2;
    }
    struct bert_tokenizer *tok;
    struct bert_error err;
    if (bert_tokenizer_load(argv[1], &tok, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    struct train_vocab v;
    CHECK(train_vocab_init(&v, tok, &err) == BERT_OK);
    CHECK(v.never_pick[bert_tokenizer_cls_id(tok)] && v.never_pick[v.mask_id]);
    CHECK(v.continuation[bert_tokenizer_token_to_id(tok, "##ing")]);
    CHECK(!v.continuation[bert_tokenizer_token_to_id(tok, "the")]);
    run(tok, &v, false);
    run(tok, &v, true);
    check_seeded(tok, &v);
    check_step_streams();
    train_vocab_free(&v);
    bert_tokenizer_free(tok);
    return check_exit();
}
