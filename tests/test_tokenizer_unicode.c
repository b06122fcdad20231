/* Every code point, every property, against the reference: the hashes in
 * tests/data/tokenizer/unicode_ref.txt were computed from Hugging Face
 * `tokenizers` (tests/tokenizer/gen/unicode_probe.js) per block of 1024 code
 * points; here they are recomputed from tokenizer/unicode.c. A mismatch names the
 * block and the property (rerun the probe to see the code points). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "unicode.h"

#define BLOCK 1024
#define N_PROPS 5

static const char *const prop_names[N_PROPS] = {"clean_text", "pre-tokenizer", "chinese",
                                                "strip_accents", "lowercase"};

static uint32_t fnv_word(uint32_t h, uint32_t w)
{
    for (int i = 0; i < 4; i++)
        h = (h ^ ((w >> (8 * i)) & 0xFF)) * 16777619u;
    return h;
}

static uint32_t fnv_list(uint32_t h, const uint32_t *v, size_t n)
{
    h = fnv_word(h, (uint32_t)n);
    for (size_t i = 0; i < n; i++)
        h = fnv_word(h, v[i]);
    return h;
}

static void block_hashes(uint32_t first, uint32_t h[N_PROPS])
{
    for (int k = 0; k < N_PROPS; k++)
        h[k] = 2166136261u;
    for (uint32_t c = first; c < first + BLOCK; c++) {
        if (c >= 0xD800 && c <= 0xDFFF)
            continue;
        uint32_t clean = tok_unicode_is_removed_by_clean(c) ? 1 : tok_unicode_is_whitespace(c) ? 2 : 0;
        uint32_t pre = tok_unicode_is_whitespace(c) ? 1 : tok_unicode_is_punctuation(c) ? 2 : 0;
        h[0] = fnv_word(h[0], clean);
        h[1] = fnv_word(h[1], pre);
        h[2] = fnv_word(h[2], tok_unicode_is_chinese(c));
        uint32_t out[TOK_UNICODE_MAX_EXPANSION];
        h[3] = fnv_list(h[3], out, tok_unicode_strip_accents(c, out));
        h[4] = fnv_list(h[4], out, tok_unicode_lowercase(c, out));
    }
}

int main(void)
{
    const char *path = "tests/data/tokenizer/unicode_ref.txt";
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (f == NULL)
        return check_exit();
    char line[256];
    int blocks = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        unsigned first, want[N_PROPS];
        if (sscanf(line, "%x %x %x %x %x %x", &first, &want[0], &want[1], &want[2], &want[3],
                   &want[4]) != 6) {
            CHECK(!"malformed line in unicode_ref.txt");
            continue;
        }
        uint32_t got[N_PROPS];
        block_hashes(first, got);
        blocks++;
        for (int k = 0; k < N_PROPS; k++) {
            if (got[k] != want[k]) {
                if (bad++ < 20)
                    fprintf(stderr, "U+%04X..U+%04X: %s differs from the reference\n", first,
                            first + BLOCK - 1, prop_names[k]);
            }
            CHECK_INT_EQ(got[k], want[k]);
        }
    }
    fclose(f);
    CHECK_INT_EQ(blocks, 0x110000 / BLOCK);
    /* Spot checks that name what the hashes protect. */
    uint32_t out[TOK_UNICODE_MAX_EXPANSION];
    CHECK_INT_EQ(tok_unicode_lowercase(0x3A3, out), 1); /* Σ -> σ, no final-sigma rule */
    CHECK_INT_EQ(out[0], 0x3C3);
    CHECK_INT_EQ(tok_unicode_lowercase(0x130, out), 2); /* İ -> i + U+0307 */
    CHECK(tok_unicode_is_chinese(0x20000));
    CHECK(!tok_unicode_is_removed_by_clean(0x1F970)); /* unassigned in old tables, kept */
    CHECK(tok_unicode_is_removed_by_clean(0x200B));   /* ZERO WIDTH SPACE is Cf */
    CHECK(tok_unicode_is_punctuation('$') && tok_unicode_is_punctuation('`'));
    CHECK(tok_unicode_is_whitespace(0x3000) && tok_unicode_is_whitespace(0x2028));
    fprintf(stderr, "unicode: %d blocks of %d code points, %d property mismatches\n", blocks,
            BLOCK, bad);
    return check_exit();
}
