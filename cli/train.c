/* `bert pretrain` and `bert finetune`: their flags, parsed into the
 * trainer's options (train/include/train_loop.h), which runs the loops. */
#include <cblas.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "train_loop.h"

static bool parse_problem(const char *name, enum bert_problem_type *out)
{
    if (strcmp(name, "single") == 0)
        *out = BERT_PROBLEM_SINGLE_LABEL;
    else if (strcmp(name, "multi") == 0)
        *out = BERT_PROBLEM_MULTI_LABEL;
    else if (strcmp(name, "regression") == 0)
        *out = BERT_PROBLEM_REGRESSION;
    else
        return false;
    return true;
}

static const char PRETRAIN_USAGE[] =
    "usage: bert pretrain --corpus FILE [--corpus FILE...] --out DIR --tokenizer DIR [options]\n";

int cli_pretrain_command(int argc, char **argv)
{
    const char *files[CLI_MAX_CORPUS_FILES];
    size_t n_files;
    argc = cli_take_corpus_files(argc, argv, files, &n_files);
    struct train_pretrain_options o = train_pretrain_defaults();
    struct bert_config *cfg = &o.config;
    const char *dtype = "f32", *mask_mix = NULL, *objective = "mlm";
    o.threads = cli_cpus();
    struct cli_opt opts[] = {
        {"out", CLI_OPT_STRING, &o.out, "output folder (required); checkpoints in OUT/checkpoint"},
        {"tokenizer", CLI_OPT_STRING, &o.tokenizer, "tokenizer folder, e.g. bert-base-uncased (required)"},
        {"layers", CLI_OPT_SIZE, &cfg->num_layers, "encoder layers (2)"},
        {"hidden", CLI_OPT_SIZE, &cfg->hidden_size, "hidden size (128)"},
        {"heads", CLI_OPT_SIZE, &cfg->num_heads, "attention heads (2)"},
        {"intermediate", CLI_OPT_SIZE, &cfg->intermediate_size, "feed-forward size (512)"},
        {"max-position", CLI_OPT_SIZE, &cfg->max_position_embeddings, "position embeddings (512)"},
        {"max-len", CLI_OPT_SIZE, &o.max_len, "training sequence length, specials included (128)"},
        {"steps", CLI_OPT_SIZE, &o.steps, "optimiser steps (1000)"},
        {"batch", CLI_OPT_SIZE, &o.batch, "sequences per step (32)"},
        {"lr", CLI_OPT_DOUBLE, &o.lr, "peak learning rate (5e-4)"},
        {"warmup", CLI_OPT_SIZE, &o.warmup, "warm-up steps (default 10% of steps)"},
        {"weight-decay", CLI_OPT_DOUBLE, &o.weight_decay, "AdamW weight decay (0.01)"},
        {"clip", CLI_OPT_DOUBLE, &o.clip, "gradient-norm clip, 0 for none (1.0)"},
        {"dropout", CLI_OPT_DOUBLE, &o.dropout, "dropout of hidden states (0: short runs underfit)"},
        {"objective", CLI_OPT_STRING, &objective, "mlm, or clm: causal LM, is_decoder (mlm)"},
        {"mask-prob", CLI_OPT_DOUBLE, &o.mask.mask_prob, "masking probability (0.15)"},
        {"whole-word", CLI_OPT_FLAG, &o.mask.whole_word, "whole-word masking"},
        {"mask-mix", CLI_OPT_STRING, &mask_mix, "picked tokens made [MASK],random,kept (0.8,0.1,0.1)"},
        {"seed", CLI_OPT_U64, &o.seed, "seed for weights, batches and masks (0)"},
        {"threads", CLI_OPT_SIZE, &o.threads, "compute threads (CPUs available)"},
        {"log-every", CLI_OPT_SIZE, &o.log_every, "progress line every N steps (10)"},
        {"save-every", CLI_OPT_SIZE, &o.save_every, "checkpoint every N steps (0: at the end only)"},
        {"resume", CLI_OPT_FLAG, &o.resume, "continue from OUT/checkpoint"},
        {"init", CLI_OPT_STRING, &o.init, "start from this model's weights (geometry flags ignored)"},
        {"stop-at", CLI_OPT_SIZE, &o.stop_at, "end this run after step N (schedule still --steps)"},
        {"heldout", CLI_OPT_DOUBLE, &o.heldout, "share of sequences held out (0.05)"},
        {"heldout-max", CLI_OPT_SIZE, &o.heldout_max, "held-out sequences evaluated at most (500)"},
        {"dtype", CLI_OPT_STRING, &dtype, "final model dtype: f32, f16, bf16 (f32)"},
    };
    const size_t n_opts = sizeof opts / sizeof opts[0];
    if (!cli_parse("pretrain", argc, argv, opts, n_opts))
        return CLI_EXIT_USAGE;
    o.corpus = files;
    o.n_corpus = n_files;
    o.causal = strcmp(objective, "clm") == 0;
    struct bert_error err = {0};
    const char *bad = cli_mask_options(mask_mix, &o.mask);
    if (bad == NULL && !cli_parse_dtype(dtype, &o.dtype))
        bad = "--dtype must be f32, f16 or bf16";
    if (bad == NULL && !o.causal && strcmp(objective, "mlm") != 0)
        bad = "--objective must be mlm or clm";
    if (bad == NULL && train_pretrain_check(&o, &err) != BERT_OK)
        bad = err.message;
    if (bad != NULL)
        return cli_usage_error("pretrain", bad, PRETRAIN_USAGE, opts, n_opts);
    openblas_set_num_threads(1);
    o.progress = stdout;
    if (train_pretrain(&o, &err) != BERT_OK) {
        fprintf(stderr, "bert pretrain: %s\n", err.message);
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}

static const char FINETUNE_USAGE[] =
    "usage: bert finetune --model DIR --train TSV --dev TSV --out DIR [--freeze-encoder] "
    "[options]\n"
    "(--problem single, multi or regression; multi needs --labels, regression takes none; "
    "--mlm-weight needs the encoder to train;\n"
    " --corpus FILE [--corpus FILE...]: general text for the --mlm-weight batches instead of "
    "the training texts, its last 5% (at most 500 sequences, pretrain's held-out part) "
    "unused)\n";

int cli_finetune_command(int argc, char **argv)
{
    const char *files[CLI_MAX_CORPUS_FILES];
    size_t n_files;
    argc = cli_take_corpus_files(argc, argv, files, &n_files);
    struct train_finetune_options o = train_finetune_defaults();
    const char *dtype = "f32", *problem = "single", *task = "sequence-classification";
    o.threads = cli_cpus();
    struct cli_opt opts[] = {
        {"model", CLI_OPT_STRING, &o.model, "checkpoint to start from (required)"},
        {"train", CLI_OPT_STRING, &o.train, "training TSV: header, then text[<TAB>text_b]<TAB>label (required)"},
        {"dev", CLI_OPT_STRING, &o.dev, "dev TSV for early stopping (required)"},
        {"out", CLI_OPT_STRING, &o.out, "folder for the best checkpoint (required)"},
        {"task", CLI_OPT_STRING, &task, "sequence-classification, or token-classification "
                                        "(--train / --dev in CoNLL format) (sequence-classification)"},
        {"label-all-subtokens", CLI_OPT_FLAG, &o.all_subtokens,
         "token classification: label every piece of a word, not just the first"},
        {"labels", CLI_OPT_STRING, &o.labels, "label names in id order, a,b,... (LABEL_i)"},
        {"problem", CLI_OPT_STRING, &problem, "head: single, multi (label names a,b in the "
                                              "label column) or regression (a number) (single)"},
        {"freeze-encoder", CLI_OPT_FLAG, &o.freeze_encoder, "train only the pooler and classifier"},
        {"epochs", CLI_OPT_SIZE, &o.epochs, "passes over the training set at most (3)"},
        {"max-steps", CLI_OPT_SIZE, &o.max_steps, "stop after this many steps (0: no limit)"},
        {"batch", CLI_OPT_SIZE, &o.batch, "sequences per step (32)"},
        {"max-len", CLI_OPT_SIZE, &o.max_len, "tokens per text, specials included (128)"},
        {"lr", CLI_OPT_DOUBLE, &o.lr, "peak learning rate (2e-5, frozen encoder 1e-3)"},
        {"warmup", CLI_OPT_DOUBLE, &o.warmup, "warm-up share of the steps (0.1)"},
        {"weight-decay", CLI_OPT_DOUBLE, &o.weight_decay, "AdamW weight decay (0.01)"},
        {"clip", CLI_OPT_DOUBLE, &o.clip, "gradient-norm clip, 0 for none (1.0)"},
        {"dropout", CLI_OPT_DOUBLE, &o.dropout, "dropout of hidden states and the pooled [CLS] (0.1)"},
        {"mlm-weight", CLI_OPT_DOUBLE, &o.mlm_weight, "also train the masked-LM head, loss weight "
                                                      "W, on a masked copy of each batch or on "
                                                      "--corpus text (0: off)"},
        {"eval-every", CLI_OPT_SIZE, &o.eval_every, "dev evaluation every N steps (once per epoch)"},
        {"patience", CLI_OPT_SIZE, &o.patience, "stop after N evaluations without improvement (3)"},
        {"seed", CLI_OPT_U64, &o.seed, "seed for new heads and shuffling (0)"},
        {"threads", CLI_OPT_SIZE, &o.threads, "compute threads (CPUs available)"},
        {"dtype", CLI_OPT_STRING, &dtype, "saved dtype: f32, f16, bf16 (f32)"},
    };
    const size_t n_opts = sizeof opts / sizeof opts[0];
    if (!cli_parse("finetune", argc, argv, opts, n_opts))
        return CLI_EXIT_USAGE;
    o.corpus = files;
    o.n_corpus = n_files;
    o.tokens = strcmp(task, "token-classification") == 0;
    struct bert_error err = {0};
    const char *bad = NULL;
    if (!cli_parse_dtype(dtype, &o.dtype))
        bad = "--dtype must be f32, f16 or bf16";
    else if (!parse_problem(problem, &o.problem))
        bad = "--problem must be single, multi or regression";
    else if (strcmp(task, "sequence-classification") != 0 &&
             strcmp(task, "token-classification") != 0)
        bad = "--task must be sequence-classification or token-classification";

    else if (train_finetune_check(&o, &err) != BERT_OK)
        bad = err.message;
    if (bad != NULL)
        return cli_usage_error("finetune", bad, FINETUNE_USAGE, opts, n_opts);
    openblas_set_num_threads(1);
    o.progress = stdout;
    if (train_finetune(&o, NULL, &err) != BERT_OK) {
        fprintf(stderr, "bert finetune: %s\n", err.message);
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}
