/* `bert pretrain`: masked-LM (or, with --objective clm, causal LM)
 * pretraining from scratch, from another model's weights (--init), or
 * resumed from OUT/checkpoint (train_loop.h). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "loop.h"
#include "train_loop.h"
#include "train_data.h"
#include "train_model.h"
#include "train_optim.h"

struct train_pretrain_options train_pretrain_defaults(void)
{
    struct train_pretrain_options o = {
        .max_len = 128,
        .steps = 1000,
        .batch = 32,
        .lr = 5e-4,
        .weight_decay = 0.01,
        .clip = 1.0,
        .mask = train_mask_options_default(),
        .threads = 1,
        .log_every = 10,
        .heldout = 0.05,
        .heldout_max = 500,
        .dtype = BERT_DTYPE_F32,
    };
    struct bert_config *c = &o.config;
    snprintf(c->model_type, sizeof c->model_type, "bert");
    train_small_geometry(c);
    c->num_labels = 2;
    c->activation = BERT_ACTIVATION_GELU;
    return o;
}

static bool saved_dtype(enum bert_dtype d)
{
    return d == BERT_DTYPE_F32 || d == BERT_DTYPE_F16 || d == BERT_DTYPE_BF16;
}

enum bert_status train_pretrain_check(const struct train_pretrain_options *o,
                                      struct bert_error *err)
{
    const size_t max_position = o->config.max_position_embeddings;
    if (o->n_corpus == 0)
        return bert_error_set(err, BERT_E_INVALID, "--corpus is required");
    if (o->out == NULL)
        return bert_error_set(err, BERT_E_INVALID, "--out is required");
    if (o->tokenizer == NULL)
        return bert_error_set(err, BERT_E_INVALID, "--tokenizer is required");
    if (o->steps == 0)
        return bert_error_set(err, BERT_E_INVALID, "--steps must be at least 1");
    if (o->batch == 0)
        return bert_error_set(err, BERT_E_INVALID, "--batch must be at least 1");
    if (o->log_every == 0)
        return bert_error_set(err, BERT_E_INVALID, "--log-every must be at least 1");
    if (o->max_len < 3 || o->max_len > max_position)
        return bert_error_set(err, BERT_E_INVALID,
                              "--max-len must be from 3 to --max-position (%zu), got %zu",
                              max_position, o->max_len);
    if (!(o->heldout >= 0 && o->heldout < 1))
        return bert_error_set(err, BERT_E_INVALID, "--heldout must be in [0, 1), got %g",
                              o->heldout);
    if (!(o->lr > 0))
        return bert_error_set(err, BERT_E_INVALID, "--lr must be above 0, got %g", o->lr);
    if (!(o->dropout >= 0.0 && o->dropout < 1.0))
        return bert_error_set(err, BERT_E_INVALID, "--dropout must be in [0, 1), got %g",
                              o->dropout);
    if (!(o->mask.mask_prob >= 0.0 && o->mask.mask_prob <= 1.0))
        return bert_error_set(err, BERT_E_INVALID, "--mask-prob must be in [0, 1], got %g",
                              o->mask.mask_prob);
    if (!saved_dtype(o->dtype))
        return bert_error_set(err, BERT_E_INVALID, "--dtype must be f32, f16 or bf16");
    return BERT_OK;
}

struct pretrain {
    const struct train_pretrain_options *o;
    struct train_model model;
    struct train_work *work;
    struct train_adamw opt;
    struct train_vocab vocab;
    struct train_corpus corpus;
    struct bert_tokenizer *tok;
    struct batch_buf buf;
    const char *objective;  /* "MLM" or "CLM", for the progress lines */
    size_t max_len, warmup, stop_at;
    size_t n_train, n_heldout;
};

/* Sequence i of the corpus with its labels, appended to the batch: masked
 * with `rng`, or whole with next-token labels for the causal objective. */
static void add_sequence(struct pretrain *p, struct train_rng *rng, size_t i, size_t *n_seqs,
                         size_t *n_tokens)
{
    size_t off = *n_tokens;
    size_t n = train_corpus_sequence(&p->corpus, i, p->buf.ids + off);
    if (p->o->causal)
        train_next_token_labels(p->buf.ids + off, n, p->buf.labels + off);
    else
        train_mask_sequence(&p->vocab, &p->o->mask, rng, p->buf.ids + off, n,
                            p->buf.labels + off, NULL);
    p->buf.start[*n_seqs] = off;
    *n_tokens = off + n;
    p->buf.start[++*n_seqs] = *n_tokens;
}

static struct train_batch mlm_batch(struct pretrain *p, size_t n_seqs, size_t n_tokens)
{
    return (struct train_batch){
        .b = {n_seqs, n_tokens, p->buf.ids, p->buf.types, p->buf.start},
        .mlm_labels = p->buf.labels,
    };
}

/* MLM (or next-token) accuracy over the held-out sequences (fixed masking,
 * no updates). */
