/* The framing rules of server/http_framing.c without a server: every
 * request-smuggling form of issue 18 is refused with its status and
 * reason, the forms clients really send pass, and the NUL walk over a
 * head laid out as libmicrohttpd 0.9.x keeps it finds hidden bytes. The
 * HTTP tests (tests/http/test_hostile.py) send the same forms over a
 * socket to a real server. */
#include <string.h>

#include "check.h"
#include "http_framing.h"

struct header {
    const char *name, *value;
};

static enum http_framing_verdict check_headers(const char *version, const struct header *h,
                                               char *reason, size_t reason_len)
{
    struct http_framing f;
    http_framing_begin(&f, version);
    for (; h->name != NULL; h++)
        http_framing_header(&f, h->name, strlen(h->name), h->value, strlen(h->value));
    enum http_framing_verdict v = http_framing_end(&f);
    snprintf(reason, reason_len, "%s", f.reason);
    return v;
}

#define EXPECT(version, verdict_, text, ...)                                            \
    do {                                                                                \
        const struct header hs_[] = {__VA_ARGS__, {NULL, NULL}};                        \
        char why_[256];                                                                 \
        CHECK_INT_EQ(check_headers(version, hs_, why_, sizeof why_), verdict_);         \
        CHECK_CONTAINS(why_, text);                                                     \
    } while (0)

#define OK HTTP_FRAMING_OK
#define BAD HTTP_FRAMING_BAD_REQUEST
#define NOT_IMPL HTTP_FRAMING_NOT_IMPLEMENTED

static void test_what_clients_send(void)
{
    EXPECT("HTTP/1.1", OK, "", {"Host", "x"});
    EXPECT("HTTP/1.1", OK, "", {"host", "x"}, {"content-length", "15"});
    EXPECT("HTTP/1.1", OK, "", {"Host", ""}, {"Transfer-Encoding", "chunked"});
    EXPECT("HTTP/1.1", OK, "", {"Host", "x"}, {"Transfer-Encoding", " Chunked "});
    EXPECT("HTTP/1.1", OK, "", {"Host", "x"}, {"Content-Length", "0"});
    EXPECT("HTTP/1.1", OK, "", {"Host", "x"}, {"Content-Length", "9999999999999999999"});
    EXPECT("HTTP/1.1", OK, "", {"Host", "x"}, {"X-Odd_Name!#$%&'*+.^`|~", "v"});
    EXPECT("HTTP/1.0", OK, "", {"Content-Length", "3"});
    EXPECT("HTTP/1.0", OK, "", {"User-Agent", "x"});
}

static void test_smuggling_forms(void)
{
    EXPECT("HTTP/1.1", BAD, "both Transfer-Encoding and Content-Length", {"Host", "x"},
           {"Transfer-Encoding", "chunked"}, {"Content-Length", "5"});
    EXPECT("HTTP/1.1", BAD, "both Transfer-Encoding and Content-Length", {"Host", "x"},
           {"Content-Length", "5"}, {"Transfer-Encoding", "chunked"});
    EXPECT("HTTP/1.1", BAD, "2 Content-Length headers", {"Host", "x"}, {"Content-Length", "15"},
           {"Content-Length", "0"});
    EXPECT("HTTP/1.1", BAD, "2 Content-Length headers", {"Host", "x"}, {"Content-Length", "5"},
           {"Content-Length", "5"});
    EXPECT("HTTP/1.1", BAD, "header name \"Content-Length \" is not a token", {"Host", "x"},
           {"Content-Length ", "15"});
    EXPECT("HTTP/1.1", BAD, "header name \"Transfer-Encoding\t\" is not a token", {"Host", "x"},
           {"Transfer-Encoding\t", "chunked"});
    EXPECT("HTTP/1.1", BAD, "is not a token", {"Host", "x"}, {"X (y)", "1"});
    EXPECT("HTTP/1.1", BAD, "an empty name", {"Host", "x"}, {"", "1"});
    EXPECT("HTTP/1.1", BAD, "2 Transfer-Encoding headers", {"Host", "x"},
           {"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"});
    EXPECT("HTTP/1.1", BAD, "names chunked twice", {"Host", "x"},
           {"Transfer-Encoding", "chunked, chunked"});
    EXPECT("HTTP/1.1", BAD, "must end with chunked", {"Host", "x"}, {"Transfer-Encoding", ""});
    EXPECT("HTTP/1.0", BAD, "Transfer-Encoding needs HTTP/1.1", {"Transfer-Encoding", "chunked"});
}

