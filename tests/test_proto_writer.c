/* proto/json_writer: structure, escaping, base64, and the shortest float32
 * text checked three ways: an independent golden file (numpy Dragon4), a
 * round trip through strtof, and a search for anything shorter. */
#include <float.h>
#include <jansson.h>
#include <stdint.h>
#include <time.h>

#include "check.h"
#include "json_writer.h"

static float float_of(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static char *fmt(float v)
{
    static char buf[JSON_WRITER_FLOAT_MAX];
    json_writer_format_float(v, buf);
    return buf;
}

static void test_float_specials(void)
{
    CHECK_STR_EQ(fmt(0.1f), "0.1");
    CHECK_STR_EQ(fmt(1.0f), "1.0");
    CHECK_STR_EQ(fmt(0.0f), "0.0");
    CHECK_STR_EQ(fmt(-0.0f), "-0.0");
    CHECK_STR_EQ(fmt(1e-45f), "1e-45");
    CHECK_STR_EQ(fmt(float_of(0x00000001)), "1e-45");
    CHECK_STR_EQ(fmt(3.4e38f), "3.4e+38");
    CHECK_STR_EQ(fmt(FLT_MAX), "3.4028235e+38");
    CHECK_STR_EQ(fmt(-FLT_MAX), "-3.4028235e+38");
    CHECK_STR_EQ(fmt(FLT_MIN), "1.1754944e-38");
    CHECK_STR_EQ(fmt(1e-5f), "1e-05");
    CHECK_STR_EQ(fmt(1e-4f), "0.0001");
    CHECK_STR_EQ(fmt(1e16f), "1e+16");
    CHECK_STR_EQ(fmt(1e15f), "1000000000000000.0");
    CHECK_STR_EQ(fmt(123.456f), "123.456");
    CHECK_STR_EQ(fmt(16777216.0f), "16777216.0");
    CHECK_STR_EQ(fmt(-2.5f), "-2.5");
    CHECK_STR_EQ(fmt(0.3f), "0.3");
    CHECK_STR_EQ(fmt(0.99999994f), "0.99999994");
    char buf[JSON_WRITER_FLOAT_MAX] = "x";
    CHECK_INT_EQ(json_writer_format_float(NAN, buf), 0);
    CHECK_STR_EQ(buf, "");
    CHECK_INT_EQ(json_writer_format_float(INFINITY, buf), 0);
    CHECK_INT_EQ(json_writer_format_float(-INFINITY, buf), 0);
}

/* Golden texts from numpy's Dragon4, an implementation independent of ours. */
static void test_float_golden(void)
{
    FILE *f = fopen("tests/data/proto/float32_repr.txt", "r");
    CHECK(f != NULL);
    if (f == NULL)
        return;
    char line[128];
    int n = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        unsigned bits;
        char want[64];
        if (sscanf(line, "%x %63s", &bits, want) != 2)
            continue;
        n++;
        const char *got = fmt(float_of(bits));
        if (strcmp(got, want) != 0 && bad++ < 10)
            fprintf(stderr, "golden %08x: got %s want %s\n", bits, got, want);
    }
    fclose(f);
    CHECK(n > 3000);
    CHECK_INT_EQ(bad, 0);
}

/* Significant digits of a decimal text ("0.00120" -> 3 for "12"). */
static int significant_digits(const char *s)
{
    char d[32];
    int k = 0;
    bool started = false;
    for (; *s && *s != 'e'; s++) {
        if (*s < '0' || *s > '9')
            continue;
        if (*s != '0')
            started = true;
        if (started && k < 31)
            d[k++] = *s;
    }
    while (k > 1 && d[k - 1] == '0')
        k--;
    return k;
}

/* Round trip, and no decimal with one digit fewer reads back as v: both
 * neighbours at that precision are tried, since the nearest is not always
 * the one inside a lopsided interval. Returns false on any failure. */
