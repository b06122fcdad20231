#include "fileutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Checkpoint JSON files are small; anything larger is not one of them. */
#define FILE_MAX_BYTES (512u << 20)

bool file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static const char *file_kind(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "a device";
    return "not a regular file";
}

int file_open_regular(const char *path, struct stat *sb, struct bert_error *err)
{
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
     * writer, forever, before fstat could tell what it is. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        bert_error_set(err, BERT_E_IO, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, sb) != 0 || !S_ISREG(sb->st_mode)) {
        bert_error_set(err, BERT_E_IO, "%s: is %s, not a regular file", path,
                       file_kind(sb->st_mode));
        close(fd);
        return -1;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return fd;
}

enum bert_status file_read_all(const char *path, char **out, size_t *len,
                               struct bert_error *err)
{
    *out = NULL;
    *len = 0;
    struct stat sb = {0};
    int fd = file_open_regular(path, &sb, err);
    if (fd < 0)
        return BERT_E_IO;
    if ((size_t)sb.st_size > FILE_MAX_BYTES) {
        close(fd);
        return bert_error_set(err, BERT_E_IO, "%s: %lld bytes, more than the %u a checkpoint's "
                              "text file may have", path, (long long)sb.st_size, FILE_MAX_BYTES);
    }
    size_t size = (size_t)sb.st_size;
    char *buf = malloc(size + 1);
    if (buf == NULL) {
        close(fd);
        return bert_error_set(err, BERT_E_NOMEM, "%s: out of memory reading %zu bytes", path,
                              size);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (got != size) {
        free(buf);
        return bert_error_set(err, BERT_E_IO, "%s: short read", path);
    }
    buf[size] = '\0';
    *out = buf;
    *len = size;
    return BERT_OK;
}

/* The length of the number literal at text[i], and whether it is an integer
 * (no fraction, no exponent). */
static size_t number_literal(const char *text, size_t len, size_t i, bool *integer)
{
    size_t k = i;
    *integer = true;
    while (k < len && strchr("+-0123456789.eE", text[k]) != NULL && text[k] != '\0') {
        if (text[k] == '.' || text[k] == 'e' || text[k] == 'E')
            *integer = false;
        k++;
    }
    return k - i;
}

/* An integer literal outside int64_t: more than 18 digits and strtoll says so. */
static bool integer_overflows(const char *lit, size_t n)
{
    size_t digits = n - (lit[0] == '-');
    if (digits <= 18)
        return false;
    char buf[64];
    if (n >= sizeof buf)
        return true;
    memcpy(buf, lit, n);
    buf[n] = '\0';
    errno = 0;
    (void)strtoll(buf, NULL, 10);
    return errno == ERANGE;
}

/* `text` with ".0" after every integer literal beyond 64 bits, so jansson
 * reads it as a real; strings are copied untouched. NULL when out of
 * memory. */
static char *widen_big_integers(const char *text, size_t len, size_t *out_len)
{
    /* Each widened literal has at least 19 digits and grows by 2. */
    size_t cap = len + 2 * (len / 19 + 1) + 1;
    char *out = malloc(cap);
    if (out == NULL)
        return NULL;
    size_t o = 0;
    bool in_string = false;
    for (size_t i = 0; i < len;) {
        char c = text[i];
        if (in_string) {
            out[o++] = text[i++];
            if (c == '\\' && i < len)
                out[o++] = text[i++];
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"' || !(c == '-' || (c >= '0' && c <= '9'))) {
            in_string = c == '"';
            out[o++] = text[i++];
            continue;
        }
        bool integer;
        size_t n = number_literal(text, len, i, &integer);
        memcpy(out + o, text + i, n);
        o += n;
        if (integer && integer_overflows(text + i, n)) {
            memcpy(out + o, ".0", 2);
            o += 2;
        }
        i += n;
    }
    out[o] = '\0';
    *out_len = o;
    return out;
}

json_t *file_parse_json(const char *text, size_t len, size_t flags, json_error_t *jerr)
{
    json_t *root = json_loadb(text, len, flags, jerr);
    if (root != NULL || json_error_code(jerr) != json_error_numeric_overflow)
        return root;
    size_t wide_len;
    char *wide = widen_big_integers(text, len, &wide_len);
    if (wide == NULL)
        return NULL; /* jerr still says why the text itself failed */
    /* Any other fault is now the one to report (same lines, columns moved
     * by the ".0"s before it on its line). */
    root = json_loadb(wide, wide_len, flags, jerr);
    free(wide);
    return root;
}

enum bert_status file_load_json(const char *path, json_t **out, struct bert_error *err)
{
    char *text;
    size_t len;
    enum bert_status st = file_read_all(path, &text, &len, err);
    if (st != BERT_OK)
        return st;
    json_error_t jerr;
    *out = file_parse_json(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (*out == NULL)
        return bert_error_set(err, BERT_E_FORMAT, "%s:%d:%d: invalid JSON: %s", path, jerr.line,
                              jerr.column, jerr.text);
    return BERT_OK;
}

enum bert_status file_mkdirs(const char *path, struct bert_error *err)
{
    char buf[4096];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof buf)
        return bert_error_set(err, BERT_E_INVALID, "invalid folder path '%.64s'", path);
    memcpy(buf, path, len + 1);
    for (char *p = buf + 1; ; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return bert_error_set(err, BERT_E_IO, "%s: cannot create: %s", buf, strerror(errno));
        if (saved == '\0')
            return BERT_OK;
        *p = saved;
    }
}

enum bert_status file_copy(const char *src, const char *dst, struct bert_error *err)
{
    char *text;
    size_t len;
    enum bert_status st = file_read_all(src, &text, &len, err);
    if (st != BERT_OK)
        return st;
    FILE *fp = fopen(dst, "wb");
    if (fp == NULL) {
        free(text);
        return bert_error_set(err, BERT_E_IO, "%s: cannot create: %s", dst, strerror(errno));
    }
    bool ok = fwrite(text, 1, len, fp) == len;
    ok = fclose(fp) == 0 && ok;
    free(text);
    return ok ? BERT_OK : bert_error_set(err, BERT_E_IO, "%s: cannot write", dst);
}
