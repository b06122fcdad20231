/* model/linear_bf16.c on oneDNN's kernels, the path AMX machines take (run
 * here through bert_bf16_use_onednn where ours would run), against a
 * float64 product of the same bf16-rounded inputs: row counts of 1 to 100,
 * contiguous and strided output rows (strided ones land in the context
 * first; their padding must stay untouched), a bias added as one float
 * addition after each sum; and products padded with zero rows (as on AMX
 * for a few rows, linear_bf16_weight_min_rows) giving the same bits;
 * rows kept in bf16 as a LayerNorm or an activation makes them
 * (linear_bf16_keep) giving the same bits as the product converting them
 * itself, and dropped by any other run or by linear_bf16_forget; and
 * kernel_to_bf16 against bert_f32_to_bf16 bit for bit; and the primitive
 * cache keeping a refused shape refused and a biased primitive found.
 * Skipped (exit 77) where oneDNN has no bf16 kernels. On AMX, which no
 * session has run this on yet, a shape or row count oneDNN refuses is
 * reported, not failed (the engine would run it in f32). */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bert.h"
#include "check.h"
#include "kernels.h"
#include "linear_bf16.h"
#include "linear_check.h"
#include "safetensors.h"
#define TEST_RANDOM_SEED 5151
#include "test_random.h"

#define SKIP 77

/* oneDNN's primitive cache (model/onednn.c), where the build has it. */
#if __has_include(<oneapi/dnnl/dnnl.h>)
#define BERT_HAVE_DNNL 1
#include "onednn.h"

/* A shape oneDNN refuses (here a weight layout of the wrong size) is kept
 * as refused in its slot and refused again; a shape it takes, with a bias,
 * gets a primitive with a bias argument, found again on the next call. */
static void check_slot_cache(void)
{
    dnnl_engine_t engine = NULL;
    dnnl_memory_desc_t fixed, any;
    dnnl_dims_t wd = {7, 5}; /* (in, out) */
    struct onednn_slot slots[4] = {0};
    CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0) == dnnl_success &&
          dnnl_memory_desc_init_by_tag(&fixed, 2, wd, dnnl_bf16, dnnl_ab) == dnnl_success &&
          dnnl_memory_desc_init_by_tag(&any, 2, wd, dnnl_bf16, dnnl_format_tag_any) ==
              dnnl_success);
    if (engine == NULL)
        return;
    CHECK(onednn_slot_get(slots, 4, engine, dnnl_bf16, 3, 8, 5, &fixed, false) == NULL);
    size_t refused = 0;
    for (size_t i = 0; i < 4; i++)
        refused += slots[i].refused && slots[i].prim == NULL && slots[i].in == 8;
    CHECK_INT_EQ(refused, 1);
    CHECK(onednn_slot_get(slots, 4, engine, dnnl_bf16, 3, 8, 5, &fixed, false) == NULL);
    struct onednn_slot *s = onednn_slot_get(slots, 4, engine, dnnl_bf16, 3, 7, 5, &any, true);
    CHECK(s != NULL && s->prim != NULL && s->bias != NULL && s->biased && !s->refused);
    CHECK(onednn_slot_get(slots, 4, engine, dnnl_bf16, 3, 7, 5, &any, true) == s);
    for (size_t i = 0; i < 4; i++)
        onednn_slot_clear(&slots[i]);
    dnnl_engine_destroy(engine);
}
#else
static void check_slot_cache(void)
{
}
#endif

static double as_bf16(float f)
{
    return bert_bf16_to_f32(bert_f32_to_bf16(f));
}

static void fill_untouched(float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = LINEAR_CHECK_UNTOUCHED;
}

