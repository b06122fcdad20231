/* What every subcommand that runs the engine shares (cli.h): the CPUs to
 * use and --dtype. */
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "bert.h"
#include "cli.h"

size_t cli_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    int n = CPU_COUNT(&set);
    return n > 0 ? (size_t)n : 1;
}

int cli_apply_dtype(const char *cmd, struct bert_model *model, const char *dtype)
{
    struct bert_error err = {0};
    if (strcmp(dtype, "f32") == 0)
        return CLI_EXIT_OK;
    if (strcmp(dtype, "bf16") == 0) {
        if (bert_model_use_bf16(model, &err) != BERT_OK)
            fprintf(stderr, "bert %s: %s; running f32\n", cmd, err.message);
        return CLI_EXIT_OK;
    }
    if (strcmp(dtype, "int8") != 0) {
        fprintf(stderr, "bert %s: --dtype must be f32, bf16 or int8\n", cmd);
        return CLI_EXIT_USAGE;
    }
    /* int8 changes the answers more than bf16 does: never fall back silently. */
    struct bert_int8_info info;
    if (bert_model_use_int8(model, &info, &err) != BERT_OK) {
        fprintf(stderr, "bert %s: %s\n", cmd, err.message);
        return CLI_EXIT_FAILURE;
    }
    if (info.packed < info.dense)
        fprintf(stderr, "bert %s: %zu of %zu dense layers run int8 (%s), the others f32\n", cmd,
                info.packed, info.dense, info.isa);
    return CLI_EXIT_OK;
}
