#include "http_framing.h"
#include "http_parse.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static void refuse(struct http_framing *f, enum http_framing_verdict verdict, const char *fmt,
                   ...) __attribute__((format(printf, 3, 4)));
static void refuse(struct http_framing *f, enum http_framing_verdict verdict, const char *fmt,
                   ...)
{
    if (f->verdict != HTTP_FRAMING_OK)
        return;
    f->verdict = verdict;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->reason, sizeof f->reason, fmt, ap);
    va_end(ap);
}

/* RFC 9110 5.6.2: tchar. */
static bool is_tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static bool is_name(const char *name, size_t len, const char *want)
{
    return len == strlen(want) && strncasecmp(name, want, len) == 0;
}

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

void http_framing_begin(struct http_framing *f, const char *version)
{
    memset(f, 0, sizeof *f);
    f->http10 = strcmp(version, "HTTP/1.0") == 0;
    f->http11 = strcmp(version, "HTTP/1.1") == 0;
}

/* RFC 9110 8.6: 1*DIGIT, and one that fits in 64 bits. */
static void check_content_length(struct http_framing *f, const char *value, size_t len)
{
    size_t digits = 0;
    while (digits < len && value[digits] >= '0' && value[digits] <= '9')
        digits++;
    if (digits == 0 || digits != len || digits > 19)
        refuse(f, HTTP_FRAMING_BAD_REQUEST,
               "Content-Length must be a decimal number of at most 19 digits, got \"%.*s\"",
               (int)(len < HTTP_QUOTE_MAX ? len : HTTP_QUOTE_MAX), value);
}

/* RFC 9112 6.1: a list of codings whose last is chunked, applied once. We
 * decode chunked only. */
static void check_transfer_encoding(struct http_framing *f, const char *value, size_t len)
{
    size_t i = 0, codings = 0, chunked_at = 0;
    bool chunked = false;
    while (i < len) {
        while (i < len && (is_ows(value[i]) || value[i] == ','))
            i++;
        size_t start = i;
        while (i < len && value[i] != ',' && !is_ows(value[i]))
            i++;
        if (i == start)
            break;
        codings++;
        if (is_name(value + start, i - start, "chunked")) {
            if (chunked) {
                refuse(f, HTTP_FRAMING_BAD_REQUEST, "Transfer-Encoding names chunked twice");
                return;
            }
            chunked = true;
            chunked_at = codings;
        } else {
            refuse(f, HTTP_FRAMING_NOT_IMPLEMENTED,
                   "Transfer-Encoding \"%.*s\" is not supported; send the body with "
                   "Content-Length or Transfer-Encoding: chunked",
                   (int)(len < HTTP_QUOTE_MAX ? len : HTTP_QUOTE_MAX), value);
            return;
        }
    }
    if (!chunked || chunked_at != codings)
        refuse(f, HTTP_FRAMING_BAD_REQUEST, "Transfer-Encoding must end with chunked");
}

void http_framing_header(struct http_framing *f, const char *name, size_t name_len,
                         const char *value, size_t value_len)
{
    for (size_t i = 0; i < name_len; i++) {
        if (!is_tchar((unsigned char)name[i])) {
            refuse(f, HTTP_FRAMING_BAD_REQUEST,
                   "header name \"%.*s\" is not a token (no space may come before the colon)",
                   (int)(name_len < HTTP_QUOTE_MAX ? name_len : HTTP_QUOTE_MAX), name);
            return;
        }
    }
    if (name_len == 0) {
        refuse(f, HTTP_FRAMING_BAD_REQUEST, "a header line has an empty name");
    } else if (is_name(name, name_len, "Host")) {
        f->hosts++;
    } else if (is_name(name, name_len, "Content-Length")) {
        f->content_lengths++;
        check_content_length(f, value, value_len);
    } else if (is_name(name, name_len, "Transfer-Encoding")) {
        f->transfer_encodings++;
        check_transfer_encoding(f, value, value_len);
    }
}

enum http_framing_verdict http_framing_end(struct http_framing *f)
{
    if (f->transfer_encodings > 0 && f->content_lengths > 0)
        refuse(f, HTTP_FRAMING_BAD_REQUEST,
               "the request has both Transfer-Encoding and Content-Length");
    if (f->content_lengths > 1)
        refuse(f, HTTP_FRAMING_BAD_REQUEST, "the request has %zu Content-Length headers",
               f->content_lengths);
    if (f->transfer_encodings > 1)
        refuse(f, HTTP_FRAMING_BAD_REQUEST, "the request has %zu Transfer-Encoding headers",
               f->transfer_encodings);
    if (f->transfer_encodings > 0 && !f->http11)
        refuse(f, HTTP_FRAMING_BAD_REQUEST, "Transfer-Encoding needs HTTP/1.1");
    if (f->hosts > 1 || (f->http11 && f->hosts == 0))
        refuse(f, HTTP_FRAMING_BAD_REQUEST,
               "an HTTP/1.1 request must have exactly one Host header, this one has %zu",
               f->hosts);
    return f->verdict;
}
