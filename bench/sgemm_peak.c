/* sgemm_peak: OpenBLAS single-precision GEMM throughput on large squares, the
 * physical limit the engine benchmark compares its GFLOP/s against.
 *
 * usage: sgemm_peak [--threads N] [--size N]... [--seconds S]
 * For each size, C = A B (N x N, row-major, no transpose) repeats for about S
 * seconds after one warm-up call; prints one JSON line per size with the best
 * call's GFLOP/s and the mean over all calls (2 N^3 FLOPs per call). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#define MAX_SIZES 8
#define MAX_CALLS 1000

static double seconds_since(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) * 1e-9;
}

static int usage(void)
{
    fprintf(stderr, "usage: sgemm_peak [--threads N] [--size N]... [--seconds S]\n");
    return 2;
}

/* Time one size; returns 0, or 1 when out of memory. */
static int measure(int n, double seconds, int threads)
{
    size_t elems = (size_t)n * (size_t)n;
    float *a = malloc(elems * sizeof *a), *b = malloc(elems * sizeof *b);
    float *c = calloc(elems, sizeof *c);
    if (!a || !b || !c) {
        free(a), free(b), free(c);
        fprintf(stderr, "sgemm_peak: out of memory for n=%d\n", n);
        return 1;
    }
    for (size_t i = 0; i < elems; i++) {
        a[i] = (float)((i * 7 + 3) % 17) / 17.0f - 0.5f;
        b[i] = (float)((i * 5 + 1) % 13) / 13.0f - 0.5f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    const double flops = 2.0 * (double)n * (double)n * (double)n;
    size_t calls = 0;
    double best = 0, total = 0;
    struct timespec start, call;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (calls < MAX_CALLS && (calls < 3 || seconds_since(&start) < seconds)) {
        clock_gettime(CLOCK_MONOTONIC, &call);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f,
                    c, n);
        double t = seconds_since(&call);
        best = flops / t > best ? flops / t : best;
        total += t;
        calls++;
    }
    printf("{\"n\":%d,\"threads\":%d,\"calls\":%zu,\"best_gflops\":%.1f,\"mean_gflops\":%.1f,"
           "\"check\":%g}\n",
           n, threads, calls, best / 1e9, flops * (double)calls / total / 1e9, (double)c[elems / 2]);
    free(a), free(b), free(c);
    return 0;
}

int main(int argc, char **argv)
{
    int threads = 1, sizes[MAX_SIZES], n_sizes = 0;
    double seconds = 2.0;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            return usage();
        char *end;
        if (strcmp(argv[i], "--threads") == 0) {
            threads = (int)strtol(argv[++i], &end, 10);
            if (*end || threads < 1)
                return usage();
        } else if (strcmp(argv[i], "--size") == 0 && n_sizes < MAX_SIZES) {
            sizes[n_sizes] = (int)strtol(argv[++i], &end, 10);
            if (*end || sizes[n_sizes] < 1 || sizes[n_sizes] > 32768)
                return usage();
            n_sizes++;
        } else if (strcmp(argv[i], "--seconds") == 0) {
            seconds = strtod(argv[++i], &end);
            if (*end || !(seconds > 0))
                return usage();
        } else {
            return usage();
        }
    }
    if (n_sizes == 0) {
        sizes[n_sizes++] = 2048;
        sizes[n_sizes++] = 4096;
    }
    openblas_set_num_threads(threads);
    for (int i = 0; i < n_sizes; i++)
        if (measure(sizes[i], seconds, threads) != 0)
            return 1;
    return 0;
}
