#include "fileutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Checkpoint JSON files are small; anything larger is not one of them. */
#define FILE_MAX_BYTES (512u << 20)

bool file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

enum bert_status file_read_all(const char *path, char **out, size_t *len,
                               struct bert_error *err)
{
    *out = NULL;
    *len = 0;
    FILE *fp = fopen(path, "rb");
    if (fp == NULL)
        return bert_error_set(err, BERT_E_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0 || !S_ISREG(sb.st_mode) || (size_t)sb.st_size > FILE_MAX_BYTES) {
        fclose(fp);
        return bert_error_set(err, BERT_E_IO, "%s: not a regular file of at most %u bytes", path,
                              FILE_MAX_BYTES);
    }
    size_t size = (size_t)sb.st_size;
    char *buf = malloc(size + 1);
    if (buf == NULL) {
        fclose(fp);
        return bert_error_set(err, BERT_E_NOMEM, "%s: out of memory reading %zu bytes", path,
                              size);
    }
    size_t got = fread(buf, 1, size, fp);
    fclose(fp);
    if (got != size) {
        free(buf);
        return bert_error_set(err, BERT_E_IO, "%s: short read", path);
    }
    buf[size] = '\0';
    *out = buf;
    *len = size;
    return BERT_OK;
}

enum bert_status file_load_json(const char *path, json_t **out, struct bert_error *err)
{
    char *text;
    size_t len;
    enum bert_status st = file_read_all(path, &text, &len, err);
    if (st != BERT_OK)
        return st;
    json_error_t jerr;
    *out = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
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
