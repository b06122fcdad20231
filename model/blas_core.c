#include "bert.h"

#include <cblas.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

const char *bert_blas_core(void)
{
    const char *name = openblas_get_corename();
    return name ? name : "unknown";
}

static bool is_one_of(const char *name, const char *const *names)
{
    for (; *names; names++)
        if (strcasecmp(name, *names) == 0)
            return true;
    return false;
}

/* The kernel family this CPU should use when OpenBLAS chose an older one. */
static const char *better_core(const char *name)
{
    static const char *const avx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids", NULL};
    static const char *const avx2[] = {"Haswell", "Zen", "SkylakeX", "Cooperlake",
                                       "SapphireRapids", NULL};
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return is_one_of(name, avx512) ? NULL : "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return is_one_of(name, avx2) ? NULL : "Haswell";
    return NULL;
}

void bert_blas_core_fix(char **argv)
{
    if (getenv("OPENBLAS_CORETYPE") != NULL)
        return;
    const char *preload = getenv("LD_PRELOAD");
    if (preload != NULL && strstr(preload, "vgpreload") != NULL)
        return;
    const char *core = better_core(bert_blas_core());
    if (core == NULL || setenv("OPENBLAS_CORETYPE", core, 1) != 0)
        return;
    /* The binary's real path, not /proc/self/exe, so that ps and top still
     * show its name rather than "exe". */
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        return (void)unsetenv("OPENBLAS_CORETYPE");
    self[len] = '\0';
    execv(self, argv);
    unsetenv("OPENBLAS_CORETYPE");
}
