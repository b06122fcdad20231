/* Tiny long-option parser shared by the subcommands: `--name value`,
 * `--name=value` and boolean `--flag`. */
#ifndef CLI_ARGS_H
#define CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>

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

#endif
