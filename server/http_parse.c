#include "http_parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* A chunk size and its extensions, and all trailer lines together. */
#define CHUNK_LINE_MAX 4096
#define CHUNK_TRAILERS_MAX 16384
/* 16 hex digits fill a uint64_t. */
#define CHUNK_DIGITS_MAX 16

static void refuse(struct http_parse_error *err, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void refuse(struct http_parse_error *err, int status, const char *fmt, ...)
{
    err->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->reason, sizeof err->reason, fmt, ap);
    va_end(ap);
}

/* Client text for a reason: cut to HTTP_QUOTE_MAX bytes, and printable ASCII
 * only, as the reason goes into a JSON body and a log line. */
static const char *quote(char out[HTTP_QUOTE_MAX + 1], const char *p, size_t len)
{
    size_t n = len < HTTP_QUOTE_MAX ? len : HTTP_QUOTE_MAX;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        out[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    out[n] = '\0';
    return out;
}

/* RFC 9110 5.6.2: tchar. */
static bool is_tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* RFC 9110 5.5: field-vchar, SP and HTAB (obs-text included). */
static bool is_value_byte(unsigned char c)
{
    return c == '\t' || c == ' ' || (c >= 0x21 && c != 0x7f);
}

/* RFC 5234 B.1: VCHAR, the bytes a request target may have. */
static bool is_vchar(unsigned char c)
{
    return c >= 0x21 && c <= 0x7e;
}

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

long http_head_end(const char *buf, size_t len, size_t *scanned, struct http_parse_error *err)
{
    /* A request starts with its method: a first byte that is not even
     * printable (a CR or LF, or none yet, is for the checks below), such as
     * a TLS handshake's sent to this plain port, is refused at once, not
     * when a head never ends. Printable ones get http_head_parse's reasons. */
    const unsigned char first = (unsigned char)(len > 0 ? buf[0] : '\r');
    if (*scanned == 0 && (first < 0x20 || first >= 0x7f) && first != '\r' && first != '\n') {
        if (first == 0x16)
            refuse(err, 400, "the request starts with byte 0x16, a TLS handshake: this port "
                             "speaks plain HTTP/1.1 (terminate TLS in front of bertserve)");
        else
            refuse(err, 400, "the request line must start with a method, got byte 0x%02X",
                   first);
        return -1;
    }
    /* Every byte before *scanned was checked, with the bytes before it, on
     * an earlier call: looking back from the resume point finds a
     * terminator or a CRLF split across reads. */
    size_t limit = len < HTTP_HEAD_MAX ? len : HTTP_HEAD_MAX;
    size_t i = *scanned < limit ? *scanned : limit;
    for (; i < limit; i++) {
        if (buf[i] == '\r') {
            if (i + 1 == len)
                break; /* its LF has not arrived yet */
            if (buf[i + 1] != '\n') {
                refuse(err, 400, "bare LF/CR in the request head");
                return -1;
            }
        } else if (buf[i] == '\n') {
            if (i == 0 || buf[i - 1] != '\r') {
                refuse(err, 400, "bare LF/CR in the request head");
                return -1;
            }
            /* An LF two bytes back was itself checked to follow a CR. */
            if (i >= 3 && buf[i - 2] == '\n')
                return (long)(i + 1);
        }
    }
    if (len >= HTTP_HEAD_MAX) {
        refuse(err, 431, "the request head is larger than %d bytes", HTTP_HEAD_MAX);
        return -1;
    }
    *scanned = i;
    return 0;
}

/* The line starting at `pos` ends at *eol, its CR. Line ends are checked
 * here as well as in http_head_end, so a head handed in some other way is
 * held to the same rules. */
static bool find_line_end(const char *buf, size_t len, size_t pos, size_t *eol,
                          struct http_parse_error *err)
{
    for (size_t i = pos; i < len; i++) {
        if (buf[i] == '\r' && i + 1 < len && buf[i + 1] == '\n') {
            *eol = i;
            return true;
        }
        if (buf[i] == '\r' || buf[i] == '\n') {
            refuse(err, 400, "bare LF/CR in the request head");
            return false;
        }
    }
    refuse(err, 400, "the request head does not end with an empty line");
    return false;
}

/* RFC 9112 2.3: "HTTP/" DIGIT "." DIGIT. */
static bool parse_version(struct http_head *h, const char *v, size_t len,
                          struct http_parse_error *err)
{
    char q[HTTP_QUOTE_MAX + 1];
    if (len != 8 || memcmp(v, "HTTP/", 5) != 0 || v[5] < '0' || v[5] > '9' || v[6] != '.' ||
        v[7] < '0' || v[7] > '9') {
        refuse(err, 400, "the request line must end in one space and HTTP/1.1, got \"%s\"",
               quote(q, v, len));
        return false;
    }
    if (v[5] != '1') {
        refuse(err, 505, "%s is not supported; use HTTP/1.1", quote(q, v, len));
        return false;
    }
    /* RFC 9110 6.2: a higher minor version is answered as the highest we
     * speak. */
    h->minor = v[7] == '0' ? 0 : 1;
    return true;
}

/* RFC 9112 3: method SP request-target SP HTTP-version, single spaces. */
static bool parse_request_line(struct http_head *h, const char *line, size_t len,
                               struct http_parse_error *err)
{
    char q[HTTP_QUOTE_MAX + 1];
    if (len == 0) {
        refuse(err, 400, "the request line is empty");
        return false;
    }
    size_t m = 0;
    while (m < len && is_tchar((unsigned char)line[m]))
        m++;
    if (m == 0 || m == len || line[m] != ' ') {
        refuse(err, 400, "the request line must start with a method and one space, got \"%s\"",
               quote(q, line, len));
        return false;
    }
    h->method = (struct http_span){line, m};

    size_t t0 = m + 1, t = t0;
    while (t < len && is_vchar((unsigned char)line[t]))
        t++;
    if (t - t0 > HTTP_TARGET_MAX) {
        refuse(err, 414, "the request target is longer than %d bytes", HTTP_TARGET_MAX);
        return false;
    }
    if (t == t0) {
        refuse(err, 400, "the request target is empty (one space must separate the parts of "
                         "the request line)");
        return false;
    }
    if (t == len) {
        refuse(err, 400, "the request line has no HTTP version: \"%s\"", quote(q, line, len));
        return false;
    }
    if (line[t] != ' ') {
        refuse(err, 400, "the request target has byte 0x%02X, which is not visible ASCII: \"%s\"",
               (unsigned char)line[t], quote(q, line + t0, len - t0));
        return false;
    }
    h->target = (struct http_span){line + t0, t - t0};
    return parse_version(h, line + t + 1, len - t - 1, err);
}

/* RFC 9112 5: field-name ":" OWS field-value OWS. */
static bool parse_header_line(struct http_head *h, const char *line, size_t len,
                              struct http_parse_error *err)
{
    char q[HTTP_QUOTE_MAX + 1];
    if (is_ows(line[0])) {
        /* RFC 9112 5.2: obsolete line folding, which we may reject. */
        refuse(err, 400, "a header line starts with whitespace (obsolete line folding): \"%s\"",
               quote(q, line, len));
        return false;
    }
    size_t n = 0;
    while (n < len && is_tchar((unsigned char)line[n]))
        n++;
    size_t colon = n;
    while (colon < len && is_ows(line[colon]))
        colon++;
    if (n > 0 && colon > n && colon < len && line[colon] == ':') {
        /* RFC 9112 5.1: a server must reject these; some intermediaries
         * drop the whitespace and read another header than we would. */
        refuse(err, 400, "whitespace before the colon of a header: \"%s\"", quote(q, line, len));
        return false;
    }
    if (n == 0 || n == len || line[n] != ':') {
        refuse(err, 400, "a header line must be a token name, a colon and a value, got \"%s\"",
               quote(q, line, len));
        return false;
    }
    size_t v0 = n + 1, v1 = len;
    while (v0 < v1 && is_ows(line[v0]))
        v0++;
    while (v1 > v0 && is_ows(line[v1 - 1]))
        v1--;
    for (size_t i = v0; i < v1; i++) {
        if (!is_value_byte((unsigned char)line[i])) {
            refuse(err, 400, "a header value has a control byte (0x%02X) in header \"%s\"",
                   (unsigned char)line[i], quote(q, line, n));
            return false;
        }
    }
    h->names[h->n_headers] = (struct http_span){line, n};
    h->values[h->n_headers] = (struct http_span){line + v0, v1 - v0};
    h->n_headers++;
    return true;
}

bool http_head_parse(struct http_head *h, const char *buf, size_t len,
                     struct http_parse_error *err)
{
    h->n_headers = 0;
    size_t eol;
    if (!find_line_end(buf, len, 0, &eol, err) || !parse_request_line(h, buf, eol, err))
        return false;
    for (size_t pos = eol + 2;; pos = eol + 2) {
        if (!find_line_end(buf, len, pos, &eol, err))
            return false;
        if (eol == pos)
            return true; /* the blank line that ends the head */
        if (h->n_headers == HTTP_HEADERS_MAX) {
            refuse(err, 431, "the request has more than %d headers", HTTP_HEADERS_MAX);
            return false;
        }
        if (!parse_header_line(h, buf + pos, eol - pos, err))
            return false;
    }
}

const struct http_span *http_head_find(const struct http_head *h, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < h->n_headers; i++)
        if (h->names[i].len == len && strncasecmp(h->names[i].p, name, len) == 0)
            return &h->values[i];
    return NULL;
}

