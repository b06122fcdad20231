/* sentence-transformers' Dense modules (modules.json "Dense", e.g.
 * 2_Dense/ of LaBSE or distiluse-base-multilingual-cased): after pooling
 * and before Normalize, y = act(W x + b), with W (out_features x
 * in_features) and b from the folder's model.safetensors ("linear.weight",
 * "linear.bias") and the activation its config.json names (Tanh or
 * Identity). Internal to the engine. */
#ifndef BERT_ST_DENSE_H
#define BERT_ST_DENSE_H

#include <stdbool.h>
#include <stddef.h>

#include "bert.h"

struct st_dense {
    size_t in, out;
    float *w;  /* (out, in), row-major; owned f32 copy */
    float *b;  /* (out), or NULL when the module has no bias */
    bool tanh; /* false: identity */
};

/* Load the module in `dir`/`folder` expecting `in` input features. Every
 * failure names the file and the problem; on failure nothing needs
 * freeing. */
enum bert_status st_dense_load(const char *dir, const char *folder, size_t in,
                               struct st_dense *out, struct bert_error *err);

/* Safe on a zeroed or already freed module. */
void st_dense_free(struct st_dense *d);

/* y (d->out) = act(W x + b) for x (d->in); x and y must not overlap. */
void st_dense_apply(const struct st_dense *d, const float *x, float *y);

#endif
