/* Status codes and error messages shared by every libbert function.
 *
 * Functions that can fail return an `enum bert_status` and, when given a
 * non-NULL `struct bert_error *`, fill it with one human-readable sentence
 * naming the file, tensor or input at fault. The message never contains a
 * newline. */
#ifndef BERT_STATUS_H
#define BERT_STATUS_H

#include <stddef.h>

enum bert_status {
    BERT_OK = 0,
    BERT_E_IO,          /* a file is missing or unreadable */
    BERT_E_FORMAT,      /* a file is corrupt or disagrees with another */
    BERT_E_UNSUPPORTED, /* well-formed, but a feature we do not implement */
    BERT_E_NOMEM,       /* an allocation failed */
    BERT_E_INVALID,     /* a caller's argument or input is invalid */
    BERT_E_TOO_LONG,    /* an input exceeds the token limit and truncation is off */
};

struct bert_error {
    enum bert_status status;
    char message[512];
};

/* Short stable name of a status ("ok", "io", "format", ...). */
const char *bert_status_str(enum bert_status status);

/* Fill `err` (may be NULL) with `status` and a printf-formatted message;
 * returns `status` so callers can `return bert_error_set(...)`. */
enum bert_status bert_error_set(struct bert_error *err, enum bert_status status,
                                const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
