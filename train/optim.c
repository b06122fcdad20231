#include "train_optim.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum bert_status train_adamw_init(struct train_adamw *o, const struct train_model *model,
                                  double weight_decay, struct bert_error *err)
{
    memset(o, 0, sizeof *o);
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->eps = 1e-8;
    o->weight_decay = weight_decay;
    o->n = model->n_params;
    o->m = calloc(o->n, sizeof *o->m);
    o->v = calloc(o->n, sizeof *o->v);
    if (o->m == NULL || o->v == NULL) {
        train_adamw_free(o);
        return bert_error_set(err, BERT_E_NOMEM, "out of memory for the optimiser state");
    }
    return BERT_OK;
}

void train_adamw_free(struct train_adamw *o)
{
    free(o->m);
    free(o->v);
    o->m = o->v = NULL;
}

double train_lr_at(size_t step, size_t warmup, size_t total, double peak)
{
    if (step < warmup)
        return peak * (double)(step + 1) / (double)warmup;
    if (step >= total)
        return 0.0;
    return peak * (double)(total - step) / (double)(total - warmup);
}

double train_clip_grads(struct train_model *model, double max_norm, unsigned parts)
{
    double sq = 0.0;
    for (size_t i = 0; i < model->n_tensors; i++) {
        const struct train_tensor *t = &model->tensors[i];
        if (!(t->part & parts))
            continue;
        const float *g = model->grads + t->offset;
        for (size_t k = 0; k < t->count; k++)
            sq += (double)g[k] * g[k];
    }
    const double norm = sqrt(sq);
    if (max_norm > 0.0 && norm > max_norm) {
        /* torch: clip_coef = max_norm / (total_norm + 1e-6) */
        const float coef = (float)(max_norm / (norm + 1e-6));
        for (size_t i = 0; i < model->n_tensors; i++) {
            const struct train_tensor *t = &model->tensors[i];
            if (!(t->part & parts))
                continue;
            float *g = model->grads + t->offset;
            for (size_t k = 0; k < t->count; k++)
                g[k] *= coef;
        }
    }
    return norm;
}

void train_adamw_update(struct train_adamw *o, struct train_model *model, double lr,
                        unsigned parts)
{
    o->step++;
    const double bc1 = 1.0 - pow(o->beta1, (double)o->step);
    const double bc2 = 1.0 - pow(o->beta2, (double)o->step);
    const float b1 = (float)o->beta1, b2 = (float)o->beta2;
    const float step_size = (float)(lr / bc1), rbc2 = (float)(1.0 / sqrt(bc2));
    for (size_t i = 0; i < model->n_tensors; i++) {
        const struct train_tensor *t = &model->tensors[i];
        if (!(t->part & parts))
            continue;
        const float decay = t->kind == TRAIN_WEIGHT ? (float)(1.0 - lr * o->weight_decay) : 1.0f;
        float *p = model->params + t->offset, *g = model->grads + t->offset;
        float *m = o->m + t->offset, *v = o->v + t->offset;
        for (size_t k = 0; k < t->count; k++) {
            p[k] *= decay;
            m[k] = b1 * m[k] + (1.0f - b1) * g[k];
            v[k] = b2 * v[k] + (1.0f - b2) * g[k] * g[k];
            p[k] -= step_size * m[k] / (sqrtf(v[k]) * rbc2 + (float)o->eps);
        }
    }
}

/* File: magic, parameter count, step (u64 each), then m and v as f32. */
static const uint64_t STATE_MAGIC = 0x3154534e52545242ull; /* "BRTRNST1" */

enum bert_status train_adamw_save(const struct train_adamw *o, const char *path,
                                  struct bert_error *err)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *fp = fopen(tmp, "wb");
    if (fp == NULL)
        return bert_error_set(err, BERT_E_IO, "%s: cannot create: %s", tmp, strerror(errno));
    const uint64_t head[3] = {STATE_MAGIC, o->n, o->step};
    bool ok = fwrite(head, sizeof head, 1, fp) == 1 &&
              fwrite(o->m, sizeof *o->m, o->n, fp) == o->n &&
              fwrite(o->v, sizeof *o->v, o->n, fp) == o->n;
    ok = fclose(fp) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return bert_error_set(err, BERT_E_IO, "%s: cannot write", path);
    }
    return BERT_OK;
}

enum bert_status train_adamw_load(struct train_adamw *o, const char *path,
                                  struct bert_error *err)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL)
        return bert_error_set(err, BERT_E_IO, "%s: cannot open: %s", path, strerror(errno));
    uint64_t head[3];
    bool ok = fread(head, sizeof head, 1, fp) == 1;
    if (ok && (head[0] != STATE_MAGIC || head[1] != o->n)) {
        fclose(fp);
        return bert_error_set(err, BERT_E_FORMAT,
                              "%s: not a trainer state for this model (%llu parameters "
                              "expected)",
                              path, (unsigned long long)o->n);
    }
    ok = ok && fread(o->m, sizeof *o->m, o->n, fp) == o->n &&
         fread(o->v, sizeof *o->v, o->n, fp) == o->n && fgetc(fp) == EOF;
    fclose(fp);
    if (!ok)
        return bert_error_set(err, BERT_E_FORMAT, "%s: truncated or oversized trainer state",
                              path);
    o->step = (size_t)head[2];
    return BERT_OK;
}
