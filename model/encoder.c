#include "encoder.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "attention.h"
#include "linear.h"
#include "kernels.h"
#include "modernbert.h"
#include "scratch.h"

/* Views are 64-byte aligned so GEMMs and vector loops start on cache lines. */
static size_t round_floats(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

struct bert_scratch *bert_scratch_new(const struct bert_model *model, size_t max_tokens,
                                      size_t max_seq_len, size_t threads, struct bert_error *err)
{
    const struct bert_config *c = &model->config;
    if (max_tokens == 0 || max_seq_len == 0 || max_seq_len > max_tokens) {
        bert_error_set(err, BERT_E_INVALID,
                       "scratch sizes must satisfy 0 < max_seq_len (%zu) <= max_tokens (%zu)",
                       max_seq_len, max_tokens);
        return NULL;
    }
    if (c->is_decoder) {
        /* The engine's attention is bidirectional and its heads read [CLS]. */
        bert_error_set(err, BERT_E_UNSUPPORTED,
                       "%s/config.json: is_decoder (causal) models are trainer-only",
                       model->dir ? model->dir : "(model)");
        return NULL;
    }
    struct bert_scratch *s = calloc(1, sizeof *s);
    if (s == NULL) {
        bert_error_set(err, BERT_E_NOMEM, "out of memory");
        return NULL;
    }
    s->team = bert_team_new(threads, err);
    if (s->team == NULL) {
        free(s);
        return NULL;
    }
    const size_t members = bert_team_size(s->team);
    const size_t T = max_tokens, H = c->hidden_size, E = c->embedding_size;
    /* ffn also holds ELECTRA's (T, E) embeddings before their projection,
     * tmp the MLM transform's (rows, E) output. ModernBERT's ffn holds the
     * GeGLU's (T, 2I) input and gate, qkv also its (T, I) product. */
    const bool modern = c->family == BERT_FAMILY_MODERNBERT;
    const size_t inter = c->intermediate_size;
    const size_t FF = modern ? 2 * inter : inter > E ? inter : E;
    const size_t QKV = modern && inter > 3 * H ? inter : 3 * H;
    const size_t HE = H > E ? H : E;
    s->attn_floats = round_floats(attention_workspace_floats(max_seq_len, H / c->num_heads));
    size_t sizes[] = {
        round_floats(T * H),     /* x */
        round_floats(T * QKV),   /* qkv */
        round_floats(T * H),     /* ctx */
        round_floats(T * HE),    /* tmp */
        round_floats(T * FF),    /* ffn */
        members * s->attn_floats,
        model->weights.mlm_dense_w ? round_floats(MLM_ROW_BLOCK * c->vocab_size) : 0,
    };
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        total += sizes[i];
    float *mem = aligned_alloc(64, total * sizeof(float));
    s->masks = calloc(max_tokens, sizeof *s->masks);
    if (mem == NULL || s->masks == NULL) {
        free(mem);
        free(s->masks);
        bert_team_free(s->team);
        free(s);
        bert_error_set(err, BERT_E_NOMEM, "out of memory allocating %zu MiB of scratch",
                       total * sizeof(float) >> 20);
        return NULL;
    }
    s->memory = mem;
    s->bytes = total * sizeof(float);
    s->max_tokens = max_tokens;
    s->max_seq_len = max_seq_len;
    float **views[] = {&s->x, &s->qkv, &s->ctx, &s->tmp, &s->ffn, &s->attn, &s->logits};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        *views[i] = sizes[i] ? mem : NULL;
        mem += sizes[i];
    }
    return s;
}

void bert_scratch_free(struct bert_scratch *s)
{
    if (s == NULL)
        return;
    bert_team_free(s->team);
    free(s->memory);
    free(s->masks);
    free(s);
}

size_t bert_scratch_max_tokens(const struct bert_scratch *s) { return s->max_tokens; }
size_t bert_scratch_max_seq_len(const struct bert_scratch *s) { return s->max_seq_len; }
size_t bert_scratch_bytes(const struct bert_scratch *s) { return s->bytes; }
size_t bert_scratch_threads(const struct bert_scratch *s) { return bert_team_size(s->team); }
void bert_scratch_set_width(struct bert_scratch *s, size_t width) { bert_team_set_width(s->team, width); }

