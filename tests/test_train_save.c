/* A checkpoint the trainer saves loads in the inference engine (what `bert`
 * and `bertserve` run) and gives the trainer's own outputs: classifier
 * logits within 1e-5 and masked-LM cross-entropy at [MASK] positions within
 * 1e-5 relative, with a sequence carrying pair token types; and a pair row
 * of a fine-tuning TSV loads as the tokenizer encodes the pair; a causal
 * (is_decoder) checkpoint keeps its flag through config.json and the engine
 * refuses it by name.
 * argv[1]: tokenizer folder, argv[2]: work folder. */
#include <stdint.h>

#include "check.h"
#include "bert.h"
#include "train_data.h"
#include "train_step.h"

#define SEQS 3

/* A pair row loads as the tokenizer encodes the pair, types included; a
 * single text as the text alone. */
static void check_pair_rows(const struct bert_tokenizer *tok, const char *work)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/pairs.tsv", work);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f == NULL)
        return;
    fputs("a\tb\tlabel\na man is eating\tsomeone eats food\t1\na dog runs\t0\n", f);
    fclose(f);
    struct train_labeled d;
    struct bert_error err;
    CHECK(train_labeled_load(&d, tok, path, 32, 2, &err) == BERT_OK);
    struct bert_encode_options o = bert_encode_options_default();
    struct bert_encoding enc = {0};
    CHECK(bert_tokenizer_encode(tok, "a man is eating", 15, "someone eats food", 17, &o, &enc,
                                &err) == BERT_OK);
    CHECK_INT_EQ(d.n, 2);
    CHECK_INT_EQ(d.start[1], enc.n);
    for (size_t t = 0; t < enc.n && t < d.start[1]; t++) {
        CHECK_INT_EQ(d.ids[t], enc.ids[t]);
        CHECK_INT_EQ(d.types[t], enc.type_ids[t]);
    }
    CHECK_INT_EQ(d.types[enc.n - 1], 1);
    CHECK(bert_tokenizer_encode(tok, "a dog runs", 10, NULL, 0, &o, &enc, &err) == BERT_OK);
    CHECK_INT_EQ(d.start[2] - d.start[1], enc.n);
    for (size_t t = d.start[1]; t < d.start[2]; t++)
        CHECK_INT_EQ(d.types[t], 0);
    CHECK(d.labels[0] == 1 && d.labels[1] == 0);
    bert_encoding_free(&enc);
    train_labeled_free(&d);
}

/* The trainer saves is_decoder; the engine, whose attention is
 * bidirectional, refuses to run the checkpoint and names its config. */
