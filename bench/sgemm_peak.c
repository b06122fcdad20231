/* sgemm_peak: OpenBLAS single-precision GEMM throughput on large squares, the
 * physical limit the engine benchmark compares its GFLOP/s against.
 *
 * usage: sgemm_peak [--threads N] [--size N]... [--seconds S]
 * For each size, C = A B (N x N, row-major, no transpose) repeats for about S
 * seconds after one warm-up call; prints one JSON line per size with the best
 * call's GFLOP/s and the mean over all calls (2 N^3 FLOPs per call).
 *
 * usage: sgemm_peak --fma [--threads N] [--seconds S]
 * The ceiling above any GEMM instead: N threads each run twelve independent
 * chains of vector FMAs on registers (AVX-512 where the CPU has it, else
 * AVX2) for about S seconds; prints one JSON line with their total GFLOP/s. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_FMA_PROBE 1
#endif

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
    fprintf(stderr, "usage: sgemm_peak [--threads N] [--size N]... [--seconds S]\n"
                    "       sgemm_peak --fma [--threads N] [--seconds S]\n");
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

#ifdef HAVE_FMA_PROBE
/* Twelve chains: more than an FMA's latency times the FMA units, so the
 * units never wait. Each call runs `rounds` x 12 vector FMAs. */
#define CHAINS 12

__attribute__((target("avx512f"))) static float fma_rounds_avx512(long rounds)
{
    __m512 acc[CHAINS];
    const __m512 mul = _mm512_set1_ps(0.999f), add = _mm512_set1_ps(0.001f);
    for (int i = 0; i < CHAINS; i++)
        acc[i] = _mm512_set1_ps((float)i);
    for (long r = 0; r < rounds; r++)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++)
            acc[i] = _mm512_fmadd_ps(acc[i], mul, add);
    float sum = 0.0f;
    for (int i = 0; i < CHAINS; i++)
        sum += _mm512_reduce_add_ps(acc[i]);
    return sum;
}

__attribute__((target("avx2,fma"))) static float fma_rounds_avx2(long rounds)
{
    __m256 acc[CHAINS];
    const __m256 mul = _mm256_set1_ps(0.999f), add = _mm256_set1_ps(0.001f);
    for (int i = 0; i < CHAINS; i++)
        acc[i] = _mm256_set1_ps((float)i);
    for (long r = 0; r < rounds; r++)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++)
            acc[i] = _mm256_fmadd_ps(acc[i], mul, add);
    float out[8], sum = 0.0f;
    for (int i = 0; i < CHAINS; i++) {
        _mm256_storeu_ps(out, acc[i]);
        for (int j = 0; j < 8; j++)
            sum += out[j];
    }
    return sum;
}

struct fma_job {
    bool wide;
    double seconds, flops; /* in: how long; out: FLOPs done */
    float check;
};

static void *fma_thread(void *arg)
{
    struct fma_job *job = arg;
    const long rounds = 1000000;
    const double per_call = 2.0 * CHAINS * (job->wide ? 16 : 8) * (double)rounds;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        job->check += job->wide ? fma_rounds_avx512(rounds) : fma_rounds_avx2(rounds);
        job->flops += per_call;
    } while (seconds_since(&start) < job->seconds);
    return NULL;
}

static int fma_peak(int threads, double seconds)
{
    __builtin_cpu_init();
    const bool wide = __builtin_cpu_supports("avx512f");
    if (!wide && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
        fprintf(stderr, "sgemm_peak: --fma needs AVX2 and FMA at least\n");
        return 1;
    }
    struct fma_job *jobs = calloc((size_t)threads, sizeof *jobs);
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    if (jobs == NULL || ids == NULL) {
        free(jobs), free(ids);
        fprintf(stderr, "sgemm_peak: out of memory\n");
        return 1;
    }
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int started = 0;
    for (; started < threads; started++) {
        jobs[started] = (struct fma_job){.wide = wide, .seconds = seconds};
        if (pthread_create(&ids[started], NULL, fma_thread, &jobs[started]) != 0)
            break;
    }
    double flops = 0.0, check = 0.0;
    for (int i = 0; i < started; i++) {
        pthread_join(ids[i], NULL);
        flops += jobs[i].flops;
        check += jobs[i].check;
    }
    const double elapsed = seconds_since(&start);
    free(jobs), free(ids);
    if (started < threads) {
        fprintf(stderr, "sgemm_peak: cannot start %d threads\n", threads);
        return 1;
    }
    printf("{\"fma\":\"%s\",\"threads\":%d,\"peak_gflops\":%.1f,\"check\":%g}\n",
           wide ? "avx512f" : "avx2", threads, flops / elapsed / 1e9, check);
    return 0;
}
#else
static int fma_peak(int threads, double seconds)
{
    (void)threads, (void)seconds;
    fprintf(stderr, "sgemm_peak: --fma is for x86-64 only\n");
    return 1;
}
#endif

int main(int argc, char **argv)
{
    int threads = 1, sizes[MAX_SIZES], n_sizes = 0;
    double seconds = 2.0;
    bool fma = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--fma") == 0) {
            fma = true;
            continue;
        }
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
    if (fma)
        return n_sizes == 0 ? fma_peak(threads, seconds) : usage();
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