static void check_shape(size_t rows, size_t in, size_t out, size_t ldy)
{
    float *x = random_floats(rows * in), *w = random_floats(out * in), *bias = random_floats(out);
    float *y = malloc(rows * ldy * sizeof *y), *y2 = malloc(rows * ldy * sizeof *y2);
    struct linear_bf16_weight *p = linear_bf16_pack(w, out, in);
    struct linear_bf16_ctx *ctx = linear_bf16_ctx_new(rows, in, out, out);
    CHECK(ctx != NULL && x != NULL && w != NULL && bias != NULL && y != NULL && y2 != NULL);
    if (ctx == NULL || x == NULL || w == NULL || bias == NULL || y == NULL || y2 == NULL)
        goto done;
    CHECK(!linear_bf16_ctx_splits_cols(ctx));
    fill_untouched(y, rows * ldy);
    const bool ran = p != NULL && linear_bf16_run(ctx, p, x, rows, in, out, y, ldy, NULL);
    if (!ran && strcmp(bert_bf16_isa(), "AMX") == 0) {
        printf("%zu x %zu -> %zu: refused on AMX (padded below %zu)\n", rows, in, out,
               p != NULL ? linear_bf16_weight_min_rows(p) : 0);
        goto done;
    }
    CHECK(ran);
    if (!ran)
        goto done;
    /* The products of bf16 values are exact in f32; only the f32 sums
     * round, terms below 0.25 in magnitude. */
    size_t stray = 0;
    const double worst = linear_check_range(x, w, y, rows, in, ldy, 0, out, as_bf16, &stray);
    printf("%zu x %zu -> %zu, ldy %zu: worst error %.3g, %zu stray writes (padded below %zu)\n",
           rows, in, out, ldy, worst, stray, linear_bf16_weight_min_rows(p));
    CHECK(worst <= 1e-6 * (double)in);
    CHECK_INT_EQ(stray, 0);
    fill_untouched(y2, rows * ldy);
    CHECK(linear_bf16_run(ctx, p, x, rows, in, out, y2, ldy, bias));
    CHECK_INT_EQ(linear_check_bias(y, y2, bias, rows, ldy, 0, out), 0);
    /* Padded with zero rows up to 64: the same bits, nothing else written
     * (where 64 rows have a kernel). */
    if (rows < 64 && linear_bf16_weight_min_rows(p) != 0) {
        const size_t was = linear_bf16_weight_min_rows(p);
        linear_bf16_weight_pad_to(p, 64);
        CHECK_INT_EQ(linear_bf16_weight_min_rows(p), 64);
        fill_untouched(y2, rows * ldy);
        CHECK(linear_bf16_run(ctx, p, x, rows, in, out, y2, ldy, NULL));
        CHECK(memcmp(y, y2, rows * ldy * sizeof *y) == 0);
        linear_bf16_weight_pad_to(p, was);
    }
    /* Refused before reading x: more rows than the context has room for
     * (it has room for 64 at least, for padding), a shape the weight does
     * not have. */
    CHECK(!linear_bf16_run(ctx, p, x, (rows < 64 ? 64 : rows) + 1, in, out, y2, ldy, NULL));
    CHECK(!linear_bf16_run(ctx, p, x, rows, in + 1, out, y2, ldy, NULL));
done:
    linear_bf16_ctx_free(ctx);
    linear_bf16_weight_free(p);
    free(x), free(w), free(bias), free(y), free(y2);
}

/* kernel_to_bf16 against bert_f32_to_bf16 on every length up to 70 (the
 * vector loops and their tails) over random bit patterns, then ties, the
 * largest finite values, infinities and NaNs. A subnormal may become a
 * zero of its sign instead (kernels.h). */
static void check_to_bf16(void)
{
    enum { N = 70 };
    float x[N];
    uint16_t got[N];
    uint32_t bits = 99u;
    size_t wrong = 0;
    for (size_t n = 1; n <= N; n++)
        for (int round = 0; round < 20; round++) {
            for (size_t i = 0; i < n; i++) {
                bits = bits * 1664525u + 1013904223u;
                memcpy(&x[i], &bits, sizeof bits);
            }
            kernel_to_bf16(x, n, got);
            for (size_t i = 0; i < n; i++) {
                const uint16_t want = bert_f32_to_bf16(x[i]);
                const bool subnormal = fabsf(x[i]) < 1.17549435e-38f && x[i] != 0.0f;
                if (got[i] != want && !(subnormal && (got[i] & 0x7fffu) == 0 &&
                                        got[i] >> 15 == want >> 15))
                    wrong++;
            }
        }
    const float special[] = {1.0f + 0x1p-8f,         1.0f + 0x1p-7f + 0x1p-8f, -1.0f - 0x1p-8f,
                             3.4028235e38f,          -3.4028235e38f,           INFINITY,
                             -INFINITY,              NAN,                      -NAN,
                             0.0f,                   -0.0f,                    1.17549435e-38f};
    const size_t ns = sizeof special / sizeof *special;
    for (size_t i = 0; i < N; i++)
        x[i] = special[i % ns];
    kernel_to_bf16(x, N, got);
    for (size_t i = 0; i < N; i++)
        wrong += got[i] != bert_f32_to_bf16(x[i]);
    printf("kernel_to_bf16 against bert_f32_to_bf16: %zu values differ\n", wrong);
    CHECK_INT_EQ(wrong, 0);
}

/* rows x in values of x, rounded by kernel_to_bf16, into the kept room. */
static void keep_rows(struct linear_bf16_ctx *ctx, const float *x, size_t rows, size_t in)
{
    uint16_t *kept = linear_bf16_keep(ctx, x, rows, in);
    CHECK(kept != NULL);
    if (kept != NULL)
        kernel_to_bf16(x, rows * in, kept);
}

/* A product of rows kept in bf16 against the same product converting a
 * copy of them: the same bits; then every way the kept rows must be
 * dropped. */
