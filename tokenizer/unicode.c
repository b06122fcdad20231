#include "unicode.h"

#include <utf8proc.h>

/* Is `c` listed under `kind` in the generated skew table? The table is sorted
 * by (kind, first), so one binary search answers. */
static bool skew_has(enum tok_skew_kind kind, uint32_t c)
{
    size_t lo = 0, hi = tok_skew_ranges_len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct tok_skew_range *r = &tok_skew_ranges[mid];
        if (r->kind < kind || (r->kind == kind && r->last < c))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < tok_skew_ranges_len && tok_skew_ranges[lo].kind == kind &&
           tok_skew_ranges[lo].first <= c && c <= tok_skew_ranges[lo].last;
}

static utf8proc_category_t category(uint32_t c)
{
    return utf8proc_category((utf8proc_int32_t)c);
}

bool tok_unicode_is_removed_by_clean(uint32_t c)
{
    if (c < 0x80)
        return (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F;
    if (c == 0xFFFD)
        return true;
    switch (category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CS:
        return true;
    case UTF8PROC_CATEGORY_CF:
        return !skew_has(TOK_SKEW_NOT_CONTROL, c);
    default:
        return false;
    }
}

bool tok_unicode_is_whitespace(uint32_t c)
{
    if (c < 0x80)
        return c == ' ' || (c >= '\t' && c <= '\r');
    if (c == 0x85)
        return true;
    /* White_Space is exactly the separators plus the ASCII/C1 controls above. */
    utf8proc_category_t cat = category(c);
    return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL ||
           cat == UTF8PROC_CATEGORY_ZP;
}

bool tok_unicode_is_punctuation(uint32_t c)
{
    if (c < 0x80)
        return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
               (c >= '{' && c <= '~');
    utf8proc_category_t cat = category(c);
    if (cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO)
        return !skew_has(TOK_SKEW_NOT_PUNCT, c);
    return skew_has(TOK_SKEW_PUNCT, c);
}

bool tok_unicode_is_chinese(uint32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static bool is_nonspacing_mark(uint32_t c)
{
    if (category(c) == UTF8PROC_CATEGORY_MN)
        return !skew_has(TOK_SKEW_NOT_MARK, c);
    return skew_has(TOK_SKEW_MARK, c);
}

size_t tok_unicode_strip_accents(uint32_t c, uint32_t *out)
{
    if (c < 0x80) {
        out[0] = c;
        return 1;
    }
    utf8proc_int32_t buf[TOK_UNICODE_MAX_EXPANSION];
    utf8proc_ssize_t n = 0;
    int last_boundclass = 0;
    if (!skew_has(TOK_SKEW_NO_DECOMPOSE, c))
        n = utf8proc_decompose_char((utf8proc_int32_t)c, buf, TOK_UNICODE_MAX_EXPANSION,
                                    UTF8PROC_DECOMPOSE, &last_boundclass);
    /* Canonical decompositions are at most 4 long; anything odd stays as is. */
    if (n <= 0 || n > TOK_UNICODE_MAX_EXPANSION) {
        buf[0] = (utf8proc_int32_t)c;
        n = 1;
    }
    size_t k = 0;
    for (utf8proc_ssize_t i = 0; i < n; i++)
        if (!is_nonspacing_mark((uint32_t)buf[i]))
            out[k++] = (uint32_t)buf[i];
    return k;
}

size_t tok_unicode_lowercase(uint32_t c, uint32_t *out)
{
    if (c < 0x80) {
        out[0] = (c >= 'A' && c <= 'Z') ? c + 32 : c;
        return 1;
    }
    /* The one unconditional multi-character lowercase mapping
     * (SpecialCasing.txt): LATIN CAPITAL LETTER I WITH DOT ABOVE. */
    if (c == 0x130) {
        out[0] = 'i';
        out[1] = 0x307;
        return 2;
    }
    size_t lo = 0, hi = tok_skew_lowers_len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tok_skew_lowers[mid].c < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < tok_skew_lowers_len && tok_skew_lowers[lo].c == c) {
        out[0] = tok_skew_lowers[lo].lower;
        return 1;
    }
    out[0] = (uint32_t)utf8proc_tolower((utf8proc_int32_t)c);
    return 1;
}

bool tok_unicode_is_word(uint32_t c)
{
    if (c < 0x80)
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               c == '_';
    if (c == 0x200C || c == 0x200D)
        return true;
    switch (category(c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_PC:
        return true;
    default:
        return false;
    }
}
