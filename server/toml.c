#include "toml.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

#define TOML_MAX_FILE_BYTES (1u << 20)
/* User text quoted in a message is cut to this many bytes. */
#define TOML_QUOTE_MAX 40

struct toml_parser {
    const char *p, *end;  /* the rest of the current line, without its newline */
    int line;
    struct toml_doc *doc;
    size_t doc_cap, sections_cap;
    struct toml_error *err;
    const char *section;  /* current section name, owned by doc->sections or "" */
    size_t section_first; /* index of the current section's first entry */
};

static bool toml_fail(struct toml_parser *ps, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static bool toml_fail(struct toml_parser *ps, const char *fmt, ...)
{
    if (ps->err != NULL) {
        ps->err->line = ps->line;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ps->err->message, sizeof ps->err->message, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* Length of at most TOML_QUOTE_MAX bytes of s[0..n), not splitting a UTF-8
 * character, so quoted user text stays valid UTF-8. */
static int toml_quote_len(const char *s, size_t n)
{
    if (n <= TOML_QUOTE_MAX)
        return (int)n;
    size_t cut = TOML_QUOTE_MAX;
    while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
        cut--;
    return (int)cut;
}

const char *toml_type_name(enum toml_type type)
{
    switch (type) {
    case TOML_STRING: return "string";
    case TOML_INTEGER: return "integer";
    case TOML_BOOLEAN: return "boolean";
    }
    return "unknown";
}

/* ---- integers ---- */

enum toml_int_result {
    TOML_INT_OK,
    TOML_INT_SYNTAX,
    TOML_INT_LEADING_ZERO,
    TOML_INT_RANGE,
};

static enum toml_int_result toml_int_parse(const char *s, size_t n, int64_t *out)
{
    size_t i = 0;
    bool negative = false;
    if (n > 0 && (s[0] == '+' || s[0] == '-')) {
        negative = s[0] == '-';
        i = 1;
    }
    if (i == n)
        return TOML_INT_SYNTAX;
    if (s[i] == '0' && i + 1 < n)
        return (s[i + 1] >= '0' && s[i + 1] <= '9') || s[i + 1] == '_' ? TOML_INT_LEADING_ZERO
                                                                      : TOML_INT_SYNTAX;
    /* Accumulate the magnitude; -2^63 is representable, +2^63 is not. */
    const uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t magnitude = 0;
    bool overflow = false, after_digit = false;
    for (; i < n; i++) {
        if (s[i] >= '0' && s[i] <= '9') {
            unsigned digit = (unsigned)(s[i] - '0');
            if (magnitude > (limit - digit) / 10)
                overflow = true;
            else
                magnitude = magnitude * 10 + digit;
            after_digit = true;
        } else if (s[i] == '_' && after_digit) {
            after_digit = false; /* `_` must sit between two digits */
        } else {
            return TOML_INT_SYNTAX;
        }
    }
    if (!after_digit)
        return TOML_INT_SYNTAX;
    if (overflow)
        return TOML_INT_RANGE;
    if (negative)
        *out = magnitude == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)magnitude;
    else
        *out = (int64_t)magnitude;
    return TOML_INT_OK;
}

bool toml_parse_integer(const char *text, size_t len, int64_t *out)
{
    return toml_int_parse(text, len, out) == TOML_INT_OK;
}

/* ---- lexical checks ---- */

bool toml_utf8_valid(const char *text, size_t len)
{
    return utf8_valid_prefix((const uint8_t *)text, len) == len;
}

/* TOML forbids control characters other than tab everywhere (strings,
 * comments, between tokens) and requires UTF-8; check a whole line at once. */
static bool toml_check_line(struct toml_parser *ps)
{
    const unsigned char *s = (const unsigned char *)ps->p;
    size_t n = (size_t)(ps->end - ps->p);
    for (size_t i = 0; i < n;) {
        if (s[i] < 0x80) {
            if ((s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7F)
                return toml_fail(ps, "control character U+%04X is not allowed", s[i]);
            i++;
            continue;
        }
        size_t len = utf8_sequence_length(s + i, n - i);
        if (len == 0)
            return toml_fail(ps, "invalid UTF-8 at column %zu", i + 1);
        i += len;
    }
    return true;
}

static void toml_skip_ws(struct toml_parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t'))
        ps->p++;
}

static bool toml_is_bare_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
}

/* After a header or value only blanks and a comment may follow. */
static bool toml_expect_line_end(struct toml_parser *ps, const char *after)
{
    toml_skip_ws(ps);
    if (ps->p == ps->end || *ps->p == '#')
        return true;
    size_t n = (size_t)(ps->end - ps->p);
    return toml_fail(ps, "unexpected \"%.*s\" after %s (one key or header per line)",
                     toml_quote_len(ps->p, n), ps->p, after);
}

/* ---- strings ---- */

static int toml_hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* \uXXXX or \UXXXXXXXX at ps->p (just after the backslash): append the
 * character to out. */
static bool toml_parse_unicode_escape(struct toml_parser *ps, char *out, size_t *o)
{
    char kind = *ps->p;
    size_t digits = kind == 'u' ? 4 : 8;
    if ((size_t)(ps->end - ps->p - 1) < digits)
        return toml_fail(ps, "\\%c escape needs %zu hex digits", kind, digits);
    uint32_t cp = 0;
    for (size_t i = 1; i <= digits; i++) {
        int v = toml_hex_value(ps->p[i]);
        if (v < 0)
            return toml_fail(ps, "\\%c escape needs %zu hex digits", kind, digits);
        cp = cp * 16 + (uint32_t)v; /* at most 8 digits: fits in 32 bits */
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return toml_fail(ps, "\\%c%.*s is not a Unicode scalar value", kind, (int)digits,
                         ps->p + 1);
    /* The values are C strings: an embedded NUL would silently cut them. */
    if (cp == 0)
        return toml_fail(ps, "\\%c%.*s (NUL) is not allowed in a string", kind, (int)digits,
                         ps->p + 1);
    *o += utf8_encode(cp, (uint8_t *)out + *o);
    ps->p += 1 + digits;
    return true;
}

/* A basic string "..." starting at ps->p. Decoded text is never longer than
 * its source (every escape is at least as long as what it encodes), so one
 * buffer the size of the rest of the line suffices. */
static bool toml_parse_basic_string(struct toml_parser *ps, char **out)
{
    ps->p++;
    char *buf = malloc((size_t)(ps->end - ps->p) + 1);
    if (buf == NULL)
        return toml_fail(ps, "out of memory");
    size_t o = 0;
    for (;;) {
        if (ps->p == ps->end) {
            free(buf);
            return toml_fail(ps, "unterminated string (missing closing '\"')");
        }
        char c = *ps->p;
        if (c == '"')
            break;
        if (c != '\\') {
            buf[o++] = c;
            ps->p++;
            continue;
        }
        ps->p++;
        if (ps->p == ps->end) {
            free(buf);
            return toml_fail(ps, "unterminated string (missing closing '\"')");
        }
        static const char from[] = "btnfr\"\\", to[] = "\b\t\n\f\r\"\\";
        const char *hit = strchr(from, *ps->p);
        if (*ps->p != '\0' && hit != NULL) {
            buf[o++] = to[hit - from];
            ps->p++;
        } else if (*ps->p == 'u' || *ps->p == 'U') {
            if (!toml_parse_unicode_escape(ps, buf, &o)) {
                free(buf);
                return false;
            }
        } else {
            size_t n = utf8_sequence_length((const uint8_t *)ps->p, (size_t)(ps->end - ps->p));
            free(buf);
            return toml_fail(ps, "invalid escape \\%.*s (use \\\\ for a backslash)", (int)n,
                             ps->p);
        }
    }
    ps->p++;
    buf[o] = '\0';
    *out = buf;
    return true;
}

/* A literal string '...': no escapes, no single quote inside. */
static bool toml_parse_literal_string(struct toml_parser *ps, char **out)
{
    ps->p++;
    const char *close = memchr(ps->p, '\'', (size_t)(ps->end - ps->p));
    if (close == NULL)
        return toml_fail(ps, "unterminated string (missing closing \"'\")");
    size_t n = (size_t)(close - ps->p);
    char *buf = malloc(n + 1);
    if (buf == NULL)
        return toml_fail(ps, "out of memory");
    memcpy(buf, ps->p, n);
    buf[n] = '\0';
    ps->p = close + 1;
    *out = buf;
    return true;
}

/* ---- values ---- */

/* A number-like or bare token: up to blanks, a comment or the line end. */
static bool toml_parse_scalar(struct toml_parser *ps, struct toml_value *v)
{
    const char *start = ps->p;
    while (ps->p < ps->end && *ps->p != ' ' && *ps->p != '\t' && *ps->p != '#')
        ps->p++;
    size_t n = (size_t)(ps->p - start);
    int q = toml_quote_len(start, n);

    if ((n == 4 && memcmp(start, "true", 4) == 0) || (n == 5 && memcmp(start, "false", 5) == 0)) {
        v->type = TOML_BOOLEAN;
        v->boolean = n == 4;
        return true;
    }
    /* Past an optional sign, a TOML number starts with a digit, "inf" or "nan". */
    const char *body = start + (n > 0 && (*start == '+' || *start == '-'));
    size_t nb = n - (size_t)(body - start);
    bool special_float = nb == 3 && (memcmp(body, "inf", 3) == 0 || memcmp(body, "nan", 3) == 0);
    if (nb == 0 || (!(*body >= '0' && *body <= '9') && !special_float))
        return toml_fail(ps, "invalid value \"%.*s\" (strings must be quoted)", q, start);
    if (nb >= 2 && body[0] == '0' && strchr("xob", body[1]) != NULL)
        return toml_fail(ps, "\"%.*s\": only decimal integers are supported", q, start);
    if (memchr(start, ':', n) != NULL || memchr(body, '-', nb) != NULL ||
        memchr(body, 'T', nb) != NULL)
        return toml_fail(ps, "\"%.*s\": dates and times are not supported", q, start);
    if (special_float || memchr(start, '.', n) != NULL || memchr(start, 'e', n) != NULL ||
        memchr(start, 'E', n) != NULL)
        return toml_fail(ps, "\"%.*s\": floats are not supported", q, start);

    v->type = TOML_INTEGER;
    switch (toml_int_parse(start, n, &v->integer)) {
    case TOML_INT_OK: return true;
    case TOML_INT_LEADING_ZERO:
        return toml_fail(ps, "\"%.*s\": leading zeros are not allowed", q, start);
    case TOML_INT_RANGE:
        return toml_fail(ps, "\"%.*s\": integer does not fit in 64 bits", q, start);
    case TOML_INT_SYNTAX: break;
    }
    return toml_fail(ps, "invalid integer \"%.*s\"", q, start);
}

static bool toml_parse_value(struct toml_parser *ps, struct toml_value *v)
{
    if (ps->p == ps->end || *ps->p == '#')
        return toml_fail(ps, "missing value after '='");
    size_t left = (size_t)(ps->end - ps->p);
    char c = *ps->p;
    if ((c == '"' || c == '\'') && left >= 3 && ps->p[1] == c && ps->p[2] == c)
        return toml_fail(ps, "multi-line strings are not supported");
    if (c == '"' || c == '\'') {
        v->type = TOML_STRING;
        return c == '"' ? toml_parse_basic_string(ps, &v->string)
                        : toml_parse_literal_string(ps, &v->string);
    }
    if (c == '[')
        return toml_fail(ps, "arrays are not supported");
    if (c == '{')
        return toml_fail(ps, "inline tables are not supported");
    return toml_parse_scalar(ps, v);
}

/* ---- lines ---- */

/* `array` (capacity *cap elements of `size` bytes) with room for element
 * `count`, doubling as needed; NULL when out of memory (`array` stays). */
static void *toml_grow(struct toml_parser *ps, void *array, size_t *cap, size_t count,
                       size_t size)
{
    if (count < *cap)
        return array;
    size_t grown_cap = *cap ? 2 * *cap : 8;
    void *grown = realloc(array, grown_cap * size);
    if (grown == NULL) {
        toml_fail(ps, "out of memory");
        return NULL;
    }
    *cap = grown_cap;
    return grown;
}

static bool toml_parse_header(struct toml_parser *ps)
{
    ps->p++;
    if (ps->p < ps->end && *ps->p == '[')
        return toml_fail(ps, "arrays of tables ([[...]]) are not supported");
    toml_skip_ws(ps);
    const char *name = ps->p;
    while (ps->p < ps->end && toml_is_bare_char(*ps->p))
        ps->p++;
    size_t n = (size_t)(ps->p - name);
    if (n == 0)
        return toml_fail(ps, ps->p < ps->end && (*ps->p == '"' || *ps->p == '\'')
                                 ? "quoted section names are not supported"
                                 : "expected a section name of letters, digits, '_' or '-'");
    toml_skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '.')
        return toml_fail(ps, "dotted section names are not supported");
    if (ps->p == ps->end || *ps->p != ']')
        return toml_fail(ps, "expected ']' after section name");
    ps->p++;
    if (!toml_expect_line_end(ps, "section header"))
        return false;

    struct toml_doc *doc = ps->doc;
    for (size_t i = 0; i < doc->n_sections; i++)
        if (strlen(doc->sections[i].name) == n && memcmp(doc->sections[i].name, name, n) == 0)
            return toml_fail(ps, "section [%.*s] is already defined at line %d", (int)n, name,
                             doc->sections[i].line);
    struct toml_section *sections =
        toml_grow(ps, doc->sections, &ps->sections_cap, doc->n_sections, sizeof *sections);
    if (sections == NULL)
        return false;
    doc->sections = sections;
    char *copy = strndup(name, n);
    if (copy == NULL)
        return toml_fail(ps, "out of memory");
    doc->sections[doc->n_sections++] = (struct toml_section){copy, ps->line};
    ps->section = copy;
    ps->section_first = ps->doc->count;
    return true;
}

static bool toml_append(struct toml_parser *ps, const char *key, size_t key_len,
                        struct toml_value *v)
{
    struct toml_doc *doc = ps->doc;
    struct toml_entry *entries =
        toml_grow(ps, doc->entries, &ps->doc_cap, doc->count, sizeof *entries);
    if (entries == NULL)
        return false;
    doc->entries = entries;
    struct toml_entry *e = &doc->entries[doc->count];
    e->section = strdup(ps->section);
    e->key = strndup(key, key_len);
    if (e->section == NULL || e->key == NULL) {
        free(e->section);
        free(e->key);
        return toml_fail(ps, "out of memory");
    }
    e->value = *v;
    e->line = ps->line;
    doc->count++;
    return true;
}

static bool toml_parse_key_value(struct toml_parser *ps)
{
    const char *key = ps->p;
    while (ps->p < ps->end && toml_is_bare_char(*ps->p))
        ps->p++;
    size_t n = (size_t)(ps->p - key);
    if (n == 0) {
        char c = *ps->p;
        if (c == '"' || c == '\'')
            return toml_fail(ps, "quoted keys are not supported");
        if (c == '=')
            return toml_fail(ps, "missing key before '='");
        size_t len = utf8_sequence_length((const uint8_t *)ps->p, (size_t)(ps->end - ps->p));
        return toml_fail(ps, "unexpected \"%.*s\": expected a key, a [section] or a comment",
                         (int)len, ps->p);
    }
    toml_skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '.')
        return toml_fail(ps, "dotted keys are not supported");
    if (ps->p == ps->end || *ps->p != '=')
        return toml_fail(ps, "expected '=' after key \"%.*s\"", toml_quote_len(key, n), key);
    ps->p++;
    toml_skip_ws(ps);

    for (size_t i = ps->section_first; i < ps->doc->count; i++) {
        const struct toml_entry *e = &ps->doc->entries[i];
        if (strlen(e->key) == n && memcmp(e->key, key, n) == 0)
            return toml_fail(ps, "duplicate key \"%s\" (first set at line %d)", e->key, e->line);
    }
    struct toml_value v = {0};
    if (!toml_parse_value(ps, &v))
        return false;
    if (!toml_expect_line_end(ps, "value") || !toml_append(ps, key, n, &v)) {
        if (v.type == TOML_STRING)
            free(v.string);
        return false;
    }
    return true;
}

static bool toml_parse_line(struct toml_parser *ps)
{
    if (!toml_check_line(ps))
        return false;
    toml_skip_ws(ps);
    if (ps->p == ps->end || *ps->p == '#')
        return true;
    if (*ps->p == '[')
        return toml_parse_header(ps);
    return toml_parse_key_value(ps);
}

void toml_doc_free(struct toml_doc *doc)
{
    if (doc == NULL)
        return;
    for (size_t i = 0; i < doc->count; i++) {
        free(doc->entries[i].section);
        free(doc->entries[i].key);
        if (doc->entries[i].value.type == TOML_STRING)
            free(doc->entries[i].value.string);
    }
    for (size_t i = 0; i < doc->n_sections; i++)
        free(doc->sections[i].name);
    free(doc->entries);
    free(doc->sections);
    *doc = (struct toml_doc){0};
}

bool toml_parse(const char *text, size_t len, struct toml_doc *doc, struct toml_error *err)
{
    *doc = (struct toml_doc){0};
    struct toml_parser ps = {.doc = doc, .err = err, .section = ""};
    const char *p = text, *end = text + len;
    /* A UTF-8 byte order mark is harmless; editors on some systems add one. */
    if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3;
    bool ok = true;
    while (ok && p < end) {
        ps.line++;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = nl ? nl : end;
        ps.p = p;
        /* TOML newlines are LF or CRLF; a lone CR fails the line check. */
        ps.end = nl && line_end > p && line_end[-1] == '\r' ? line_end - 1 : line_end;
        ok = toml_parse_line(&ps);
        p = nl ? nl + 1 : end;
    }
    if (!ok)
        toml_doc_free(doc);
    return ok;
}

bool toml_parse_file(const char *path, struct toml_doc *doc, struct toml_error *err)
{
    *doc = (struct toml_doc){0};
    struct toml_parser ps = {.err = err};
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return toml_fail(&ps, "cannot open: %s", strerror(errno));
    char *buf = malloc(TOML_MAX_FILE_BYTES + 1);
    if (buf == NULL) {
        fclose(f);
        return toml_fail(&ps, "out of memory");
    }
    size_t n = fread(buf, 1, TOML_MAX_FILE_BYTES + 1, f);
    bool ok = false;
    if (ferror(f))
        toml_fail(&ps, "cannot read: %s", strerror(errno));
    else if (n > TOML_MAX_FILE_BYTES)
        toml_fail(&ps, "file is larger than %u bytes", TOML_MAX_FILE_BYTES);
    else
        ok = toml_parse(buf, n, doc, err);
    fclose(f);
    free(buf);
    return ok;
}
