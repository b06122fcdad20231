/* The optimiser: AdamW (Loshchilov & Hutter 2019) exactly as
 * torch.optim.AdamW computes it, decay only on weight matrices and
 * embeddings (not biases or LayerNorm, the BERT recipe), a learning rate
 * with linear warm-up then linear decay to 0, and clipping of the global
 * gradient norm (torch.nn.utils.clip_grad_norm_). */
#ifndef BERT_TRAIN_OPTIM_H
#define BERT_TRAIN_OPTIM_H

#include <stdbool.h>
#include <stddef.h>

#include "train_model.h"

struct train_adamw {
    double beta1, beta2, eps, weight_decay;
    size_t step;         /* updates done */
    float *m, *v;        /* (n_params) moments, same layout as the parameters */
    size_t n;
};

/* Zero moments for `model`; beta (0.9, 0.999), eps 1e-8 (BERT used 1e-6;
 * torch's default is kept for exact comparison), given weight decay. */
enum bert_status train_adamw_init(struct train_adamw *o, const struct train_model *model,
                                  double weight_decay, struct bert_error *err);
/* Safe on a zeroed or already freed optimiser. */
void train_adamw_free(struct train_adamw *o);

/* Learning rate at update `step` (0-based): peak * (step + 1) / warmup
 * during warm-up, then linear to 0 at `total`. */
double train_lr_at(size_t step, size_t warmup, size_t total, double peak);

/* Scale the gradients of the tensors in `parts` (enum train_part bits) so
 * their global L2 norm is at most max_norm (no-op when max_norm <= 0);
 * returns the norm before clipping. */
double train_clip_grads(struct train_model *model, double max_norm, unsigned parts);

/* One AdamW update, with learning rate lr, of the tensors in `parts`: the
 * others keep their values exactly (weight decay included), as a head
 * the run does not train would outside the optimiser. */
void train_adamw_update(struct train_adamw *o, struct train_model *model, double lr,
                        unsigned parts);

/* Save the optimiser state (step and moments) to `path` for an exact
 * resume; load checks it belongs to a model of the same layout. */
enum bert_status train_adamw_save(const struct train_adamw *o, const char *path,
                                  struct bert_error *err);
enum bert_status train_adamw_load(struct train_adamw *o, const char *path,
                                  struct bert_error *err);

#endif
