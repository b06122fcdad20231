/* Tiny long-option parser shared by the subcommands (`--name value`,
 * `--name=value` and boolean `--flag`), and the option helpers several of
 * them share. */
#ifndef CLI_ARGS_H
#define CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include "bert.h"

enum cli_opt_kind { CLI_OPT_STRING, CLI_OPT_SIZE, CLI_OPT_DOUBLE, CLI_OPT_U64, CLI_OPT_FLAG };

struct cli_opt {
    const char *name;       /* without the leading "--" */
    enum cli_opt_kind kind;
    void *dst;              /* const char **, size_t *, double *, uint64_t * or bool * */
    const char *help;
};

/* Parse argv[1..argc) (argv[0] is the subcommand) into the options. Returns
 * false after printing "bert <cmd>: ..." to stderr on an unknown option,
 * a missing value or a malformed number. */
bool cli_parse(const char *cmd, int argc, char **argv, const struct cli_opt *opts, size_t n);

/* Print the options' help lines. */
void cli_print_options(const struct cli_opt *opts, size_t n);

/* An option that parsed but is out of range or clashes with another:
 * prints "bert <cmd>: <message>", then `usage` and the options' help, and
 * returns CLI_EXIT_USAGE. The message names the option ("--max-len must be
 * ..."). */
int cli_usage_error(const char *cmd, const char *message, const char *usage,
                    const struct cli_opt *opts, size_t n);

#define CLI_MAX_CORPUS_FILES 64

/* Move every `--corpus FILE` (the option may repeat, up to
 * CLI_MAX_CORPUS_FILES) out of argv into files; returns the new argc. */
int cli_take_corpus_files(int argc, char **argv, const char **files, size_t *n_files);

/* "f32", "f16" or "bf16": the dtype a checkpoint is written in; false for
 * any other name. */
bool cli_parse_dtype(const char *name, enum bert_dtype *out);

struct train_mask_options;

/* Check o->mask_prob and apply `mix` ("M,R,K": shares of picked tokens made
 * [MASK], a random token, kept; summing to 1), NULL keeping o's. Returns
 * NULL, or a message naming the flag at fault. */
const char *cli_mask_options(const char *mix, struct train_mask_options *o);

#endif
