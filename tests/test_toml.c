/* The strict TOML reader: every accepted form, every rejected one with its
 * line number, integer edge cases, files, and a mutation smoke test that
 * runs the parser over thousands of damaged copies of a document (run it
 * under ASan/UBSan: -DBERT_SANITIZE=ON). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "toml.h"

static bool parse(const char *text, struct toml_doc *doc, struct toml_error *err)
{
    return toml_parse(text, strlen(text), doc, err);
}

static const struct toml_entry *find(const struct toml_doc *doc, const char *section,
                                     const char *key)
{
    for (size_t i = 0; i < doc->count; i++)
        if (strcmp(doc->entries[i].section, section) == 0 && strcmp(doc->entries[i].key, key) == 0)
            return &doc->entries[i];
    return NULL;
}

static void check_string(const struct toml_doc *doc, const char *section, const char *key,
                         const char *want, int line)
{
    const struct toml_entry *e = find(doc, section, key);
    CHECK(e != NULL);
    if (e == NULL)
        return;
    CHECK_INT_EQ(e->value.type, TOML_STRING);
    if (e->value.type == TOML_STRING)
        CHECK_STR_EQ(e->value.string, want);
    CHECK_INT_EQ(e->line, line);
}

static void check_integer(const struct toml_doc *doc, const char *section, const char *key,
                          int64_t want)
{
    const struct toml_entry *e = find(doc, section, key);
    CHECK(e != NULL);
    if (e == NULL)
        return;
    CHECK_INT_EQ(e->value.type, TOML_INTEGER);
    if (e->value.type == TOML_INTEGER)
        CHECK(e->value.integer == want);
}

static void check_boolean(const struct toml_doc *doc, const char *section, const char *key,
                          bool want)
{
    const struct toml_entry *e = find(doc, section, key);
    CHECK(e != NULL);
    if (e == NULL)
        return;
    CHECK_INT_EQ(e->value.type, TOML_BOOLEAN);
    if (e->value.type == TOML_BOOLEAN)
        CHECK_INT_EQ(e->value.boolean, want);
}

static void test_accepted_forms(void)
{
    const char *text =
        "\xEF\xBB\xBF# leading comment, after a byte order mark\n"          /* 1 */
        "top = 1\n"                                                        /* 2 */
        "\n"                                                               /* 3 */
        "  [server]   # trailing comment on a header\n"                    /* 4 */
        "host = \"0.0.0.0\"\n"                                             /* 5 */
        "\tport=8080\t# tab-indented, no spaces around =\n"                /* 6 */
        "empty = \"\"\n"                                                   /* 7 */
        "escapes = \"q\\\" b\\\\ n\\n t\\t r\\r f\\f b\\b\"\n"             /* 8 */
        "unicode = \"\\u00e9\\u4E2D\\U0001F600\"\n"                        /* 9 */
        "raw = 'C:\\path\\n # not a comment'\n"                            /* 10 */
        "hash = \"a # b\" # real comment\n"                                /* 11 */
        "utf8 = \"caf\xC3\xA9 \xE2\x82\xAC\"\n"                            /* 12 */
        "\r\n"                                                             /* 13 */
        "[ model ]\r\n"                                                    /* 14 */
        "big = 9_223_372_036_854_775_807\r\n"                              /* 15 */
        "small = -9223372036854775808\n"                                   /* 16 */
        "plus = +42\n"                                                     /* 17 */
        "zero = 0\n"                                                       /* 18 */
        "neg_zero = -0\n"                                                  /* 19 */
        "sep = 1_000\n"                                                    /* 20 */
        "yes = true\n"                                                     /* 21 */
        "no = false# comment right after\n"                                /* 22 */
        "dash-key_9 = 'x'\n"                                               /* 23 */
        "[other-section_2]\n"                                              /* 24 */
        "port = 1";                                                        /* 25, no newline */
    struct toml_doc doc;
    struct toml_error err = {0};
    bool ok = parse(text, &doc, &err);
    CHECK(ok);
    if (!ok) {
        fprintf(stderr, "line %d: %s\n", err.line, err.message);
        return;
    }
    CHECK_INT_EQ(doc.count, 19);
    CHECK_INT_EQ(doc.n_sections, 3);
    CHECK_STR_EQ(doc.sections[0].name, "server");
    CHECK_INT_EQ(doc.sections[0].line, 4);
    CHECK_STR_EQ(doc.sections[2].name, "other-section_2");
    CHECK_INT_EQ(doc.sections[2].line, 24);

    check_integer(&doc, "", "top", 1);
    CHECK_INT_EQ(find(&doc, "", "top")->line, 2);
    check_string(&doc, "server", "host", "0.0.0.0", 5);
    check_integer(&doc, "server", "port", 8080);
    CHECK_INT_EQ(find(&doc, "server", "port")->line, 6);
    check_string(&doc, "server", "empty", "", 7);
    check_string(&doc, "server", "escapes", "q\" b\\ n\n t\t r\r f\f b\b", 8);
    check_string(&doc, "server", "unicode", "\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80", 9);
    check_string(&doc, "server", "raw", "C:\\path\\n # not a comment", 10);
    check_string(&doc, "server", "hash", "a # b", 11);
    check_string(&doc, "server", "utf8", "caf\xC3\xA9 \xE2\x82\xAC", 12);
    check_integer(&doc, "model", "big", INT64_MAX);
    CHECK_INT_EQ(find(&doc, "model", "big")->line, 15);
    check_integer(&doc, "model", "small", INT64_MIN);
    check_integer(&doc, "model", "plus", 42);
    check_integer(&doc, "model", "zero", 0);
    check_integer(&doc, "model", "neg_zero", 0);
    check_integer(&doc, "model", "sep", 1000);
    check_boolean(&doc, "model", "yes", true);
    check_boolean(&doc, "model", "no", false);
    check_string(&doc, "model", "dash-key_9", "x", 23);
    check_integer(&doc, "other-section_2", "port", 1);
    CHECK_INT_EQ(find(&doc, "other-section_2", "port")->line, 25);
    toml_doc_free(&doc);
    CHECK(doc.entries == NULL && doc.count == 0 && doc.sections == NULL);
    toml_doc_free(&doc); /* twice is fine */
    toml_doc_free(NULL);

    /* Empty and comment-only documents are valid and empty. */
    const char *empties[] = {"", "\n\n", "# only\n   # comments\n", "\xEF\xBB\xBF"};
    for (size_t i = 0; i < sizeof empties / sizeof empties[0]; i++) {
        CHECK(parse(empties[i], &doc, &err));
        CHECK_INT_EQ(doc.count, 0);
        toml_doc_free(&doc);
    }
}

