/* `bert finetune`: the classification head (single-label, multi-label or
 * regression) on [CLS], or on a causal model's last token, trained with the
 * encoder or with it frozen, evaluated on a dev set with early stopping
 * (train_loop.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "loop.h"
#include "train_loop.h"
#include "train_data.h"
#include "train_model.h"
#include "train_optim.h"

struct train_finetune_options train_finetune_defaults(void)
{
    return (struct train_finetune_options){
        .problem = BERT_PROBLEM_SINGLE_LABEL,
        .epochs = 3,
        .batch = 32,
        .max_len = 128,
        .warmup = 0.1,
        .weight_decay = 0.01,
        .clip = 1.0,
        .dropout = 0.1,
        .patience = 3,
        .threads = 1,
        .dtype = BERT_DTYPE_F32,
    };
}

enum bert_status train_finetune_check(const struct train_finetune_options *o,
                                      struct bert_error *err)
{
    const char *required[][2] = {
        {"--model", o->model}, {"--train", o->train}, {"--dev", o->dev}, {"--out", o->out}};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (required[i][1] == NULL)
            return bert_error_set(err, BERT_E_INVALID, "%s is required", required[i][0]);
    if (o->batch == 0)
        return bert_error_set(err, BERT_E_INVALID, "--batch must be at least 1");
    if (o->epochs == 0)
        return bert_error_set(err, BERT_E_INVALID, "--epochs must be at least 1");
    if (o->patience == 0)
        return bert_error_set(err, BERT_E_INVALID, "--patience must be at least 1");
    if (o->max_len < 3)
        return bert_error_set(err, BERT_E_INVALID, "--max-len must be at least 3, got %zu",
                              o->max_len);
    if (!(o->lr >= 0))
        return bert_error_set(err, BERT_E_INVALID, "--lr must not be negative, got %g", o->lr);
    if (!(o->dropout >= 0.0 && o->dropout < 1.0))
        return bert_error_set(err, BERT_E_INVALID, "--dropout must be in [0, 1), got %g",
                              o->dropout);
    if (!(o->mlm_weight >= 0.0))
        return bert_error_set(err, BERT_E_INVALID, "--mlm-weight must not be negative, got %g",
                              o->mlm_weight);
    if (o->freeze_encoder && o->mlm_weight > 0.0)
        return bert_error_set(err, BERT_E_INVALID,
                              "--mlm-weight needs the encoder to train: not with "
                              "--freeze-encoder");
    if (o->n_corpus > 0 && o->mlm_weight == 0.0)
        return bert_error_set(err, BERT_E_INVALID, "--corpus is the text of the --mlm-weight "
                                                   "batches: give --mlm-weight too");
    if (o->tokens && (o->labels != NULL || o->mlm_weight > 0.0 ||
                      o->problem != BERT_PROBLEM_SINGLE_LABEL))
        return bert_error_set(err, BERT_E_INVALID,
                              "--task token-classification takes its labels from the training "
                              "file: no --labels, --problem or --mlm-weight");
    if (o->all_subtokens && !o->tokens)
        return bert_error_set(err, BERT_E_INVALID,
                              "--label-all-subtokens needs --task token-classification");
    if (o->problem == BERT_PROBLEM_MULTI_LABEL && o->labels == NULL)
        return bert_error_set(err, BERT_E_INVALID, "--problem multi needs --labels");
    if (o->problem == BERT_PROBLEM_REGRESSION && o->labels != NULL)
        return bert_error_set(err, BERT_E_INVALID,
                              "--problem regression takes no --labels (its head is one number)");
    if (o->problem != BERT_PROBLEM_SINGLE_LABEL && o->problem != BERT_PROBLEM_MULTI_LABEL &&
        o->problem != BERT_PROBLEM_REGRESSION)
        return bert_error_set(err, BERT_E_INVALID, "--problem must be single, multi or regression");
    if (o->dtype != BERT_DTYPE_F32 && o->dtype != BERT_DTYPE_F16 && o->dtype != BERT_DTYPE_BF16)
        return bert_error_set(err, BERT_E_INVALID, "--dtype must be f32, f16 or bf16");
    return BERT_OK;
}

struct finetune {
    const struct train_finetune_options *o;
    struct train_model model;
    struct train_work *work;
    struct train_adamw opt;
    struct bert_tokenizer *tok;
    struct train_labeled train, dev;
    struct batch_buf buf;
    float *targets; /* (batch, width) multi-label / regression targets of a batch */
    size_t *order;  /* (train.n) this epoch's order */
    size_t max_len, per_epoch, total, warmup, eval_every;
    double lr;
    unsigned parts; /* what the optimiser updates (enum train_part bits) */
    /* --mlm-weight: a masked batch also trains the MLM head, so the model
     * keeps filling masks while its encoder moves: a copy of each batch, or
     * with --corpus as many sequences of general text (rehearsal, so the
     * head does not drift to the task's vocabulary). */
    struct train_vocab vocab;
    struct train_mask_options mask;
    struct train_corpus corpus;
    size_t corpus_train;    /* sequences drawn from: pretrain's held-out tail excluded */
    struct batch_buf mlm_buf;
};

