/* The request parser of server/http_parse.c without a server: the heads
 * curl, python-requests, Node's fetch and ab send parse with the right
 * spans; every malformed form (bare CR or LF, folding, whitespace before a
 * colon, control bytes, oversize parts, other HTTP versions) is refused with
 * its status and a printable reason; http_head_end resumes on a growing
 * buffer; target paths decode; and the chunked decoder gives the same data
 * and the same consumed count whether fed all at once or in small pieces. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "http_parse.h"

/* A string literal and its length, NULs included. */
#define LIT(s) s, sizeof(s) - 1

#define CHECK_SPAN(span, want)                                                          \
    do {                                                                                \
        char span_[256];                                                                \
        snprintf(span_, sizeof span_, "%.*s", (int)(span).len, (span).p);               \
        CHECK_STR_EQ(span_, want);                                                      \
    } while (0)

static bool is_printable(const char *s)
{
    for (; *s != '\0'; s++)
        if (*s < 0x20 || *s > 0x7e)
            return false;
    return true;
}

static bool span_inside(struct http_span s, const char *buf, size_t len)
{
    return s.p >= buf && s.len <= len && (size_t)(s.p - buf) <= len - s.len;
}

/* Measure then parse `text`: 0 when it parses, else the status, with the
 * reason in `err`. The whole text must be one head. */
static int parse(struct http_head *h, const char *text, size_t len,
                 struct http_parse_error *err)
{
    memset(err, 0, sizeof *err);
    size_t scanned = 0;
    long end = http_head_end(text, len, &scanned, err);
    if (end < 0)
        return err->status;
    CHECK_INT_EQ(end, len);
    if (!http_head_parse(h, text, (size_t)end, err))
        return err->status;
    CHECK(span_inside(h->method, text, len));
    CHECK(span_inside(h->target, text, len));
    for (size_t i = 0; i < h->n_headers; i++) {
        CHECK(span_inside(h->names[i], text, len));
        CHECK(span_inside(h->values[i], text, len));
    }
    return 0;
}

static struct http_head head;

#define EXPECT_REFUSED(text, status_, reason_)                                          \
    do {                                                                                \
        struct http_parse_error err_;                                                   \
        CHECK_INT_EQ(parse(&head, LIT(text), &err_), status_);                          \
        CHECK_CONTAINS(err_.reason, reason_);                                           \
        CHECK(is_printable(err_.reason));                                               \
    } while (0)

static void test_curl(void)
{
    static const char text[] = "POST /embed?pretty=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                               "User-Agent: curl/7.88.1\r\nAccept: */*\r\n"
                               "Content-Type: application/json\r\nContent-Length: 17\r\n\r\n";
    struct http_parse_error err;
    CHECK_INT_EQ(parse(&head, LIT(text), &err), 0);
    CHECK_SPAN(head.method, "POST");
    CHECK(head.method.p == text);
    CHECK_SPAN(head.target, "/embed?pretty=1");
    CHECK(head.target.p == text + 5);
    CHECK_INT_EQ(head.minor, 1);
    CHECK_INT_EQ(head.n_headers, 5);
    CHECK_SPAN(head.names[0], "Host");
    CHECK_SPAN(head.values[0], "127.0.0.1:8080");
    CHECK_SPAN(head.names[4], "Content-Length");
    CHECK_SPAN(head.values[4], "17");
    CHECK(head.values[4].p == strstr(text, "17\r\n"));
}

static void test_python_requests(void)
{
    static const char text[] = "POST /v1/embeddings HTTP/1.1\r\nHost: localhost:8080\r\n"
                               "User-Agent: python-requests/2.31.0\r\n"
                               "Accept-Encoding: gzip, deflate\r\nAccept: */*\r\n"
                               "Connection: keep-alive\r\nContent-Length: 27\r\n"
                               "Content-Type: application/json\r\n\r\n";
    struct http_parse_error err;
    CHECK_INT_EQ(parse(&head, LIT(text), &err), 0);
    CHECK_SPAN(head.target, "/v1/embeddings");
    CHECK_INT_EQ(head.n_headers, 7);
    CHECK_SPAN(head.names[2], "Accept-Encoding");
    CHECK_SPAN(head.values[2], "gzip, deflate");
    const struct http_span *v = http_head_find(&head, "content-type");
    CHECK(v != NULL && v == &head.values[6]);
    v = http_head_find(&head, "CONNECTION");
    CHECK(v != NULL);
    if (v != NULL)
        CHECK_SPAN(*v, "keep-alive");
    CHECK(http_head_find(&head, "Transfer-Encoding") == NULL);
    CHECK(http_head_find(&head, "Content") == NULL);
    CHECK(http_head_find(&head, "Content-Lengths") == NULL);
}

