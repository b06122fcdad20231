#include "safetensors.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "fileutil.h"

/* The Rust reference caps the header at 100 MB; a larger one is an attack or
 * corruption, not a model. */
#define SAFETENSORS_MAX_HEADER (100u << 20)

static const struct {
    const char *name;
    size_t size;
} dtype_table[] = {
    [BERT_DTYPE_F32] = {"F32", 4},   [BERT_DTYPE_F16] = {"F16", 2},
    [BERT_DTYPE_BF16] = {"BF16", 2}, [BERT_DTYPE_F64] = {"F64", 8},
    [BERT_DTYPE_I64] = {"I64", 8},   [BERT_DTYPE_I32] = {"I32", 4},
    [BERT_DTYPE_I16] = {"I16", 2},   [BERT_DTYPE_I8] = {"I8", 1},
    [BERT_DTYPE_U64] = {"U64", 8},   [BERT_DTYPE_U32] = {"U32", 4},
    [BERT_DTYPE_U16] = {"U16", 2},   [BERT_DTYPE_U8] = {"U8", 1},
    [BERT_DTYPE_BOOL] = {"BOOL", 1}, [BERT_DTYPE_F8_E4M3] = {"F8_E4M3", 1},
    [BERT_DTYPE_F8_E5M2] = {"F8_E5M2", 1},
};
#define N_DTYPES (sizeof dtype_table / sizeof dtype_table[0])

const char *bert_dtype_name(enum bert_dtype dtype)
{
    return (size_t)dtype < N_DTYPES ? dtype_table[dtype].name : "?";
}

size_t bert_dtype_size(enum bert_dtype dtype)
{
    return (size_t)dtype < N_DTYPES ? dtype_table[dtype].size : 0;
}

static bool dtype_parse(const char *name, enum bert_dtype *out)
{
    for (size_t i = 0; i < N_DTYPES; i++) {
        if (strcmp(name, dtype_table[i].name) == 0) {
            *out = (enum bert_dtype)i;
            return true;
        }
    }
    return false;
}

static int tensor_cmp_name(const void *a, const void *b)
{
    return strcmp(((const struct safetensors_tensor *)a)->name,
                  ((const struct safetensors_tensor *)b)->name);
}

struct span {
    size_t begin, end;
    size_t index;
};

static int span_cmp(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return (x->begin > y->begin) - (x->begin < y->begin);
}

static void tensors_free(struct safetensors_tensor *t, size_t n)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        free(t[i].name);
    free(t);
}

/* Parse one header entry into `t`; data pointers are set by the caller once
 * all ranges are known to be valid. */
static enum bert_status parse_entry(const char *path, const char *name, json_t *entry,
                                    size_t data_len, struct safetensors_tensor *t,
                                    struct span *span, struct bert_error *err)
{
    if (!json_is_object(entry))
        return bert_error_set(err, BERT_E_FORMAT, "%s: tensor '%s': header entry is not an object",
                              path, name);
    json_t *dtype = json_object_get(entry, "dtype");
    json_t *shape = json_object_get(entry, "shape");
    json_t *offsets = json_object_get(entry, "data_offsets");
    if (!json_is_string(dtype) || !json_is_array(shape) || !json_is_array(offsets))
        return bert_error_set(err, BERT_E_FORMAT,
                              "%s: tensor '%s': needs \"dtype\" (string), \"shape\" and "
                              "\"data_offsets\" (arrays)",
                              path, name);
    if (!dtype_parse(json_string_value(dtype), &t->dtype))
        return bert_error_set(err, BERT_E_FORMAT, "%s: tensor '%s': unknown dtype '%.32s'", path,
                              name, json_string_value(dtype));
    t->ndim = json_array_size(shape);
    if (t->ndim > SAFETENSORS_MAX_DIMS)
        return bert_error_set(err, BERT_E_FORMAT, "%s: tensor '%s': %zu dimensions, at most %d",
                              path, name, t->ndim, SAFETENSORS_MAX_DIMS);
    size_t count = 1;
    for (size_t d = 0; d < t->ndim; d++) {
        json_t *dim = json_array_get(shape, d);
        if (!json_is_integer(dim) || json_integer_value(dim) < 0)
            return bert_error_set(err, BERT_E_FORMAT,
                                  "%s: tensor '%s': shape entries must be non-negative integers",
                                  path, name);
        t->shape[d] = (size_t)json_integer_value(dim);
        if (t->shape[d] != 0 && count > SIZE_MAX / t->shape[d])
            return bert_error_set(err, BERT_E_FORMAT, "%s: tensor '%s': shape overflows", path,
                                  name);
        count *= t->shape[d];
    }
    size_t esize = bert_dtype_size(t->dtype);
    if (count > SIZE_MAX / esize)
        return bert_error_set(err, BERT_E_FORMAT, "%s: tensor '%s': shape overflows", path, name);
    t->nbytes = count * esize;

