/* Small file helpers shared by the checkpoint loaders. */
#ifndef BERT_FILEUTIL_H
#define BERT_FILEUTIL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "status.h"

/* True when `path` exists and is a regular file. */
bool file_exists(const char *path);

/* Read a whole file into a malloc'd NUL-terminated buffer (caller frees).
 * Errors name the file. */
enum bert_status file_read_all(const char *path, char **out, size_t *len,
                               struct bert_error *err);

/* Parse a JSON file (duplicate keys rejected). The caller owns *out. Errors
 * name the file, line and column. */
enum bert_status file_load_json(const char *path, json_t **out, struct bert_error *err);

/* Create `path` and any missing parents, like mkdir -p. */
enum bert_status file_mkdirs(const char *path, struct bert_error *err);

/* Copy `src` to `dst` (for writing checkpoints). */
enum bert_status file_copy(const char *src, const char *dst, struct bert_error *err);

#endif
