/* safetensors reader (mmap, zero-copy) and writer.
 *
 * Format: 8-byte little-endian header length N, N bytes of JSON
 * {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__"},
 * then the data. Offsets are relative to the end of the header. Every field is
 * validated before use: dtype known, shape product times element size equal
 * to the byte range, ranges inside the file, no overlaps. */
#ifndef BERT_SAFETENSORS_H
#define BERT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "bert.h"

#define SAFETENSORS_MAX_DIMS 8

struct safetensors_tensor {
    char *name;
    enum bert_dtype dtype;
    size_t ndim;
    size_t shape[SAFETENSORS_MAX_DIMS];
    size_t nbytes;
    const void *data; /* into the mapping; alignment not guaranteed */
};

struct safetensors_file {
    char *path;
    int fd;              /* kept open for the life of the mapping */
    void *map;
    size_t map_len;
    size_t n_tensors;
    struct safetensors_tensor *tensors; /* sorted by name */
};

/* Map and validate `path`. On failure nothing needs freeing. */
enum bert_status safetensors_open(const char *path, struct safetensors_file *out,
                                  struct bert_error *err);

/* Map dir/model.safetensors, a checkpoint folder's weights; when it is
 * missing and a pytorch_model.bin stands there, say so (pickles are not
 * loaded). */
enum bert_status safetensors_open_folder(const char *dir, struct safetensors_file *out,
                                        struct bert_error *err);

/* Validate an in-memory file image (header + data); the tensors point into
 * `buf`, which must outlive `out`. Used by safetensors_open and the fuzzer. */
enum bert_status safetensors_parse(const char *path, const uint8_t *buf, size_t len,
                                   struct safetensors_file *out, struct bert_error *err);

/* Binary search by exact name; NULL when absent. */
const struct safetensors_tensor *safetensors_find(const struct safetensors_file *f,
                                                  const char *name);

/* Unmap and close. Safe on a zeroed or already closed file. */
void safetensors_close(struct safetensors_file *f);

size_t bert_dtype_size(enum bert_dtype dtype);

/* One tensor to write: `data` is f32 and is converted to `dtype` (F32, F16 or
 * BF16, round to nearest even). */
struct safetensors_out {
    const char *name;
    enum bert_dtype dtype;
    size_t ndim;
    size_t shape[SAFETENSORS_MAX_DIMS];
    const float *data;
};

/* Write tensors to `path` (via a temporary file and rename) as the Python
 * library lays them out: header padded to 8 bytes, data ordered by element
 * size, largest first (then in the given order), contiguous, so every tensor
 * is aligned to its element size. */
enum bert_status safetensors_write(const char *path, const struct safetensors_out *tensors,
                                   size_t n, struct bert_error *err);

/* Element conversions (round to nearest even for the narrowing ones). */
float bert_f16_to_f32(uint16_t h);
float bert_bf16_to_f32(uint16_t b);
uint16_t bert_f32_to_f16(float f);
uint16_t bert_f32_to_bf16(float f);

#endif
