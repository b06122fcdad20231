/* HTTP/1.1 request parsing (RFC 9112): the request head, the request
 * target's path, and chunked bodies. Strict where leniency lets one
 * message be read two ways (request smuggling): lines end in CRLF, a bare
 * CR or LF is an error, obsolete line folding and whitespace before a
 * header's colon are errors, NUL and other control bytes are errors.
 * http_framing.h adds the rules across header lines (Content-Length,
 * Transfer-Encoding, Host).
 *
 * Pure functions over the caller's bytes; no I/O, no allocation, any
 * thread. Spans point into the caller's buffer. */
#ifndef SRV_HTTP_PARSE_H
#define SRV_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest head (request line, headers and the blank line), header
 * count and request target accepted. */
#define HTTP_HEAD_MAX 16384
#define HTTP_HEADERS_MAX 100
#define HTTP_TARGET_MAX 8192
/* The most bytes of a client's text quoted back in a refusal's reason
 * (here, in http_framing.c and in http.c). */
#define HTTP_QUOTE_MAX 40

struct http_span {
    const char *p;
    size_t len;
};

struct http_head {
    struct http_span method, target;
    unsigned minor;              /* HTTP/1.minor: 0 or 1 */
    size_t n_headers;
    struct http_span names[HTTP_HEADERS_MAX], values[HTTP_HEADERS_MAX]; /* values without the
                                                                            surrounding OWS */
};

/* A refusal: the status to answer (400, 414, 431, 505) and why, for the
 * error body. */
struct http_parse_error {
    int status;
    char reason[160];
};

/* Where the head ends in buf[0..len): returns its length through the blank
 * line's CRLF, 0 while it is incomplete, or -1 with `err` set (a first byte
 * that is not printable ASCII, such as a TLS handshake's; a bare LF or CR;
 * no end within HTTP_HEAD_MAX: 431). `*scanned` (0 at first) carries the
 * bytes already searched between calls on a growing buffer. */
long http_head_end(const char *buf, size_t len, size_t *scanned, struct http_parse_error *err);

/* Parse a complete head of `len` bytes (as http_head_end measured it).
 * Returns false with `err` set: a malformed request line or header line
 * (400), a target over HTTP_TARGET_MAX (414), more than HTTP_HEADERS_MAX
 * headers (431), an HTTP major version other than 1 (505). */
bool http_head_parse(struct http_head *h, const char *buf, size_t len,
                     struct http_parse_error *err);

/* The value of the first header named `name` (any case), or NULL. */
const struct http_span *http_head_find(const struct http_head *h, const char *name);

/* The members of a comma-separated header value (RFC 9110 5.6.1), one per
 * call from *pos (0 at first): true with *member set, its surrounding
 * spaces and tabs dropped; false past the last. Empty members are skipped. */
bool http_list_next(struct http_span value, size_t *pos, struct http_span *member);

/* The path of an origin-form target, or of an absolute-form one
 * ("http://host/path", which RFC 9112 3.2.2 has servers accept; "/" when
 * it has no path): the part before '?', percent-decoded into out[size]
 * (NUL-terminated, cut to fit). An escape that is not two hex digits stays
 * as sent. Returns false if it decodes to a NUL byte. */
bool http_target_path(struct http_span target, char *out, size_t size);

/* A chunked body (RFC 9112 7.1), decoded as it arrives. Chunk extensions
 * are skipped; trailer fields are read and dropped. */
struct http_chunked {
    int state;
    uint64_t remaining;          /* of the current chunk's data */
    size_t line_bytes;           /* of the size line or trailers so far, bounded */
    unsigned digits;
};

enum http_chunked_status {
    HTTP_CHUNKED_MORE,           /* everything given was consumed; send more */
    HTTP_CHUNKED_DONE,           /* the last chunk and trailers are in */
    HTTP_CHUNKED_ERROR,          /* malformed: 400 */
};

void http_chunked_begin(struct http_chunked *c);

/* Consume in[0..len); each run of body data found is passed to `on_data`
 * (pointing into `in`). `*consumed` is how many bytes were used: all of
 * them unless DONE came first (the rest belongs to the next request).
 * On ERROR, `err` says why. */
enum http_chunked_status http_chunked_feed(struct http_chunked *c, const char *in, size_t len,
                                           size_t *consumed,
                                           void (*on_data)(void *arg, const char *p, size_t n),
                                           void *arg, struct http_parse_error *err);

#endif
