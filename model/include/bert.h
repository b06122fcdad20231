/* libbert: BERT-family encoders over packed, padding-free batches. The one
 * header of the engine's API; everything else in model/ is private to it.
 *
 * Use:
 *   bert_model_load       a checkpoint folder -> struct bert_model (read-only)
 *   bert_model_use_bf16   optional, before serving: dense layers in bf16
 *   bert_model_use_int8   optional, before serving: dense layers in int8
 *   bert_scratch_new      per worker: working memory and a compute team
 *   bert_run              a batch of sequences, each with its task
 *   bert_scratch_free, bert_model_free
 *
 * Threading: a loaded model is read-only, so any number of threads may run
 * it at once, each with its own scratch. A scratch is used by one thread at
 * a time. Errors: functions that can fail return an enum bert_status and
 * fill a struct bert_error (status.h) with one sentence naming the file,
 * tensor or input at fault. */
#ifndef BERT_H
#define BERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "tokenizer.h"

/* ---- configuration (config.json and the sentence-transformers files) ---- */

enum bert_family {
    BERT_FAMILY_BERT,       /* BertModel and BertFor* */
    BERT_FAMILY_DISTILBERT, /* DistilBertModel: no token types, its own names */
    BERT_FAMILY_ROBERTA,    /* RoBERTa, XLM-RoBERTa, CamemBERT: BERT layers, offset positions */
    BERT_FAMILY_ELECTRA,    /* ELECTRA: embedding_size, projected to hidden_size */
    BERT_FAMILY_MODERNBERT, /* ModernBERT: pre-norm, RoPE, GeGLU, local/global attention */
    BERT_FAMILY_MPNET,      /* MPNet: BERT layers plus a bucketed relative position bias */
    BERT_FAMILY_NOMIC_BERT, /* NomicBERT: post-LN, fused QKV, RoPE, SwiGLU / GeGLU */
    BERT_FAMILY_JINA_BERT,  /* JinaBERT v2 (model_type bert, alibi): BERT with ALiBi, GeGLU */
    BERT_FAMILY_DEBERTA_V2, /* DeBERTa-v2/v3: BERT layers with disentangled attention */
    BERT_FAMILY_GTE,        /* GTE "new" (model_type new): post-LN, fused QKV, NTK RoPE, GLU */
    BERT_FAMILY_COUNT
};

/* "bert", "distilbert", "roberta", "electra", "modernbert", "mpnet", "nomic_bert",
 * "jina_bert", "gte". */
const char *bert_family_name(enum bert_family family);

enum bert_activation {
    BERT_ACTIVATION_GELU,      /* exact erf GELU ("gelu") */
    BERT_ACTIVATION_GELU_TANH, /* tanh approximation ("gelu_new", "gelu_pytorch_tanh", "gelu_fast") */
    BERT_ACTIVATION_RELU,
    BERT_ACTIVATION_SILU,      /* "silu", "swish" */
    BERT_ACTIVATION_TANH,      /* the BERT / RoBERTa classification dense layer */
};

enum bert_pooling {
    BERT_POOLING_CLS,
    BERT_POOLING_MEAN,
    BERT_POOLING_MAX,
};

const char *bert_pooling_name(enum bert_pooling pooling);
/* "cls" | "mean" | "max" -> pooling; false when unknown. */
bool bert_pooling_parse(const char *name, enum bert_pooling *out);

enum bert_problem_type {
    BERT_PROBLEM_UNSET,       /* config.json has no problem_type */
    BERT_PROBLEM_SINGLE_LABEL,
    BERT_PROBLEM_MULTI_LABEL,
    BERT_PROBLEM_REGRESSION,
};

/* sentence-transformers' CrossEncoder activation (config.json
 * "sentence_transformers": {"activation_fn"}, or the older
 * "sbert_ce_default_activation_function"), which its predict() and vLLM's
 * score task apply to a cross-encoder's logit. */
enum bert_ce_activation {
    BERT_CE_SIGMOID,          /* named Sigmoid or Softmax, or not named (one label) */
    BERT_CE_IDENTITY,         /* the logit itself (the ms-marco cross-encoders) */
    BERT_CE_TANH,
};

