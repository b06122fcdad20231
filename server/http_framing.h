/* The HTTP/1.1 message framing rules (RFC 9112) across a request's header
 * lines, which the line syntax (http_parse.h) cannot see: a request with
 * both Transfer-Encoding and Content-Length, or with two Content-Length
 * headers, would be framed by one of them here and by the other behind a
 * proxy, and the rest of its bytes read as a second request (request
 * smuggling). A transfer coding other than chunked cannot be framed at
 * all, and HTTP/1.1 needs exactly one Host.
 *
 * A request these rules refuse is answered 400 (501 for an unknown
 * transfer coding) and its connection closed: after a framing error
 * nothing more on it can be trusted.
 *
 * Pure functions over what the caller hands in; no I/O, any thread. */
#ifndef SRV_HTTP_FRAMING_H
#define SRV_HTTP_FRAMING_H

#include <stdbool.h>
#include <stddef.h>

enum http_framing_verdict {
    HTTP_FRAMING_OK,
    HTTP_FRAMING_BAD_REQUEST,     /* 400 */
    HTTP_FRAMING_NOT_IMPLEMENTED, /* 501: a transfer coding other than chunked */
};

/* The header rules, fed one header field line at a time. */
struct http_framing {
    bool http10, http11;
    size_t hosts, content_lengths, transfer_encodings;
    enum http_framing_verdict verdict; /* the first refusal, else OK */
    char reason[200];                  /* why, for the error body; "" when OK */
};

/* Start checking a request of HTTP `version` ("HTTP/1.1", "HTTP/1.0"). */
void http_framing_begin(struct http_framing *f, const char *version);

/* One header field line, in the order received. */
void http_framing_header(struct http_framing *f, const char *name, size_t name_len,
                         const char *value, size_t value_len);

/* The rules across header lines; returns the verdict, f->reason says why. */
enum http_framing_verdict http_framing_end(struct http_framing *f);

#endif