struct bad_case {
    const char *text;
    int line;
    const char *message;
};

static const struct bad_case bad_cases[] = {
    /* structure */
    {"a = 1\n[s]\nb = 2\n[s]\n", 4, "section [s] is already defined at line 2"},
    {"[s]\nport = 1\nport = 2\n", 3, "duplicate key \"port\" (first set at line 2)"},
    {"[[s]]\n", 1, "arrays of tables ([[...]]) are not supported"},
    {"[\"s\"]\n", 1, "quoted section names are not supported"},
    {"[]\n", 1, "expected a section name"},
    {"[a.b]\n", 1, "dotted section names are not supported"},
    {"[s\n", 1, "expected ']' after section name"},
    {"[s] x = 1\n", 1, "unexpected \"x = 1\" after section header"},
    {"\n\"key\" = 1\n", 2, "quoted keys are not supported"},
    {"'key' = 1\n", 1, "quoted keys are not supported"},
    {"a.b = 1\n", 1, "dotted keys are not supported"},
    {"= 1\n", 1, "missing key before '='"},
    {"key\n", 1, "expected '=' after key \"key\""},
    {"key 1\n", 1, "expected '=' after key \"key\""},
    {"k\xC3\xA9y = 1\n", 1, "expected '=' after key \"k\""},
    {"\xC3\xA9 = 1\n", 1, "unexpected \"\xC3\xA9\": expected a key, a [section] or a comment"},
    {"key =\n", 1, "missing value after '='"},
    {"key = # nothing\n", 1, "missing value after '='"},
    {"key = 1 2\n", 1, "unexpected \"2\" after value"},
    {"key = \"a\" \"b\"\n", 1, "unexpected \"\"b\"\" after value"},
    /* value types we do not take */
    {"key = [1, 2]\n", 1, "arrays are not supported"},
    {"key = {a = 1}\n", 1, "inline tables are not supported"},
    {"key = \"\"\"multi\"\"\"\n", 1, "multi-line strings are not supported"},
    {"key = '''multi'''\n", 1, "multi-line strings are not supported"},
    {"key = 1.5\n", 1, "\"1.5\": floats are not supported"},
    {"key = 1e3\n", 1, "\"1e3\": floats are not supported"},
    {"key = -inf\n", 1, "\"-inf\": floats are not supported"},
    {"key = nan\n", 1, "\"nan\": floats are not supported"},
    {"key = 0x1F\n", 1, "\"0x1F\": only decimal integers are supported"},
    {"key = 0o17\n", 1, "only decimal integers are supported"},
    {"key = 0b101\n", 1, "only decimal integers are supported"},
    {"key = 1979-05-27\n", 1, "\"1979-05-27\": dates and times are not supported"},
    {"key = 07:32:00\n", 1, "dates and times are not supported"},
    {"key = bare\n", 1, "invalid value \"bare\" (strings must be quoted)"},
    {"key = True\n", 1, "invalid value \"True\" (strings must be quoted)"},
    {"key = truex\n", 1, "invalid value \"truex\""},
    /* integers */
    {"key = 0123\n", 1, "\"0123\": leading zeros are not allowed"},
    {"key = -01\n", 1, "leading zeros are not allowed"},
    {"key = 0_1\n", 1, "leading zeros are not allowed"},
    {"key = 1__0\n", 1, "invalid integer \"1__0\""},
    {"key = 1_\n", 1, "invalid integer \"1_\""},
    {"key = _1\n", 1, "invalid value \"_1\""},
    {"key = +\n", 1, "invalid value \"+\""},
    {"key = 12a\n", 1, "invalid integer \"12a\""},
    {"key = 9223372036854775808\n", 1, "integer does not fit in 64 bits"},
    {"key = -9223372036854775809\n", 1, "integer does not fit in 64 bits"},
    /* strings */
    {"key = \"open\n", 1, "unterminated string (missing closing '\"')"},
    {"key = \"ends in backslash\\\n", 1, "unterminated string"},
    {"key = 'open\n", 1, "unterminated string (missing closing \"'\")"},
    {"key = \"\\q\"\n", 1, "invalid escape \\q (use \\\\ for a backslash)"},
    {"key = \"\\x41\"\n", 1, "invalid escape \\x"},
    {"key = \"\\e\"\n", 1, "invalid escape \\e"},
    {"key = \"\\u12\"\n", 1, "\\u escape needs 4 hex digits"},
    {"key = \"\\u12G4\"\n", 1, "\\u escape needs 4 hex digits"},
    {"key = \"\\U0001F60\"\n", 1, "\\U escape needs 8 hex digits"},
    {"key = \"\\uD800\"\n", 1, "\\uD800 is not a Unicode scalar value"},
    {"key = \"\\U00110000\"\n", 1, "\\U00110000 is not a Unicode scalar value"},
    {"key = \"\\UFFFFFFFF\"\n", 1, "\\UFFFFFFFF is not a Unicode scalar value"},
    {"key = \"\\u0000\"\n", 1, "\\u0000 (NUL) is not allowed in a string"},
    /* bytes TOML forbids */
    {"a = 1\nkey = \"x\x01y\"\n", 2, "control character U+0001 is not allowed"},
    {"# comment with a \x7F\n", 1, "control character U+007F is not allowed"},
    {"key = 1\rother = 2\n", 1, "control character U+000D is not allowed"},
    {"key = 1\r", 1, "control character U+000D is not allowed"},
    {"\n\nkey = \"\xC3\x28\"\n", 3, "invalid UTF-8 at column 8"},
    {"key = \"\xC0\xAF\"\n", 1, "invalid UTF-8"},          /* overlong '/' */
    {"key = \"\xED\xA0\x80\"\n", 1, "invalid UTF-8"},      /* surrogate */
    {"key = \"\xF4\x90\x80\x80\"\n", 1, "invalid UTF-8"},  /* above U+10FFFF */
    {"key = \"\xE2\x82\"\n", 1, "invalid UTF-8"},          /* truncated */
};