struct bert_config {
    char model_type[32];         /* "bert", "distilbert", "roberta", "xlm-roberta", ... */
    enum bert_family family;     /* from model_type */
    size_t vocab_size;
    size_t embedding_size;       /* E: ELECTRA's embedding width, projected to H; else H */
    size_t hidden_size;          /* H */
    size_t num_layers;           /* L */
    size_t num_heads;            /* A; H % A == 0 */
    size_t intermediate_size;    /* I */
    size_t max_position_embeddings;
    size_t type_vocab_size;      /* 0: the family has no token types (DistilBERT) */
    size_t position_offset;      /* first position id: RoBERTa pad_token_id + 1, else 0 */
    float layer_norm_eps;
    enum bert_activation activation;
    enum bert_activation pooler_activation; /* the dense layer before the classifier */
    enum bert_activation mlm_activation;    /* the MLM head's transform */
    int32_t pad_token_id;

    /* Classification head. num_labels is 2 when config.json says nothing,
     * as in transformers. id2label[i] is malloc'd ("LABEL_i" by default). */
    size_t num_labels;
    char **id2label;             /* (num_labels) */
    enum bert_problem_type problem_type;
    enum bert_ce_activation ce_activation;
    bool tie_word_embeddings;    /* MLM decoder shares the word embeddings */
    char architecture[64];       /* architectures[0], "" when absent */
    /* The per-token head architectures[0] names: *ForTokenClassification
     * (num_labels columns) or *ForQuestionAnswering (start and end logits). */
    enum bert_token_head {
        BERT_TOKEN_HEAD_NONE,
        BERT_TOKEN_HEAD_CLASSIFICATION,
        BERT_TOKEN_HEAD_QUESTION_ANSWERING,
    } token_head;
    /* The per-token head a later entry of architectures names, when
     * architectures[0] names none (gte-multilingual-base: NewModel, then
     * NewForTokenClassification). Loading takes it as token_head when the
     * weights hold that head and no pooler. */
    enum bert_token_head listed_token_head;
    bool is_decoder;             /* causal self-attention (BertConfig's flag); trainer-only */

    /* sentence-transformers: defaults for /embed. `pooling_from_model` is
     * true when 1_Pooling/config.json chose the pooling; `normalize` is true
     * when modules.json lists a Normalize module. */
    enum bert_pooling pooling;
    bool pooling_from_model;
    bool normalize;
    size_t st_max_seq_length;    /* sentence_bert_config.json max_seq_length, 0 if none */
    /* modules.json's Dense modules between Pooling and Normalize, in order:
     * their folders ("2_Dense"), loaded by bert_model_load. */
#define BERT_MAX_ST_DENSE 4
    char st_dense[BERT_MAX_ST_DENSE][64];
    size_t n_st_dense;
    /* config_sentence_transformers.json "prompts" (name -> text put before
     * the input, as SentenceTransformer.encode(prompt_name=...)) and its
     * "default_prompt_name" (an index into them, or -1). */
    char **prompt_names;         /* (n_prompts) */
    char **prompt_texts;         /* (n_prompts) */
    size_t n_prompts;
    long default_prompt;

    /* ModernBERT (zero / false for the other families). Layer i attends
     * globally when i % global_attn_every == 0, else to the tokens within
     * local_window / 2 positions on either side; each kind rotates queries
     * and keys with its own RoPE theta. Missing biases are absent tensors. */
    struct bert_modernbert {
        double global_rope_theta, local_rope_theta;
        size_t global_attn_every;
        size_t local_window;     /* config.json local_attention: the whole window */
        bool attention_bias, mlp_bias, norm_bias, classifier_bias;
        enum bert_pooling classifier_pooling; /* cls | mean */
        enum bert_activation classifier_activation; /* ModernBertPredictionHead's */
    } modern;

    /* MPNet: the relative position buckets of the attention bias shared by
     * all layers (relative_attention_num_buckets; 0 for the other families). */
    size_t relative_buckets;