static enum bert_status check_batch(const struct bert_model *model, const struct bert_scratch *s,
                                    const struct bert_batch *b, struct bert_error *err)
{
    const struct bert_config *c = &model->config;
    if (b->n_tokens > s->max_tokens || b->seq_start[0] != 0 ||
        b->seq_start[b->n_seqs] != b->n_tokens)
        return bert_error_set(err, BERT_E_INVALID,
                              "batch of %zu tokens does not fit the scratch (%zu) or its "
                              "sequence offsets are inconsistent",
                              b->n_tokens, s->max_tokens);
    for (size_t i = 0; i < b->n_seqs; i++) {
        size_t n = b->seq_start[i + 1] - b->seq_start[i];
        /* ModernBERT's RoPE tables cover max_input_tokens positions. */
        const size_t positions = c->family == BERT_FAMILY_MODERNBERT
                                     ? model->max_input_tokens
                                     : c->max_position_embeddings - c->position_offset;
        if (b->seq_start[i + 1] < b->seq_start[i] || n == 0 || n > s->max_seq_len ||
            n > positions)
            return bert_error_set(err, BERT_E_INVALID,
                                  "sequence %zu has %zu tokens (must be 1..%zu)", i, n,
                                  s->max_seq_len < positions ? s->max_seq_len : positions);
    }
    /* Families without token types (DistilBERT) ignore the type ids. */
    const bool typed = model->weights.type_emb != NULL;
    for (size_t t = 0; t < b->n_tokens; t++) {
        if (b->ids[t] < 0 || (size_t)b->ids[t] >= c->vocab_size ||
            (typed && (b->type_ids[t] < 0 || (size_t)b->type_ids[t] >= c->type_vocab_size)))
            return bert_error_set(err, BERT_E_INVALID,
                                  "token %zu: id %d / type id %d out of range (vocab %zu, types "
                                  "%zu)",
                                  t, b->ids[t], b->type_ids[t], c->vocab_size,
                                  c->type_vocab_size);
    }
    return BERT_OK;
}

struct encode_job {
    const struct bert_model *model;
    struct bert_scratch *s;
    const struct bert_batch *b;
};

/* x = LayerNorm(word + position + token type) (BERT sec. 3.2) for this
 * member's rows, E wide. Positions restart for every packed sequence, at
 * position_offset (RoBERTa numbers them from padding_idx + 1); families
 * without token types add none. */
static void embed_rows(const struct bert_model *model, const struct bert_batch *b, size_t r0,
                       size_t r1, float *x)
{
    const struct bert_weights *w = &model->weights;
    const size_t H = model->config.embedding_size;
    const size_t offset = model->config.position_offset;
    size_t seq = 0;
    while (b->seq_start[seq + 1] <= r0)
        seq++;
    for (size_t t = r0; t < r1; t++) {
        while (b->seq_start[seq + 1] <= t)
            seq++;
        size_t pos = offset + t - b->seq_start[seq];
        const float *we = w->word_emb + (size_t)b->ids[t] * H;
        const float *pe = w->pos_emb + pos * H;
        float *row = x + t * H;
        for (size_t k = 0; k < H; k++)
            row[k] = we[k] + pe[k];
        if (w->type_emb != NULL) {
            const float *te = w->type_emb + (size_t)b->type_ids[t] * H;
            for (size_t k = 0; k < H; k++)
                row[k] += te[k];
        }
    }
    kernel_add_layernorm(x + r0 * H, NULL, NULL, w->emb_ln_g, w->emb_ln_b, r1 - r0, H,
                         model->config.layer_norm_eps);
}

/* Attention per sequence and head, handed out one (sequence, head) at a time
 * so members stay busy whatever the sequence lengths. Sequences never see
 * each other's tokens: that is what packing without padding needs. */
void bert_attention_member(const struct bert_model *model, struct bert_scratch *s,
                           const struct bert_batch *b, size_t member, size_t half_window)
{
    const size_t H = model->config.hidden_size, A = model->config.num_heads, D = H / A;
    const size_t ld = 3 * H, items = b->n_seqs * A;
    const float scale = 1.0f / sqrtf((float)D);
    float *work = s->attn + member * s->attn_floats;
    size_t item;
    while ((item = atomic_fetch_add_explicit(&s->next_item, 1, memory_order_relaxed)) < items) {
        size_t i = item / A, h = item % A;
        size_t r0 = b->seq_start[i], n = b->seq_start[i + 1] - r0;
        const float *q = s->qkv + r0 * ld + h * D;
        attention_head_window(q, q + H, q + 2 * H, ld, n, D, scale, s->ctx + r0 * H + h * D, H,
                              work, half_window);
    }
}

/* One post-LN Transformer layer (BERT keeps the original order) for this
 * member; *x and *tmp swap so *x ends as the layer's output. */