static void check_causal_refused(struct train_model *m, const char *tok_dir, const char *work)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/causal", work);
    struct bert_error err;
    m->config.is_decoder = true;
    CHECK(train_model_save(m, dir, tok_dir, BERT_DTYPE_F32, &err) == BERT_OK);
    m->config.is_decoder = false;
    struct bert_model *model = NULL;
    if (bert_model_load(dir, &model, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", err.message);
        CHECK(false);
        return;
    }
    CHECK(model->config.is_decoder);
    err = (struct bert_error){0};
    CHECK(bert_scratch_new(model, 64, 32, 1, &err) == NULL);
    CHECK_INT_EQ(err.status, BERT_E_UNSUPPORTED);
    CHECK_CONTAINS(err.message, "causal/config.json: is_decoder (causal) models are trainer-only");
    printf("engine on a causal checkpoint: %s\n", err.message);
    bert_model_free(model);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s TOKENIZER_DIR WORK_DIR\n", argv[0]);
        return 2;
    }
    struct bert_error err;
    struct bert_tokenizer *tok;
    if (bert_tokenizer_load(argv[1], &tok, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    const int32_t M = bert_tokenizer_mask_id(tok), CLS = bert_tokenizer_cls_id(tok),
                  SEP = bert_tokenizer_sep_id(tok);
    struct bert_config cfg = {.model_type = "bert", .vocab_size = bert_tokenizer_vocab_size(tok),
                              .hidden_size = 16, .num_layers = 2, .num_heads = 2,
                              .intermediate_size = 32, .max_position_embeddings = 64,
                              .type_vocab_size = 2, .layer_norm_eps = 1e-12f,
                              .activation = BERT_ACTIVATION_GELU, .num_labels = 3};
    struct train_model m;
    CHECK(train_model_init(&m, &cfg, true, true, &err) == BERT_OK);
    train_model_synth(&m, 11, 0.2, 0.1, 0.1);

    const int32_t ids[] = {CLS, 2023, M, 1037, 3231, SEP, CLS, M, 2204, M, 3185, 2003, SEP,
                           CLS, 4658, SEP};
    const int32_t targets[] = {-100, -100, 2003, -100, -100, -100, -100, 1996, -100, 2307,
                               -100, -100, -100, -100, -100, -100};
    const size_t T = sizeof ids / sizeof ids[0];
    /* The second sequence is a pair: its last tokens have type 1. */
    int32_t types[sizeof ids / sizeof ids[0]] = {0};
    types[10] = types[11] = types[12] = 1;
    const size_t start[SEQS + 1] = {0, 6, 13, 16};
    const int32_t labels[SEQS] = {0, 2, 1};
    float train_logits[SEQS * 3];
    struct train_batch tb = {.b = {SEQS, T, ids, types, start}, .mlm_labels = targets,
                             .cls_labels = labels, .cls_logits = train_logits};
    struct train_work *w = train_work_new(&m, 64, 32, 1, &err);
    struct train_stats st;
    CHECK(w != NULL && train_step(&m, w, &tb, false, false, &st, &err) == BERT_OK);
    CHECK(train_model_save(&m, argv[2], argv[1], BERT_DTYPE_F32, &err) == BERT_OK);

    struct bert_model *model;
    if (bert_model_load(argv[2], &model, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    CHECK(model->can_classify && model->can_fill_mask);
    struct bert_scratch *s = bert_scratch_new(model, 64, 32, 1, &err);
    float logits[SEQS * 3];
    struct bert_seq_task tasks[SEQS];
    for (size_t i = 0; i < SEQS; i++)
        tasks[i] = (struct bert_seq_task){.task = BERT_TASK_CLASSIFY, .logits = logits + 3 * i};
    struct bert_batch b = {SEQS, T, ids, types, start};
    CHECK(bert_run(model, s, &b, tasks, &err) == BERT_OK);
    double worst = 0.0;
    for (size_t k = 0; k < SEQS * 3; k++) {
        worst = fmax(worst, fabs(logits[k] - train_logits[k]));
        CHECK_NEAR(logits[k], train_logits[k], 1e-5 * (1.0 + fabs(train_logits[k])));
    }

    /* Engine probability of each target at its [MASK]: -log p summed is the
     * trainer's MLM loss sum. */
    double engine_loss = 0.0;
    for (size_t t = 0; t < T; t++) {
        if (targets[t] == -100)
            continue;
        size_t i = t < start[1] ? 0 : t < start[2] ? 1 : 2;
        size_t ord = 0;
        uint32_t masks[4], n_masks = 0;
        for (size_t u = start[i]; u < start[i + 1] && n_masks < 4; u++)
            if (ids[u] == M)
                masks[n_masks++] = (uint32_t)(u - start[i]);
        for (size_t u = start[i]; u < t; u++)
            ord += ids[u] == M;
        /* The other sequences just embed; sequence i scores the target at
         * each of its masks (one row per mask). */
        struct bert_seq_task fm[SEQS];
        float emb[SEQS][16];
        int32_t top_ids[4];
        float top_probs[4];
        for (size_t k = 0; k < SEQS; k++)
            fm[k] = (struct bert_seq_task){.task = BERT_TASK_EMBED, .pooling = BERT_POOLING_CLS,
                                           .embedding = emb[k]};
        fm[i] = (struct bert_seq_task){.task = BERT_TASK_FILL_MASK, .top_k = 1,
                                       .mask_positions = masks, .n_masks = n_masks,
                                       .targets = &targets[t], .n_targets = 1,
                                       .top_ids = top_ids, .top_probs = top_probs};
        CHECK(bert_run(model, s, &b, fm, &err) == BERT_OK);
        CHECK_INT_EQ(top_ids[ord], targets[t]);
        engine_loss -= log(top_probs[ord]);
    }
    printf("classifier logits: worst difference %.3g; MLM loss sum trainer %.7f, engine %.7f\n",
           worst, st.mlm_loss_sum, engine_loss);
    CHECK(st.mlm_count == 3);
    CHECK_NEAR(engine_loss, st.mlm_loss_sum, 1e-5 * st.mlm_loss_sum);

    check_pair_rows(tok, argv[2]);
    check_causal_refused(&m, argv[1], argv[2]);
    bert_scratch_free(s);
    bert_model_free(model);
    train_work_free(w);
    train_model_free(&m);
    bert_tokenizer_free(tok);
    return check_exit();
}