    /* NomicBERT (zero / false for the other families): RoPE base, the
     * biases its config turns on (Wqkv and out_proj; fc11 / fc12 and the
     * MLM transform; fc2), and the gate's activation (silu for swiglu,
     * gelu for geglu). vocab_size is already rounded up to
     * pad_vocab_size_multiple, as NomicBertModel pads it. */
    struct bert_nomic {
        double rotary_base;
        bool qkv_bias, fc1_bias, fc2_bias;
    } nomic;

    /* DeBERTa-v2/v3 (zero / false for the other families): the relative
     * distance i - j of query i and key j is bucketed (log buckets past
     * position_buckets / 2 when position_buckets > 0) and clamped to
     * [-att_span, att_span); c2p / p2c are pos_att_type's terms; the
     * relative embeddings (2 * att_span rows) go through encoder.LayerNorm
     * when rel_layer_norm (norm_rel_ebd "layer_norm"). */
    struct bert_deberta {
        size_t position_buckets;  /* 0: none */
        size_t max_relative_positions;
        size_t att_span;          /* position_buckets, else max_relative_positions */
        bool c2p, p2c, rel_layer_norm;
    } deberta;
    /* GTE "new" (zero for the other families): rope_theta, and
     * rope_scaling's NTK factor (1: none). NTKScalingRotaryEmbedding runs
     * every position with base rope_theta * factor and frequencies divided
     * by factor^(2 / head size) whenever factor > 1. */
    struct bert_gte {
        double rope_theta;
        double ntk_factor;
    } gte;
};

/* Release id2label. Safe on a zeroed or already freed config. */
void bert_config_free(struct bert_config *cfg);

/* Every dtype a safetensors file may hold: files may carry tensors we never
 * read (e.g. an I64 position_ids buffer), and their sizes are validated
 * too. The engine reads F32, F16 and BF16 weights. */
enum bert_dtype {
    BERT_DTYPE_F32,
    BERT_DTYPE_F16,
    BERT_DTYPE_BF16,
    BERT_DTYPE_F64,
    BERT_DTYPE_I64,
    BERT_DTYPE_I32,
    BERT_DTYPE_I16,
    BERT_DTYPE_I8,
    BERT_DTYPE_U64,
    BERT_DTYPE_U32,
    BERT_DTYPE_U16,
    BERT_DTYPE_U8,
    BERT_DTYPE_BOOL,
    BERT_DTYPE_F8_E4M3,
    BERT_DTYPE_F8_E5M2,
};

/* "F32", "BF16", ... as safetensors spells them. */
const char *bert_dtype_name(enum bert_dtype dtype);

/* ---- a loaded checkpoint ---------------------------------------------- */

/* The weights, mapping and tables the forward pass reads; private to the
 * engine (model/engine.h). */
struct bert_engine;

/* The dense-layer weights bert_model_load packed, where the CPU has
 * AVX-512F, for its own f32 kernel (no repacking of the weights on every
 * product, as a general GEMM does). Only weights used in
 * place from the checkpoint's mapping are packed, and their mapped
 * originals leave the resident set, so each weight is held once; the
 * others (F16/BF16 checkpoints) run on OpenBLAS. bert_model_use_bf16 and
 * bert_model_use_int8 drop the packed copies (all counts are then 0). */
struct bert_f32_packing {
    size_t dense;          /* dense layers the encoder runs */
    size_t packed;         /* of which were packed */
    size_t packed_bytes;   /* the packed copies' memory */
    size_t released_bytes; /* mapped f32 weight bytes they replace in the resident set */
};

/* A loaded checkpoint: config, tokenizer and weights. Read-only after
 * bert_model_load (and bert_model_use_bf16 or _int8) return. */
struct bert_model {
    char *dir;
    struct bert_config config;
    struct bert_tokenizer *tokenizer;
    size_t max_input_tokens;  /* longest sequence the model accepts, specials included */
    size_t embed_dims;        /* width of BERT_TASK_EMBED's vector: hidden_size, or the last
                                 sentence-transformers Dense module's out_features */
    bool can_fill_mask;       /* MLM head present and the tokenizer has a mask token */
    bool can_classify;        /* classifier head present */
    bool can_detect_replaced; /* ELECTRA discriminator head present */
    bool can_classify_tokens; /* *ForTokenClassification head present */
    bool can_answer_questions; /* *ForQuestionAnswering head present */
    bool bf16;                /* dense layers run in bf16 (bert_model_use_bf16) */
    bool int8;                /* dense layers run in int8 (bert_model_use_int8) */
    struct bert_f32_packing f32_packing; /* what bert_model_load packed for f32 products */
    struct bert_engine *engine;
};