static void layer_forward(const struct encode_job *job, const struct bert_layer_weights *l,
                          const struct bert_share *p, struct bert_team *team, float **x,
                          float **tmp)
{
    const struct bert_config *c = &job->model->config;
    struct bert_scratch *s = job->s;
    const size_t T = p->rows, H = c->hidden_size, FF = c->intermediate_size;
    const size_t rows = p->r1 - p->r0;
    size_t c0, c1;

    /* Q, K and V land side by side in one (T, 3H) matrix; the bias goes on
     * the part this member computed. */
    bert_linear_share(p, *x, H, l->query_w, H, s->qkv, 3 * H);
    bert_linear_share(p, *x, H, l->key_w, H, s->qkv + H, 3 * H);
    bert_linear_share(p, *x, H, l->value_w, H, s->qkv + 2 * H, 3 * H);
    bert_share_cols(p, H, &c0, &c1);
    size_t r0 = p->by_rows ? p->r0 : 0, nr = p->by_rows ? rows : T;
    const float *biases[3] = {l->query_b, l->key_b, l->value_b};
    for (size_t k = 0; k < 3; k++)
        kernel_add_bias(s->qkv + r0 * 3 * H + k * H + c0, biases[k] + c0, nr, c1 - c0, 3 * H);
    if (p->member == 0)
        atomic_store_explicit(&s->next_item, 0, memory_order_relaxed);
    bert_team_barrier(team);
    bert_attention_member(job->model, s, job->b, p->member, SIZE_MAX);
    bert_team_barrier(team);

    bert_linear_share(p, s->ctx, H, l->attn_out_w, H, *tmp, H);
    if (!p->by_rows)
        bert_team_barrier(team);
    kernel_add_layernorm(*tmp + p->r0 * H, *x + p->r0 * H, l->attn_out_b, l->attn_ln_g,
                         l->attn_ln_b, rows, H, c->layer_norm_eps);
    float *swap = *x;
    *x = *tmp;
    *tmp = swap;
    if (!p->by_rows)
        bert_team_barrier(team);

    bert_linear_share(p, *x, H, l->ffn_in_w, FF, s->ffn, FF);
    bert_share_cols(p, FF, &c0, &c1);
    kernel_bias_activation(s->ffn + r0 * FF + c0, l->ffn_in_b + c0, nr, c1 - c0, FF,
                           c->activation);
    if (!p->by_rows)
        bert_team_barrier(team);
    bert_linear_share(p, s->ffn, FF, l->ffn_out_w, H, *tmp, H);
    if (!p->by_rows)
        bert_team_barrier(team);
    kernel_add_layernorm(*tmp + p->r0 * H, *x + p->r0 * H, l->ffn_out_b, l->ffn_ln_g,
                         l->ffn_ln_b, rows, H, c->layer_norm_eps);
    swap = *x;
    *x = *tmp;
    *tmp = swap;
    if (!p->by_rows)
        bert_team_barrier(team);
}

static void encode_member(void *arg, size_t member, size_t n_members)
{
    const struct encode_job *job = arg;
    struct bert_scratch *s = job->s;
    const struct bert_weights *w = &job->model->weights;
    const struct bert_share p = bert_share_of(job->b->n_tokens, member, n_members);
    if (job->model->config.family == BERT_FAMILY_MODERNBERT) {
        modernbert_encode_member(job->model, s, job->b, &p);
        return;
    }
    embed_rows(job->model, job->b, p.r0, p.r1, w->emb_proj_w ? s->ffn : s->x);
    if (!p.by_rows)
        bert_team_barrier(s->team);
    if (w->emb_proj_w != NULL) {
        /* ElectraEmbeddings: LayerNorm at width E, then embeddings_project to H. */
        const size_t E = job->model->config.embedding_size, H = job->model->config.hidden_size;
        size_t c0, c1;
        bert_linear_share(&p, s->ffn, E, w->emb_proj_w, H, s->x, H);
        bert_share_cols(&p, H, &c0, &c1);
        size_t r0 = p.by_rows ? p.r0 : 0, nr = p.by_rows ? p.r1 - p.r0 : p.rows;
        kernel_add_bias(s->x + r0 * H + c0, w->emb_proj_b + c0, nr, c1 - c0, H);
        if (!p.by_rows)
            bert_team_barrier(s->team);
    }
    float *x = s->x, *tmp = s->tmp;
    for (size_t l = 0; l < job->model->config.num_layers; l++)
        layer_forward(job, &job->model->weights.layers[l], &p, s->team, &x, &tmp);
}

enum bert_status bert_encode(const struct bert_model *model, struct bert_scratch *s,
                             const struct bert_batch *batch, const float **hidden,
                             struct bert_error *err)
{
    enum bert_status st = check_batch(model, s, batch, err);
    if (st != BERT_OK)
        return st;
    struct encode_job job = {model, s, batch};
    bert_team_run(s->team, encode_member, &job);
    /* Every layer swaps x and tmp twice, so the result is back in x
     * (ModernBERT's residual stream stays in x). */
    *hidden = s->x;
    return BERT_OK;
}