/* Rows order[first .. first + batch) of `d` into the batch buffer. */
static struct train_batch labeled_batch(struct finetune *f, const struct train_labeled *d,
                                        const size_t *order, size_t first, size_t count)
{
    size_t n_tokens = 0;
    f->buf.start[0] = 0;
    for (size_t k = 0; k < count; k++) {
        size_t i = order ? order[first + k] : first + k;
        size_t n = d->start[i + 1] - d->start[i];
        memcpy(f->buf.ids + n_tokens, d->ids + d->start[i], n * sizeof *f->buf.ids);
        memcpy(f->buf.types + n_tokens, d->types + d->start[i], n * sizeof *f->buf.types);
        n_tokens += n;
        f->buf.start[k + 1] = n_tokens;
        f->buf.cls_labels[k] = d->labels[i];
        if (d->width > 0)
            memcpy(f->targets + k * d->width, d->targets + i * d->width,
                   d->width * sizeof *f->targets);
    }
    return (struct train_batch){.b = {count, n_tokens, f->buf.ids, f->buf.types, f->buf.start},
                                .cls_labels = d->width == 0 ? f->buf.cls_labels : NULL,
                                .cls_targets = d->width > 0 ? f->targets : NULL,
                                .cls_pred = f->buf.pred};
}

/* A masked-LM batch (BERT's rule, masks from `rng`) in f->mlm_buf: the
 * texts of `tb`, or as many random corpus sequences when `from_corpus`. */
static struct train_batch masked_batch(struct finetune *f, const struct train_batch *tb,
                                       bool from_corpus, struct train_rng *rng)
{
    const struct bert_batch *b = &tb->b;
    struct batch_buf *m = &f->mlm_buf;
    size_t n_tokens = b->n_tokens;
    if (from_corpus) {
        m->start[0] = n_tokens = 0;
        for (size_t i = 0; i < b->n_seqs; i++) {
            size_t seq = train_rng_below(rng, f->corpus_train);
            n_tokens += train_corpus_sequence(&f->corpus, seq, m->ids + n_tokens);
            m->start[i + 1] = n_tokens;
        }
        memset(m->types, 0, n_tokens * sizeof *m->types);
    } else {
        memcpy(m->ids, b->ids, n_tokens * sizeof *m->ids);
        memcpy(m->types, b->type_ids, n_tokens * sizeof *m->types);
        memcpy(m->start, b->seq_start, (b->n_seqs + 1) * sizeof *m->start);
    }
    for (size_t i = 0; i < b->n_seqs; i++)
        train_mask_sequence(&f->vocab, &f->mask, rng, m->ids + m->start[i],
                            m->start[i + 1] - m->start[i], m->labels + m->start[i], NULL);
    return (struct train_batch){
        .b = {b->n_seqs, n_tokens, m->ids, m->types, m->start},
        .mlm_labels = m->labels,
    };
}

/* The dev scores of the head, and the one early stopping follows. */
struct dev_eval {
    double loss, metric;
    const char *metric_name; /* as in "best dev NAME" */
    char scores[160];        /* as on the progress line */
};