/* Load the checkpoint folder `dir` (config.json, model.safetensors,
 * tokenizer.json or vocab.txt, sentence-transformers files). Every failure
 * names the file and the problem. The f32 dense weights are packed now
 * where the CPU allows (model->f32_packing says what was). */
enum bert_status bert_model_load(const char *dir, struct bert_model **out,
                                 struct bert_error *err);

/* Run the dense layers in bf16: each weight is converted now, once, to
 * oneDNN's AMX layout (with AMX) or to the panels of bertserve's own
 * kernel (AVX512_BF16 alone) and kept beside its f32 original; products
 * accumulate in f32 and everything else stays f32. Scratches made after
 * this call run the bf16 products (one made before keeps running f32).
 * Fails with BERT_E_UNSUPPORTED, saying why, when this build has no oneDNN
 * or the CPU lacks AMX and AVX512_BF16; the model then keeps running in
 * f32. Call right after bert_model_load, before the model is shared. */
enum bert_status bert_model_use_bf16(struct bert_model *model, struct bert_error *err);

/* What bert_model_use_int8 did. */
struct bert_int8_info {
    const char *isa;       /* bert_int8_isa() */
    size_t dense;          /* dense layers the encoder runs */
    size_t packed;         /* of which run int8; the others (no fast kernel) f32 */
    size_t released_bytes; /* f32 weight bytes the process no longer keeps resident */
    size_t pad_rows;       /* products of fewer rows run padded to this many (AMX: oneDNN
                              has kernels only for more there); 1 or 0: none padded */
};

/* Run the encoder's dense layers in int8: each weight is quantized now,
 * once, per output channel (symmetric, scale max|w| / 127) into oneDNN's
 * layout; activations are quantized per row at each product, products
 * accumulate in int32; attention, norms, activations, the embeddings and
 * the heads stay f32. F32 weights used in place from the checkpoint's
 * mapping leave the resident set (re-read from the file only by a product
 * that falls back to f32); F16/BF16 checkpoints keep their converted f32
 * copy. Scratches made after this call run the int8 products. Fails with
 * BERT_E_UNSUPPORTED, saying why, when this build has no oneDNN or the CPU
 * has none of AVX512-VNNI, AVX-VNNI and AMX-INT8, and with BERT_E_INVALID
 * after bert_model_use_bf16; the model then keeps running as it was.
 * `info` (may be NULL) receives what was done. Call right after
 * bert_model_load, before the model is shared. */
enum bert_status bert_model_use_int8(struct bert_model *model, struct bert_int8_info *info,
                                     struct bert_error *err);

/* NULL is a no-op. */
void bert_model_free(struct bert_model *model);

/* Whether bf16 dense layers can run here; when not, `why` says why. */
bool bert_bf16_available(char *why, size_t why_len);
/* The instructions bf16 products run on: "AMX", "AVX512_BF16" or "none". */
const char *bert_bf16_isa(void);
/* For tests and benchmarks: with `on`, weights converted to bf16 and
 * scratches made from now on run oneDNN's kernels where bertserve's own
 * would (AVX512_BF16 without AMX), so that the path AMX machines take runs
 * here too; false (nothing changed) where oneDNN has no bf16 kernels here.
 * Weights and the scratches they run with must come from the same setting:
 * switch only with none alive. */
bool bert_bf16_use_onednn(bool on);
/* Whether int8 dense layers can run here; when not, `why` says why. */
bool bert_int8_available(char *why, size_t why_len);
/* The instructions int8 products run on: "AMX-INT8", "AVX512-VNNI",
 * "AVX-VNNI" or "none". */
const char *bert_int8_isa(void);

/* ---- running it: batches, scratch, tasks -------------------------------- */

/* All tokens of all sequences form one [T x H] matrix with no padding;
 * sequence i occupies rows [seq_start[i], seq_start[i + 1]). */
