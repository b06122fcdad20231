/* `bert finetune --task token-classification`: BertForTokenClassification
 * on CoNLL data (train_tagged.h), the label on each word's first sub-token
 * (or on all of them), early stopping on the dev set's entity F1. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "loop.h"
#include "train_loop.h"
#include "train_model.h"
#include "train_optim.h"
#include "train_tagged.h"

struct tokens_run {
    const struct train_finetune_options *o;
    struct train_model model;
    struct train_work *work;
    struct train_adamw opt;
    struct bert_tokenizer *tok;
    struct train_tagged train, dev;
    struct batch_buf buf;
    int32_t *pred;          /* (batch * max_len) the step's predictions */
    int32_t *word_pred;     /* (dev words) */
    size_t *order;
    size_t max_len, per_epoch, total, warmup, eval_every;
    double lr;
};

/* The checkpoint's encoder and a new token classifier over the training
 * data's labels. */
static enum bert_status tokens_model(struct tokens_run *f, struct bert_error *err)
{
    struct bert_model *loaded;
    enum bert_status st = bert_model_load(f->o->model, &loaded, err);
    if (st != BERT_OK)
        return st;
    struct bert_config cfg = loaded->config;
    cfg.id2label = f->train.names;
    cfg.num_labels = f->train.n_names;
    cfg.problem_type = BERT_PROBLEM_UNSET;
    cfg.token_head = BERT_TOKEN_HEAD_CLASSIFICATION;
    st = train_model_init(&f->model, &cfg, false, true, err);
    if (st == BERT_OK) {
        train_model_synth(&f->model, f->o->seed, 0.02, 0.0, 0.0);
        struct bert_weights w = loaded->engine->weights;
        if (!loaded->can_classify_tokens || loaded->config.num_labels != cfg.num_labels)
            w.token_w = w.token_b = NULL; /* a new head */
        w.classifier_w = w.classifier_b = NULL;
        st = train_model_copy_weights(&f->model, &w, err);
    }
    bert_model_free(loaded);
    return st;
}

static enum bert_status tokens_setup(struct tokens_run *f, struct bert_error *err)
{
    const struct train_finetune_options *o = f->o;
    enum bert_status st;
    if ((st = bert_tokenizer_load(o->model, &f->tok, err)) != BERT_OK ||
        (st = train_tagged_load(&f->train, f->tok, o->train, o->max_len, o->all_subtokens, NULL,
                                0, err)) != BERT_OK ||
        (st = train_tagged_load(&f->dev, f->tok, o->dev, o->max_len, false, f->train.names,
                                f->train.n_names, err)) != BERT_OK ||
        (st = tokens_model(f, err)) != BERT_OK)
        return st;
    const size_t positions = f->model.config.max_position_embeddings;
    f->max_len = o->max_len < positions ? o->max_len : positions;
    f->work = train_work_new(&f->model, o->batch * f->max_len, f->max_len, o->threads, err);
    if (f->work == NULL)
        return err ? err->status : BERT_E_NOMEM;
    if ((st = train_adamw_init(&f->opt, &f->model, o->weight_decay, err)) != BERT_OK)
        return st;
    f->order = malloc((f->train.n + 1) * sizeof *f->order);
    f->pred = malloc(o->batch * f->max_len * sizeof *f->pred);
    f->word_pred = malloc((f->dev.word_start[f->dev.n] + 1) * sizeof *f->word_pred);
    if (!batch_buf_init(&f->buf, o->batch, f->max_len) || !f->order || !f->pred ||
        !f->word_pred)
        return bert_error_set(err, BERT_E_NOMEM, "out of memory");
    f->lr = o->lr != 0.0 ? o->lr : 5e-5;
    f->per_epoch = (f->train.n + o->batch - 1) / o->batch;
    f->total = f->per_epoch * o->epochs;
    if (o->max_steps > 0 && o->max_steps < f->total)
        f->total = o->max_steps;
    f->eval_every = o->eval_every ? o->eval_every : f->per_epoch;
    f->warmup = (size_t)((double)f->total * o->warmup);
    loop_say(o->progress,
             "finetune: token classification, %zu training and %zu dev sentences, %zu labels, "
             "labels on %s, %zu steps (%zu per epoch), lr %.1e\n",
             f->train.n, f->dev.n, f->train.n_names,
             o->all_subtokens ? "every sub-token" : "first sub-tokens", f->total, f->per_epoch,
             f->lr);
    return BERT_OK;
}

/* Sentences order[first .. first + count) of `d` into the batch buffer. */
static struct train_batch tagged_batch(struct tokens_run *f, const struct train_tagged *d,
                                       const size_t *order, size_t first, size_t count)
{
    size_t n_tokens = 0;
    f->buf.start[0] = 0;
    for (size_t k = 0; k < count; k++) {
        size_t i = order ? order[first + k] : first + k;
        size_t n = d->start[i + 1] - d->start[i];
        memcpy(f->buf.ids + n_tokens, d->ids + d->start[i], n * sizeof *f->buf.ids);
        memcpy(f->buf.labels + n_tokens, d->tags + d->start[i], n * sizeof *f->buf.labels);
        n_tokens += n;
        f->buf.start[k + 1] = n_tokens;
    }
    return (struct train_batch){.b = {count, n_tokens, f->buf.ids, f->buf.types, f->buf.start},
                                .token_labels = f->buf.labels, .token_pred = f->pred};
}