/* undici, behind Node's fetch, sends lower-case names and a stream body
 * chunked. */
static void test_node_fetch(void)
{
    static const char text[] = "POST /embed HTTP/1.1\r\nhost: localhost:8080\r\n"
                               "connection: keep-alive\r\ncontent-type: application/json\r\n"
                               "accept: */*\r\naccept-language: *\r\nsec-fetch-mode: cors\r\n"
                               "user-agent: node\r\naccept-encoding: gzip, deflate\r\n"
                               "transfer-encoding: chunked\r\n\r\n";
    struct http_parse_error err;
    CHECK_INT_EQ(parse(&head, LIT(text), &err), 0);
    CHECK_INT_EQ(head.n_headers, 9);
    const struct http_span *v = http_head_find(&head, "Transfer-Encoding");
    CHECK(v == &head.values[8]);
    if (v != NULL)
        CHECK_SPAN(*v, "chunked");
    v = http_head_find(&head, "Host");
    CHECK(v == &head.values[0]);
}

static void test_versions_and_values(void)
{
    struct http_parse_error err;
    CHECK_INT_EQ(parse(&head, LIT("GET / HTTP/1.0\r\nUser-Agent: ApacheBench/2.3\r\n\r\n"), &err),
                 0);
    CHECK_INT_EQ(head.minor, 0);
    CHECK_SPAN(head.target, "/");
    CHECK_INT_EQ(parse(&head, LIT("GET / HTTP/1.9\r\n\r\n"), &err), 0);
    CHECK_INT_EQ(head.minor, 1);
    CHECK_INT_EQ(head.n_headers, 0);
    CHECK_INT_EQ(parse(&head, LIT("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"), &err), 0);
    CHECK_SPAN(head.method, "OPTIONS");
    CHECK_SPAN(head.target, "*");
    CHECK_INT_EQ(parse(&head, LIT("M-._~!#$%&'*+^`|9 /a?b=%20&c#d HTTP/1.1\r\n\r\n"), &err), 0);
    CHECK_SPAN(head.method, "M-._~!#$%&'*+^`|9");
    CHECK_SPAN(head.target, "/a?b=%20&c#d");

    /* OWS around a value is not part of it; inside it, it is. Empty values
     * and obs-text are allowed. */
    static const char text[] = "GET / HTTP/1.1\r\nA:  \t v a \t \r\nB:\r\nC: \t \r\nD:x\r\n"
                               "E: caf\xc3\xa9\r\nA: second\r\n\r\n";
    CHECK_INT_EQ(parse(&head, LIT(text), &err), 0);
    CHECK_INT_EQ(head.n_headers, 6);
    CHECK_SPAN(head.values[0], "v a");
    CHECK_INT_EQ(head.values[1].len, 0);
    CHECK_INT_EQ(head.values[2].len, 0);
    CHECK_SPAN(head.values[3], "x");
    CHECK_SPAN(head.values[4], "caf\xc3\xa9");
    const struct http_span *first = http_head_find(&head, "a");
    CHECK(first == &head.values[0]);
}

