/* Runtime dispatch for the hot loops: GCC compiles each marked function for
 * AVX-512, AVX+FMA and baseline x86-64 and picks one at load time, so one
 * binary is fast on the machine it runs on (a container image is built
 * elsewhere). The loops themselves are plain C written for the
 * auto-vectoriser. */
#ifndef BERT_SIMD_H
#define BERT_SIMD_H

/* Not under ThreadSanitizer: the clones' ifunc resolvers run during
 * relocation, before the TSan runtime is up, and crash there. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(BERT_NO_CLONES) && \
    !defined(__SANITIZE_THREAD__)
#define BERT_HOT __attribute__((target_clones("avx512f", "fma", "default")))
/* A loop blocked for AVX-512's 32 registers (it would spill in the others'
 * 16): compiled for AVX-512 only, called where bert_cpu_avx512() says so. */
#define BERT_AVX512 __attribute__((target("avx512f")))
static inline int bert_cpu_avx512(void)
{
    return __builtin_cpu_supports("avx512f");
}
#else
#define BERT_HOT
#define BERT_AVX512
static inline int bert_cpu_avx512(void)
{
    return 0;
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <stddef.h>

/* The mask of a 16-lane vector's first n lanes (n >= 16: all), for the
 * partial loads and stores at the edges of the AVX-512 kernels. */
static inline __mmask16 simd_first_lanes(size_t n)
{
    return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
}
#endif

#endif
