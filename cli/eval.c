/* `bert eval`: the scores of a classifier checkpoint on a labelled TSV, run
 * through the inference engine exactly as bertserve runs it: accuracy and
 * F1 (single-label), micro/macro F1 and exact match (multi-label), or
 * Pearson, Spearman and MSE (regression), by the config's problem_type. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

#include "args.h"
#include "bert.h"
#include "cli.h"
#include "train_data.h"

#define EVAL_BATCH 32

/* The head as the trainer reads it; without problem_type, transformers'
 * rule: one label is a regression. */
static enum bert_problem_type problem_of(const struct bert_config *c)
{
    if (c->problem_type != BERT_PROBLEM_UNSET)
        return c->problem_type;
    return c->num_labels == 1 ? BERT_PROBLEM_REGRESSION : BERT_PROBLEM_SINGLE_LABEL;
}

static void print_scores(const struct bert_config *c, enum bert_problem_type problem,
                         const struct train_labeled *d, const int32_t *pred, const float *logits)
{
    const size_t C = c->num_labels;
    printf("examples %zu\n", d->n);
    if (problem == BERT_PROBLEM_MULTI_LABEL) {
        struct train_multi_scores sc = train_score_multi(logits, d->targets, d->n, C);
        printf("micro-f1 %.4f\nmacro-f1 %.4f\nexact-match %.4f\n", sc.micro_f1, sc.macro_f1,
               sc.exact_match);
    } else if (problem == BERT_PROBLEM_REGRESSION) {
        struct train_regression_scores sc = train_score_regression(logits, d->targets, d->n);
        printf("pearson %.4f\nspearman %.4f\nmse %.4f\n", sc.pearson, sc.spearman, sc.mse);
    } else {
        struct train_scores sc = train_score(pred, d->labels, d->n, C);
        printf("accuracy %.4f\nmacro-f1 %.4f\n", sc.accuracy, sc.macro_f1);
        if (C == 2)
            printf("f1 (label 1: %s) %.4f\n", c->id2label[1], sc.f1_positive);
    }
}

int cli_eval_command(int argc, char **argv)
{
    const char *model_dir = NULL, *data_path = NULL, *dtype = "f32";
    size_t max_len = 128, threads = cli_cpus();
    struct cli_opt opts[] = {
        {"model", CLI_OPT_STRING, &model_dir, "classifier checkpoint (required)"},
        {"data", CLI_OPT_STRING, &data_path, "TSV: header, then text[<TAB>text_b]<TAB>label, as for finetune; a CoNLL file for a token classifier (required)"},
        {"max-len", CLI_OPT_SIZE, &max_len, "tokens per text, specials included (128)"},
        {"threads", CLI_OPT_SIZE, &threads, "compute threads (CPUs available)"},
        {"dtype", CLI_OPT_STRING, &dtype, "f32, bf16 or int8 for the dense layers (f32)"},
    };
    const size_t n_opts = sizeof opts / sizeof opts[0];
    if (!cli_parse("eval", argc, argv, opts, n_opts))
        return CLI_EXIT_USAGE;
    if (model_dir == NULL || data_path == NULL || max_len < 3) {
        fprintf(stderr, "usage: bert eval --model DIR --data TSV [options]\n");
        cli_print_options(opts, n_opts);
        return CLI_EXIT_USAGE;
    }
    openblas_set_num_threads(1);
    struct bert_error err = {0};
    struct bert_model *model = NULL;
    struct bert_scratch *s = NULL;
    struct train_labeled d = {0};
    int32_t *pred = NULL;
    float *logits = NULL;
    int rc = CLI_EXIT_FAILURE;
    if (bert_model_load(model_dir, &model, &err) != BERT_OK)
        goto fail;
    const int dtype_rc = cli_apply_dtype("eval", model, dtype);
    if (dtype_rc != CLI_EXIT_OK) {
        bert_model_free(model);
        return dtype_rc;
    }
    if (max_len > model->max_input_tokens)
        max_len = model->max_input_tokens;
    if (model->can_classify_tokens) {
        rc = cli_eval_tokens(model, data_path, max_len, threads, &err);
        if (rc != CLI_EXIT_OK)
            goto fail;
        goto done;
    }
    if (!model->can_classify) {
        bert_error_set(&err, BERT_E_INVALID, "%s has no classification head", model_dir);
        goto fail;
    }
    const size_t C = model->config.num_labels;
    if (max_len > model->max_input_tokens)
        max_len = model->max_input_tokens;
    const enum bert_problem_type problem = problem_of(&model->config);
    if (problem == BERT_PROBLEM_REGRESSION && C != 1) {
        bert_error_set(&err, BERT_E_INVALID, "%s: a regression head must have 1 label, not %zu",
                       model_dir, C);
        goto fail;
    }
    const struct train_label_spec spec = {problem, C, model->config.id2label};
    if (train_labeled_load_spec(&d, model->tokenizer, data_path, max_len, &spec, &err) != BERT_OK)
        goto fail;
    s = bert_scratch_new(model, EVAL_BATCH * max_len, max_len, threads, &err);
    pred = malloc(d.n * sizeof *pred);
    logits = malloc(d.n * C * sizeof *logits);
    if (s == NULL || pred == NULL || logits == NULL) {
        if (s != NULL)
            bert_error_set(&err, BERT_E_NOMEM, "out of memory");
        goto fail;
    }
    for (size_t first = 0; first < d.n; first += EVAL_BATCH) {
        size_t n = d.n - first < EVAL_BATCH ? d.n - first : EVAL_BATCH;
        size_t seq_start[EVAL_BATCH + 1];
        struct bert_seq_task tasks[EVAL_BATCH];
        for (size_t k = 0; k <= n; k++)
            seq_start[k] = d.start[first + k] - d.start[first];
        for (size_t k = 0; k < n; k++)
            tasks[k] = (struct bert_seq_task){.task = BERT_TASK_CLASSIFY,
                                              .logits = logits + (first + k) * C};
        struct bert_batch b = {n, seq_start[n], d.ids + d.start[first], d.types + d.start[first],
                               seq_start};
        if (bert_run(model, s, &b, tasks, &err) != BERT_OK)
            goto fail;
        for (size_t k = 0; k < n; k++) {
            size_t best = 0;
            const float *row = logits + (first + k) * C;
            for (size_t c = 1; c < C; c++)
                best = row[c] > row[best] ? c : best;
            pred[first + k] = (int32_t)best;
        }
    }
    print_scores(&model->config, problem, &d, pred, logits);
    rc = CLI_EXIT_OK;
    goto done;
fail:
    fprintf(stderr, "bert eval: %s\n", err.message);
done:
    free(pred);
    free(logits);
    train_labeled_free(&d);
    bert_scratch_free(s);
    bert_model_free(model);
    return rc;
}
