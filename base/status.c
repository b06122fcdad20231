#include "status.h"

#include <stdarg.h>
#include <stdio.h>

const char *bert_status_str(enum bert_status status)
{
    switch (status) {
    case BERT_OK: return "ok";
    case BERT_E_IO: return "io";
    case BERT_E_FORMAT: return "format";
    case BERT_E_UNSUPPORTED: return "unsupported";
    case BERT_E_NOMEM: return "out of memory";
    case BERT_E_INVALID: return "invalid";
    case BERT_E_TOO_LONG: return "too long";
    }
    return "unknown";
}

enum bert_status bert_error_set(struct bert_error *err, enum bert_status status,
                                const char *fmt, ...)
{
    if (err == NULL)
        return status;
    err->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    /* One line per message: logs and JSON errors rely on it. */
    for (char *p = err->message; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return status;
}