    json_t *jb = json_array_get(offsets, 0), *je = json_array_get(offsets, 1);
    if (json_array_size(offsets) != 2 || !json_is_integer(jb) || !json_is_integer(je) ||
        json_integer_value(jb) < 0 || json_integer_value(je) < json_integer_value(jb))
        return bert_error_set(err, BERT_E_FORMAT,
                              "%s: tensor '%s': data_offsets must be [begin, end] with "
                              "0 <= begin <= end",
                              path, name);
    span->begin = (size_t)json_integer_value(jb);
    span->end = (size_t)json_integer_value(je);
    if (span->end > data_len)
        return bert_error_set(err, BERT_E_FORMAT,
                              "%s: tensor '%s': data_offsets end %zu is past the end of the data "
                              "(%zu bytes; truncated file?)",
                              path, name, span->end, data_len);
    if (span->end - span->begin != t->nbytes)
        return bert_error_set(err, BERT_E_FORMAT,
                              "%s: tensor '%s': %zu bytes of data but dtype %s and shape need %zu",
                              path, name, span->end - span->begin, bert_dtype_name(t->dtype),
                              t->nbytes);
    t->name = strdup(name);
    return t->name ? BERT_OK : bert_error_set(err, BERT_E_NOMEM, "out of memory");
}

enum bert_status safetensors_parse(const char *path, const uint8_t *buf, size_t len,
                                   struct safetensors_file *out, struct bert_error *err)
{
    memset(out, 0, sizeof *out);
    out->fd = -1;
    if (len < 8)
        return bert_error_set(err, BERT_E_FORMAT,
                              "%s: %zu bytes, too short for a safetensors file", path, len);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; i--)
        header_len = header_len << 8 | buf[i];
    if (header_len > SAFETENSORS_MAX_HEADER || header_len > len - 8)
        return bert_error_set(err, BERT_E_FORMAT,
                              "%s: header length %llu does not fit the file (%zu bytes)", path,
                              (unsigned long long)header_len, len);
    const uint8_t *data = buf + 8 + header_len;
    size_t data_len = len - 8 - (size_t)header_len;

    json_error_t jerr;
    json_t *root = json_loadb((const char *)buf + 8, (size_t)header_len, JSON_REJECT_DUPLICATES,
                              &jerr);
    if (root == NULL)
        return bert_error_set(err, BERT_E_FORMAT, "%s: header is not valid JSON: %s", path,
                              jerr.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return bert_error_set(err, BERT_E_FORMAT, "%s: header is not a JSON object", path);
    }

    size_t n = json_object_size(root);
    struct safetensors_tensor *tensors = calloc(n ? n : 1, sizeof *tensors);
    struct span *spans = calloc(n ? n : 1, sizeof *spans);
    enum bert_status st = BERT_OK;
    size_t count = 0;
    if (tensors == NULL || spans == NULL) {
        st = bert_error_set(err, BERT_E_NOMEM, "out of memory");
        goto done;
    }
    const char *name;
    json_t *entry;
    json_object_foreach(root, name, entry) {
        if (strcmp(name, "__metadata__") == 0)
            continue;
        spans[count].index = count;
        st = parse_entry(path, name, entry, data_len, &tensors[count], &spans[count], err);
        if (st != BERT_OK)
            goto done;
        count++;
    }

    /* Like the reference implementation, the ranges must tile the data exactly:
     * an overlap aliases two tensors and a gap hides bytes nobody checked. */
    qsort(spans, count, sizeof *spans, span_cmp);
    size_t expect = 0;
    for (size_t i = 0; i < count; i++) {
        if (spans[i].begin != expect) {
            st = bert_error_set(err, BERT_E_FORMAT,
                                "%s: tensor '%s': data begins at %zu, expected %zu "
                                "(overlapping or non-contiguous data_offsets)",
                                path, tensors[spans[i].index].name, spans[i].begin, expect);
            goto done;
        }
        tensors[spans[i].index].data = data + spans[i].begin;
        expect = spans[i].end;
    }
    if (expect != data_len) {
        st = bert_error_set(err, BERT_E_FORMAT,
                            "%s: tensors cover %zu bytes but the file holds %zu bytes of data",
                            path, expect, data_len);
        goto done;
    }
    qsort(tensors, count, sizeof *tensors, tensor_cmp_name);
    out->tensors = tensors;
    out->n_tensors = count;
    tensors = NULL;