static void test_request_line_errors(void)
{
    EXPECT_REFUSED("\r\n\r\n", 400, "the request line is empty");
    EXPECT_REFUSED("GET  / HTTP/1.1\r\n\r\n", 400, "the request target is empty");
    EXPECT_REFUSED(" GET / HTTP/1.1\r\n\r\n", 400, "must start with a method and one space");
    EXPECT_REFUSED("GET\t/ HTTP/1.1\r\n\r\n", 400, "must start with a method and one space");
    EXPECT_REFUSED("G(T / HTTP/1.1\r\n\r\n", 400, "must start with a method");
    EXPECT_REFUSED("GET\r\n\r\n", 400, "must start with a method and one space, got \"GET\"");
    EXPECT_REFUSED("GET /\r\n\r\n", 400, "the request line has no HTTP version: \"GET /\"");
    EXPECT_REFUSED("GET / \r\n\r\n", 400, "must end in one space and HTTP/1.1, got \"\"");
    EXPECT_REFUSED("GET /  HTTP/1.1\r\n\r\n", 400, "got \" HTTP/1.1\"");
    EXPECT_REFUSED("GET / HTTP/1.1 \r\n\r\n", 400, "got \"HTTP/1.1 \"");
    EXPECT_REFUSED("GET / http/1.1\r\n\r\n", 400, "got \"http/1.1\"");
    EXPECT_REFUSED("GET / HTTP/1\r\n\r\n", 400, "got \"HTTP/1\"");
    EXPECT_REFUSED("GET / HTTP/11.1\r\n\r\n", 400, "got \"HTTP/11.1\"");
    EXPECT_REFUSED("GET / HTTP/1.x\r\n\r\n", 400, "got \"HTTP/1.x\"");
    EXPECT_REFUSED("GET /a\x7f HTTP/1.1\r\n\r\n", 400, "byte 0x7F, which is not visible ASCII");
    EXPECT_REFUSED("GET /a\0b HTTP/1.1\r\n\r\n", 400, "byte 0x00, which is not visible ASCII");
    EXPECT_REFUSED("GET /caf\xc3\xa9 HTTP/1.1\r\n\r\n", 400, "byte 0xC3");
    EXPECT_REFUSED("GET /a\tb HTTP/1.1\r\n\r\n", 400, "byte 0x09");
    /* Client bytes in a reason are printable. */
    EXPECT_REFUSED("G\x01T / HTTP/1.1\r\n\r\n", 400, "got \"G?T / HTTP/1.1\"");
    EXPECT_REFUSED("GET /\xff\x80 HTTP/1.1\r\n\r\n", 400, "\"/?? HTTP/1.1\"");

    EXPECT_REFUSED("GET / HTTP/2.0\r\n\r\n", 505, "HTTP/2.0 is not supported; use HTTP/1.1");
    EXPECT_REFUSED("GET / HTTP/0.9\r\n\r\n", 505, "HTTP/0.9 is not supported");
    EXPECT_REFUSED("PRI * HTTP/2.0\r\n\r\n", 505, "HTTP/2.0 is not supported");
    /* Refused at the first byte, the head's end never seen. */
    EXPECT_REFUSED("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400,
                   "the request starts with byte 0x16, a TLS handshake");
    EXPECT_REFUSED("\x01GET / HTTP/1.1", 400, "must start with a method, got byte 0x01");
    EXPECT_REFUSED("\xc3\xa9 / HTTP/1.1", 400, "must start with a method, got byte 0xC3");
    EXPECT_REFUSED("\0GET / HTTP/1.1", 400, "must start with a method, got byte 0x00");
}

static void test_header_errors(void)
{
    EXPECT_REFUSED("GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400,
                   "whitespace before the colon of a header: \"Host : x\"");
    EXPECT_REFUSED("GET / HTTP/1.1\r\nContent-Length\t: 5\r\n\r\n", 400,
                   "whitespace before the colon");
    EXPECT_REFUSED("GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n", 400, "obsolete line folding");
    EXPECT_REFUSED("GET / HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n", 400, "obsolete line folding");
    EXPECT_REFUSED("GET / HTTP/1.1\r\nHost  \t:x\r\n\r\n", 400, "whitespace before the colon");
    EXPECT_REFUSED("GET / HTTP/1.1\r\nNo colon\r\n\r\n", 400, "a token name, a colon");
    EXPECT_REFUSED("GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400,
                   "must be a token name, a colon and a value, got \"NoColon\"");
    EXPECT_REFUSED("GET / HTTP/1.1\r\n: x\r\n\r\n", 400, "a token name, a colon");
    EXPECT_REFUSED("GET / HTTP/1.1\r\nX(y): 1\r\n\r\n", 400, "a token name, a colon");
    EXPECT_REFUSED("GET / HTTP/1.1\r\nAuthorization: Bearer KEY\0junk\r\n\r\n", 400,
                   "a header value has a control byte (0x00) in header \"Authorization\"");
    EXPECT_REFUSED("GET / HTTP/1.1\r\nX: a\x7f\r\n\r\n", 400, "control byte (0x7F)");
    EXPECT_REFUSED("GET / HTTP/1.1\r\nX: a\x01 b\r\n\r\n", 400, "control byte (0x01)");
    EXPECT_REFUSED("GET / HTTP/1.1\r\nX: \x1b\r\n\r\n", 400, "control byte (0x1B)");

    /* A long line is quoted to 40 bytes. */
    static const char long_line[] =
        "GET / HTTP/1.1\r\n0123456789012345678901234567890123456789TAIL\r\n\r\n";
    struct http_parse_error err;
    CHECK_INT_EQ(parse(&head, LIT(long_line), &err), 400);
    CHECK_CONTAINS(err.reason, "\"0123456789012345678901234567890123456789\"");
    CHECK(strstr(err.reason, "TAIL") == NULL);
}