static void test_rejected_forms(void)
{
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const struct bad_case *c = &bad_cases[i];
        struct toml_doc doc;
        struct toml_error err = {0};
        bool ok = parse(c->text, &doc, &err);
        CHECK(!ok);
        if (ok) {
            fprintf(stderr, "  accepted: %s\n", c->text);
            toml_doc_free(&doc);
            continue;
        }
        CHECK_INT_EQ(err.line, c->line);
        CHECK_CONTAINS(err.message, c->message);
        CHECK(strchr(err.message, '\n') == NULL);
        CHECK(doc.count == 0 && doc.entries == NULL && doc.sections == NULL);
    }
    /* A NUL byte inside the text (toml_parse takes a length). */
    struct toml_doc doc;
    struct toml_error err = {0};
    CHECK(!toml_parse("a = 1\nb = \"x\0y\"\n", 16, &doc, &err));
    CHECK_INT_EQ(err.line, 2);
    CHECK_CONTAINS(err.message, "control character U+0000");
    /* A NULL error pointer is allowed. */
    CHECK(!parse("key = \n", &doc, NULL));
}

static void test_integers(void)
{
    struct {
        const char *text;
        bool ok;
        int64_t value;
    } cases[] = {
        {"0", true, 0},
        {"-0", true, 0},
        {"+7", true, 7},
        {"1_2_3", true, 123},
        {"65535", true, 65535},
        {"9223372036854775807", true, INT64_MAX},
        {"-9223372036854775808", true, INT64_MIN},
        {"9223372036854775808", false, 0},
        {"99999999999999999999999", false, 0},
        {"", false, 0},
        {"-", false, 0},
        {" 1", false, 0},
        {"1 ", false, 0},
        {"01", false, 0},
        {"1_", false, 0},
        {"1__2", false, 0},
        {"0x10", false, 0},
        {"1.0", false, 0},
        {"tcp://10.0.0.1:8080", false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t v = -12345;
        bool ok = toml_parse_integer(cases[i].text, strlen(cases[i].text), &v);
        CHECK_INT_EQ(ok, cases[i].ok);
        if (ok && cases[i].ok)
            CHECK(v == cases[i].value);
        if (!ok)
            CHECK(v == -12345); /* untouched on failure */
    }
    /* UTF-8 validation, shared with the config layer's env and flags. */
    CHECK(toml_utf8_valid("", 0));
    CHECK(toml_utf8_valid("caf\xC3\xA9 \xF0\x9F\x98\x80", 10));
    CHECK(!toml_utf8_valid("\xC3", 1));
    CHECK(!toml_utf8_valid("\xC3\x28", 2));
    CHECK(!toml_utf8_valid("\xE0\x80\xAF", 3)); /* overlong */
    CHECK(!toml_utf8_valid("\xED\xB0\x80", 3)); /* surrogate */
    CHECK(!toml_utf8_valid("\xFF", 1));
    /* The length bounds the text: "12" of "123". */
    int64_t v = 0;
    CHECK(toml_parse_integer("123", 2, &v));
    CHECK_INT_EQ(v, 12);
    CHECK_STR_EQ(toml_type_name(TOML_INTEGER), "integer");
    CHECK_STR_EQ(toml_type_name(TOML_STRING), "string");
    CHECK_STR_EQ(toml_type_name(TOML_BOOLEAN), "boolean");
}

static void test_files(void)
{
    struct toml_doc doc;
    struct toml_error err = {0};
    CHECK(!toml_parse_file("/nonexistent/bertserve.toml", &doc, &err));
    CHECK_INT_EQ(err.line, 0);
    CHECK_CONTAINS(err.message, "cannot open: No such file or directory");

    CHECK(!toml_parse_file("/", &doc, &err));
    CHECK_INT_EQ(err.line, 0);
    CHECK_CONTAINS(err.message, "Is a directory");

    char path[] = "/tmp/test_toml_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    FILE *f = fdopen(fd, "w");
    fputs("[s]\nk = 'v'\nbad line\n", f);
    fclose(f);
    CHECK(!toml_parse_file(path, &doc, &err));
    CHECK_INT_EQ(err.line, 3);
    CHECK_CONTAINS(err.message, "expected '=' after key \"bad\"");

    /* Just over the 1 MiB cap: refused before parsing. */
    f = fopen(path, "w");
    for (int i = 0; i < (1 << 20) / 8 + 1; i++)
        fputs("#comment", f);
    fclose(f);
    CHECK(!toml_parse_file(path, &doc, &err));
    CHECK_CONTAINS(err.message, "file is larger than 1048576 bytes");

    f = fopen(path, "w");
    fputs("[s]\nk = 'v'\n", f);
    fclose(f);
    CHECK(toml_parse_file(path, &doc, &err));
    CHECK_INT_EQ(doc.count, 1);
    toml_doc_free(&doc);
    unlink(path);
}

/* Damage a document many ways (flip, insert, delete bytes from a set that
 * matters to the grammar) and parse each copy: it must never crash, and a
 * failure must name a line that exists, in one line of text. */
static void test_mutation_smoke(const char *seed_path)
{
    static char seed[1 << 16];
    FILE *f = fopen(seed_path, "rb");
    CHECK(f != NULL);
    if (f == NULL)
        return;
    size_t n = fread(seed, 1, sizeof seed - 1, f);
    fclose(f);
    CHECK(n > 100);
    static const char alphabet[] = "\"'\\[]=#._-+0123456789 \t\n\r\x01\x7F\xC3\xA9\xFFuUxetf{}:";
    static char buf[(1 << 16) + 64];
    uint64_t state = 0x9E3779B97F4A7C15u;
    int accepted = 0, rejected = 0;
    for (int iter = 0; iter < 20000; iter++) {
        memcpy(buf, seed, n);
        size_t len = n;
        int edits = 1 + (int)(iter % 4);
        for (int e = 0; e < edits; e++) {
            state = state * 6364136223846793005u + 1442695040888963407u;
            size_t pos = (size_t)(state >> 33) % len;
            char c = alphabet[(state >> 13) % (sizeof alphabet - 1)];
            switch ((state >> 7) % 3) {
            case 0: buf[pos] = c; break;
            case 1:
                memmove(buf + pos + 1, buf + pos, len - pos);
                buf[pos] = c;
                len++;
                break;
            default:
                memmove(buf + pos, buf + pos + 1, len - pos - 1);
                len--;
                break;
            }
        }
        int lines = 1;
        for (size_t i = 0; i < len; i++)
            lines += buf[i] == '\n';
        struct toml_doc doc;
        struct toml_error err = {0};
        if (toml_parse(buf, len, &doc, &err)) {
            accepted++;
            for (size_t i = 0; i < doc.count; i++)
                if (doc.entries[i].value.type == TOML_STRING)
                    CHECK(strlen(doc.entries[i].value.string) <= len);
            toml_doc_free(&doc);
        } else {
            rejected++;
            if (err.line < 1 || err.line > lines || err.message[0] == '\0' ||
                strchr(err.message, '\n') != NULL) {
                CHECK(err.line >= 1 && err.line <= lines);
                CHECK(err.message[0] != '\0' && strchr(err.message, '\n') == NULL);
            }
        }
    }
    fprintf(stderr, "mutation smoke: %d accepted, %d rejected\n", accepted, rejected);
    CHECK(accepted > 100);
    CHECK(rejected > 100);
}

int main(int argc, char **argv)
{
    test_accepted_forms();
    test_rejected_forms();
    test_integers();
    test_files();
    test_mutation_smoke(argc > 1 ? argv[1] : "config.example.toml");
    return check_exit();
}
