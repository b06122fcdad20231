/* Runs a fuzz target once over every file in the folders given on the
 * command line (seed corpus and the inputs of crashes already fixed), so
 * each ctest build, ASan included, replays them without libFuzzer.
 * usage: fuzz_<name>_replay DIR... */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"

static long run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf != NULL && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            uint8_t *bigger = realloc(buf, cap *= 2);
            if (bigger == NULL)
                free(buf);
            buf = bigger;
        }
    }
    fclose(f);
    if (buf == NULL) {
        fprintf(stderr, "out of memory reading %s\n", path);
        return -1;
    }
    /* An exact-size copy, as libFuzzer passes: ASan then sees a read one
     * byte past the input. */
    uint8_t *exact = malloc(len ? len : 1);
    if (exact != NULL) {
        memcpy(exact, buf, len);
        LLVMFuzzerTestOneInput(exact, len);
    }
    free(exact);
    free(buf);
    if (exact == NULL) {
        fprintf(stderr, "out of memory replaying %s\n", path);
        return -1;
    }
    return 1;
}

int main(int argc, char **argv)
{
    long files = 0;
    for (int i = 1; i < argc; i++) {
        DIR *dir = opendir(argv[i]);
        if (dir == NULL)
            continue; /* a target may have no regression inputs yet */
        struct dirent *e;
        while ((e = readdir(dir)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            long r = run_file(path);
            if (r < 0) {
                closedir(dir);
                return 1;
            }
            files += r;
        }
        closedir(dir);
    }
    if (files == 0) {
        fprintf(stderr, "no inputs found: a replay that runs nothing proves nothing\n");
        return 1;
    }
    printf("%ld inputs replayed without a crash\n", files);
    return 0;
}