/* The scores of `logits` / `pred` against the dev set, into *out. */
static void score_dev(const struct finetune *f, const int32_t *pred, const float *logits,
                      struct dev_eval *out)
{
    const struct bert_config *c = &f->model.config;
    const size_t C = c->num_labels, n = f->dev.n;
    if (c->problem_type == BERT_PROBLEM_MULTI_LABEL) {
        struct train_multi_scores sc = train_score_multi(logits, f->dev.targets, n, C);
        out->metric = sc.micro_f1;
        out->metric_name = "micro-f1";
        snprintf(out->scores, sizeof out->scores, "dev-micro-f1 %.4f  dev-macro-f1 %.4f  "
                 "dev-exact %.4f", sc.micro_f1, sc.macro_f1, sc.exact_match);
    } else if (c->problem_type == BERT_PROBLEM_REGRESSION) {
        struct train_regression_scores sc = train_score_regression(logits, f->dev.targets, n);
        out->metric = sc.pearson;
        out->metric_name = "pearson";
        snprintf(out->scores, sizeof out->scores, "dev-pearson %.4f  dev-spearman %.4f  "
                 "dev-mse %.4f", sc.pearson, sc.spearman, sc.mse);
    } else {
        struct train_scores sc = train_score(pred, f->dev.labels, n, C);
        out->metric = sc.accuracy;
        out->metric_name = "accuracy";
        snprintf(out->scores, sizeof out->scores, "dev-acc %.4f  dev-f1 %.4f", sc.accuracy,
                 C == 2 ? sc.f1_positive : sc.macro_f1);
    }
}

/* Dev loss and scores: accuracy and F1 (single-label), micro-F1 (multi-
 * label) or Pearson (regression) drives early stopping. */
static enum bert_status dev_scores(struct finetune *f, struct dev_eval *out,
                                   struct bert_error *err)
{
    const size_t C = f->model.config.num_labels, n = f->dev.n, batch = f->o->batch;
    int32_t *pred = malloc(n * sizeof *pred);
    float *logits = malloc(n * C * sizeof *logits);
    enum bert_status st = pred && logits ? BERT_OK : BERT_E_NOMEM;
    if (st != BERT_OK)
        bert_error_set(err, st, "out of memory");
    double sum = 0.0;
    size_t mlm_count = 0, mlm_correct = 0;
    for (size_t first = 0; st == BERT_OK && first < n; first += batch) {
        size_t count = n - first < batch ? n - first : batch;
        struct train_batch tb = labeled_batch(f, &f->dev, NULL, first, count);
        tb.cls_logits = logits + first * C;
        struct train_stats ts, mst = {0};
        st = train_step(&f->model, f->work, &tb, false, false, &ts, err);
        if (st == BERT_OK && f->o->mlm_weight > 0.0) {
            /* The same masks at every evaluation: a stream of their own. */
            struct train_rng rng = train_rng_for(0, first, TRAIN_STREAM_HELDOUT);
            struct train_batch mb = masked_batch(f, &tb, false, &rng);
            st = train_step(&f->model, f->work, &mb, false, false, &mst, err);
        }
        if (st != BERT_OK)
            break;
        memcpy(pred + first, f->buf.pred, count * sizeof *pred);
        sum += ts.cls_loss_sum;
        mlm_count += mst.mlm_count;
        mlm_correct += mst.mlm_correct;
    }
    if (st == BERT_OK) {
        out->loss = sum / (double)n;
        score_dev(f, pred, logits, out);
        if (mlm_count > 0) {
            size_t len = strlen(out->scores);
            snprintf(out->scores + len, sizeof out->scores - len, "  dev-mlm-acc %.4f",
                     (double)mlm_correct / (double)mlm_count);
        }
    }
    free(pred);
    free(logits);
    return st;
}

/* "a,b" -> config labels; NULL keeps LABEL_i names for n labels. */
static bool set_labels(struct bert_config *c, const char *list, size_t n)
{
    bert_config_free(c);
    c->num_labels = n;
    if (list != NULL) {
        c->num_labels = 1;
        for (const char *q = list; *q; q++)
            c->num_labels += *q == ',';
    }
    c->id2label = calloc(c->num_labels, sizeof *c->id2label);
    if (c->id2label == NULL)
        return false;
    const char *q = list;
    for (size_t i = 0; i < c->num_labels; i++) {
        char name[64];
        if (list != NULL) {
            size_t len = strcspn(q, ",");
            snprintf(name, sizeof name, "%.*s", (int)len, q);
            q += len + (q[len] == ',');
        } else {
            snprintf(name, sizeof name, "LABEL_%zu", i);
        }
        if ((c->id2label[i] = strdup(name)) == NULL)
            return false;
    }
    return true;
}

