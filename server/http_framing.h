/* The HTTP/1.1 message framing rules (RFC 9112) that libmicrohttpd 0.9.75
 * (Debian 12) leaves to the application. It accepts a request with both
 * Transfer-Encoding and Content-Length, or with two Content-Length headers,
 * frames it by one of them and answers the remaining bytes as a second
 * request: request smuggling, behind a proxy that frames by the other. It
 * takes "Content-Length : 5" for an unknown header named "Content-Length ",
 * reads a body in a transfer coding it does not know until the client
 * closes, accepts HTTP/1.1 without Host, and cuts the request target and
 * header values at a NUL byte, so "/health\0/../x" routes as /health and
 * "Bearer KEY\0junk" reads as the key.
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

/* NUL bytes in a request head as libmicrohttpd 0.9.x keeps it: parsed in
 * place, in one buffer from the method to the blank line, with every line
 * end, the spaces around the request target and each header's colon
 * overwritten by NULs, and each string it hands out (method, target,
 * version, header names and values) pointing into that buffer and ending at
 * the first NUL. A NUL the client sent therefore hides the bytes after it.
 * The walk visits the strings in order: what lies between them must be
 * NULs, spaces or tabs, else something was hidden. A string outside the
 * buffer or out of order (libmicrohttpd copies a folded header line
 * elsewhere) fails the walk too, which refuses obsolete line folding as
 * RFC 9112 5.2 allows. */
struct http_head_walk {
    const char *pos, *end;
    bool clean;
};

void http_head_walk_begin(struct http_head_walk *w, const char *head, size_t len);
/* The next string of the head: `len` bytes at `start`. */
void http_head_walk_span(struct http_head_walk *w, const char *start, size_t len);
/* True when nothing was hidden: every byte outside the strings is a NUL,
 * a space or a tab. */
bool http_head_walk_end(struct http_head_walk *w);

#endif