done:
    tensors_free(tensors, count);
    free(spans);
    json_decref(root);
    return st;
}

enum bert_status safetensors_open(const char *path, struct safetensors_file *out,
                                  struct bert_error *err)
{
    memset(out, 0, sizeof *out);
    out->fd = -1;
    struct stat sb;
    int fd = file_open_regular(path, &sb, err);
    if (fd < 0)
        return BERT_E_IO;
    size_t len = (size_t)sb.st_size;
    if (len < 8) {
        close(fd);
        return bert_error_set(err, BERT_E_FORMAT,
                              "%s: %zu bytes, too short for a safetensors file", path, len);
    }
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        close(fd);
        return bert_error_set(err, BERT_E_IO, "%s: cannot map: %s", path, strerror(errno));
    }
    enum bert_status st = safetensors_parse(path, map, len, out, err);
    if (st != BERT_OK) {
        munmap(map, len);
        close(fd);
        return st;
    }
    out->path = strdup(path);
    out->fd = fd;
    out->map = map;
    out->map_len = len;
    if (out->path == NULL) {
        safetensors_close(out);
        return bert_error_set(err, BERT_E_NOMEM, "out of memory");
    }
    return BERT_OK;
}

enum bert_status safetensors_open_folder(const char *dir, struct safetensors_file *file,
                                        struct bert_error *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!file_exists(path)) {
        char bin[PATH_MAX];
        snprintf(bin, sizeof bin, "%s/pytorch_model.bin", dir);
        if (file_exists(bin))
            return bert_error_set(err, BERT_E_UNSUPPORTED,
                                  "%s: not found; %s is a pickle, which bertserve does not load "
                                  "(convert it to safetensors)",
                                  path, bin);
    }
    return safetensors_open(path, file, err);
}

const struct safetensors_tensor *safetensors_find(const struct safetensors_file *f,
                                                  const char *name)
{
    size_t lo = 0, hi = f->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, f->tensors[mid].name);
        if (c == 0)
            return &f->tensors[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

void safetensors_close(struct safetensors_file *f)
{
    tensors_free(f->tensors, f->n_tensors);
    if (f->map != NULL)
        munmap(f->map, f->map_len);
    if (f->fd >= 0)
        close(f->fd);
    free(f->path);
    memset(f, 0, sizeof *f);
    f->fd = -1;
}

/* IEEE 754 binary16 <-> binary32, round to nearest even. */
float bert_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;
    } else {
        /* Subnormal half: normalise into a float. */
        int shift = 0;
        while (!(mant & 0x400)) {
            mant <<= 1;
            shift++;
        }
        mant &= 0x3ff;
        bits = sign | ((uint32_t)(113 - shift) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t bert_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) /* inf or nan */
        return sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0);
    if (abs >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return sign | 0x7c00;
    if (abs < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
        if (abs < 0x33000000u)
            return sign;
        uint32_t exp = abs >> 23;
        uint32_t mant = (abs & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - exp; /* 14..24 */
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return sign | (uint16_t)half;
    }
    uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);
    return sign | (uint16_t)((rounded - 0x38000000u) >> 13);
}

float bert_bf16_to_f32(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t bert_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40); /* keep NaN a NaN */
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

struct write_order {
    size_t index;
    size_t esize;
};