bool http_list_next(struct http_span value, size_t *pos, struct http_span *member)
{
    size_t i = *pos;
    while (i < value.len) {
        while (i < value.len && (value.p[i] == ' ' || value.p[i] == '\t' || value.p[i] == ','))
            i++;
        const size_t start = i;
        while (i < value.len && value.p[i] != ',')
            i++;
        size_t end = i;
        while (end > start && (value.p[end - 1] == ' ' || value.p[end - 1] == '\t'))
            end--;
        if (end > start) {
            *pos = i;
            *member = (struct http_span){value.p + start, end - start};
            return true;
        }
    }
    *pos = i;
    return false;
}

/* Where the path of an absolute-form target ("http://host:port/path")
 * starts, after its scheme and authority; 0 for any other form. */
static size_t authority_end(struct http_span target)
{
    size_t i;
    if (target.len >= 7 && strncasecmp(target.p, "http://", 7) == 0)
        i = 7;
    else if (target.len >= 8 && strncasecmp(target.p, "https://", 8) == 0)
        i = 8;
    else
        return 0;
    while (i < target.len && target.p[i] != '/' && target.p[i] != '?' && target.p[i] != '#')
        i++;
    return i;
}

bool http_target_path(struct http_span target, char *out, size_t size)
{
    size_t n = 0;
    const size_t start = authority_end(target);
    /* RFC 9112 3.2.2: an absolute-form target with no path names "/". */
    if (start > 0 && (start == target.len || target.p[start] != '/') && size > 1)
        out[n++] = '/';
    /* The whole path is decoded, past what fits, so a NUL is found
     * wherever it is. */
    for (size_t i = start; i < target.len && target.p[i] != '?' && target.p[i] != '#'; i++) {
        unsigned char c = (unsigned char)target.p[i];
        if (c == '%' && i + 2 < target.len) {
            int hi = hex_value((unsigned char)target.p[i + 1]);
            int lo = hex_value((unsigned char)target.p[i + 2]);
            if (hi >= 0 && lo >= 0) {
                c = (unsigned char)(hi * 16 + lo);
                i += 2;
            }
        }
        if (c == '\0') {
            if (size > 0)
                out[0] = '\0';
            return false;
        }
        if (n + 1 < size)
            out[n++] = (char)c;
    }
    if (size > 0)
        out[n] = '\0';
    return true;
}

