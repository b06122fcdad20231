/* Minimal test assertions: on failure print file:line, the expression and
 * both values, count the failure and keep going; check_exit() makes the
 * process exit non-zero when anything failed. */
#ifndef CHECK_H
#define CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                                     \
    do {                                                                                \
        check_count++;                                                                  \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);    \
            check_failures++;                                                           \
        }                                                                               \
    } while (0)

#define CHECK_INT_EQ(a, b)                                                              \
    do {                                                                                \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                 \
        check_count++;                                                                  \
        if (check_a_ != check_b_) {                                                     \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld vs %lld)\n", __FILE__, \
                    __LINE__, #a, #b, check_a_, check_b_);                              \
            check_failures++;                                                           \
        }                                                                               \
    } while (0)

#define CHECK_STR_EQ(a, b)                                                              \
    do {                                                                                \
        const char *check_a_ = (a), *check_b_ = (b);                                    \
        check_count++;                                                                  \
        if (check_a_ == NULL || check_b_ == NULL || strcmp(check_a_, check_b_) != 0) {  \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (\"%s\" vs \"%s\")\n",       \
                    __FILE__, __LINE__, #a, #b, check_a_ ? check_a_ : "(null)",          \
                    check_b_ ? check_b_ : "(null)");                                    \
            check_failures++;                                                           \
        }                                                                               \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                           \
    do {                                                                                \
        double check_a_ = (double)(a), check_b_ = (double)(b);                          \
        check_count++;                                                                  \
        if (!(fabs(check_a_ - check_b_) <= (tol))) {                                    \
            fprintf(stderr, "%s:%d: CHECK failed: |%s - %s| <= %g (%.9g vs %.9g)\n",    \
                    __FILE__, __LINE__, #a, #b, (double)(tol), check_a_, check_b_);     \
            check_failures++;                                                           \
        }                                                                               \
    } while (0)

/* Substring check, for error messages. */
#define CHECK_CONTAINS(hay, needle)                                                     \
    do {                                                                                \
        const char *check_h_ = (hay), *check_n_ = (needle);                             \
        check_count++;                                                                  \
        if (check_h_ == NULL || strstr(check_h_, check_n_) == NULL) {                   \
            fprintf(stderr, "%s:%d: CHECK failed: \"%s\" contains \"%s\"\n", __FILE__,  \
                    __LINE__, check_h_ ? check_h_ : "(null)", check_n_);                \
            check_failures++;                                                           \
        }                                                                               \
    } while (0)

static inline int check_exit(void)
{
    fprintf(stderr, "%d checks, %d failed\n", check_count, check_failures);
    return check_failures ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