/* A CR or LF alone, found by http_head_end or, for a head handed in
 * directly, by http_head_parse. */
static void test_bare_cr_lf(void)
{
    const char *heads[] = {
        "GET / HTTP/1.1\nHost: x\r\n\r\n",      "GET / HTTP/1.1\r\nHost: x\n\r\n",
        "GET / HTTP/1.1\r\nHost: x\r\n\n",      "GET / HTTP/1.1\r\nHost: x\rY: z\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: x\r\r\n\r\n", "\nGET / HTTP/1.1\r\n\r\n",
        "GET /\r HTTP/1.1\r\n\r\n",            "GET / HTTP/1.1\r\nX: \n\n",
    };
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        struct http_parse_error err = {0};
        size_t scanned = 0;
        CHECK_INT_EQ(http_head_end(heads[i], strlen(heads[i]), &scanned, &err), -1);
        CHECK_INT_EQ(err.status, 400);
        CHECK_STR_EQ(err.reason, "bare LF/CR in the request head");

        memset(&err, 0, sizeof err);
        CHECK(!http_head_parse(&head, heads[i], strlen(heads[i]), &err));
        CHECK_INT_EQ(err.status, 400);
    }
    struct http_parse_error err = {0};
    CHECK(!http_head_parse(&head, LIT("GET / HTTP/1.1\r\nX: a\rb\r\n\r\n"), &err));
    CHECK_STR_EQ(err.reason, "bare LF/CR in the request head");
    CHECK(!http_head_parse(&head, LIT("GET / HTTP/1.1\r\nX: a\r\n"), &err));
    CHECK_CONTAINS(err.reason, "does not end with an empty line");
}

static char big[HTTP_HEAD_MAX + HTTP_TARGET_MAX];

/* `len` bytes of head: a request line with a target of `target_len`,
 * headers "X: <value>" filling the rest, the blank line. */
static size_t make_head(size_t target_len, size_t len)
{
    size_t n = (size_t)snprintf(big, sizeof big, "GET /");
    memset(big + n, 'a', target_len - 1);
    n += target_len - 1;
    n += (size_t)snprintf(big + n, sizeof big - n, " HTTP/1.1\r\n");
    if (len > n + 2) {
        memcpy(big + n, "X: ", 3);
        memset(big + n + 3, 'v', len - n - 7);
        n = len - 4;
        memcpy(big + n, "\r\n", 2);
        n += 2;
    }
    memcpy(big + n, "\r\n", 2);
    return n + 2;
}

static void test_limits(void)
{
    struct http_parse_error err;
    size_t len = make_head(HTTP_TARGET_MAX, 0);
    CHECK_INT_EQ(parse(&head, big, len, &err), 0);
    CHECK_INT_EQ(head.target.len, HTTP_TARGET_MAX);
    len = make_head(HTTP_TARGET_MAX + 1, 0);
    CHECK_INT_EQ(parse(&head, big, len, &err), 414);
    CHECK_STR_EQ(err.reason, "the request target is longer than 8192 bytes");

    /* The largest head, and one byte more. */
    len = make_head(1, HTTP_HEAD_MAX);
    CHECK_INT_EQ(len, HTTP_HEAD_MAX);
    CHECK_INT_EQ(parse(&head, big, len, &err), 0);
    CHECK_INT_EQ(head.values[0].len, HTTP_HEAD_MAX - 23);
    len = make_head(1, HTTP_HEAD_MAX + 1);
    CHECK_INT_EQ(parse(&head, big, len, &err), 431);
    CHECK_STR_EQ(err.reason, "the request head is larger than 16384 bytes");

    /* Waiting for more below the limit, refused at it. */
    memset(big, 'a', HTTP_HEAD_MAX);
    size_t scanned = 0;
    CHECK_INT_EQ(http_head_end(big, HTTP_HEAD_MAX - 1, &scanned, &err), 0);
    CHECK_INT_EQ(http_head_end(big, HTTP_HEAD_MAX, &scanned, &err), -1);
    CHECK_INT_EQ(err.status, 431);
    big[HTTP_HEAD_MAX - 1] = '\r';
    scanned = 0;
    CHECK_INT_EQ(http_head_end(big, HTTP_HEAD_MAX, &scanned, &err), -1);
    CHECK_INT_EQ(err.status, 431);

    /* 100 headers pass, 101 do not. */
    size_t n = (size_t)snprintf(big, sizeof big, "GET / HTTP/1.1\r\n");
    for (int i = 0; i < HTTP_HEADERS_MAX; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, "H%d: %d\r\n", i, i);
    memcpy(big + n, "\r\n", 2);
    CHECK_INT_EQ(parse(&head, big, n + 2, &err), 0);
    CHECK_INT_EQ(head.n_headers, HTTP_HEADERS_MAX);
    CHECK_SPAN(head.names[99], "H99");
    CHECK_SPAN(head.values[99], "99");
    n += (size_t)snprintf(big + n, sizeof big - n, "H100: 100\r\n\r\n");
    CHECK_INT_EQ(parse(&head, big, n, &err), 431);
    CHECK_STR_EQ(err.reason, "the request has more than 100 headers");
}

