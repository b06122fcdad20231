/* The vector erf and exp (model/vmath.h) against libm's over dense ranges
 * (erf down to tiny arguments), erfc's exp against vf16_exp, and the exact GELU
 * kernels (model/kernels.c, the clones this CPU dispatches to) against
 * x Phi(x) in float64: relative for f32 rows, absolute on the scale of x for
 * rows rounded to bf16 or int8 next. The bounds are float precision: a tanh
 * form or Abramowitz & Stegun's 7.1.26 (1e-4 relative near 0, 1e-1 in
 * GELU's lower tail) fails them. */
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
/* Relative error of exp over [-87, 88] (1.2e-7 measured; 2.4e-7 with the
 * degree-6 Taylor polynomial it had before). */
#define EXP_REL 1.5e-7
/* GELU, relative: 6e-7 + 6e-8 x^2 (vf16_exp alone errs by 1.2e-7). In the
 * lower tail Phi(x) comes from exp(-x^2 / 2), whose argument float rounds
 * to about 6e-8 x^2 / 2: that part grows as x^2 (1e-6 at x = -4). Measured
 * here: 2.2e-6 relative at worst on [-10, 10], 4e-6 on [-12.5, -10]
 * (without FMA 4e-6 and 7.5e-6); the kernel that squared a rounded
 * x / sqrt 2 reached 6.9e-6 and 1.4e-5 and fails this bound. */
#define GELU_REL(x) (6e-7 + 6e-8 * (x) * (x))

static double rel(double got, double want)
{
    return want == 0.0 ? fabs(got) : fabs(got - want) / fabs(want);
}

/* The worst relative error of f against ref at x, kept in *worst, *at. */
static void track(float (*f)(float), double (*ref)(double), float x, double *worst, double *at)
{
    const double e = rel(f(x), ref((double)x));
    if (e > *worst)
        *worst = e, *at = x;
}

static void check_erf(void)
{
    double worst = 0.0, worst_at = 0.0;
    for (int i = -6 * 4096; i <= 6 * 4096; i++)
        track(vmath_erf, erf, (float)i / 4096.0f, &worst, &worst_at);
    for (double a = 1e-30; a < 1.0; a *= 1.01) {
        track(vmath_erf, erf, (float)a, &worst, &worst_at);
        track(vmath_erf, erf, (float)-a, &worst, &worst_at);
    }
    printf("erf: worst relative error %.3g at %g (bound %g)\n", worst, worst_at, ERF_REL);
    CHECK(worst <= ERF_REL);
    CHECK(vmath_erf(0.0f) == 0.0f);
    CHECK(vmath_erf(INFINITY) == 1.0f && vmath_erf(-INFINITY) == -1.0f);
    CHECK(isnan(vmath_erf(NAN)));
}

/* exp against libm over its whole clamped range [-87, 88], steps of 2^-10. */
static void check_exp(void)
{
    double worst = 0.0, worst_at = 0.0;
    for (int i = -87 * 1024; i <= 88 * 1024; i++)
        track(vmath_exp, exp, (float)i / 1024.0f, &worst, &worst_at);
    printf("exp: worst relative error %.3g at %g (bound %g)\n", worst, worst_at, EXP_REL);
    CHECK(worst <= EXP_REL);
    CHECK(vmath_exp(0.0f) == 1.0f);
    CHECK(vmath_exp(-INFINITY) > 0.0f && vmath_exp(INFINITY) < INFINITY);
}

/* erfc's exp for arguments below the upper clamp gives vf16_exp's values
 * bit for bit, from the lower clamp at -87 and below up to 88. */
static void check_exp_nonpositive(void)
{
    size_t differ = 0, n = 0;
    for (float x = -100.0f; x <= 88.0f; x += 1.0f / 1024.0f, n++) {
        const float want = vf16_exp(vf16_splat(x))[0];
        const float got = vf16_exp_nonpositive(vf16_splat(x))[0];
        differ += memcmp(&want, &got, sizeof want) != 0;
    }
    printf("exp of non-positive arguments: %zu of %zu differ from vf16_exp\n", differ, n);
    CHECK_INT_EQ(differ, 0);
    CHECK(isnan(vf16_exp_nonpositive(vf16_splat(NAN))[0]) ==
          isnan(vf16_exp(vf16_splat(NAN))[0]));
}

/* The GELU kernel over n points from `from` in steps of 2^-12 (one row of
 * n: the vector body and, for the last n % 16, the tail): worst error
 * against x Phi(x) in float64, relative and as a fraction of GELU_REL. */
