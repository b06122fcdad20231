#include "args.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "train_mask.h"

static bool parse_value(const char *cmd, const struct cli_opt *o, const char *v)
{
    char *end;
    errno = 0;
    switch (o->kind) {
    case CLI_OPT_STRING:
        *(const char **)o->dst = v;
        return true;
    case CLI_OPT_SIZE: {
        unsigned long long x = strtoull(v, &end, 10);
        if (errno || *v == '-' || *v == '\0' || *end != '\0')
            break;
        *(size_t *)o->dst = (size_t)x;
        return true;
    }
    case CLI_OPT_U64: {
        unsigned long long x = strtoull(v, &end, 10);
        if (errno || *v == '-' || *v == '\0' || *end != '\0')
            break;
        *(uint64_t *)o->dst = (uint64_t)x;
        return true;
    }
    case CLI_OPT_DOUBLE: {
        double x = strtod(v, &end);
        if (errno || *v == '\0' || *end != '\0')
            break;
        *(double *)o->dst = x;
        return true;
    }
    case CLI_OPT_FLAG:
        break;
    }
    fprintf(stderr, "bert %s: --%s: invalid value '%s'\n", cmd, o->name, v);
    return false;
}

bool cli_parse(const char *cmd, int argc, char **argv, const struct cli_opt *opts, size_t n)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0) {
            fprintf(stderr, "bert %s: unexpected argument '%s'\n", cmd, arg);
            return false;
        }
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const struct cli_opt *o = NULL;
        for (size_t k = 0; k < n; k++)
            if (strlen(opts[k].name) == len && strncmp(opts[k].name, name, len) == 0)
                o = &opts[k];
        if (o == NULL) {
            if (strcmp(name, "help") != 0)
                fprintf(stderr, "bert %s: unknown option '--%.*s'\n", cmd, (int)len, name);
            fprintf(stderr, "options of bert %s:\n", cmd);
            cli_print_options(opts, n);
            return false;
        }
        if (o->kind == CLI_OPT_FLAG) {
            if (eq) {
                fprintf(stderr, "bert %s: --%s takes no value\n", cmd, o->name);
                return false;
            }
            *(bool *)o->dst = true;
            continue;
        }
        const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (value == NULL) {
            fprintf(stderr, "bert %s: --%s needs a value\n", cmd, o->name);
            return false;
        }
        if (!parse_value(cmd, o, value))
            return false;
    }
    return true;
}

void cli_print_options(const struct cli_opt *opts, size_t n)
{
    for (size_t k = 0; k < n; k++)
        fprintf(stderr, "  --%-22s %s\n", opts[k].name, opts[k].help);
}

int cli_usage_error(const char *cmd, const char *message, const char *usage,
                    const struct cli_opt *opts, size_t n)
{
    fprintf(stderr, "bert %s: %s\n%s", cmd, message, usage);
    cli_print_options(opts, n);
    return CLI_EXIT_USAGE;
}

int cli_take_corpus_files(int argc, char **argv, const char **files, size_t *n_files)
{
    int kept = 0;
    *n_files = 0;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && strcmp(argv[i], "--corpus") == 0 && i + 1 < argc &&
            *n_files < CLI_MAX_CORPUS_FILES) {
            files[(*n_files)++] = argv[++i];
            continue;
        }
        argv[kept++] = argv[i];
    }
    return kept;
}

const char *cli_mask_options(const char *mix, struct train_mask_options *o)
{
    if (!(o->mask_prob >= 0.0 && o->mask_prob <= 1.0))
        return "--mask-prob must be in [0, 1]";
    if (mix == NULL)
        return NULL;
    double m, r, k;
    int used = 0;
    if (sscanf(mix, "%lf,%lf,%lf%n", &m, &r, &k, &used) != 3 || mix[used] != '\0' ||
        !(m >= 0 && r >= 0 && k >= 0) || !(m + r + k > 1.0 - 1e-6 && m + r + k < 1.0 + 1e-6))
        return "--mask-mix must be three shares M,R,K (made [MASK], random, kept) summing to 1";
    o->replace_mask = m;
    o->replace_random = r;
    return NULL;
}

bool cli_parse_dtype(const char *name, enum bert_dtype *out)
{
    if (strcmp(name, "f32") == 0)
        *out = BERT_DTYPE_F32;
    else if (strcmp(name, "f16") == 0)
        *out = BERT_DTYPE_F16;
    else if (strcmp(name, "bf16") == 0)
        *out = BERT_DTYPE_BF16;
    else
        return false;
    return true;
}