/* The checkpoint's encoder (and MLM head, kept so the model still fills
 * masks) plus a new or reused pooler and classifier. */
static enum bert_status finetune_model(struct finetune *f, size_t n_labels,
                                       struct bert_error *err)
{
    const struct train_finetune_options *o = f->o;
    struct bert_model *loaded;
    enum bert_status st = bert_model_load(o->model, &loaded, err);
    if (st != BERT_OK)
        return st;
    const struct bert_weights *lw = &loaded->engine->weights;
    struct bert_config cfg = loaded->config;
    cfg.id2label = NULL;
    if (!set_labels(&cfg, o->labels, n_labels)) {
        bert_config_free(&cfg);
        bert_model_free(loaded);
        return bert_error_set(err, BERT_E_NOMEM, "out of memory");
    }
    cfg.problem_type = o->problem;
    st = train_model_init(&f->model, &cfg, lw->mlm_dense_w != NULL, true, err);
    bert_config_free(&cfg);
    if (st == BERT_OK) {
        /* New heads start as BERT initialises them: N(0, 0.02)-like weights,
         * zero biases; a classifier for another label count is not reused. */
        train_model_synth(&f->model, o->seed, 0.02, 0.0, 0.0);
        struct bert_weights w = *lw;
        if (loaded->config.num_labels != f->model.config.num_labels)
            w.classifier_w = w.classifier_b = NULL;
        st = train_model_copy_weights(&f->model, &w, err);
    }
    bert_model_free(loaded);
    return st;
}

/* The data: training texts (a single-label head takes its size from their
 * ids, the others from --labels or are one number), the model, the dev
 * texts, and the --mlm-weight masker and corpus. */
static enum bert_status finetune_data(struct finetune *f, struct bert_error *err)
{
    const struct train_finetune_options *o = f->o;
    const bool single = o->problem == BERT_PROBLEM_SINGLE_LABEL;
    enum bert_status st;
    if ((st = bert_tokenizer_load(o->model, &f->tok, err)) != BERT_OK ||
        (single && (st = train_labeled_load(&f->train, f->tok, o->train, o->max_len, 0,
                                            err)) != BERT_OK))
        return st;
    size_t n_labels = single && f->train.max_label + 1 > 2 ? (size_t)f->train.max_label + 1
                                                            : (single ? 2 : 1);
    if ((st = finetune_model(f, n_labels, err)) != BERT_OK)
        return st;
    if (o->mlm_weight > 0.0) {
        if (!f->model.mlm || f->model.config.is_decoder)
            return bert_error_set(err, BERT_E_INVALID, "%s: --mlm-weight needs a masked-LM "
                                  "head, and this checkpoint has %s", o->model,
                                  f->model.config.is_decoder ? "a causal one" : "none");
        if ((st = train_vocab_init(&f->vocab, f->tok, err)) != BERT_OK)
            return st;
        f->mask = train_mask_options_default();
    }
    const struct train_label_spec spec = {o->problem, f->model.config.num_labels,
                                          f->model.config.id2label};
    if ((!single && (st = train_labeled_load_spec(&f->train, f->tok, o->train, o->max_len,
                                                  &spec, err)) != BERT_OK) ||
        (st = train_labeled_load_spec(&f->dev, f->tok, o->dev, o->max_len, &spec, err)) !=
            BERT_OK)
        return st;
    if ((size_t)f->train.max_label >= f->model.config.num_labels)
        return bert_error_set(err, BERT_E_INVALID, "%s has label %d but --labels names %zu",
                              o->train, f->train.max_label, f->model.config.num_labels);
    const size_t positions = f->model.config.max_position_embeddings;
    f->max_len = o->max_len < positions ? o->max_len : positions;
    if (o->n_corpus > 0) {
        if ((st = train_corpus_load(&f->corpus, f->tok, o->corpus, o->n_corpus, f->max_len,
                                    err)) != BERT_OK)
            return st;
        f->corpus_train = f->corpus.n_seqs - train_heldout_sequences(f->corpus.n_seqs, 0.05, 500);
        if (f->corpus_train == 0)
            return bert_error_set(err, BERT_E_INVALID, "%s: no text to train on", o->corpus[0]);
    }
    return BERT_OK;
}