static bool shortest_ok(float v)
{
    const char *s = fmt(v);
    if (strtof(s, NULL) != v) {
        fprintf(stderr, "no round trip: %a -> %s\n", (double)v, s);
        return false;
    }
    int nd = significant_digits(s);
    if (nd <= 1)
        return true;
    char t[64];
    snprintf(t, sizeof t, "%.*e", nd - 2, (double)v);
    if (strtof(t, NULL) == v) {
        fprintf(stderr, "not shortest: %a -> %s, %s also reads back\n", (double)v, s, t);
        return false;
    }
    char *e = strchr(t, 'e');
    long long mant = 0;
    for (char *p = t; p < e; p++)
        if (*p >= '0' && *p <= '9')
            mant = mant * 10 + (*p - '0');
    double near = fabs(strtod(t, NULL));
    long long other = fabs((double)v) > near ? mant + 1 : mant - 1;
    snprintf(t, sizeof t, "%s%llde%d", v < 0 ? "-" : "", other, atoi(e + 1) - (nd - 2));
    if (other > 0 && strtof(t, NULL) == v) {
        fprintf(stderr, "not shortest: %a -> %s, %s also reads back\n", (double)v, s, t);
        return false;
    }
    return true;
}

static void test_float_sweep(void)
{
    /* Every 4099th bit pattern over all positive and negative floats, random
     * ones, and a comb through the subnormals: ~1.6 million values. (The
     * whole positive range was checked once offline the same way.) */
    int bad = 0;
    long checked = 0;
    for (uint64_t b = 1; b < 0x100000000ull; b += 4099) {
        uint32_t bits = (uint32_t)b;
        if (((bits >> 23) & 0xFF) == 0xFF)
            continue;
        checked++;
        if (!shortest_ok(float_of(bits)) && ++bad > 10)
            break;
    }
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 300000 && bad <= 10; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint32_t bits = (uint32_t)x;
        if (((bits >> 23) & 0xFF) == 0xFF)
            continue;
        checked++;
        bad += !shortest_ok(float_of(bits));
    }
    /* Subnormals are where the arithmetic is widest. */
    for (uint32_t bits = 1; bits < 0x00800000 && bad <= 10; bits += 31) {
        checked++;
        bad += !shortest_ok(float_of(bits));
    }
    fprintf(stderr, "float sweep: %ld values\n", checked);
    CHECK_INT_EQ(bad, 0);
}

static char *render(struct json_writer *w)
{
    size_t len = 0;
    char *s = json_writer_finish(w, &len);
    CHECK(s == NULL || strlen(s) == len);
    return s;
}

static void test_structure(void)
{
    struct json_writer w;
    json_writer_init(&w, 0);
    json_writer_begin_object(&w);
    json_writer_key(&w, "a");
    json_writer_begin_array(&w);
    json_writer_int(&w, 1);
    json_writer_int(&w, -2);
    json_writer_int(&w, INT64_MIN);
    json_writer_begin_array(&w);
    json_writer_end_array(&w);
    json_writer_begin_object(&w);
    json_writer_end_object(&w);
    json_writer_null(&w);
    json_writer_bool(&w, true);
    json_writer_bool(&w, false);
    json_writer_end_array(&w);
    json_writer_key(&w, "b");
    json_writer_float(&w, 0.5f);
    json_writer_key(&w, "c");
    float v[3] = {1.0f, -0.25f, 1e-7f};
    json_writer_float_array(&w, v, 3);
    json_writer_key(&w, "d");
    json_writer_float_array(&w, v, 0);
    json_writer_end_object(&w);
    char *s = render(&w);
    CHECK_STR_EQ(s, "{\"a\":[1,-2,-9223372036854775808,[],{},null,true,false],\"b\":0.5,"
                    "\"c\":[1.0,-0.25,1e-07],\"d\":[]}");
    free(s);

    /* A large body grows the buffer many times from a tiny start. */
    json_writer_init(&w, 1);
    json_writer_begin_array(&w);
    for (int i = 0; i < 100000; i++)
        json_writer_int(&w, i);
    json_writer_end_array(&w);
    s = render(&w);
    json_error_t jerr;
    json_t *j = s ? json_loads(s, 0, &jerr) : NULL;
    CHECK(j != NULL && json_array_size(j) == 100000);
    CHECK(j != NULL && json_integer_value(json_array_get(j, 99999)) == 99999);
    json_decref(j);
    free(s);
}

static void test_nonfinite_poisons(void)
{
    float bad[2] = {1.0f, NAN};
    struct json_writer w;
    json_writer_init(&w, 0);
    json_writer_begin_array(&w);
    json_writer_float(&w, INFINITY);
    json_writer_end_array(&w);
    CHECK(!json_writer_ok(&w));
    CHECK(render(&w) == NULL);

    json_writer_init(&w, 0);
    json_writer_float_array(&w, bad, 2);
    CHECK(render(&w) == NULL);
}

