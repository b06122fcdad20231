/* `bert eval` on a token-classification checkpoint: entity-level
 * precision, recall and F1 (conlleval's rules, train_tagged.h) and per-type
 * F1 on a CoNLL file, run through the inference engine exactly as
 * bertserve runs it (BERT_TASK_TOKENS); each word is its first sub-token's
 * label. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bert.h"
#include "cli.h"
#include "train_tagged.h"

#define EVAL_BATCH 32

static void print_ner(const struct train_tagged *d, const struct train_ner_scores *sc)
{
    const struct train_entity_scores *o = &sc->overall;
    printf("sentences %zu\nwords %zu\ntoken-accuracy %.4f\n", d->n, d->word_start[d->n],
           sc->token_accuracy);
    printf("entity-precision %.4f\nentity-recall %.4f\nentity-f1 %.4f\n", o->precision,
           o->recall, o->f1);
    printf("entities %zu correct of %zu predicted, %zu gold\n", o->correct, o->predicted,
           o->gold);
    for (size_t t = 0; t < sc->n_types; t++)
        printf("%s precision %.4f recall %.4f f1 %.4f (%zu predicted, %zu gold)\n",
               sc->type_names[t], sc->types[t].precision, sc->types[t].recall, sc->types[t].f1,
               sc->types[t].predicted, sc->types[t].gold);
}

int cli_eval_tokens(struct bert_model *model, const char *data_path, size_t max_len,
                    size_t threads, struct bert_error *err)
{
    const size_t C = model->config.num_labels;
    struct train_tagged d = {0};
    struct bert_scratch *s = NULL;
    float *logits = NULL;
    int32_t *words = NULL, *types = NULL;
    int rc = CLI_EXIT_FAILURE;
    if (train_tagged_load(&d, model->tokenizer, data_path, max_len, false, model->config.id2label,
                          C, err) != BERT_OK)
        goto done;
    s = bert_scratch_new(model, EVAL_BATCH * max_len, max_len, threads, err);
    logits = malloc(EVAL_BATCH * max_len * C * sizeof *logits);
    words = calloc(d.word_start[d.n] + 1, sizeof *words);
    types = calloc(EVAL_BATCH * max_len, sizeof *types); /* one segment: all 0 */
    if (s == NULL || logits == NULL || words == NULL || types == NULL) {
        if (s != NULL)
            bert_error_set(err, BERT_E_NOMEM, "out of memory");
        goto done;
    }
    int32_t o_id = 0;
    for (size_t i = 0; i < C; i++)
        if (strcmp(model->config.id2label[i], "O") == 0)
            o_id = (int32_t)i;
    for (size_t i = 0; i < d.word_start[d.n]; i++)
        words[i] = o_id;
    for (size_t first = 0; first < d.n; first += EVAL_BATCH) {
        size_t n = d.n - first < EVAL_BATCH ? d.n - first : EVAL_BATCH;
        size_t seq_start[EVAL_BATCH + 1];
        struct bert_seq_task tasks[EVAL_BATCH];
        for (size_t k = 0; k <= n; k++)
            seq_start[k] = d.start[first + k] - d.start[first];
        for (size_t k = 0; k < n; k++)
            tasks[k] = (struct bert_seq_task){.task = BERT_TASK_TOKENS,
                                              .token_logits = logits + seq_start[k] * C};
        struct bert_batch b = {n, seq_start[n], d.ids + d.start[first], types, seq_start};
        if (bert_run(model, s, &b, tasks, err) != BERT_OK)
            goto done;
        for (size_t t = 0; t < seq_start[n]; t++) {
            const size_t global = d.start[first] + t;
            if (d.word_of[global] < 0)
                continue;
            size_t sent = first;
            while (d.start[sent + 1] <= global)
                sent++;
            const float *row = logits + t * C;
            size_t best = 0;
            for (size_t c = 1; c < C; c++)
                best = row[c] > row[best] ? c : best;
            words[d.word_start[sent] + (size_t)d.word_of[global]] = (int32_t)best;
        }
    }
    struct train_ner_scores sc;
    train_ner_score(&d, words, &sc);
    print_ner(&d, &sc);
    rc = CLI_EXIT_OK;
done:
    free(logits);
    free(words);
    free(types);
    bert_scratch_free(s);
    train_tagged_free(&d);
    return rc;
}