static int write_order_cmp(const void *a, const void *b)
{
    const struct write_order *x = a, *y = b;
    if (x->esize != y->esize)
        return x->esize < y->esize ? 1 : -1;
    return (x->index > y->index) - (x->index < y->index);
}

static size_t out_count(const struct safetensors_out *t)
{
    size_t count = 1;
    for (size_t d = 0; d < t->ndim; d++)
        count *= t->shape[d];
    return count;
}

static bool write_tensor(FILE *fp, const struct safetensors_out *t)
{
    size_t count = out_count(t);
    if (t->dtype == BERT_DTYPE_F32)
        return fwrite(t->data, sizeof(float), count, fp) == count;
    uint16_t chunk[4096];
    for (size_t i = 0; i < count;) {
        size_t m = count - i < 4096 ? count - i : 4096;
        for (size_t j = 0; j < m; j++)
            chunk[j] = t->dtype == BERT_DTYPE_F16 ? bert_f32_to_f16(t->data[i + j])
                                                  : bert_f32_to_bf16(t->data[i + j]);
        if (fwrite(chunk, sizeof chunk[0], m, fp) != m)
            return false;
        i += m;
    }
    return true;
}

enum bert_status safetensors_write(const char *path, const struct safetensors_out *tensors,
                                   size_t n, struct bert_error *err)
{
    struct write_order *order = calloc(n ? n : 1, sizeof *order);
    json_t *header = json_object();
    char *text = NULL;
    FILE *fp = NULL;
    char tmp[4096];
    enum bert_status st = BERT_OK;
    if (order == NULL || header == NULL) {
        st = bert_error_set(err, BERT_E_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        enum bert_dtype dt = tensors[i].dtype;
        if (dt != BERT_DTYPE_F32 && dt != BERT_DTYPE_F16 && dt != BERT_DTYPE_BF16) {
            st = bert_error_set(err, BERT_E_INVALID, "%s: tensor '%s': cannot write dtype %s",
                                path, tensors[i].name, bert_dtype_name(dt));
            goto done;
        }
        order[i] = (struct write_order){i, bert_dtype_size(dt)};
    }
    qsort(order, n, sizeof *order, write_order_cmp);

    json_object_set_new(header, "__metadata__", json_pack("{s:s}", "format", "pt"));
    size_t offset = 0;
    for (size_t k = 0; k < n; k++) {
        const struct safetensors_out *t = &tensors[order[k].index];
        json_t *shape = json_array();
        for (size_t d = 0; d < t->ndim; d++)
            json_array_append_new(shape, json_integer((json_int_t)t->shape[d]));
        size_t nbytes = out_count(t) * order[k].esize;
        json_object_set_new(header, t->name,
                            json_pack("{s:s,s:o,s:[I,I]}", "dtype", bert_dtype_name(t->dtype),
                                      "shape", shape, "data_offsets", (json_int_t)offset,
                                      (json_int_t)(offset + nbytes)));
        offset += nbytes;
    }
    text = json_dumps(header, JSON_COMPACT);
    if (text == NULL) {
        st = bert_error_set(err, BERT_E_NOMEM, "out of memory");
        goto done;
    }
    size_t text_len = strlen(text);
    size_t padded = (text_len + 7) & ~(size_t)7;

    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    fp = fopen(tmp, "wb");
    if (fp == NULL) {
        st = bert_error_set(err, BERT_E_IO, "%s: cannot create: %s", tmp, strerror(errno));
        goto done;
    }
    uint8_t len_le[8];
    for (int i = 0; i < 8; i++)
        len_le[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    bool ok = fwrite(len_le, 1, 8, fp) == 8 && fwrite(text, 1, text_len, fp) == text_len;
    for (size_t i = text_len; ok && i < padded; i++)
        ok = fputc(' ', fp) != EOF;
    for (size_t k = 0; ok && k < n; k++)
        ok = write_tensor(fp, &tensors[order[k].index]);
    if (fclose(fp) != 0)
        ok = false;
    fp = NULL;
    if (!ok || rename(tmp, path) != 0) {
        st = bert_error_set(err, BERT_E_IO, "%s: cannot write: %s", path, strerror(errno));
        unlink(tmp);
    }
done:
    free(order);
    free(text);
    json_decref(header);
    return st;
}