/* RFC 9112 7.1: chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF,
 * last-chunk = 1*"0" [ chunk-ext ] CRLF, then trailer-section CRLF. */
enum chunked_state {
    CHUNKED_SIZE,          /* the first hex digit of a chunk size */
    CHUNKED_SIZE_MORE,     /* more digits, ';' or CR */
    CHUNKED_EXT,           /* an extension, up to CR */
    CHUNKED_SIZE_LF,       /* the LF of the size line */
    CHUNKED_DATA,          /* `remaining` bytes of data */
    CHUNKED_DATA_CR,       /* the CRLF after the data */
    CHUNKED_DATA_LF,
    CHUNKED_TRAILER_START, /* a trailer line's first byte, or the final CR */
    CHUNKED_TRAILER_NAME,  /* a trailer field's name, up to ':' */
    CHUNKED_TRAILER_VALUE, /* a trailer field's value, up to CR */
    CHUNKED_TRAILER_LF,    /* the LF of a trailer line */
    CHUNKED_END_LF,        /* the LF of the final empty line */
    CHUNKED_DONE,
    CHUNKED_FAILED,
};

void http_chunked_begin(struct http_chunked *c)
{
    memset(c, 0, sizeof *c);
    c->state = CHUNKED_SIZE;
}

/* One more byte of a chunk size and its extensions, the CRLF not counted. */
static bool chunk_line_byte(struct http_chunked *c, struct http_parse_error *err)
{
    if (++c->line_bytes > CHUNK_LINE_MAX) {
        refuse(err, 400, "a chunk size line is longer than %d bytes", CHUNK_LINE_MAX);
        return false;
    }
    return true;
}

