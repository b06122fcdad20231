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

bool cli_apply_dtype(const char *cmd, struct bert_model *model, const char *dtype)
{
    if (strcmp(dtype, "f32") == 0)
        return true;
    if (strcmp(dtype, "bf16") != 0) {
        fprintf(stderr, "bert %s: --dtype must be f32 or bf16\n", cmd);
        return false;
    }
    struct bert_error err = {0};
    if (bert_model_use_bf16(model, &err) != BERT_OK)
        fprintf(stderr, "bert %s: %s; running f32\n", cmd, err.message);
    return true;
}