static void check_string(const char *in, size_t len, const char *want)
{
    struct json_writer w;
    json_writer_init(&w, 0);
    json_writer_string(&w, in, len);
    char *s = render(&w);
    CHECK_STR_EQ(s, want);
    /* Whatever went in, what comes out is valid JSON. */
    json_error_t jerr;
    json_t *j = s ? json_loads(s, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr) : NULL;
    CHECK(j != NULL && json_is_string(j));
    json_decref(j);
    free(s);
}

static void test_escaping(void)
{
    check_string("plain", 5, "\"plain\"");
    check_string("", 0, "\"\"");
    check_string("a\"b\\c/", 6, "\"a\\\"b\\\\c/\"");
    check_string("\n\r\t\b\f", 5, "\"\\n\\r\\t\\b\\f\"");
    check_string("\x01\x1f\x7f", 3, "\"\\u0001\\u001f\x7f\"");
    check_string("nul\0in", 6, "\"nul\\u0000in\"");
    check_string("caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80", 14,
                 "\"caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80\"");
    /* U+2028 / U+2029 end lines in JavaScript. */
    check_string("a\xe2\x80\xa8" "b\xe2\x80\xa9", 8, "\"a\\u2028b\\u2029\"");
    check_string("\xe2\x80\xa7", 3, "\"\xe2\x80\xa7\"");
    /* Invalid UTF-8: lone continuation, overlong, surrogate, > U+10FFFF,
     * truncated sequence, 0xFF. Each bad byte becomes U+FFFD. */
    check_string("\x80", 1, "\"\xef\xbf\xbd\"");
    check_string("\xc0\xaf", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\"");
    check_string("\xed\xa0\x80", 3, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
    check_string("\xf4\x90\x80\x80", 4,
                 "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
    check_string("ab\xe4\xb8", 4, "\"ab\xef\xbf\xbd\xef\xbf\xbd\"");
    check_string("\xff", 1, "\"\xef\xbf\xbd\"");

    struct json_writer w;
    json_writer_init(&w, 0);
    json_writer_begin_object(&w);
    json_writer_key(&w, "k\"ey");
    json_writer_cstring(&w, "v");
    json_writer_end_object(&w);
    char *s = render(&w);
    CHECK_STR_EQ(s, "{\"k\\\"ey\":\"v\"}");
    free(s);
}

static void check_base64(const char *in, const char *want)
{
    struct json_writer w;
    json_writer_init(&w, 0);
    json_writer_base64(&w, in, strlen(in));
    char *s = render(&w);
    CHECK_STR_EQ(s, want);
    free(s);
}

static void test_base64(void)
{
    /* RFC 4648 section 10. */
    check_base64("", "\"\"");
    check_base64("f", "\"Zg==\"");
    check_base64("fo", "\"Zm8=\"");
    check_base64("foo", "\"Zm9v\"");
    check_base64("foob", "\"Zm9vYg==\"");
    check_base64("fooba", "\"Zm9vYmE=\"");
    check_base64("foobar", "\"Zm9vYmFy\"");
    check_base64("\xff\xfe\xfd", "\"//79\"");
}

/* The budget the brief asks about: 32 embeddings of 1024 floats. */
static void test_speed(void)
{
    enum { ROWS = 32, DIM = 1024, REPEAT = 20 };
    float *e = malloc(sizeof(float) * ROWS * DIM);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < ROWS * DIM; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        e[i] = (float)((double)(x >> 11) / 9007199254740992.0 * 0.2 - 0.1);
    }
    struct timespec t0, t1;
    size_t bytes = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int r = 0; r < REPEAT; r++) {
        struct json_writer w;
        json_writer_init(&w, ROWS * (DIM * 12 + 64));
        json_writer_begin_array(&w);
        for (int i = 0; i < ROWS; i++)
            json_writer_float_array(&w, e + (size_t)i * DIM, DIM);
        json_writer_end_array(&w);
        char *s = json_writer_finish(&w, &bytes);
        CHECK(s != NULL);
        free(s);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) /
                REPEAT;
    fprintf(stderr, "render 32 x 1024 floats: %.2f ms, %zu bytes\n", ms, bytes);
    /* Generous even for sanitizer builds; a per-number malloc or printf
     * would not pass in a Release build. */
    CHECK(ms < 250);
    free(e);
}

int main(void)
{
    test_float_specials();
    test_float_golden();
    test_float_sweep();
    test_structure();
    test_nonfinite_poisons();
    test_escaping();
    test_base64();
    test_speed();
    return check_exit();
}