static enum bert_status heldout_eval(struct pretrain *p, struct bert_error *err)
{
    const size_t batch = p->o->batch;
    size_t count = 0, correct = 0;
    double loss = 0.0;
    for (size_t first = 0; first < p->n_heldout; first += batch) {
        size_t n_seqs = 0, n_tokens = 0;
        for (size_t i = first; i < p->n_heldout && i < first + batch; i++) {
            struct train_rng rng = train_rng_for(p->o->seed, i, TRAIN_STREAM_HELDOUT);
            add_sequence(p, &rng, p->n_train + i, &n_seqs, &n_tokens);
        }
        struct train_batch tb = mlm_batch(p, n_seqs, n_tokens);
        struct train_stats st;
        enum bert_status s = train_step(&p->model, p->work, &tb, false, false, &st, err);
        if (s != BERT_OK)
            return s;
        count += st.mlm_count;
        correct += st.mlm_correct;
        loss += st.mlm_loss_sum;
    }
    loop_say(p->o->progress,
             "held-out: %zu sequences, %zu predictions, %s accuracy %.4f, loss %.4f\n",
             p->n_heldout, count, p->objective, count ? (double)correct / (double)count : 0.0,
             count ? loss / (double)count : 0.0);
    return BERT_OK;
}

static enum bert_status save_checkpoint(struct pretrain *p, struct bert_error *err)
{
    char dir[PATH_MAX], state[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/checkpoint", p->o->out);
    snprintf(state, sizeof state, "%s/checkpoint/trainer_state.bin", p->o->out);
    enum bert_status st = train_model_save(&p->model, dir, p->o->tokenizer, BERT_DTYPE_F32, err);
    return st == BERT_OK ? train_adamw_save(&p->opt, state, err) : st;
}

/* The model from out/checkpoint (resume), from the weights of --init
 * (continued pretraining, fresh optimiser) or a fresh one for `cfg`. */
static enum bert_status pretrain_model(struct pretrain *p, const struct bert_config *cfg,
                                       struct bert_error *err)
{
    const struct train_pretrain_options *o = p->o;
    enum bert_status st;
    if (!o->resume && o->init != NULL) {
        if ((st = train_model_load(&p->model, o->init, true, false, err)) != BERT_OK)
            return st;
        if (p->model.config.vocab_size != cfg->vocab_size)
            return bert_error_set(err, BERT_E_FORMAT,
                                  "%s: vocabulary of %zu tokens, the tokenizer has %zu", o->init,
                                  p->model.config.vocab_size, cfg->vocab_size);
        p->model.config.is_decoder = cfg->is_decoder; /* --objective chooses */
        return train_adamw_init(&p->opt, &p->model, o->weight_decay, err);
    }
    if (!o->resume) {
        if ((st = train_model_init(&p->model, cfg, true, false, err)) != BERT_OK)
            return st;
        train_model_synth(&p->model, o->seed, 0.02, 0.0, 0.0);
        return train_adamw_init(&p->opt, &p->model, o->weight_decay, err);
    }
    char dir[PATH_MAX], state[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/checkpoint", o->out);
    snprintf(state, sizeof state, "%s/checkpoint/trainer_state.bin", o->out);
    st = train_model_load(&p->model, dir, true, false, err);
    if (st == BERT_OK && p->model.config.is_decoder != cfg->is_decoder)
        st = bert_error_set(err, BERT_E_INVALID,
                            "%s was trained with --objective %s; resume it with the same", dir,
                            p->model.config.is_decoder ? "clm" : "mlm");
    if (st == BERT_OK)
        st = train_adamw_init(&p->opt, &p->model, o->weight_decay, err);
    if (st == BERT_OK)
        st = train_adamw_load(&p->opt, state, err);
    return st;
}

/* Tokenizer, corpus, model, optimiser and buffers, then the opening lines. */
static enum bert_status pretrain_setup(struct pretrain *p, struct bert_error *err)
{
    const struct train_pretrain_options *o = p->o;
    struct bert_config cfg = o->config;
    cfg.is_decoder = o->causal;
    p->objective = o->causal ? "CLM" : "MLM";
    p->warmup = o->warmup ? o->warmup : o->steps / 10 > 0 ? o->steps / 10 : 1;
    p->stop_at = o->stop_at == 0 || o->stop_at > o->steps ? o->steps : o->stop_at;
    enum bert_status st;
    if ((st = bert_tokenizer_load(o->tokenizer, &p->tok, err)) != BERT_OK ||
        (st = train_vocab_init(&p->vocab, p->tok, err)) != BERT_OK ||
        (st = train_corpus_load(&p->corpus, p->tok, o->corpus, o->n_corpus, o->max_len,
                                err)) != BERT_OK)
        return st;
    cfg.vocab_size = p->vocab.size;
    cfg.pad_token_id = bert_tokenizer_pad_id(p->tok) >= 0 ? bert_tokenizer_pad_id(p->tok) : 0;
    if ((st = pretrain_model(p, &cfg, err)) != BERT_OK)
        return st;
    const size_t positions = p->model.config.max_position_embeddings;
    p->max_len = o->max_len < positions ? o->max_len : positions;
    p->work = train_work_new(&p->model, o->batch * p->max_len, p->max_len, o->threads, err);
    if (p->work == NULL)
        return err ? err->status : BERT_E_NOMEM;
    if (!batch_buf_init(&p->buf, o->batch, p->max_len))
        return bert_error_set(err, BERT_E_NOMEM, "out of memory");
    p->n_heldout = train_heldout_sequences(p->corpus.n_seqs, o->heldout, o->heldout_max);
    p->n_train = p->corpus.n_seqs - p->n_heldout;
    const struct bert_config *c = &p->model.config;
    loop_say(o->progress,
             "pretrain (%s): %zu corpus tokens, %zu training sequences, %zu held out; %zu "
             "layers, hidden %zu, heads %zu, intermediate %zu, vocab %zu, %zu parameters; %zu "
             "threads; %.0f MiB of activations\n",
             o->causal ? "causal LM" : "masked LM", p->corpus.n_ids, p->n_train, p->n_heldout,
             c->num_layers, c->hidden_size, c->num_heads, c->intermediate_size, c->vocab_size,
             p->model.n_params, o->threads, (double)train_work_bytes(p->work) / (1 << 20));
    if (o->resume)
        loop_say(o->progress, "resumed at step %zu\n", p->opt.step);
    return BERT_OK;
}

/* The steps from the optimiser's current one to stop_at, a progress line
 * every log_every, a checkpoint every save_every. */
static enum bert_status pretrain_steps(struct pretrain *p, double t0, struct bert_error *err)
{
    const struct train_pretrain_options *o = p->o;
    const size_t first_step = p->opt.step;
    double window_loss = 0.0;
    size_t window_steps = 0, window_count = 0, window_correct = 0, tokens = 0;
    for (size_t step = p->opt.step; step < p->stop_at; step++) {
        struct train_rng rng = train_rng_for(o->seed, step, TRAIN_STREAM_BATCH);
        size_t n_seqs = 0, n_tokens = 0;
        for (size_t k = 0; k < o->batch; k++)
            add_sequence(p, &rng, train_rng_below(&rng, p->n_train), &n_seqs, &n_tokens);
        struct train_batch tb = mlm_batch(p, n_seqs, n_tokens);
        loop_set_dropout(&tb, o->dropout, o->seed, step);
        struct train_stats st;
        enum bert_status s = train_step(&p->model, p->work, &tb, true, false, &st, err);
        if (s != BERT_OK)
            return s;
        train_clip_grads(&p->model, o->clip, TRAIN_PART_ALL);
        double step_lr = train_lr_at(step, p->warmup, o->steps, o->lr);
        train_adamw_update(&p->opt, &p->model, step_lr, TRAIN_PART_ALL);
        memset(p->model.grads, 0, p->model.n_params * sizeof(float));
        window_loss += st.loss;
        window_steps++;
        window_count += st.mlm_count;
        window_correct += st.mlm_correct;
        tokens += n_tokens;
        if ((step + 1) % o->log_every == 0 || step + 1 == p->stop_at) {
            double el = loop_now() - t0, tps = (double)tokens / (el > 0 ? el : 1e-9);
            char eta[32];
            loop_format_duration((double)(o->steps - step - 1) * el /
                                     (double)(step + 1 - first_step),
                                 eta, sizeof eta);
            loop_say(o->progress,
                     "step %zu/%zu  loss %.6f  %s-acc %.4f  lr %.2e  tok/s %.0f  eta %s\n",
                     step + 1, o->steps, window_loss / (double)window_steps,
                     o->causal ? "clm" : "mlm",
                     window_count ? (double)window_correct / (double)window_count : 0.0,
                     step_lr, tps, eta);
            window_loss = 0.0;
            window_steps = window_count = window_correct = 0;
        }
        if (o->save_every > 0 && (step + 1) % o->save_every == 0 &&
            (s = save_checkpoint(p, err)) != BERT_OK)
            return s;
    }
    return BERT_OK;
}

enum bert_status train_pretrain(const struct train_pretrain_options *o, struct bert_error *err)
{
    enum bert_status st = train_pretrain_check(o, err);
    if (st != BERT_OK)
        return st;
    struct pretrain p = {.o = o};
    st = pretrain_setup(&p, err);
    const double t0 = loop_now();
    if (st == BERT_OK)
        st = pretrain_steps(&p, t0, err);
    if (st == BERT_OK)
        st = save_checkpoint(&p, err);
    if (st == BERT_OK && p.opt.step == o->steps)
        st = train_model_save(&p.model, o->out, o->tokenizer, o->dtype, err);
    if (st == BERT_OK) {
        loop_say(o->progress, "trained %zu steps in %.1f s\n", p.opt.step, loop_now() - t0);
        if (p.opt.step == o->steps && p.n_heldout > 0)
            st = heldout_eval(&p, err);
    }
    batch_buf_free(&p.buf);
    train_work_free(p.work);
    train_adamw_free(&p.opt);
    train_model_free(&p.model);
    train_corpus_free(&p.corpus);
    train_vocab_free(&p.vocab);
    bert_tokenizer_free(p.tok);
    return st;
}