/* One byte of the trailer section: field lines, read and dropped. */
static bool trailer_step(struct http_chunked *c, unsigned char b, struct http_parse_error *err)
{
    if (++c->line_bytes > CHUNK_TRAILERS_MAX) {
        refuse(err, 400, "the chunked trailers are larger than %d bytes", CHUNK_TRAILERS_MAX);
        return false;
    }
    switch (c->state) {
    case CHUNKED_TRAILER_START:
        if (b == '\r') {
            c->state = CHUNKED_END_LF;
        } else if (is_tchar(b)) {
            c->state = CHUNKED_TRAILER_NAME;
        } else {
            refuse(err, 400, "a chunked trailer line must start with a field name, got byte 0x%02X",
                   b);
            return false;
        }
        return true;
    case CHUNKED_TRAILER_NAME:
        if (b == ':') {
            c->state = CHUNKED_TRAILER_VALUE;
        } else if (!is_tchar(b)) {
            refuse(err, 400, "a chunked trailer name has byte 0x%02X before its colon", b);
            return false;
        }
        return true;
    case CHUNKED_TRAILER_VALUE:
        if (b == '\r') {
            c->state = CHUNKED_TRAILER_LF;
        } else if (!is_value_byte(b)) {
            refuse(err, 400, "a chunked trailer value has a control byte (0x%02X)", b);
            return false;
        }
        return true;
    default: /* CHUNKED_TRAILER_LF, CHUNKED_END_LF */
        if (b != '\n') {
            refuse(err, 400, "bare CR in the chunked body");
            return false;
        }
        c->state = c->state == CHUNKED_END_LF ? CHUNKED_DONE : CHUNKED_TRAILER_START;
        return true;
    }
}

/* One byte of framing (anything but chunk data). Returns false with `err`
 * set when the byte breaks the grammar. */
