/* Reproducible inputs for the kernel tests: a linear congruential
 * generator started at TEST_RANDOM_SEED (each test defines it before
 * including this), values uniform in [-0.5, 0.5) on a 1/65536 grid. */
#ifndef TEST_RANDOM_H
#define TEST_RANDOM_H

#include <stdint.h>
#include <stdlib.h>

static uint32_t rng_state = TEST_RANDOM_SEED;

static float uniform(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return (float)((rng_state >> 8) & 0xffff) / 65536.0f - 0.5f;
}

/* n uniform values (caller frees); NULL when out of memory. */
static inline float *random_floats(size_t n)
{
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; v != NULL && i < n; i++)
        v[i] = uniform();
    return v;
}

#endif
