/* The encoder over a packed batch: the scratch it runs in, the checks on a
 * batch, and the family that runs the layers (family/family.h). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "attention.h"
#include "bert.h"
#include "engine.h"
#include "family/family.h"
#include "linear_bf16.h"
#include "linear_f32.h"
#include "linear_int8.h"
#include "profile.h"
#include "scratch.h"

/* Views are 64-byte aligned so GEMMs and vector loops start on cache lines. */
static size_t round_floats(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

/* Each team member's bf16 or int8 context, with room for the most rows it
 * can be given: member m runs only when the team is at least m + 1 wide,
 * so its share of T rows is at most ceil(T / (m + 1)). `max_in`: the
 * widest input of a dense layer (H, I, or ELECTRA's E); `max_out`: the
 * widest output; `strided`: the widest output written into strided rows. */
static bool member_contexts_new(struct bert_scratch *s, const struct bert_model *model, size_t T,
                                size_t max_in, size_t max_out, size_t strided)
{
    const size_t members = bert_team_size(s->team);
    if (model->int8)
        s->int8 = calloc(members, sizeof *s->int8);
    else
        s->bf16 = calloc(members, sizeof *s->bf16);
    if (s->int8 == NULL && s->bf16 == NULL)
        return false;
    for (size_t m = 0; m < members; m++) {
        const size_t rows = (T + m) / (m + 1);
        if (model->int8) {
            s->int8[m] = linear_int8_ctx_new(rows, max_in, max_out, strided);
            s->bytes += linear_int8_ctx_bytes(rows, max_in, max_out, strided);
        } else {
            s->bf16[m] = linear_bf16_ctx_new(rows, max_in, max_out, strided);
            s->bytes += linear_bf16_ctx_bytes(rows, max_in, max_out, strided);
        }
        if (model->int8 ? s->int8[m] == NULL : s->bf16[m] == NULL)
            return false;
    }
    return true;
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
     * tmp the MLM transform's (rows, E) output. ModernBERT's, NomicBERT's,
     * JinaBERT's and GTE's ffn holds the gated MLP's (T, 2I) input and gate, qkv also
     * its (T, I) product. */
    const bool gated = c->family == BERT_FAMILY_MODERNBERT || c->family == BERT_FAMILY_NOMIC_BERT ||
                       c->family == BERT_FAMILY_JINA_BERT || c->family == BERT_FAMILY_GTE;
    const size_t inter = c->intermediate_size;
    const size_t FF = gated ? 2 * inter : inter > E ? inter : E;
    const size_t QKV = gated && inter > 3 * H ? inter : 3 * H;
    const size_t HE = H > E ? H : E;
    /* The widest product written into strided rows: Q, K and V (H), and
     * NomicBERT's two feed-forward halves side by side in ffn (I each). */
    const size_t strided = c->family == BERT_FAMILY_NOMIC_BERT && inter > H ? inter : H;
    /* The widest product of all: no dense output is wider than the
     * buffer it is written to (ffn, qkv, tmp). */
    const size_t widest_ffn_qkv = FF > QKV ? FF : QKV;
    const size_t widest = widest_ffn_qkv > HE ? widest_ffn_qkv : HE;
    s->attn_floats = round_floats(c->family == BERT_FAMILY_DEBERTA_V2
                                      ? family_deberta_workspace_floats(c, max_seq_len)
                                      : attention_workspace_floats(max_seq_len, H / c->num_heads));
    size_t sizes[] = {
        round_floats(T * H),     /* x */
        round_floats(T * QKV),   /* qkv */
        round_floats(T * H),     /* ctx */
        round_floats(T * HE),    /* tmp */
        round_floats(T * FF),    /* ffn */
        members * s->attn_floats,
        model->engine->weights.mlm_dense_w ? round_floats(MLM_ROW_BLOCK * c->vocab_size) : 0,
        model->f32_packing.packed > 0 ? members * LINEAR_F32_BUFFER_FLOATS : 0,
    };
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        total += sizes[i];
    float *mem = aligned_alloc(64, total * sizeof(float));
    s->memory = mem;
    s->masks = calloc(max_tokens, sizeof *s->masks);
    s->prof = calloc(members, sizeof *s->prof);
    s->bytes = total * sizeof(float);
    if (mem == NULL || s->masks == NULL || s->prof == NULL ||
        ((model->bf16 || model->int8) &&
         !member_contexts_new(s, model, T, HE > inter ? HE : inter, widest, strided))) {
        bert_scratch_free(s);
        bert_error_set(err, BERT_E_NOMEM, "out of memory allocating %zu MiB of scratch",
                       total * sizeof(float) >> 20);
        return NULL;
    }
    s->max_tokens = max_tokens;
    s->max_seq_len = max_seq_len;
    float **views[] = {&s->x,   &s->qkv,    &s->ctx,    &s->tmp,
                       &s->ffn, &s->attn,   &s->logits, &s->f32_buf};
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
    for (size_t m = 0; s->bf16 != NULL && m < bert_team_size(s->team); m++)
        linear_bf16_ctx_free(s->bf16[m]);
    free(s->bf16);
    for (size_t m = 0; s->int8 != NULL && m < bert_team_size(s->team); m++)
        linear_int8_ctx_free(s->int8[m]);
    free(s->int8);
    bert_team_free(s->team);
    free(s->memory);
    free(s->masks);
    free(s->prof);
    free(s);
}

size_t bert_scratch_max_tokens(const struct bert_scratch *s) { return s->max_tokens; }
size_t bert_scratch_max_seq_len(const struct bert_scratch *s) { return s->max_seq_len; }
size_t bert_scratch_bytes(const struct bert_scratch *s) { return s->bytes; }
size_t bert_scratch_threads(const struct bert_scratch *s) { return bert_team_size(s->team); }
void bert_scratch_set_width(struct bert_scratch *s, size_t width) { bert_team_set_width(s->team, width); }

void bert_scratch_profile(struct bert_scratch *s, bool on)
{
    memset(s->prof, 0, bert_team_size(s->team) * sizeof *s->prof);
    s->profiling = on;
}

void bert_scratch_profile_read(const struct bert_scratch *s, double seconds[BERT_OP_CLASSES])
{
    for (size_t op = 0; op < BERT_OP_CLASSES; op++) {
        int64_t ns = 0;
        for (size_t m = 0; m < bert_team_size(s->team); m++)
            ns += s->prof[m].ns[op];
        seconds[op] = (double)ns * 1e-9;
    }
}

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
        /* RoPE tables cover max_input_tokens positions. */
        const size_t positions = model->engine->rope_global != NULL
                                     ? model->max_input_tokens
                                     : c->max_position_embeddings - c->position_offset;
        if (b->seq_start[i + 1] < b->seq_start[i] || n == 0 || n > s->max_seq_len ||
            n > positions)
            return bert_error_set(err, BERT_E_INVALID,
                                  "sequence %zu has %zu tokens (must be 1..%zu)", i, n,
                                  s->max_seq_len < positions ? s->max_seq_len : positions);
    }
    /* Families without token types (DistilBERT) ignore the type ids. */
    const bool typed = model->engine->weights.type_emb != NULL;
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