struct bert_batch {
    size_t n_seqs;
    size_t n_tokens;          /* T == seq_start[n_seqs] */
    const int32_t *ids;       /* (T) */
    const int32_t *type_ids;  /* (T) */
    const size_t *seq_start;  /* (n_seqs + 1) */
};

/* A worker's working memory, sized once for at most `max_tokens` packed
 * tokens and sequences of at most `max_seq_len` tokens, and its compute
 * team: `threads` threads (the caller's included; 0 or 1: the caller only)
 * share each forward pass. OpenBLAS should then run single-threaded
 * (openblas_set_num_threads(1)): the team splits the products itself. */
struct bert_scratch;

struct bert_scratch *bert_scratch_new(const struct bert_model *model, size_t max_tokens,
                                      size_t max_seq_len, size_t threads,
                                      struct bert_error *err);
/* NULL is a no-op. */
void bert_scratch_free(struct bert_scratch *s);
size_t bert_scratch_max_tokens(const struct bert_scratch *s);
size_t bert_scratch_max_seq_len(const struct bert_scratch *s);
/* Bytes of memory the scratch holds. */
size_t bert_scratch_bytes(const struct bert_scratch *s);
/* Threads in its compute team. */
size_t bert_scratch_threads(const struct bert_scratch *s);
/* How many of them run the next passes (1..threads; initially all). */
void bert_scratch_set_width(struct bert_scratch *s, size_t width);

/* Profiling a pass (`bert bench --profile`): where each team member's
 * thread CPU time goes, by class of operation. The classes add up to the
 * members' time inside bert_encode: dense layers (the weights' GEMMs),
 * attention's two products (scores and context, with the copies of keys
 * and values they read), its softmax (with the masks and position biases
 * added to the scores), the activation (with the dense bias it fuses),
 * LayerNorm with the residual and bias adds, dtype conversions (bf16 /
 * int8 activations to and from f32), the embedding gather, and the rest
 * (rotary embeddings, gating, barrier waits). The GEMMs are the first two
 * classes. */
enum bert_op_class {
    BERT_OP_DENSE,
    BERT_OP_ATTENTION,
    BERT_OP_SOFTMAX,
    BERT_OP_ACTIVATION,
    BERT_OP_NORM,
    BERT_OP_CONVERT,
    BERT_OP_EMBED,
    BERT_OP_OTHER,
    BERT_OP_CLASSES
};
/* "dense", "attention", ..., "other". */
const char *bert_op_class_name(enum bert_op_class op);
/* Turn profiling on (sums restart at zero) or off. Off, as it starts,
 * costs nothing measurable. Not while a pass runs. */
void bert_scratch_profile(struct bert_scratch *s, bool on);
/* Seconds per class, summed over the team's members, since profiling was
 * turned on. */
void bert_scratch_profile_read(const struct bert_scratch *s, double seconds[BERT_OP_CLASSES]);

/* Run the encoder. On success *hidden points to the final hidden states
 * (T x H, row-major) inside the scratch, valid until its next use. Fails with
 * BERT_E_INVALID when the batch exceeds the scratch sizes or an id is out of
 * range; never allocates. */
enum bert_status bert_encode(const struct bert_model *model, struct bert_scratch *s,
                             const struct bert_batch *batch, const float **hidden,
                             struct bert_error *err);

/* Task heads on top of the encoder, each run only on the rows it needs (the
 * MLM decoder at [MASK] rows, the classifier at [CLS] rows). */
enum bert_task {
    BERT_TASK_EMBED,
    BERT_TASK_FILL_MASK,
    BERT_TASK_CLASSIFY,
    BERT_TASK_REPLACED,
    BERT_TASK_TOKENS,  /* the per-token head: token classification or QA */
    BERT_TASK_HIDDEN,  /* the final hidden state of every token (TEI's /embed_all) */
    BERT_TASK_SPARSE,  /* SPLADE: the MLM head at every token, max-pooled (/embed_sparse) */
};

/* What to compute for one sequence of a batch, and where to put it. */
struct bert_seq_task {
    enum bert_task task;

    /* BERT_TASK_EMBED: pooled vector, through the checkpoint's
     * sentence-transformers Dense modules if any, optionally L2-normalised. */
    enum bert_pooling pooling;
    bool normalize;
    float *embedding;        /* (bert_model.embed_dims) out */