/* Data, work memory, optimiser and buffers; the schedule; the opening line. */
static enum bert_status finetune_setup(struct finetune *f, struct bert_error *err)
{
    const struct train_finetune_options *o = f->o;
    enum bert_status st = finetune_data(f, err);
    if (st != BERT_OK)
        return st;
    f->work = train_work_new(&f->model, o->batch * f->max_len, f->max_len, o->threads, err);
    if (f->work == NULL)
        return err ? err->status : BERT_E_NOMEM;
    if ((st = train_adamw_init(&f->opt, &f->model, o->weight_decay, err)) != BERT_OK)
        return st;
    f->order = malloc(f->train.n * sizeof *f->order);
    f->targets = malloc(o->batch * (f->train.width + 1) * sizeof *f->targets);
    if (!batch_buf_init(&f->buf, o->batch, f->max_len) ||
        !batch_buf_init(&f->mlm_buf, o->batch, f->max_len) || f->order == NULL ||
        f->targets == NULL)
        return bert_error_set(err, BERT_E_NOMEM, "out of memory");
    f->lr = o->lr != 0.0 ? o->lr : o->freeze_encoder ? 1e-3 : 2e-5;
    f->per_epoch = (f->train.n + o->batch - 1) / o->batch;
    f->total = f->per_epoch * o->epochs;
    if (o->max_steps > 0 && o->max_steps < f->total)
        f->total = o->max_steps;
    f->eval_every = o->eval_every ? o->eval_every : f->per_epoch;
    f->warmup = (size_t)((double)f->total * o->warmup);
    /* The MLM head changes only when its loss is trained. */
    f->parts = TRAIN_PART_CLASSIFIER | (o->freeze_encoder ? 0u : TRAIN_PART_ENCODER) |
               (o->mlm_weight > 0.0 ? TRAIN_PART_MLM : 0u);
    const enum bert_problem_type problem = o->problem;
    loop_say(o->progress,
             "finetune: %zu training and %zu dev texts, %zu labels%s, %s, %s, %zu steps (%zu "
             "per epoch), lr %.1e%s\n",
             f->train.n, f->dev.n, f->model.config.num_labels,
             problem == BERT_PROBLEM_SINGLE_LABEL   ? ""
             : problem == BERT_PROBLEM_MULTI_LABEL ? " (multi-label)"
                                                   : " (regression)",
             o->freeze_encoder ? "frozen encoder" : "full fine-tuning",
             f->model.config.is_decoder ? "causal, last-token head" : "[CLS] head", f->total,
             f->per_epoch, f->lr,
             o->mlm_weight == 0.0  ? ""
             : f->corpus.n_seqs > 0 ? ", masked-LM loss kept on the corpus"
                                    : ", masked-LM loss kept on the training texts");
    return BERT_OK;
}

/* Training-set figures between two progress lines. */
struct window {
    double loss;
    size_t steps, right, n, mlm, mlm_right;
};

/* Optimiser step `step`: a new epoch's shuffle, the MLM pass when
 * --mlm-weight asks (first: its gradients are scaled by the weight before
 * the classification pass adds its own), the classification pass, clip
 * and update. */
static enum bert_status finetune_step(struct finetune *f, size_t step, struct window *w,
                                      struct bert_error *err)
{
    const struct train_finetune_options *o = f->o;
    const size_t epoch = step / f->per_epoch, first = (step % f->per_epoch) * o->batch;
    if (step % f->per_epoch == 0)
        loop_shuffle(f->order, f->train.n, o->seed, epoch);
    size_t count = f->train.n - first < o->batch ? f->train.n - first : o->batch;
    struct train_batch tb = labeled_batch(f, &f->train, f->order, first, count);
    loop_set_dropout(&tb, o->dropout, o->seed, step);
    struct train_stats st, mst = {0};
    enum bert_status s;
    if (o->mlm_weight > 0.0) {
        struct train_rng rng = train_rng_for(o->seed, step, TRAIN_STREAM_BATCH);
        struct train_batch mb = masked_batch(f, &tb, f->corpus.n_seqs > 0, &rng);
        loop_set_second_dropout(&mb, o->dropout, o->seed, step);
        if ((s = train_step(&f->model, f->work, &mb, true, false, &mst, err)) != BERT_OK)
            return s;
        const float weight = (float)o->mlm_weight;
        for (size_t i = 0; i < f->model.n_params; i++)
            f->model.grads[i] *= weight;
    }
    if ((s = train_step(&f->model, f->work, &tb, true, o->freeze_encoder, &st, err)) != BERT_OK)
        return s;
    train_clip_grads(&f->model, o->clip, f->parts);
    train_adamw_update(&f->opt, &f->model, train_lr_at(step, f->warmup, f->total, f->lr),
                       f->parts);
    memset(f->model.grads, 0, f->model.n_params * sizeof(float));
    w->loss += st.loss;
    w->steps++;
    w->right += st.cls_correct;
    w->n += st.cls_count;
    w->mlm_right += mst.mlm_correct;
    w->mlm += mst.mlm_count;
    return BERT_OK;
}