/* The family's forward pass (family/family.h). A switch with no default, so
 * that a new enum bert_family value without a row here does not compile
 * (-Wswitch). */
static family_encode_member_fn family_encoder(enum bert_family family)
{
    switch (family) {
    case BERT_FAMILY_BERT:
    case BERT_FAMILY_DISTILBERT:
    case BERT_FAMILY_ROBERTA:
    case BERT_FAMILY_ELECTRA:
    case BERT_FAMILY_MPNET: /* BERT's layers; attention adds its relative bias */
    case BERT_FAMILY_DEBERTA_V2: /* BERT's layers, disentangled attention */
        return family_bert_encode_member;
    case BERT_FAMILY_MODERNBERT:
        return family_modernbert_encode_member;
    case BERT_FAMILY_NOMIC_BERT:
    case BERT_FAMILY_GTE: /* NomicBERT's layers, with one up_gate_proj and NTK RoPE */
        return family_nomic_bert_encode_member;
    case BERT_FAMILY_JINA_BERT:
        return family_jina_bert_encode_member;
    case BERT_FAMILY_COUNT:
        break;
    }
    return NULL;
}

struct encode_job {
    const struct bert_model *model;
    struct bert_scratch *s;
    const struct bert_batch *b;
    family_encode_member_fn encode_member;
};

static void encode_member(void *arg, size_t member, size_t n_members)
{
    const struct encode_job *job = arg;
    struct bert_share p = bert_share_of(job->b->n_tokens, member, n_members);
    bert_share_use_bf16(&p, job->s->bf16 ? job->s->bf16[member] : NULL);
    p.f32_buf = job->s->f32_buf ? job->s->f32_buf + member * LINEAR_F32_BUFFER_FLOATS : NULL;
    bert_share_use_int8(&p, job->s->int8 ? job->s->int8[member] : NULL);
    /* Rows kept from the last pass came from buffers this one overwrites. */
    linear_int8_forget(p.int8);
    linear_bf16_forget(p.bf16);
    bert_prof_begin(job->s->profiling ? &job->s->prof[member] : NULL);
    job->encode_member(job->model, job->s, job->b, &p);
    bert_prof_end();
}

enum bert_status bert_encode(const struct bert_model *model, struct bert_scratch *s,
                             const struct bert_batch *batch, const float **hidden,
                             struct bert_error *err)
{
    enum bert_status st = check_batch(model, s, batch, err);
    if (st != BERT_OK)
        return st;
    struct encode_job job = {model, s, batch, family_encoder(model->config.family)};
    bert_team_run(s->team, encode_member, &job);
    /* Every layer swaps x and tmp twice, so the result is back in x
     * (ModernBERT's residual stream stays in x). */
    *hidden = s->x;
    return BERT_OK;
}