static void test_head_end_incremental(void)
{
    /* A head, its body and the next request. */
    static const char text[] = "POST /embed HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nBODY"
                               "GET / HTTP/1.1\r\n\r\n";
    const size_t head_len = (size_t)(strstr(text, "BODY") - text);
    struct http_parse_error err;

    /* The buffer grows a byte at a time: nothing until the terminator. */
    size_t scanned = 0;
    long end = 0;
    size_t len;
    for (len = 0; len <= sizeof text - 1 && end == 0; len++) {
        end = http_head_end(text, len, &scanned, &err);
        CHECK(scanned <= len);
        CHECK(len == 0 || scanned + 1 >= len || end != 0);
    }
    CHECK_INT_EQ(end, head_len);
    CHECK_INT_EQ(len - 1, head_len);

    /* Every place the terminator or an earlier CRLF can be cut. */
    for (size_t cut = 0; cut <= sizeof text - 1; cut++) {
        scanned = 0;
        long first = http_head_end(text, cut, &scanned, &err);
        CHECK_INT_EQ(first, cut < head_len ? 0 : (long)head_len);
        if (first == 0)
            CHECK_INT_EQ(http_head_end(text, sizeof text - 1, &scanned, &err), head_len);
    }

    /* A CR last is incomplete; what follows decides. */
    scanned = 0;
    CHECK_INT_EQ(http_head_end(LIT("GET / HTTP/1.1\r"), &scanned, &err), 0);
    CHECK_INT_EQ(scanned, 14);
    CHECK_INT_EQ(http_head_end(LIT("GET / HTTP/1.1\rX"), &scanned, &err), -1);
    CHECK_INT_EQ(err.status, 400);

    scanned = 0;
    CHECK_INT_EQ(http_head_end(LIT("\r\n\r\n"), &scanned, &err), 4);
    scanned = 0;
    CHECK_INT_EQ(http_head_end("", 0, &scanned, &err), 0);
    CHECK_INT_EQ(scanned, 0);
}

static bool path(const char *target, size_t size, char *out)
{
    struct http_span t = {target, strlen(target)};
    return http_target_path(t, out, size);
}

#define EXPECT_PATH(target, ok, want)                                                   \
    do {                                                                                \
        char out_[64];                                                                  \
        memset(out_, 'x', sizeof out_);                                                 \
        CHECK(path(target, sizeof out_, out_) == (ok));                                 \
        CHECK_STR_EQ(out_, want);                                                       \
    } while (0)

