/* A small, strict reader for the subset of TOML 1.0 that bertserve's config
 * file uses (https://toml.io/en/v1.0.0):
 *
 *   # comments, to the end of a line, also after a value
 *   [section]            bare names only
 *   key = "basic"        escapes \" \\ \b \t \n \f \r \uXXXX \UXXXXXXXX
 *   key = 'literal'      no escapes
 *   key = -1_000         decimal integers, optional sign and `_` separators
 *   key = true           booleans
 *
 * Anything else TOML allows (dotted or quoted keys, arrays, inline tables,
 * multi-line strings, floats, dates, hex/octal/binary integers, [[arrays of
 * tables]]) is rejected with a message that says so, as are the things TOML
 * itself forbids: duplicate keys, a section opened twice, invalid UTF-8,
 * control characters, leading zeros, integers outside 64 bits. The reader
 * knows nothing of which keys exist; the caller checks that.
 *
 * Every function is reentrant; a document is not shared between threads. */
#ifndef SERVER_TOML_H
#define SERVER_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum toml_type {
    TOML_STRING,
    TOML_INTEGER,
    TOML_BOOLEAN,
};

struct toml_value {
    enum toml_type type;
    union {
        char *string;    /* TOML_STRING: malloc'd, NUL-terminated, valid UTF-8 */
        int64_t integer; /* TOML_INTEGER */
        bool boolean;    /* TOML_BOOLEAN */
    };
};

/* One `key = value` line. `section` is "" for keys before any header. */
struct toml_entry {
    char *section;       /* malloc'd */
    char *key;           /* malloc'd */
    struct toml_value value;
    int line;            /* 1-based */
};

/* A `[section]` header, so that the caller can reject an unknown section
 * even when it holds no keys. */
struct toml_section {
    char *name;          /* malloc'd */
    int line;
};

/* Entries and headers in file order. Owns everything it points to. */
struct toml_doc {
    struct toml_entry *entries;
    size_t count;
    struct toml_section *sections;
    size_t n_sections;
};

/* Where and why parsing failed. `line` is 1-based, or 0 when the failure is
 * not about a line (unreadable file, out of memory). `message` is one line
 * and does not repeat the line number. */
struct toml_error {
    int line;
    char message[256];
};

/* Parse `len` bytes of `text` (need not be NUL-terminated). On success fills
 * `doc`, which the caller releases with toml_doc_free; on failure `doc` is
 * empty and `err` (may be NULL) says why. */
bool toml_parse(const char *text, size_t len, struct toml_doc *doc, struct toml_error *err);

/* Read and parse the file at `path` (at most 1 MiB); as toml_parse. */
bool toml_parse_file(const char *path, struct toml_doc *doc, struct toml_error *err);

/* Release everything `doc` owns and empty it. NULL and an empty doc are no-ops. */
void toml_doc_free(struct toml_doc *doc);

/* Parse `len` bytes as a TOML decimal integer: optional sign, digits with
 * single `_` between them, no leading zeros. The config layer uses it for
 * environment variables and flags, so every source reads numbers alike. */
bool toml_parse_integer(const char *text, size_t len, int64_t *out);

/* True if `len` bytes of `text` are valid UTF-8 (RFC 3629), as every TOML
 * document must be; the config layer holds environment variables and flags
 * to the same rule. */
bool toml_utf8_valid(const char *text, size_t len);

/* "string", "integer" or "boolean". */
const char *toml_type_name(enum toml_type type);

#endif
