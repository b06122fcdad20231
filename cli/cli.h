/* Subcommands of the `bert` tool, one file each. Each takes the arguments
 * after `bert` (argv[0] is the subcommand) and returns the exit status, or
 * CLI_NOT_A_COMMAND when `name` is not one of its commands. */
#ifndef CLI_H
#define CLI_H

#include <stdbool.h>
#include <stddef.h>

enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAILURE = 1, /* a request failed or the model did not load */
    CLI_EXIT_USAGE = 2,   /* bad command line */
    CLI_NOT_A_COMMAND = -1,
};

struct bert_model;

/* What every subcommand that runs the engine shares (cli/setup.c). */

/* --dtype: "f32" keeps the model as loaded, "bf16" runs its dense layers in
 * bf16 (falling back to f32, with a note on stderr, where unavailable),
 * "int8" in int8 (refused, with the reason on stderr, where unavailable).
 * Returns CLI_EXIT_OK, CLI_EXIT_USAGE for another value or
 * CLI_EXIT_FAILURE when int8 cannot run. */
int cli_apply_dtype(const char *cmd, struct bert_model *model, const char *dtype);

/* CPUs this process may use (affinity mask), at least 1. */
size_t cli_cpus(void);

/* tokenize, embed, fill-mask, classify (cli/request.c). */
int cli_request_command(const char *name, int argc, char **argv);

/* bert bench (cli/bench.c). */
int cli_bench_command(int argc, char **argv);

/* bert init (cli/init.c). */
int cli_init_command(int argc, char **argv);

/* bert mask-stats (cli/mask_stats.c). */
int cli_mask_stats_command(int argc, char **argv);

/* bert mlm-eval (cli/mlm_eval.c). */
int cli_mlm_eval_command(int argc, char **argv);

/* bert pretrain, bert finetune (cli/train.c), bert eval (cli/eval.c). */
int cli_pretrain_command(int argc, char **argv);
int cli_finetune_command(int argc, char **argv);
int cli_eval_command(int argc, char **argv);
/* bert eval on a token classifier (cli/eval_tokens.c): entity P/R/F1 on a
 * CoNLL file; returns the exit status. */
struct bert_model;
int cli_eval_tokens(struct bert_model *model, const char *data_path, size_t max_len,
                    size_t threads, struct bert_error *err);

#endif
