/* Small file helpers shared by the checkpoint loaders. */
#ifndef BERT_FILEUTIL_H
#define BERT_FILEUTIL_H

#include <stdbool.h>
#include <stddef.h>

#include <sys/stat.h>

#include <jansson.h>

#include "status.h"

/* True when something exists at `path`. Callers then load it, so a FIFO or
 * a folder where a file belongs is refused by name instead of skipped. */
bool file_exists(const char *path);

/* Open `path` read-only, refusing anything but a regular file before a
 * read could block on it (a FIFO as model.safetensors would hang start-up).
 * Returns the descriptor (the caller closes it) with its stat in *sb, or -1
 * with `err` naming the file and what it is. */
int file_open_regular(const char *path, struct stat *sb, struct bert_error *err);

/* Read a whole file into a malloc'd NUL-terminated buffer (caller frees).
 * Errors name the file. */
enum bert_status file_read_all(const char *path, char **out, size_t *len,
                               struct bert_error *err);

/* json_loadb(text, len, flags, jerr), except that an integer beyond 64 bits
 * reads as a real instead of failing "too big integer": Hub configs carry
 * Python's int(1e30) (`"model_max_length": 1000000000000000019884624838656`,
 * meaning "no limit"), and transformers reads it as a number. Every reader
 * of a checkpoint's JSON files goes through here. */
json_t *file_parse_json(const char *text, size_t len, size_t flags, json_error_t *jerr);

/* Parse a JSON file (duplicate keys rejected; file_parse_json's numbers).
 * The caller owns *out. Errors name the file, line and column. */
enum bert_status file_load_json(const char *path, json_t **out, struct bert_error *err);

/* Create `path` and any missing parents, like mkdir -p. */
enum bert_status file_mkdirs(const char *path, struct bert_error *err);

/* Copy `src` to `dst` (for writing checkpoints). */
enum bert_status file_copy(const char *src, const char *dst, struct bert_error *err);

#endif