    /* BERT_TASK_FILL_MASK: the MLM head at the given positions of the
     * sequence (its mask tokens: the caller finds them, the engine knows no
     * mask id), and for each position in order the top_k (token,
     * probability) pairs, best first. With targets, probabilities are those
     * of the full-vocabulary softmax at the target ids, and top_k is at most
     * n_targets. */
    const uint32_t *mask_positions; /* (n_masks) strictly ascending, < the sequence's length */
    uint32_t n_masks;
    uint32_t top_k;
    const int32_t *targets;  /* (n_targets) or NULL */
    uint32_t n_targets;
    int32_t *top_ids;        /* (n_masks * top_k) out */
    float *top_probs;        /* (n_masks * top_k) out */

    /* BERT_TASK_CLASSIFY: raw classifier logits. */
    float *logits;           /* (num_labels) out */

    /* BERT_TASK_REPLACED (ELECTRA discriminators): per token, the
     * probability that it was replaced (sigmoid of the discriminator's
     * logit), as ElectraForPreTraining computes it. */
    float *replaced;         /* (tokens of the sequence) out */

    /* BERT_TASK_TOKENS: the per-token head's logits, row by row
     * (bert_token_head_width columns: the labels, or start and end). */
    float *token_logits;     /* (tokens of the sequence x width) out */

    /* BERT_TASK_HIDDEN: bert_encode's rows of the sequence, as they are,
     * or with `project` each through the checkpoint's sentence-transformers
     * Dense modules (vLLM's token_embed), embed_dims wide. */
    float *hidden_states;    /* (tokens of the sequence x H, or x embed_dims) out */
    bool project;

    /* BERT_TASK_SPARSE: per vocabulary entry, the largest log(1 + relu(MLM
     * logit)) over the sequence's tokens, specials included (SPLADE's
     * max pooling). Rows run through the MLM head in blocks, so no
     * tokens x vocabulary matrix is ever held. */
    float *sparse;           /* (vocab_size) out */
};

/* Columns of BERT_TASK_TOKENS' logits: num_labels for token classification,
 * 2 for question answering, 0 without a per-token head. */
static inline size_t bert_token_head_width(const struct bert_model *model)
{
    return model->can_answer_questions  ? 2
           : model->can_classify_tokens ? model->config.num_labels
                                        : 0;
}

/* Encode `batch` and run each sequence's task. Fails with BERT_E_INVALID when
 * a task needs a head the checkpoint lacks or its mask positions are out of
 * order or range; never allocates. A sequence whose encoder output holds a
 * NaN or infinity gets NaN as its first output value (embedding, logits,
 * top_probs or replaced), so that a caller that refuses non-finite results
 * cannot answer it. */
enum bert_status bert_run(const struct bert_model *model, struct bert_scratch *s,
                          const struct bert_batch *batch, const struct bert_seq_task *tasks,
                          struct bert_error *err);

/* Pool rows [row0, row0 + n) of `hidden` (H columns) into out (H). */
void bert_pool(const float *hidden, size_t hidden_size, size_t row0, size_t n,
               enum bert_pooling pooling, bool normalize, float *out);

/* ---- the process's BLAS ------------------------------------------------- */

/* OpenBLAS picks its kernels from CPUID when it loads. Debian's 0.3.21 does
 * not know newer Xeons (family 6 model 207, for one) and falls back to its
 * Prescott (SSE3) kernels: sgemm runs about 4x slower than on the SkylakeX
 * kernels the CPU can run. OPENBLAS_CORETYPE overrides the choice, but is
 * read only at load time, so the fix is to set it and re-execute.
 *
 * Call first thing in main(). When OpenBLAS chose kernels older than the CPU
 * supports and OPENBLAS_CORETYPE is unset, sets it and re-executes this
 * program with the same arguments; otherwise (or if exec fails) returns.
 * Skipped under valgrind, which would lose the child. */
void bert_blas_core_fix(char **argv);

/* The OpenBLAS kernel family in use, e.g. "SkylakeX". */
const char *bert_blas_core(void);

#endif