static void test_target_path(void)
{
    EXPECT_PATH("/embed", true, "/embed");
    EXPECT_PATH("/embed?x=1&y=%00", true, "/embed");
    EXPECT_PATH("/a#frag", true, "/a");
    EXPECT_PATH("/a%20b", true, "/a b");
    EXPECT_PATH("/a%2Fb%2f", true, "/a/b/");
    EXPECT_PATH("/%41%6a%6A", true, "/Ajj");
    EXPECT_PATH("/caf%C3%A9", true, "/caf\xc3\xa9");
    EXPECT_PATH("/%zz", true, "/%zz");
    EXPECT_PATH("/%4", true, "/%4");
    EXPECT_PATH("/a%", true, "/a%");
    EXPECT_PATH("/%4?x", true, "/%4");
    EXPECT_PATH("/%%41", true, "/%A");
    EXPECT_PATH("/%g1%1g", true, "/%g1%1g");
    EXPECT_PATH("*", true, "*");
    EXPECT_PATH("", true, "");
    EXPECT_PATH("?q", true, "");
    EXPECT_PATH("http://x/health?q=1", true, "/health");
    EXPECT_PATH("HTTPS://x:8080/embed#f", true, "/embed");
    EXPECT_PATH("http://x:8080", true, "/");
    EXPECT_PATH("http://x?q", true, "/");
    EXPECT_PATH("http://x/a%00", false, "");
    EXPECT_PATH("ftp://x/health", true, "ftp://x/health");
    EXPECT_PATH("http:/x", true, "http:/x");
    EXPECT_PATH("/health%00/../x", false, "");
    EXPECT_PATH("/%00", false, "");

    char out[8];
    CHECK(path("/abcdefghij", 4, out));
    CHECK_STR_EQ(out, "/ab");
    CHECK(path("/a%20bcdef", 4, out));
    CHECK_STR_EQ(out, "/a ");
    CHECK(path("/abc", 1, out));
    CHECK_STR_EQ(out, "");
    CHECK(path("/abcdefg", 8, out));
    CHECK_STR_EQ(out, "/abcdef");
    /* A NUL past the cut still counts. */
    CHECK(!path("/abcdefgh%00", 4, out));
    CHECK_STR_EQ(out, "");
    char guard = 'g';
    CHECK(path("/abc", 0, &guard));
    CHECK_INT_EQ(guard, 'g');
}

/* What a chunked decode gave. */
struct decoded {
    enum http_chunked_status status;
    size_t consumed, calls;
    char data[32768];
    size_t len;
    struct http_parse_error err;
};

static void collect(void *arg, const char *p, size_t n)
{
    struct decoded *d = arg;
    CHECK(n > 0);
    CHECK(d->len + n <= sizeof d->data);
    if (d->len + n <= sizeof d->data)
        memcpy(d->data + d->len, p, n);
    d->len += n;
    d->calls++;
}

/* Feed `in` in pieces of `piece` bytes (all at once when 0) until DONE,
 * ERROR or the end. */
static void decode(struct decoded *d, const char *in, size_t len, size_t piece)
{
    memset(d, 0, sizeof *d);
    struct http_chunked c;
    http_chunked_begin(&c);
    d->status = HTTP_CHUNKED_MORE;
    for (size_t at = 0; at < len && d->status == HTTP_CHUNKED_MORE;) {
        size_t n = piece == 0 || len - at < piece ? len - at : piece;
        size_t used = 0;
        d->status = http_chunked_feed(&c, in + at, n, &used, collect, d, &d->err);
        CHECK(used <= n);
        CHECK(d->status != HTTP_CHUNKED_MORE || used == n);
        d->consumed += used;
        at += n;
    }
}

static struct decoded whole, pieces;

/* Decode `in` whole and in pieces of 1, 2, 3 and 7 bytes: each must give
 * `status`, `data` and `consumed`, and an error must say `reason`. */
static void expect_chunked(const char *in, size_t len, enum http_chunked_status status,
                           const char *data, size_t consumed, const char *reason)
{
    const size_t sizes[] = {0, 1, 2, 3, 7};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        struct decoded *d = i == 0 ? &whole : &pieces;
        decode(d, in, len, sizes[i]);
        CHECK_INT_EQ(d->status, status);
        CHECK_INT_EQ(d->consumed, consumed);
        CHECK_INT_EQ(d->len, strlen(data));
        CHECK(d->len == strlen(data) && memcmp(d->data, data, d->len) == 0);
        if (status == HTTP_CHUNKED_ERROR) {
            CHECK_INT_EQ(d->err.status, 400);
            CHECK_CONTAINS(d->err.reason, reason);
            CHECK(is_printable(d->err.reason));
        }
        if (i > 0) {
            CHECK_INT_EQ(pieces.status, whole.status);
            CHECK_INT_EQ(pieces.consumed, whole.consumed);
            CHECK(pieces.len == whole.len && memcmp(pieces.data, whole.data, whole.len) == 0);
        }
    }
}

