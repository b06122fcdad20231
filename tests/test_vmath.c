/* The vector erf (model/vmath.h) against libm's erf over a dense range and
 * down to tiny arguments, erfc's exp against vf16_exp, and the exact GELU
 * kernel (model/kernels.c, the clone this CPU dispatches to) against
 * x Phi(x) in float64. The bounds
 * are float precision: a tanh form or Abramowitz & Stegun's 7.1.26 (1e-4
 * relative near 0, 1e-1 in GELU's lower tail) fails them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels.h"
#include "vmath.h"

/* Relative error of erf: worst over [-6, 6] in steps of 2^-12 and over
 * |x| from 1e-30 to 1, log-spaced. */
#define ERF_REL 4e-7
/* GELU, relative: 6e-7 + 1.2e-7 x^2 (vf16_exp alone errs by 2e-7). In the
 * lower tail Phi(x) comes from exp(-x^2 / 2), whose argument float rounds
 * to about 6e-8 x^2 / 2: that part grows as x^2 (2e-6 at x = -4). */
#define GELU_REL(x) (6e-7 + 1.2e-7 * (x) * (x))

static double rel(double got, double want)
{
    return want == 0.0 ? fabs(got) : fabs(got - want) / fabs(want);
}

static void check_erf(void)
{
    double worst = 0.0, worst_at = 0.0;
    for (int i = -6 * 4096; i <= 6 * 4096; i++) {
        const float x = (float)i / 4096.0f;
        const double e = rel(vmath_erf(x), erf((double)x));
        if (e > worst)
            worst = e, worst_at = x;
    }
    for (double a = 1e-30; a < 1.0; a *= 1.01) {
        for (int sign = -1; sign <= 1; sign += 2) {
            const float x = (float)(sign * a);
            const double e = rel(vmath_erf(x), erf((double)x));
            if (e > worst)
                worst = e, worst_at = x;
        }
    }
    printf("erf: worst relative error %.3g at %g (bound %g)\n", worst, worst_at, ERF_REL);
    CHECK(worst <= ERF_REL);
    CHECK(vmath_erf(0.0f) == 0.0f);
    CHECK(vmath_erf(INFINITY) == 1.0f && vmath_erf(-INFINITY) == -1.0f);
    CHECK(isnan(vmath_erf(NAN)));
}

/* erfc's exp for arguments that are never positive gives vf16_exp's
 * values bit for bit, from the clamp at -87 and below up to 0.34. */
static void check_exp_nonpositive(void)
{
    size_t differ = 0, n = 0;
    for (float x = -100.0f; x < 0.34f; x += 1.0f / 1024.0f, n++) {
        const float want = vf16_exp(vf16_splat(x))[0];
        const float got = vf16_exp_nonpositive(vf16_splat(x))[0];
        differ += memcmp(&want, &got, sizeof want) != 0;
    }
    printf("exp of non-positive arguments: %zu of %zu differ from vf16_exp\n", differ, n);
    CHECK_INT_EQ(differ, 0);
    CHECK(isnan(vf16_exp_nonpositive(vf16_splat(NAN))[0]) ==
          isnan(vf16_exp(vf16_splat(NAN))[0]));
}

static void check_gelu(void)
{
    enum { N = 20 * 4096 + 1 }; /* [-10, 10] in steps of 2^-12 */
    float *x = malloc(N * sizeof *x), *zero = calloc(N, sizeof *zero);
    CHECK(x != NULL && zero != NULL);
    if (x == NULL || zero == NULL)
        return;
    for (int i = 0; i < N; i++)
        x[i] = (float)(i - N / 2) / 4096.0f;
    /* One row of N: the vector body and, for the last N % 16, the tail. */
    kernel_bias_activation(x, zero, 1, N, N, BERT_ACTIVATION_GELU);
    double worst = 0.0, worst_err = 0.0, worst_at = 0.0; /* worst error / bound */
    for (int i = 0; i < N; i++) {
        const double v = (double)(i - N / 2) / 4096.0;
        const double e = rel(x[i], v * 0.5 * erfc(-v / sqrt(2.0)));
        if (e / GELU_REL(v) > worst)
            worst = e / GELU_REL(v), worst_err = e, worst_at = v;
    }
    printf("gelu: worst relative error / bound %.3g (%.3g at %g, bound %.3g there)\n", worst,
           worst_err, worst_at, GELU_REL(worst_at));
    CHECK(worst <= 1.0);
    free(x);
    free(zero);
}

int main(void)
{
    check_erf();
    check_exp_nonpositive();
    check_gelu();
    return check_exit();
}
