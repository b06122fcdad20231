#include "st_dense.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <jansson.h>

#include "fileutil.h"
#include "safetensors.h"

/* A positive integer field of the module's config.json. */
static enum bert_status read_size(const char *path, json_t *root, const char *key, size_t *out,
                                  struct bert_error *err)
{
    json_t *v = json_object_get(root, key);
    if (!json_is_integer(v) || json_integer_value(v) <= 0 || json_integer_value(v) > 1 << 20)
        return bert_error_set(err, BERT_E_FORMAT, "%s: \"%s\" must be a positive integer", path,
                              key);
    *out = (size_t)json_integer_value(v);
    return BERT_OK;
}

static enum bert_status read_config(const char *path, struct st_dense *d, bool *bias,
                                    struct bert_error *err)
{
    json_t *root;
    enum bert_status st = file_load_json(path, &root, err);
    if (st != BERT_OK)
        return st;
    st = read_size(path, root, "in_features", &d->in, err);
    if (st == BERT_OK)
        st = read_size(path, root, "out_features", &d->out, err);
    json_t *b = json_object_get(root, "bias");
    *bias = b == NULL || json_is_true(b);
    if (st == BERT_OK && b != NULL && !json_is_boolean(b))
        st = bert_error_set(err, BERT_E_FORMAT, "%s: \"bias\" must be true or false", path);
    /* sentence-transformers' default activation is Tanh. */
    const char *act = json_string_value(json_object_get(root, "activation_function"));
    d->tanh = act == NULL || strcmp(act, "torch.nn.modules.activation.Tanh") == 0;
    if (st == BERT_OK && !d->tanh && strcmp(act, "torch.nn.modules.linear.Identity") != 0)
        st = bert_error_set(err, BERT_E_UNSUPPORTED,
                            "%s: activation_function \"%.100s\" is not supported (Tanh and "
                            "Identity are)",
                            path, act);
    json_decref(root);
    return st;
}

/* Tensor `name` of f as f32 into a new array: (rows, cols), or (rows) when
 * cols is 0. */
static enum bert_status copy_tensor(const struct safetensors_file *f, const char *name,
                                    size_t rows, size_t cols, float **out,
                                    struct bert_error *err)
{
    const struct safetensors_tensor *t = safetensors_find(f, name);
    if (t == NULL)
        return bert_error_set(err, BERT_E_FORMAT, "%s: tensor %s is missing", f->path, name);
    const bool shape_ok = cols == 0 ? t->ndim == 1 && t->shape[0] == rows
                                    : t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols;
    if (!shape_ok)
        return bert_error_set(err, BERT_E_FORMAT,
                              "%s: tensor %s has the wrong shape for the module's config.json",
                              f->path, name);
    const size_t count = cols == 0 ? rows : rows * cols;
    float *v = malloc(count * sizeof *v);
    if (v == NULL)
        return bert_error_set(err, BERT_E_NOMEM, "%s: out of memory", f->path);
    const unsigned char *p = t->data;
    for (size_t i = 0; i < count; i++) {
        uint16_t h;
        switch (t->dtype) {
        case BERT_DTYPE_F32:
            memcpy(&v[i], p + 4 * i, 4);
            break;
        case BERT_DTYPE_F16:
            memcpy(&h, p + 2 * i, 2);
            v[i] = bert_f16_to_f32(h);
            break;
        case BERT_DTYPE_BF16:
            memcpy(&h, p + 2 * i, 2);
            v[i] = bert_bf16_to_f32(h);
            break;
        default:
            free(v);
            return bert_error_set(err, BERT_E_UNSUPPORTED,
                                  "%s: tensor %s is %s; F32, F16 or BF16 are supported", f->path,
                                  name, bert_dtype_name(t->dtype));
        }
    }
    *out = v;
    return BERT_OK;
}

enum bert_status st_dense_load(const char *dir, const char *folder, size_t in,
                               struct st_dense *out, struct bert_error *err)
{
    memset(out, 0, sizeof *out);
    char path[PATH_MAX];
    bool bias = true;
    snprintf(path, sizeof path, "%s/%s/config.json", dir, folder);
    enum bert_status st = read_config(path, out, &bias, err);
    if (st != BERT_OK)
        return st;
    if (out->in != in)
        return bert_error_set(err, BERT_E_FORMAT,
                              "%s: in_features is %zu, but the module before it gives %zu", path,
                              out->in, in);
    snprintf(path, sizeof path, "%s/%s", dir, folder);
    struct safetensors_file f = {.fd = -1};
    st = safetensors_open_folder(path, &f, err);
    if (st != BERT_OK)
        return st;
    st = copy_tensor(&f, "linear.weight", out->out, out->in, &out->w, err);
    if (st == BERT_OK && bias)
        st = copy_tensor(&f, "linear.bias", out->out, 0, &out->b, err);
    safetensors_close(&f);
    if (st != BERT_OK)
        st_dense_free(out);
    return st;
}

void st_dense_free(struct st_dense *d)
{
    if (d == NULL)
        return;
    free(d->w);
    free(d->b);
    memset(d, 0, sizeof *d);
}

void st_dense_apply(const struct st_dense *d, const float *x, float *y)
{
    if (d->b != NULL)
        memcpy(y, d->b, d->out * sizeof *y);
    else
        memset(y, 0, d->out * sizeof *y);
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)d->out, (int)d->in, 1.0f, d->w, (int)d->in, x, 1,
                1.0f, y, 1);
    if (d->tanh)
        for (size_t k = 0; k < d->out; k++)
            y[k] = tanhf(y[k]);
}
