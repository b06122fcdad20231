/* Logging: one line per event on stderr, as text or JSON. The level is
 * checked before anything is formatted (redis serverLog). Thread-safe:
 * each line is built in a buffer and written with one call, or, while a
 * thread holds its lines (log_hold), kept with that thread's others until
 * log_release. */
#ifndef SRV_LOG_H
#define SRV_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };
enum log_format { LOG_FORMAT_TEXT, LOG_FORMAT_JSON };

/* Call once before other threads start; the default is info, text. */
void log_init(enum log_level level, enum log_format format);
bool log_enabled(enum log_level level);

/* Between log_hold and log_release the calling thread's lines are kept,
 * in order, and written together by log_release (or as soon as they fill
 * the buffer): the event loop logs a batch of completed requests with one
 * write(2) instead of one per request. One thread at a time. */
void log_hold(void);
void log_release(void);

/* "debug" | "info" | "warn" | "error"; false when unknown. */
bool log_level_parse(const char *name, enum log_level *out);
/* "text" | "json"; false when unknown. */
bool log_format_parse(const char *name, enum log_format *out);

/* A free-form message. In JSON format it becomes {"ts","level","msg"}. */
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The one line logged per HTTP request. */
struct log_request {
    const char *method;
    const char *path;
    int status;
    size_t inputs;
    size_t tokens;
    double queue_ms;
    double inference_ms;
    double total_ms;
    const char *error; /* NULL on success */
};
void log_request(const struct log_request *r);

#endif