/* The dev evaluation after `step`: its progress line, the checkpoint when
 * it is the best so far, and *stop once `patience` evaluations in a row
 * did not improve. */
static enum bert_status finetune_evaluate(struct finetune *f, size_t step, double t0,
                                          struct window *w, size_t *bad,
                                          struct train_finetune_result *r, bool *stop,
                                          struct bert_error *err)
{
    const struct train_finetune_options *o = f->o;
    struct dev_eval dev;
    enum bert_status st = dev_scores(f, &dev, err);
    if (st != BERT_OK)
        return st;
    const bool improved = dev.metric > r->best;
    /* The share of texts right: the class (single-label) or the whole set
     * (multi-label); a regression has none. */
    char train_right[64] = "";
    if (o->problem != BERT_PROBLEM_REGRESSION)
        snprintf(train_right, sizeof train_right, "  train-%s %.4f",
                 o->problem == BERT_PROBLEM_SINGLE_LABEL ? "acc" : "exact",
                 (double)w->right / (double)w->n);
    if (w->mlm > 0) {
        size_t len = strlen(train_right);
        snprintf(train_right + len, sizeof train_right - len, "  train-mlm-acc %.4f",
                 (double)w->mlm_right / (double)w->mlm);
    }
    loop_say(o->progress,
             "step %zu/%zu  epoch %.2f  train-loss %.4f%s  dev-loss %.4f  %s  %.0fs%s\n",
             step + 1, f->total, (double)(step + 1) / (double)f->per_epoch,
             w->loss / (double)w->steps, train_right, dev.loss, dev.scores, loop_now() - t0,
             improved ? "  (best, saved)" : "");
    *w = (struct window){0};
    r->evaluations++;
    r->metric = dev.metric_name;
    if (improved) {
        r->best = dev.metric;
        *bad = 0;
        return train_model_save(&f->model, o->out, o->model, o->dtype, err);
    }
    if (++*bad >= o->patience) {
        loop_say(o->progress, "early stop: no dev improvement in %zu evaluations\n",
                 o->patience);
        r->early_stop = *stop = true;
    }
    return BERT_OK;
}

enum bert_status train_finetune(const struct train_finetune_options *o,
                                struct train_finetune_result *result, struct bert_error *err)
{
    enum bert_status st = train_finetune_check(o, err);
    if (st != BERT_OK)
        return st;
    if (o->tokens)
        return train_finetune_tokens(o, result, err);
    struct finetune f = {.o = o};
    struct train_finetune_result r = {.best = -INFINITY, .metric = "accuracy"};
    st = finetune_setup(&f, err);
    const double t0 = loop_now();
    struct window w = {0};
    size_t bad = 0;
    bool stop = false;
    for (size_t step = 0; st == BERT_OK && !stop && step < f.total; step++) {
        st = finetune_step(&f, step, &w, err);
        r.steps = step + 1;
        if (st == BERT_OK && ((step + 1) % f.eval_every == 0 || step + 1 == f.total))
            st = finetune_evaluate(&f, step, t0, &w, &bad, &r, &stop, err);
    }
    if (st == BERT_OK) {
        loop_say(o->progress, "best dev %s %.4f (saved in %s)\n", r.metric, r.best, o->out);
        if (result != NULL)
            *result = r;
    }
    free(f.order);
    free(f.targets);
    batch_buf_free(&f.mlm_buf);
    train_corpus_free(&f.corpus);
    train_vocab_free(&f.vocab);
    batch_buf_free(&f.buf);
    train_work_free(f.work);
    train_adamw_free(&f.opt);
    train_model_free(&f.model);
    train_labeled_free(&f.train);
    train_labeled_free(&f.dev);
    bert_tokenizer_free(f.tok);
    return st;
}