static double gelu_sweep(double from, int n, double *worst_rel, double *worst_abs)
{
    float *x = malloc(n * sizeof *x), *zero = calloc(n, sizeof *zero);
    CHECK(x != NULL && zero != NULL);
    double worst = 0.0, worst_err = 0.0, worst_at = 0.0; /* worst error / bound */
    if (x == NULL || zero == NULL)
        goto out;
    for (int i = 0; i < n; i++)
        x[i] = (float)(from + i / 4096.0);
    kernel_bias_activation(x, zero, 1, n, n, BERT_ACTIVATION_GELU);
    for (int i = 0; i < n; i++) {
        const double v = (float)(from + i / 4096.0), want = v * 0.5 * erfc(-v / sqrt(2.0));
        const double e = rel(x[i], want);
        if (fabs(x[i] - want) > *worst_abs)
            *worst_abs = fabs(x[i] - want);
        if (e > *worst_rel)
            *worst_rel = e;
        if (e / GELU_REL(v) > worst)
            worst = e / GELU_REL(v), worst_err = e, worst_at = v;
    }
    printf("gelu on [%g, %g]: worst relative error / bound %.3g (%.3g at %g, bound %.3g there)\n",
           from, from + (n - 1) / 4096.0, worst, worst_err, worst_at, GELU_REL(worst_at));
out:
    free(x);
    free(zero);
    return worst;
}

static void check_gelu(void)
{
    double worst_rel = 0.0, worst_abs = 0.0;
    CHECK(gelu_sweep(-10.0, 20 * 4096 + 1, &worst_rel, &worst_abs) <= 1.0);
    printf("gelu on [-10, 10]: worst relative error %.3g, absolute %.3g\n", worst_rel,
           worst_abs);
    /* The lower tail down to where Phi(x) leaves the normal floats, and
     * the upper one, where x Phi(x) is x. */
    CHECK(gelu_sweep(-12.5, 10240 + 1, &worst_rel, &worst_abs) <= 1.0);
    CHECK(gelu_sweep(10.0, 4096, &worst_rel, &worst_abs) <= 1.0);
    CHECK(gelu_sweep(1e6, 4096, &worst_rel, &worst_abs) <= 1.0);
    CHECK(kernel_activation(0.0f, BERT_ACTIVATION_GELU) == 0.0f);
    CHECK(kernel_activation(INFINITY, BERT_ACTIVATION_GELU) == INFINITY);
    CHECK(kernel_activation(-1e30f, BERT_ACTIVATION_GELU) == 0.0f);
    CHECK(isnan(kernel_activation(NAN, BERT_ACTIVATION_GELU)));
}

/* The GELU for rows rounded to bf16 or int8 next (kernel_dequantize_row
 * with scales of 1 and no bias, and kernel_bias_activation_rounded with a
 * zero bias: the clones this CPU dispatches to) against x Phi(x) in
 * float64, absolute: within GELU_COARSE_ABS max(1, |x|) over [-12.5, 12.5]
 * and at 1e6, and exactly 0 and x far out on either side. */
#define GELU_COARSE_ABS 2.5e-7

static void check_gelu_coarse_tail(void)
{
    enum { N = 25 * 4096 + 1 };
    float *x = malloc(N * sizeof *x), *ones = malloc(N * sizeof *ones);
    float *zero = calloc(N, sizeof *zero);
    CHECK(x != NULL && ones != NULL && zero != NULL);
    if (x == NULL || ones == NULL || zero == NULL) {
        free(x), free(ones), free(zero);
        return;
    }
    const enum bert_activation gelu = BERT_ACTIVATION_GELU;
    double worst = 0.0, worst_at = 0.0; /* error / bound */
    for (int run = 0; run < 4; run++) {
        const double from = run < 2 ? -12.5 : 1e6;
        for (int i = 0; i < N; i++)
            x[i] = (float)(from + i / 4096.0), ones[i] = 1.0f;
        if (run % 2 == 0)
            kernel_dequantize_row(x, x, N, 1.0f, ones, NULL, &gelu);
        else
            kernel_bias_activation_rounded(x, zero, 1, N, N, gelu, NULL);
        for (int i = 0; i < N; i++) {
            const double v = (float)(from + i / 4096.0), want = v * 0.5 * erfc(-v / sqrt(2.0));
            const double e = fabs(x[i] - want) / (GELU_COARSE_ABS * fmax(1.0, fabs(v)));
            if (e > worst)
                worst = e, worst_at = v;
        }
    }
    printf("gelu for rows rounded next: worst absolute error / (%g max(1, |x|)) %.3g at %g\n",
           GELU_COARSE_ABS, worst, worst_at);
    CHECK(worst <= 1.0);
    const float far[] = {-1e30f, -6.0f, 6.0f, 1e30f, 0.0f, NAN};
    float y[6];
    kernel_dequantize_row(y, far, 6, 1.0f, ones, NULL, &gelu);
    CHECK(y[0] == 0.0f && y[1] == 0.0f && y[2] == 6.0f && y[3] == 1e30f && y[4] == 0.0f);
    CHECK(isnan(y[5]));
    memcpy(y, far, sizeof y);
    kernel_bias_activation_rounded(y, zero, 1, 6, 6, gelu, NULL);
    CHECK(y[0] == 0.0f && y[1] == 0.0f && y[2] == 6.0f && y[3] == 1e30f && y[4] == 0.0f);
    CHECK(isnan(y[5]));
    free(x), free(ones), free(zero);
}

int main(void)
{
    check_erf();
    check_exp();
    check_exp_nonpositive();
    check_gelu();
    check_gelu_coarse_tail();
    return check_exit();
}
