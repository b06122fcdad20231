/* One table from error kind to HTTP status and error_type, the message
 * sanitiser, and the two error envelopes. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "json_writer.h"
#include "proto.h"
#include "proto_internal.h"
#include "route_table.h"

static const struct {
    int status;
    const char *type;
} error_table[PROTO_ERR_COUNT] = {
    [PROTO_ERR_MALFORMED] = {400, "validation"},
    [PROTO_ERR_UNAUTHORIZED] = {401, "unauthorized"},
    [PROTO_ERR_NOT_FOUND] = {404, "not_found"},
    [PROTO_ERR_METHOD] = {405, "method_not_allowed"},
    [PROTO_ERR_TOO_LARGE] = {413, "payload_too_large"},
    [PROTO_ERR_INVALID] = {422, "validation"},
    [PROTO_ERR_OVERLOADED] = {429, "overloaded"},
    [PROTO_ERR_INTERNAL] = {500, "internal"},
    [PROTO_ERR_UNAVAILABLE] = {503, "unavailable"},
    [PROTO_ERR_NOT_IMPLEMENTED] = {501, "not_implemented"},
    [PROTO_ERR_EXPECTATION] = {417, "expectation_failed"},
};

int proto_error_status(enum proto_error_kind kind)
{
    return kind < PROTO_ERR_COUNT ? error_table[kind].status : 500;
}

const char *proto_error_type(enum proto_error_kind kind)
{
    return kind < PROTO_ERR_COUNT ? error_table[kind].type : "internal";
}

/* Append the \xNN form of byte c at *o when it fits before end. */
static bool put_hex_escape(char **o, const char *end, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    if (end - *o < 4)
        return false;
    (*o)[0] = '\\';
    (*o)[1] = 'x';
    (*o)[2] = hex[c >> 4];
    (*o)[3] = hex[c & 15];
    *o += 4;
    return true;
}

/* Core of proto_quote and proto_sanitize: copy up to max_chars characters of
 * src into [*o, end), escaping quotes (when `quote`), control characters and
 * invalid UTF-8. Returns false when it stopped before the end of src. */
static bool copy_escaped(char **o, const char *end, const char *src, size_t len, bool quote,
                         size_t max_chars)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t i = 0, chars = 0;
    while (i < len) {
        if (chars == max_chars)
            return false;
        unsigned char c = s[i];
        size_t n = utf8_sequence_length(s + i, len - i);
        if (n == 0 || c < 0x20 || c == 0x7F) {
            if (!put_hex_escape(o, end, c))
                return false;
            i++;
        } else if (quote && (c == '"' || c == '\\')) {
            if (end - *o < 2)
                return false;
            *(*o)++ = '\\';
            *(*o)++ = (char)c;
            i++;
        } else {
            if ((size_t)(end - *o) < n)
                return false;
            memcpy(*o, s + i, n);
            *o += n;
            i += n;
        }
        chars++;
    }
    return true;
}

const char *proto_quote(char buf[PROTO_QUOTE_SIZE], const char *s, size_t len)
{
    char *o = buf;
    /* Room for the closing quote, "..." and the NUL. */
    const char *end = buf + PROTO_QUOTE_SIZE - 5;
    *o++ = '"';
    bool whole = copy_escaped(&o, end, s, len, true, PROTO_QUOTE_MAX_CHARS);
    if (!whole) {
        memcpy(o, "...", 3);
        o += 3;
    }
    *o++ = '"';
    *o = '\0';
    return buf;
}

void proto_sanitize(char *dst, size_t cap, const char *src, size_t len)
{
    if (cap == 0)
        return;
    char *o = dst;
    copy_escaped(&o, dst + cap - 1, src, len, false, SIZE_MAX);
    *o = '\0';
}

void proto_error_set(struct proto_error *err, enum proto_error_kind kind, const char *fmt, ...)
{
    if (err == NULL)
        return;
    char raw[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    size_t len = (size_t)n < sizeof raw ? (size_t)n : sizeof raw - 1;
    err->kind = kind;
    /* A cut may have split a UTF-8 sequence; the sanitiser escapes the
     * stray bytes rather than emit invalid text. */
    proto_sanitize(err->message, sizeof err->message, raw, len);
}

char *proto_error_body(enum proto_route route, const struct proto_error *err, size_t *len)
{
    struct json_writer w;
    json_writer_init(&w, 128 + strlen(err->message));
    json_writer_begin_object(&w);
    json_writer_key(&w, "error");
    enum proto_envelope envelope =
        route < PROTO_ROUTE_COUNT ? proto_routes[route].envelope : PROTO_ENVELOPE_OURS;
    if (envelope == PROTO_ENVELOPE_OPENAI) {
        /* OpenAI's envelope: type is the coarse class, code ours. */
        json_writer_begin_object(&w);
        json_writer_key(&w, "message");
        json_writer_cstring(&w, err->message);
        json_writer_key(&w, "type");
        json_writer_cstring(&w, proto_error_status(err->kind) >= 500 ? "server_error"
                                                                      : "invalid_request_error");
        json_writer_key(&w, "code");
        json_writer_cstring(&w, proto_error_type(err->kind));
        json_writer_end_object(&w);
    } else {
        json_writer_cstring(&w, err->message);
        json_writer_key(&w, "error_type");
        json_writer_cstring(&w, proto_error_type(err->kind));
    }
    json_writer_end_object(&w);
    return json_writer_finish(&w, len);
}
