/* The request parser (server/http_parse.c) on arbitrary bytes, read as a
 * request head and then a chunked body. Spans stay inside the input, a
 * refusal has one of the documented statuses and a printable reason, and
 * the chunked decoder gives the same status, consumed count and data fed
 * all at once as fed one byte at a time; header values split into list
 * members inside them. What follows the head (or the
 * whole input, when no head ends in it) is the chunked body. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "http_parse.h"

static void check_refusal(const struct http_parse_error *err)
{
    if (err->status != 400 && err->status != 414 && err->status != 431 && err->status != 505)
        abort();
    if (err->reason[0] == '\0')
        abort();
    for (const char *r = err->reason; *r != '\0'; r++)
        if (*r < 0x20 || *r > 0x7e)
            abort(); /* the reason goes into JSON and a log line as it is */
}

static void check_span(struct http_span s, const char *buf, size_t len)
{
    if (s.p < buf || s.len > len || (size_t)(s.p - buf) > len - s.len)
        abort();
}

static void check_head(const char *buf, size_t len)
{
    static struct http_head h;
    struct http_parse_error err = {0};
    if (!http_head_parse(&h, buf, len, &err)) {
        check_refusal(&err);
        return;
    }
    check_span(h.method, buf, len);
    check_span(h.target, buf, len);
    if (h.method.len == 0 || h.target.len == 0 || h.target.len > HTTP_TARGET_MAX ||
        h.minor > 1 || h.n_headers > HTTP_HEADERS_MAX)
        abort();
    for (size_t i = 0; i < h.n_headers; i++) {
        check_span(h.names[i], buf, len);
        check_span(h.values[i], buf, len);
        /* Every list member is inside its value, not empty, and never
         * begins or ends with a separator. */
        size_t pos = 0;
        struct http_span m;
        while (http_list_next(h.values[i], &pos, &m)) {
            check_span(m, h.values[i].p, h.values[i].len);
            if (m.len == 0)
                abort();
            const char first = m.p[0], last = m.p[m.len - 1];
            if (first == ',' || first == ' ' || first == '\t' || last == ' ' || last == '\t')
                abort();
        }
        if (pos != h.values[i].len)
            abort();
    }
    if (h.n_headers > 0) {
        static char name[HTTP_HEAD_MAX + 1];
        memcpy(name, h.names[0].p, h.names[0].len);
        name[h.names[0].len] = '\0';
        if (http_head_find(&h, name) != &h.values[0])
            abort();
    }
    char path[16];
    http_target_path(h.target, path, sizeof path);
    if (strnlen(path, sizeof path) == sizeof path)
        abort(); /* always NUL-terminated */
}

/* What a decode gave; `data` holds at most the input's length. */
struct decoded {
    enum http_chunked_status status;
    size_t consumed, data_len;
    char *data;
};

static void collect(void *arg, const char *p, size_t n)
{
    struct decoded *d = arg;
    if (n == 0)
        abort();
    memcpy(d->data + d->data_len, p, n);
    d->data_len += n;
}

static void decode(struct decoded *d, const char *in, size_t len, size_t piece)
{
    d->status = HTTP_CHUNKED_MORE;
    d->consumed = d->data_len = 0;
    struct http_chunked c;
    http_chunked_begin(&c);
    for (size_t at = 0; at < len && d->status == HTTP_CHUNKED_MORE; at += piece) {
        size_t n = len - at < piece ? len - at : piece;
        size_t used;
        struct http_parse_error err = {0};
        d->status = http_chunked_feed(&c, in + at, n, &used, collect, d, &err);
        if (used > n || (d->status == HTTP_CHUNKED_MORE && used != n))
            abort();
        if (d->status == HTTP_CHUNKED_ERROR)
            check_refusal(&err);
        d->consumed += used;
    }
}

static void check_chunked(const char *in, size_t len)
{
    struct decoded whole = {.data = malloc(len + 1)}, bytes = {.data = malloc(len + 1)};
    if (whole.data == NULL || bytes.data == NULL)
        abort();
    decode(&whole, in, len, len);
    decode(&bytes, in, len, 1);
    if (whole.status != bytes.status || whole.consumed != bytes.consumed ||
        whole.data_len != bytes.data_len || memcmp(whole.data, bytes.data, whole.data_len) != 0)
        abort();
    free(whole.data);
    free(bytes.data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    size_t scanned = 0;
    struct http_parse_error err = {0};
    long head_len = http_head_end(buf, size, &scanned, &err);
    if (head_len < 0) {
        check_refusal(&err);
        head_len = 0;
    } else if (head_len > 0) {
        if ((size_t)head_len > size || head_len > HTTP_HEAD_MAX)
            abort();
        check_head(buf, (size_t)head_len);
    } else if (scanned > size) {
        abort();
    }
    check_chunked(buf + head_len, size - (size_t)head_len);
    return 0;
}