static bool chunked_step(struct http_chunked *c, unsigned char b, struct http_parse_error *err)
{
    if (b == '\n' && c->state != CHUNKED_SIZE_LF && c->state != CHUNKED_DATA_LF &&
        c->state != CHUNKED_TRAILER_LF && c->state != CHUNKED_END_LF) {
        refuse(err, 400, "bare LF in the chunked body");
        return false;
    }
    switch (c->state) {
    case CHUNKED_SIZE:
    case CHUNKED_SIZE_MORE:
        if (b != '\r' && !chunk_line_byte(c, err))
            return false;
        if (hex_value(b) >= 0) {
            if (c->digits == CHUNK_DIGITS_MAX) {
                refuse(err, 400, "chunk size too large (more than %d hex digits)",
                       CHUNK_DIGITS_MAX);
                return false;
            }
            c->digits++;
            c->remaining = c->remaining * 16 + (uint64_t)hex_value(b);
            c->state = CHUNKED_SIZE_MORE;
        } else if (c->state == CHUNKED_SIZE_MORE && b == ';') {
            c->state = CHUNKED_EXT;
        } else if (c->state == CHUNKED_SIZE_MORE && b == '\r') {
            c->state = CHUNKED_SIZE_LF;
        } else {
            refuse(err, 400, "a chunk size must be hex digits then ';' or CRLF, got byte 0x%02X",
                   b);
            return false;
        }
        return true;
    case CHUNKED_EXT:
        if (b != '\r' && !chunk_line_byte(c, err))
            return false;
        if (b == '\r') {
            c->state = CHUNKED_SIZE_LF;
        } else if (!is_value_byte(b)) {
            refuse(err, 400, "a chunk extension has a control byte (0x%02X)", b);
            return false;
        }
        return true;
    case CHUNKED_SIZE_LF:
        if (b != '\n') {
            refuse(err, 400, "bare CR in the chunked body");
            return false;
        }
        c->line_bytes = 0;
        c->digits = 0;
        c->state = c->remaining == 0 ? CHUNKED_TRAILER_START : CHUNKED_DATA;
        return true;
    case CHUNKED_DATA_CR:
    case CHUNKED_DATA_LF:
        if (b != (c->state == CHUNKED_DATA_CR ? '\r' : '\n')) {
            refuse(err, 400, "chunk data is not followed by CRLF");
            return false;
        }
        c->state = c->state == CHUNKED_DATA_CR ? CHUNKED_DATA_LF : CHUNKED_SIZE;
        return true;
    default:
        return trailer_step(c, b, err);
    }
}

enum http_chunked_status http_chunked_feed(struct http_chunked *c, const char *in, size_t len,
                                           size_t *consumed,
                                           void (*on_data)(void *arg, const char *p, size_t n),
                                           void *arg, struct http_parse_error *err)
{
    size_t i = 0;
    *consumed = 0;
    if (c->state == CHUNKED_DONE)
        return HTTP_CHUNKED_DONE;
    if (c->state == CHUNKED_FAILED) {
        refuse(err, 400, "the chunked body was already refused");
        return HTTP_CHUNKED_ERROR;
    }
    while (i < len) {
        if (c->state == CHUNKED_DATA) {
            size_t n = len - i;
            if (n > c->remaining)
                n = (size_t)c->remaining;
            on_data(arg, in + i, n);
            i += n;
            c->remaining -= n;
            if (c->remaining == 0)
                c->state = CHUNKED_DATA_CR;
            continue;
        }
        if (!chunked_step(c, (unsigned char)in[i], err)) {
            c->state = CHUNKED_FAILED;
            *consumed = i; /* the byte at fault is not used */
            return HTTP_CHUNKED_ERROR;
        }
        i++;
        if (c->state == CHUNKED_DONE) {
            *consumed = i; /* what follows is the next request */
            return HTTP_CHUNKED_DONE;
        }
    }
    *consumed = i;
    return HTTP_CHUNKED_MORE;
}