static void test_content_length_values(void)
{
    const char *bad[] = {"-5", "abc", "25, 25", "18446744073709551616", "+5", " 5", "5 ", "",
                         "0x10", "1e3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        EXPECT("HTTP/1.1", BAD, "Content-Length must be a decimal number", {"Host", "x"},
               {"Content-Length", bad[i]});
    }
}

static void test_transfer_codings(void)
{
    EXPECT("HTTP/1.1", NOT_IMPL, "Transfer-Encoding \"gzip\" is not supported", {"Host", "x"},
           {"Transfer-Encoding", "gzip"});
    EXPECT("HTTP/1.1", NOT_IMPL, "is not supported", {"Host", "x"},
           {"Transfer-Encoding", "gzip, chunked"});
    EXPECT("HTTP/1.1", NOT_IMPL, "is not supported", {"Host", "x"},
           {"Transfer-Encoding", "chunked, identity"});
}

static void test_host(void)
{
    EXPECT("HTTP/1.1", BAD, "exactly one Host header, this one has 0", {"Accept", "*/*"});
    EXPECT("HTTP/1.1", BAD, "exactly one Host header, this one has 2", {"Host", "a"},
           {"Host", "b"});
    EXPECT("HTTP/1.0", BAD, "this one has 2", {"Host", "a"}, {"Host", "b"});
}

/* A head as libmicrohttpd 0.9.x keeps it: CR LF, the spaces around the
 * target and each colon overwritten by NULs; the strings it hands out
 * point into it. */
static const char clean_head[] = "POST\0/embed?x=1\0HTTP/1.1\0\0Host\0 x\0\0"
                                 "Content-Length\0 \t15\0\0\0\0";

static bool walk(const char *head, size_t len, const char *const *strings, size_t n)
{
    struct http_head_walk w;
    http_head_walk_begin(&w, head, len);
    for (size_t i = 0; i < n; i++)
        http_head_walk_span(&w, strings[i], strlen(strings[i]));
    return http_head_walk_end(&w);
}

static void test_head_walk(void)
{
    const char *h = clean_head;
    size_t len = sizeof clean_head - 1;
    const char *strings[] = {h, h + 5, h + 16, h + 26, h + 32, h + 35, h + 52};
    CHECK_STR_EQ(strings[2], "HTTP/1.1");
    CHECK_STR_EQ(strings[5], "Content-Length");
    CHECK_STR_EQ(strings[6], "15");
    CHECK(walk(h, len, strings, 7));
    /* Out of order, or a string outside the head (a folded line's copy). */
    const char *swapped[] = {h, h + 5, h + 16, h + 32, h + 26, h + 35, h + 52};
    CHECK(!walk(h, len, swapped, 7));
    const char *elsewhere[] = {h, h + 5, h + 16, "Host", h + 32, h + 35, h + 52};
    CHECK(!walk(h, len, elsewhere, 7));

    /* "Bearer KEY\0junk": libmicrohttpd hands out "Bearer KEY". */
    static const char key_head[] = "GET\0/info\0HTTP/1.1\0\0Authorization\0 Bearer KEY\0junk\0\0"
                                   "Host\0 x\0\0\0\0";
    const char *k = key_head;
    const char *key_strings[] = {k, k + 4, k + 10, k + 20, k + 35, k + 52, k + 58};
    CHECK_STR_EQ(key_strings[4], "Bearer KEY");
    CHECK_STR_EQ(key_strings[5], "Host");
    CHECK(!walk(k, sizeof key_head - 1, key_strings, 7));

    /* "/health\0/../x": the target handed out is "/health". */
    static const char path_head[] = "GET\0/health\0/../x\0HTTP/1.1\0\0Host\0 x\0\0\0\0";
    const char *p = path_head;
    const char *path_strings[] = {p, p + 4, p + 18, p + 28, p + 34};
    CHECK_STR_EQ(path_strings[2], "HTTP/1.1");
    CHECK(!walk(p, sizeof path_head - 1, path_strings, 5));

    /* Bytes after the last header, before the blank line. */
    static const char tail_head[] = "GET\0/\0HTTP/1.1\0\0Host\0 x\0junk\0\0\0\0";
    const char *t = tail_head;
    const char *tail_strings[] = {t, t + 4, t + 6, t + 16, t + 22};
    CHECK(!walk(t, sizeof tail_head - 1, tail_strings, 5));
}

int main(void)
{
    test_what_clients_send();
    test_smuggling_forms();
    test_content_length_values();
    test_transfer_codings();
    test_host();
    test_head_walk();
    return check_exit();
}
