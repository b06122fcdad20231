/* The framing rules of server/http_framing.c without a server: every
 * request-smuggling form of issue 18 is refused with its status and
 * reason, and the forms clients really send pass. The line syntax has
 * its own test (test_http_parse.c); the HTTP tests
 * (tests/http/test_hostile.py) send the same forms over a socket to a
 * real server. */
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

int main(void)
{
    test_what_clients_send();
    test_smuggling_forms();
    test_content_length_values();
    test_transfer_codings();
    test_host();
    return check_exit();
}
