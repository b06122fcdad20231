/* model/linear_int8.c against the float64 reference of its product
 * (tests/golden/make_int8_goldens.py -> tests/data/golden-int8/linear.json):
 * row counts across oneDNN's kernel tails, an all-zero row and channel,
 * contiguous and strided output rows (the padding left untouched), a row
 * that is not finite, the refusals that send a product back to f32, and
 * products padded with zero rows (as on AMX for a few rows) giving the same
 * bits.
 * Skipped (exit 77) where int8 cannot run.
 *
 * Usage: test_linear_int8 GOLDEN_JSON */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bert.h"
#include "check.h"
#include "linear_int8.h"

/* The integer products are exact on both sides; what remains is float32
 * rounding of the scales and of the sums beyond 2^24, relative to the
 * largest output. */
#define REL_TOL 1e-6
#define SKIP 77
/* On AMX, oneDNN 2.6 offers only a reference kernel for a product of a
 * few rows in the weights' AMX layout: linear_int8_run refuses it and the
 * engine runs it in f32 (seen on a lent Xeon for a lone input of a few
 * rows, while 50 ran; test_golden.c). There such a case is reported, not
 * failed; every case of more rows must run. */
#define AMX_FEW_ROWS 32

static float *floats_of(json_t *a)
{
    float *v = malloc((json_array_size(a) + 1) * sizeof *v);
    if (v == NULL)
        exit(1);
    for (size_t i = 0; i < json_array_size(a); i++)
        v[i] = (float)json_number_value(json_array_get(a, i));
    return v;
}

/* The product of x again with zero rows added up to 64 (rows < 64): the
 * same bits in y's rows, its padding untouched, nothing beyond. */
static void check_padded(struct linear_int8_weight *p, struct linear_int8_ctx *ctx,
                         const float *x, size_t rows, size_t in, size_t out, const float *y,
                         size_t ldy)
{
    const size_t was = linear_int8_weight_min_rows(p);
    if (rows >= 64 || was == 0) /* 0: not even 64 rows have a kernel */
        return;
    linear_int8_weight_pad_to(p, 64);
    CHECK_INT_EQ(linear_int8_weight_min_rows(p), 64);
    float *padded = malloc((rows * ldy + 1) * sizeof *padded);
    for (size_t i = 0; i < rows * ldy + 1; i++)
        padded[i] = 1e30f;
    CHECK(linear_int8_run(ctx, p, x, rows, in, out, padded, ldy));
    size_t differ = 0, touched = 0;
    for (size_t r = 0; r < rows; r++) {
        differ += memcmp(padded + r * ldy, y + r * ldy, out * sizeof *y) != 0;
        for (size_t k = out; k < ldy; k++)
            touched += padded[r * ldy + k] != 1e30f;
    }
    touched += padded[rows * ldy] != 1e30f;
    printf("%zux%zu -> %zu padded to 64 rows: %zu rows differ\n", rows, in, out, differ);
    CHECK_INT_EQ(differ, 0);
    CHECK_INT_EQ(touched, 0);
    linear_int8_weight_pad_to(p, was);
    free(padded);
}

/* One case with output rows `ldy` apart (ldy >= out; the gap is padding). */
static void check_case(json_t *c, size_t ldy_extra)
{
    const size_t rows = json_integer_value(json_object_get(c, "rows"));
    const size_t in = json_integer_value(json_object_get(c, "in"));
    const size_t out = json_integer_value(json_object_get(c, "out"));
    const size_t ldy = out + ldy_extra;
    float *x = floats_of(json_object_get(c, "x")), *w = floats_of(json_object_get(c, "w"));
    json_t *want = json_object_get(c, "y");
    CHECK_INT_EQ(json_array_size(want), rows * out);
    float *y = malloc(rows * ldy * sizeof *y);
    for (size_t i = 0; i < rows * ldy; i++)
        y[i] = 1e30f;
    struct linear_int8_weight *p = linear_int8_pack(w, out, in);
    struct linear_int8_ctx *ctx = linear_int8_ctx_new(rows, in, out, out);
    CHECK(p != NULL && ctx != NULL);
    const bool ran = p != NULL && ctx != NULL && linear_int8_run(ctx, p, x, rows, in, out, y, ldy);
    if (!ran && p != NULL && ctx != NULL && rows < AMX_FEW_ROWS &&
        strstr(bert_int8_isa(), "AMX") != NULL) {
        printf("%zux%zu -> %zu: refused on %s, padded to %zu rows (the engine runs it in f32)\n",
               rows, in, out, bert_int8_isa(), linear_int8_weight_min_rows(p));
    } else if (p != NULL && ctx != NULL) {
        CHECK(ran);
        double worst = 0.0, top = 0.0;
        size_t padding = 0;
        for (size_t r = 0; r < rows; r++) {
            for (size_t k = 0; k < out; k++) {
                const double e = json_number_value(json_array_get(want, r * out + k));
                worst = fmax(worst, fabs(y[r * ldy + k] - e));
                top = fmax(top, fabs(e));
            }
            for (size_t k = out; k < ldy; k++)
                padding += y[r * ldy + k] != 1e30f;
        }
        printf("%zux%zu -> %zu, ldy %zu: max |C - reference| %.3g (largest output %.3g)\n", rows,
               in, out, ldy, worst, top);
        CHECK(worst <= REL_TOL * top);
        CHECK(top > 0.0);
        CHECK_INT_EQ(padding, 0);
        check_padded(p, ctx, x, rows, in, out, y, ldy);
        /* A row that is not finite stays so (the engine's non-finite check
         * must see it); the other rows keep their values. */
        x[0] = NAN;
        CHECK(linear_int8_run(ctx, p, x, rows, in, out, y, ldy));
        size_t finite_in_nan_row = 0;
        for (size_t k = 0; k < out; k++)
            finite_in_nan_row += isfinite(y[k]) != 0;
        CHECK_INT_EQ(finite_in_nan_row, 0);
        if (rows > 1)
            CHECK_NEAR(y[ldy], json_number_value(json_array_get(want, out)),
                       REL_TOL * top);
        /* Refused, computing nothing: more rows than the context has room
         * for, a shape the weight does not have. */
        CHECK(!linear_int8_run(ctx, p, x, rows + 1, in, out, y, ldy));
        CHECK(!linear_int8_run(ctx, p, x, rows, in + 1, out, y, ldy));
    }
    linear_int8_ctx_free(ctx);
    linear_int8_weight_free(p);
    free(x);
    free(w);
    free(y);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s GOLDEN_JSON\n", argv[0]);
        return 2;
    }
    char why[200];
    if (!bert_int8_available(why, sizeof why)) {
        printf("skipped: %s\n", why);
        return SKIP;
    }
    json_error_t jerr;
    json_t *golden = json_load_file(argv[1], 0, &jerr);
    if (golden == NULL) {
        fprintf(stderr, "%s:%d: %s\n", argv[1], jerr.line, jerr.text);
        return 1;
    }
    json_t *cases = json_object_get(golden, "cases");
    CHECK(json_array_size(cases) > 0);
    for (size_t i = 0; i < json_array_size(cases); i++) {
        check_case(json_array_get(cases, i), 0);
        check_case(json_array_get(cases, i), 7);
    }
    json_decref(golden);
    return check_exit();
}