static void check_kept(void)
{
    enum { ROWS = 37, IN = 64, MID = 96, OUT = 48 };
    float *x = random_floats(ROWS * IN), *w1 = random_floats(MID * IN);
    float *w2 = random_floats(OUT * MID), *b1 = random_floats(MID), *g = random_floats(MID);
    float *h = malloc(ROWS * MID * sizeof *h), *copy = malloc(ROWS * MID * sizeof *copy);
    float *y = malloc(ROWS * OUT * sizeof *y), *y_fresh = malloc(ROWS * OUT * sizeof *y);
    struct linear_bf16_weight *p1 = linear_bf16_pack(w1, MID, IN);
    struct linear_bf16_weight *p2 = linear_bf16_pack(w2, OUT, MID);
    struct linear_bf16_ctx *ctx = linear_bf16_ctx_new(ROWS, MID, MID, MID);
    CHECK(x && w1 && w2 && b1 && g && h && copy && y && y_fresh && p1 && p2 && ctx);
    if (!(x && w1 && w2 && b1 && g && h && copy && y && y_fresh && p1 && p2 && ctx))
        goto done;
    /* An activation's rows, then a LayerNorm's, kept as they are made. */
    for (int producer = 0; producer < 2; producer++) {
        CHECK(linear_bf16_run(ctx, p1, x, ROWS, IN, MID, h, MID, NULL));
        uint16_t *kept = linear_bf16_keep(ctx, h, ROWS, MID);
        CHECK(kept != NULL);
        if (kept == NULL)
            goto done;
        if (producer == 0)
            kernel_bias_activation_rounded(h, b1, ROWS, MID, MID, BERT_ACTIVATION_GELU, kept);
        else
            kernel_add_layernorm_bf16(h, NULL, b1, g, b1, ROWS, MID, 1e-12f, kept);
        memcpy(copy, h, ROWS * MID * sizeof *h);
        CHECK(linear_bf16_run(ctx, p2, h, ROWS, MID, OUT, y, OUT, NULL)); /* the kept rows */
        CHECK(linear_bf16_run(ctx, p2, copy, ROWS, MID, OUT, y_fresh, OUT, NULL)); /* converts */
        CHECK(memcmp(y, y_fresh, ROWS * OUT * sizeof *y) == 0);
    }
    /* Read once: changed after that product, h is converted anew. */
    keep_rows(ctx, h, ROWS, MID);
    CHECK(linear_bf16_run(ctx, p2, h, ROWS, MID, OUT, y, OUT, NULL));
    for (size_t i = 0; i < ROWS * MID; i++)
        copy[i] = h[i] = -h[i];
    CHECK(linear_bf16_run(ctx, p2, h, ROWS, MID, OUT, y, OUT, NULL));
    CHECK(linear_bf16_run(ctx, p2, copy, ROWS, MID, OUT, y_fresh, OUT, NULL));
    CHECK(memcmp(y, y_fresh, ROWS * OUT * sizeof *y) == 0);
    /* Dropped by another product in between, and by linear_bf16_forget. */
    for (int drop = 0; drop < 2; drop++) {
        keep_rows(ctx, h, ROWS, MID);
        if (drop == 0)
            CHECK(linear_bf16_run(ctx, p1, x, ROWS, IN, MID, copy, MID, NULL));
        else
            linear_bf16_forget(ctx);
        for (size_t i = 0; i < ROWS * MID; i++)
            copy[i] = h[i] = h[i] * 0.5f + 0.25f;
        CHECK(linear_bf16_run(ctx, p2, h, ROWS, MID, OUT, y, OUT, NULL));
        CHECK(linear_bf16_run(ctx, p2, copy, ROWS, MID, OUT, y_fresh, OUT, NULL));
        CHECK(memcmp(y, y_fresh, ROWS * OUT * sizeof *y) == 0);
    }
    /* Not taken by a product of other rows from the same pointer. */
    keep_rows(ctx, h, ROWS, MID);
    for (size_t i = 0; i < ROWS * MID; i++)
        copy[i] = h[i] = h[i] - 0.125f;
    CHECK(linear_bf16_run(ctx, p2, h, ROWS - 1, MID, OUT, y, OUT, NULL));
    CHECK(linear_bf16_run(ctx, p2, copy, ROWS - 1, MID, OUT, y_fresh, OUT, NULL));
    CHECK(memcmp(y, y_fresh, (ROWS - 1) * OUT * sizeof *y) == 0);
    /* No room for more rows than the context converts (it has room for 64
     * at least, for padding). */
    CHECK(linear_bf16_keep(ctx, h, (ROWS > 64 ? ROWS : 64) + 1, MID) == NULL);
done:
    linear_bf16_ctx_free(ctx);
    linear_bf16_weight_free(p1);
    linear_bf16_weight_free(p2);
    free(x), free(w1), free(w2), free(b1), free(g), free(h), free(copy), free(y), free(y_fresh);
}

int main(void)
{
    char why[200];
    if (!bert_bf16_available(why, sizeof why)) {
        printf("skipped: %s\n", why);
        return SKIP;
    }
    if (strcmp(bert_bf16_isa(), "AMX") != 0 && !bert_bf16_use_onednn(true)) {
        printf("skipped: oneDNN has no bf16 kernels here\n");
        return SKIP;
    }
    const size_t rows[] = {1, 5, 31, 40, 100};
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
        check_shape(rows[r], 96, 80, 80);
        check_shape(rows[r], 128, 64, 64 + 7);
    }
    check_kept();
    check_to_bf16();
    check_slot_cache();
    return check_exit();
}
