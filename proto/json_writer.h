/* A small, fast JSON writer: one growable buffer, commas placed by a depth
 * stack, strings escaped for JSON and for JavaScript embedding, floats as the
 * shortest text that reads back as the same float32.
 *
 * Errors are sticky: after an allocation failure or a non-finite float every
 * call is a no-op and json_writer_finish returns NULL, so renderers check once
 * at the end. Not thread-safe; one writer per thread. */
#ifndef PROTO_JSON_WRITER_H
#define PROTO_JSON_WRITER_H

#include <stdbool.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Nesting deeper than this is a programming error (our bodies need 4). */
#define JSON_WRITER_MAX_DEPTH 32

/* Longest text json_writer_format_float writes, NUL included. */
#define JSON_WRITER_FLOAT_MAX 32

struct json_writer {
    char *buf;
    size_t len;
    size_t cap;
    bool nomem;       /* an allocation failed */
    bool nonfinite;   /* a NaN or infinity was offered; JSON cannot carry it */
    bool after_key;   /* the next value follows a key: no comma */
    unsigned depth;
    bool has_value[JSON_WRITER_MAX_DEPTH]; /* a value was written at this depth */
};

/* Start empty; `reserve` bytes are allocated up front (0: on first write). */
void json_writer_init(struct json_writer *w, size_t reserve);

/* Release the buffer unless json_writer_finish handed it out. NULL-safe. */
void json_writer_free(struct json_writer *w);

/* Hand the NUL-terminated text to the caller (free() it) and reset `w`.
 * Returns NULL, freeing everything, when an allocation failed or a float
 * was not finite. */
char *json_writer_finish(struct json_writer *w, size_t *len);

/* True when nothing has gone wrong so far. */
bool json_writer_ok(const struct json_writer *w);

void json_writer_begin_object(struct json_writer *w);
void json_writer_end_object(struct json_writer *w);
void json_writer_begin_array(struct json_writer *w);
void json_writer_end_array(struct json_writer *w);

/* An object key; the next call writes its value. */
void json_writer_key(struct json_writer *w, const char *key);

/* A string of `len` bytes. Each byte that is not part of valid UTF-8
 * becomes U+FFFD, so the output is always valid JSON; control characters,
 * '"', '\\', U+2028 and U+2029 are escaped. */
void json_writer_string(struct json_writer *w, const char *s, size_t len);
void json_writer_cstring(struct json_writer *w, const char *s);

void json_writer_int(struct json_writer *w, int64_t v);
void json_writer_bool(struct json_writer *w, bool v);
void json_writer_null(struct json_writer *w);

/* A float32 as its shortest round-trip text; a non-finite value poisons the
 * writer (see above). */
void json_writer_float(struct json_writer *w, float v);

/* An array of `n` floats: the hot path for embeddings. */
void json_writer_float_array(struct json_writer *w, const float *v, size_t n);

/* A value parsed by jansson, written again (an echoed document). Nesting
 * deeper than the writer's JSON_WRITER_MAX_DEPTH poisons it (out of memory);
 * callers refuse such values when parsing. */
void json_writer_json(struct json_writer *w, const json_t *v);

/* A string holding the standard base64 (RFC 4648, padded) of `n` bytes. */
void json_writer_base64(struct json_writer *w, const void *data, size_t n);

/* Write the shortest decimal text that strtof reads back as exactly `v`
 * (closest to `v` among the shortest; ties to even digit), formatted as
 * Python's repr does for floats ("0.1", "1.0", "-0.0", "1e-05",
 * "3.4028235e+38"). Writes at most JSON_WRITER_FLOAT_MAX bytes including
 * the NUL and returns the length; 0 (and "") for NaN and infinities. */
size_t json_writer_format_float(float v, char *out);

#endif
