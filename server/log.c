#include "log.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum log_level log_min_level = LOG_INFO;
static enum log_format log_fmt = LOG_FORMAT_TEXT;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

/* The lines of the thread between log_hold and log_release: each thread
 * its own (every loop thread holds its completions' lines). */
static _Thread_local bool holding;
static _Thread_local struct {
    char buf[32768];
    size_t len;
} held;

static void write_held(void)
{
    if (held.len > 0)
        fwrite(held.buf, 1, held.len, stderr);
    held.len = 0;
}

void log_hold(void)
{
    holding = true;
}

void log_release(void)
{
    write_held();
    holding = false;
}

void log_init(enum log_level level, enum log_format format)
{
    log_min_level = level;
    log_fmt = format;
}

bool log_enabled(enum log_level level)
{
    return level >= log_min_level;
}

bool log_level_parse(const char *name, enum log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(name, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return true;
        }
    }
    return false;
}

bool log_format_parse(const char *name, enum log_format *out)
{
    if (strcmp(name, "text") == 0)
        *out = LOG_FORMAT_TEXT;
    else if (strcmp(name, "json") == 0)
        *out = LOG_FORMAT_JSON;
    else
        return false;
    return true;
}

/* A line under construction; appends are bounded and never fail. */
struct line {
    char buf[2048];
    size_t len;
};

static void line_printf(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line_printf(struct line *l, const char *fmt, ...)
{
    if (l->len >= sizeof l->buf - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(l->buf + l->len, sizeof l->buf - l->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        l->len += (size_t)n < sizeof l->buf - l->len ? (size_t)n : sizeof l->buf - 1 - l->len;
}

/* Text values go through here: JSON-escaped in JSON format, and control
 * characters escaped in both so one event is always one line. */
/* Literal text, and numbers written by hand: the request line is written
 * once per request on the loop thread, where vsnprintf's number paths were
 * a tenth of its user time. */
static void line_lit(struct line *l, const char *s)
{
    size_t n = strlen(s);
    if (n > sizeof l->buf - 1 - l->len)
        n = sizeof l->buf - 1 - l->len;
    memcpy(l->buf + l->len, s, n);
    l->len += n;
    l->buf[l->len] = '\0';
}

static void line_uint(struct line *l, uint64_t v)
{
    char digits[24];
    char *p = digits + sizeof digits - 1;
    *p = '\0';
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    line_lit(l, p);
}

/* Milliseconds to the microsecond, as "%.3f" writes a non-negative value. */
static void line_ms(struct line *l, double ms)
{
    uint64_t us = ms > 0.0 ? (uint64_t)(ms * 1000.0 + 0.5) : 0;
    line_uint(l, us / 1000);
    char frac[5] = {'.', (char)('0' + us / 100 % 10), (char)('0' + us / 10 % 10),
                    (char)('0' + us % 10), '\0'};
    line_lit(l, frac);
}

static void line_text(struct line *l, const char *s)
{
    for (; *s && l->len < sizeof l->buf - 8; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            l->buf[l->len++] = '\\';
            l->buf[l->len++] = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            line_printf(l, "\\u%04x", c);
        } else {
            l->buf[l->len++] = (char)c;
        }
    }
    l->buf[l->len] = '\0';
}

static void line_begin(struct line *l, enum log_level level)
{
    /* The date and time to the second, formatted once a second per thread. */
    static _Thread_local time_t stamp_second = -1;
    static _Thread_local char stamp[32];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (ts.tv_sec != stamp_second) {
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
        stamp_second = ts.tv_sec;
    }
    long ms = ts.tv_nsec / 1000000;
    char millis[6] = {'.', (char)('0' + ms / 100), (char)('0' + ms / 10 % 10),
                      (char)('0' + ms % 10), 'Z', '\0'};
    l->len = 0;
    l->buf[0] = '\0';
    line_lit(l, log_fmt == LOG_FORMAT_JSON ? "{\"ts\":\"" : "");
    line_lit(l, stamp);
    line_lit(l, millis);
    if (log_fmt == LOG_FORMAT_JSON) {
        line_lit(l, "\",\"level\":\"");
        line_lit(l, level_names[level]);
        line_lit(l, "\"");
    } else {
        static const char *const padded[] = {"debug ", "info  ", "warn  ", "error "};
        line_lit(l, " ");
        line_lit(l, padded[level]);
    }
}

static void line_end(struct line *l)
{
    if (log_fmt == LOG_FORMAT_JSON)
        line_printf(l, "}");
    if (l->len > sizeof l->buf - 2)
        l->len = sizeof l->buf - 2;
    l->buf[l->len++] = '\n';
    if (!holding) {
        fwrite(l->buf, 1, l->len, stderr);
        return;
    }
    if (held.len + l->len > sizeof held.buf)
        write_held();
    memcpy(held.buf + held.len, l->buf, l->len);
    held.len += l->len;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (!log_enabled(level))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct line l;
    line_begin(&l, level);
    if (log_fmt == LOG_FORMAT_JSON)
        line_printf(&l, ",\"msg\":\"");
    line_text(&l, msg);
    if (log_fmt == LOG_FORMAT_JSON)
        line_printf(&l, "\"");
    line_end(&l);
}

/* A field's name: ` name=` in text, `,"name":` in JSON; its value follows. */
static void line_field(struct line *l, const char *name)
{
    bool json = log_fmt == LOG_FORMAT_JSON;
    line_lit(l, json ? ",\"" : " ");
    line_lit(l, name);
    line_lit(l, json ? "\":" : "=");
}

/* A quoted text field: quoted in text too, so a path with spaces cannot
 * read as fields of its own. */
static void line_quoted(struct line *l, const char *name, const char *value)
{
    line_field(l, name);
    line_lit(l, "\"");
    line_text(l, value);
    line_lit(l, "\"");
}

void log_request(const struct log_request *r)
{
    /* 503 is how /ready and /health say "not yet"; only 500 is our fault. */
    enum log_level level = r->status == 500 ? LOG_ERROR : LOG_INFO;
    if (!log_enabled(level))
        return;
    struct line l;
    line_begin(&l, level);
    line_lit(&l, log_fmt == LOG_FORMAT_JSON ? ",\"msg\":\"request\"" : "request");
    line_quoted(&l, "method", r->method);
    line_quoted(&l, "path", r->path);
    line_field(&l, "status");
    line_uint(&l, (uint64_t)r->status);
    line_field(&l, "inputs");
    line_uint(&l, r->inputs);
    line_field(&l, "tokens");
    line_uint(&l, r->tokens);
    line_field(&l, "queue_ms");
    line_ms(&l, r->queue_ms);
    line_field(&l, "inference_ms");
    line_ms(&l, r->inference_ms);
    line_field(&l, "total_ms");
    line_ms(&l, r->total_ms);
    if (r->error)
        line_quoted(&l, "error", r->error);
    line_end(&l);
}