#define EXPECT_CHUNKED(in, status, data, consumed) \
    expect_chunked(LIT(in), HTTP_CHUNKED_##status, data, consumed, "")
#define EXPECT_CHUNKED_ERROR(in, data, consumed, reason) \
    expect_chunked(LIT(in), HTTP_CHUNKED_ERROR, data, consumed, reason)

static void test_chunked(void)
{
    EXPECT_CHUNKED("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", DONE, "hello world", 26);
    EXPECT_CHUNKED("A\r\n0123456789\r\na\r\nabcdefghij\r\n0\r\n\r\n", DONE,
                   "0123456789abcdefghij", 35);
    EXPECT_CHUNKED("0005\r\nhello\r\n000\r\n\r\n", DONE, "hello", 20);
    EXPECT_CHUNKED("000000000000000A\r\n0123456789\r\n0\r\n\r\n", DONE, "0123456789", 35);
    EXPECT_CHUNKED("5;name=value\r\nhello\r\n0;last=\"yes\"; x\r\n\r\n", DONE, "hello", 40);
    EXPECT_CHUNKED("5\r\nhello\r\n0\r\nX-Checksum: abc\r\nX-Empty:\r\n\r\n", DONE, "hello",
                   42);
    /* The next request is not consumed. */
    EXPECT_CHUNKED("5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n", DONE, "hello", 15);
    EXPECT_CHUNKED("0\r\n\r\n5\r\nhello\r\n0\r\n\r\n", DONE, "", 5);
    /* Incomplete: everything is taken, more is wanted. */
    EXPECT_CHUNKED("5\r\nhel", MORE, "hel", 6);
    EXPECT_CHUNKED("5\r\nhello\r", MORE, "hello", 9);
    EXPECT_CHUNKED("FFFFFFFFFFFFFFFF\r\nab", MORE, "ab", 20);
    EXPECT_CHUNKED("0\r\nX: y\r\n", MORE, "", 9);

    EXPECT_CHUNKED_ERROR("10000000000000000\r\n", "", 16, "chunk size too large");
    EXPECT_CHUNKED_ERROR("00000000000000000\r\n\r\n", "", 16, "chunk size too large");
    EXPECT_CHUNKED_ERROR("5\r\nhelloX\r\n0\r\n\r\n", "hello", 8,
                         "chunk data is not followed by CRLF");
    EXPECT_CHUNKED_ERROR("5\r\nhello\r0\r\n\r\n", "hello", 9, "not followed by CRLF");
    EXPECT_CHUNKED_ERROR("5\nhello\r\n0\r\n\r\n", "", 1, "bare LF");
    EXPECT_CHUNKED_ERROR("5\r\nhello\n0\r\n\r\n", "hello", 8, "bare LF");
    EXPECT_CHUNKED_ERROR("0\r\n\n", "", 3, "bare LF");
    EXPECT_CHUNKED_ERROR("0\r\nX: y\n\r\n", "", 7, "bare LF");
    EXPECT_CHUNKED_ERROR("5;a\n", "", 3, "bare LF");
    EXPECT_CHUNKED_ERROR("5\rhello", "", 2, "bare CR");
    EXPECT_CHUNKED_ERROR("0\r\n\rX", "", 4, "bare CR");
    EXPECT_CHUNKED_ERROR("\r\n", "", 0, "a chunk size must be hex digits");
    EXPECT_CHUNKED_ERROR(";x\r\n", "", 0, "got byte 0x3B");
    EXPECT_CHUNKED_ERROR("-1\r\n", "", 0, "got byte 0x2D");
    EXPECT_CHUNKED_ERROR(" 5\r\n", "", 0, "got byte 0x20");
    EXPECT_CHUNKED_ERROR("5 \r\n", "", 1, "got byte 0x20");
    EXPECT_CHUNKED_ERROR("0x5\r\n", "", 1, "got byte 0x78");
    EXPECT_CHUNKED_ERROR("5;a\0b\r\n", "", 3, "a chunk extension has a control byte (0x00)");
    EXPECT_CHUNKED_ERROR("0\r\n x: y\r\n\r\n", "", 3, "must start with a field name");
    EXPECT_CHUNKED_ERROR("0\r\nX : y\r\n\r\n", "", 4, "byte 0x20 before its colon");
    EXPECT_CHUNKED_ERROR("0\r\nXy\r\n\r\n", "", 5, "byte 0x0D before its colon");
    EXPECT_CHUNKED_ERROR("0\r\nX: a\0\r\n\r\n", "", 7, "trailer value has a control byte");

    /* The size line's bound, extensions included. */
    static char in[20000];
    size_t n = (size_t)snprintf(in, sizeof in, "1;");
    memset(in + n, 'e', 4094);
    n += 4094;
    n += (size_t)snprintf(in + n, sizeof in - n, "\r\nZ\r\n0\r\n\r\n");
    expect_chunked(in, n, HTTP_CHUNKED_DONE, "Z", n, "");
    memmove(in + 3, in + 2, n - 2); /* one more 'e' */
    expect_chunked(in, n + 1, HTTP_CHUNKED_ERROR, "", 4096,
                   "a chunk size line is longer than 4096 bytes");

    /* The trailers' bound: 16384 bytes, the final CRLF included. */
    n = (size_t)snprintf(in, sizeof in, "0\r\n");
    while (n < 3 + 16384 - 100)
        n += (size_t)snprintf(in + n, sizeof in - n, "X-Pad: %090d\r\n", 0);
    size_t left = 3 + 16384 - n; /* for a "Y: yyy" line and the final CRLF */
    memcpy(in + n, "Y: ", 3);
    memset(in + n + 3, 'y', left - 7);
    memcpy(in + n + left - 4, "\r\n\r\n", 4);
    n += left;
    CHECK_INT_EQ(n, 3 + 16384);
    expect_chunked(in, n, HTTP_CHUNKED_DONE, "", n, "");
    memmove(in + 4, in + 3, n - 3); /* "XX-Pad: ..." */
    expect_chunked(in, n + 1, HTTP_CHUNKED_ERROR, "", 3 + 16384,
                   "the chunked trailers are larger than 16384 bytes");
}

/* Chunk data arrives in as few calls as the pieces allow, and after DONE
 * or ERROR the decoder takes nothing more. */
static void test_chunked_calls_and_end(void)
{
    decode(&whole, LIT("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"), 0);
    CHECK_INT_EQ(whole.calls, 2);
    decode(&pieces, LIT("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"), 1);
    CHECK_INT_EQ(pieces.calls, 11);

    struct http_chunked c;
    struct http_parse_error err = {0};
    size_t used = 99;
    http_chunked_begin(&c);
    CHECK_INT_EQ(http_chunked_feed(&c, LIT("0\r\n\r\n"), &used, collect, &whole, &err),
                 HTTP_CHUNKED_DONE);
    CHECK_INT_EQ(used, 5);
    CHECK_INT_EQ(http_chunked_feed(&c, LIT("5\r\nhello"), &used, collect, &whole, &err),
                 HTTP_CHUNKED_DONE);
    CHECK_INT_EQ(used, 0);

    http_chunked_begin(&c);
    CHECK_INT_EQ(http_chunked_feed(&c, LIT("x"), &used, collect, &whole, &err),
                 HTTP_CHUNKED_ERROR);
    CHECK_INT_EQ(http_chunked_feed(&c, LIT("0\r\n\r\n"), &used, collect, &whole, &err),
                 HTTP_CHUNKED_ERROR);
    CHECK_INT_EQ(used, 0);
    CHECK_INT_EQ(err.status, 400);

    http_chunked_begin(&c);
    CHECK_INT_EQ(http_chunked_feed(&c, "", 0, &used, collect, &whole, &err), HTTP_CHUNKED_MORE);
    CHECK_INT_EQ(used, 0);
}

/* The members of `value`, joined by '|', into out. */
static const char *list_members(const char *value, char *out, size_t size)
{
    struct http_span v = {value, strlen(value)}, m;
    size_t pos = 0, n = 0;
    out[0] = '\0';
    while (http_list_next(v, &pos, &m)) {
        CHECK(span_inside(m, value, v.len));
        n += (size_t)snprintf(out + n, size - n, "%s%.*s", n ? "|" : "", (int)m.len, m.p);
    }
    CHECK_INT_EQ(pos, v.len);
    return out;
}

static void test_list_members(void)
{
    char out[128];
    CHECK_STR_EQ(list_members("", out, sizeof out), "");
    CHECK_STR_EQ(list_members(" , ,\t,", out, sizeof out), "");
    CHECK_STR_EQ(list_members("close", out, sizeof out), "close");
    CHECK_STR_EQ(list_members("keep-alive, Upgrade", out, sizeof out), "keep-alive|Upgrade");
    CHECK_STR_EQ(list_members(",a ,\tb c\t,,d,", out, sizeof out), "a|b c|d");
    CHECK_STR_EQ(list_members("100-continue,x-custom", out, sizeof out), "100-continue|x-custom");
}

int main(void)
{
    test_curl();
    test_python_requests();
    test_node_fetch();
    test_versions_and_values();
    test_request_line_errors();
    test_header_errors();
    test_bare_cr_lf();
    test_limits();
    test_head_end_incremental();
    test_target_path();
    test_chunked();
    test_chunked_calls_and_end();
    test_list_members();
    return check_exit();
}