/* Dev entity scores: each word's prediction at its first sub-token (a
 * word max_len cut off is predicted O). */
static enum bert_status tokens_dev(struct tokens_run *f, struct train_ner_scores *out,
                                   double *loss, struct bert_error *err)
{
    const struct train_tagged *d = &f->dev;
    int32_t o_id = 0;
    for (size_t i = 0; i < d->n_names; i++)
        if (strcmp(d->names[i], "O") == 0)
            o_id = (int32_t)i;
    for (size_t i = 0; i < d->word_start[d->n]; i++)
        f->word_pred[i] = o_id;
    double sum = 0.0;
    size_t count = 0;
    for (size_t first = 0; first < d->n; first += f->o->batch) {
        size_t n = d->n - first < f->o->batch ? d->n - first : f->o->batch;
        struct train_batch tb = tagged_batch(f, d, NULL, first, n);
        struct train_stats ts;
        enum bert_status st = train_step(&f->model, f->work, &tb, false, false, &ts, err);
        if (st != BERT_OK)
            return st;
        sum += ts.token_loss_sum;
        count += ts.token_count;
        for (size_t k = 0; k < n; k++) {
            const size_t s = first + k, t0 = d->start[s];
            for (size_t t = t0; t < d->start[s + 1]; t++)
                if (d->word_of[t] >= 0)
                    f->word_pred[d->word_start[s] + (size_t)d->word_of[t]] =
                        f->pred[tb.b.seq_start[k] + (t - t0)];
        }
    }
    *loss = count ? sum / (double)count : 0.0;
    train_ner_score(d, f->word_pred, out);
    return BERT_OK;
}

static void free_run(struct tokens_run *f)
{
    free(f->order);
    free(f->pred);
    free(f->word_pred);
    batch_buf_free(&f->buf);
    train_work_free(f->work);
    train_adamw_free(&f->opt);
    train_model_free(&f->model);
    train_tagged_free(&f->train);
    train_tagged_free(&f->dev);
    bert_tokenizer_free(f->tok);
}

enum bert_status train_finetune_tokens(const struct train_finetune_options *o,
                                       struct train_finetune_result *result,
                                       struct bert_error *err)
{
    struct tokens_run f = {.o = o};
    struct train_finetune_result r = {.best = -INFINITY, .metric = "entity-f1"};
    enum bert_status st = tokens_setup(&f, err);
    const double t0 = loop_now();
    double wloss = 0.0;
    size_t wsteps = 0, bad = 0;
    for (size_t step = 0; st == BERT_OK && step < f.total; step++) {
        if (step % f.per_epoch == 0)
            loop_shuffle(f.order, f.train.n, o->seed, step / f.per_epoch);
        size_t first = (step % f.per_epoch) * o->batch;
        size_t count = f.train.n - first < o->batch ? f.train.n - first : o->batch;
        struct train_batch tb = tagged_batch(&f, &f.train, f.order, first, count);
        loop_set_dropout(&tb, o->dropout, o->seed, step);
        struct train_stats ts;
        if ((st = train_step(&f.model, f.work, &tb, true, o->freeze_encoder, &ts, err)) != BERT_OK)
            break;
        const unsigned parts = TRAIN_PART_CLASSIFIER | (o->freeze_encoder ? 0u : TRAIN_PART_ENCODER);
        train_clip_grads(&f.model, o->clip, parts);
        train_adamw_update(&f.opt, &f.model, train_lr_at(step, f.warmup, f.total, f.lr), parts);
        memset(f.model.grads, 0, f.model.n_params * sizeof(float));
        wloss += ts.loss;
        wsteps++;
        r.steps = step + 1;
        if ((step + 1) % f.eval_every != 0 && step + 1 != f.total)
            continue;
        struct train_ner_scores sc;
        double dev_loss;
        if ((st = tokens_dev(&f, &sc, &dev_loss, err)) != BERT_OK)
            break;
        const bool improved = sc.overall.f1 > r.best;
        loop_say(o->progress,
                 "step %zu/%zu  epoch %.2f  train-loss %.4f  dev-loss %.4f  dev-entity-p %.4f  "
                 "dev-entity-r %.4f  dev-entity-f1 %.4f  %.0fs%s\n",
                 step + 1, f.total, (double)(step + 1) / (double)f.per_epoch,
                 wloss / (double)wsteps, dev_loss, sc.overall.precision, sc.overall.recall,
                 sc.overall.f1, loop_now() - t0, improved ? "  (best, saved)" : "");
        wloss = 0.0;
        wsteps = 0;
        r.evaluations++;
        if (improved) {
            r.best = sc.overall.f1;
            bad = 0;
            st = train_model_save(&f.model, o->out, o->model, o->dtype, err);
        } else if (++bad >= o->patience) {
            loop_say(o->progress, "early stop: no dev improvement in %zu evaluations\n",
                     o->patience);
            r.early_stop = true;
            break;
        }
    }
    if (st == BERT_OK) {
        loop_say(o->progress, "best dev %s %.4f (saved in %s)\n", r.metric, r.best, o->out);
        if (result != NULL)
            *result = r;
    }
    free_run(&f);
    return st;
}
