/* `bert init`: write a randomly initialised (untrained) checkpoint. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "synth.h"
#include "train_model.h"

/* "a,b,c" -> id2label; returns the count or 0 on allocation failure. */
static size_t split_labels(const char *list, char ***out)
{
    size_t n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    char **labels = calloc(n, sizeof *labels);
    if (labels == NULL)
        return 0;
    const char *start = list;
    for (size_t i = 0; i < n; i++) {
        const char *end = strchr(start, ',');
        size_t len = end ? (size_t)(end - start) : strlen(start);
        labels[i] = strndup(start, len);
        if (labels[i] == NULL) {
            for (size_t k = 0; k < i; k++)
                free(labels[k]);
            free(labels);
            return 0;
        }
        start = end ? end + 1 : start + len;
    }
    *out = labels;
    return n;
}

/* `bert init`'s geometry before any flag: a 2-layer, 128-wide BERT; the
 * ModernBERT values are ModernBERT-base's (the other families ignore them). */
static struct bert_synth_options init_defaults(void)
{
    struct bert_synth_options o = bert_synth_options_default();
    struct bert_config *c = &o.config;
    train_small_geometry(c);
    c->pooling = BERT_POOLING_MEAN;
    struct bert_modernbert *mb = &c->modern;
    mb->global_rope_theta = 160000.0;
    mb->local_rope_theta = 10000.0;
    mb->global_attn_every = 3;
    mb->local_window = 128;
    mb->classifier_activation = BERT_ACTIVATION_GELU;
    c->nomic.rotary_base = 1000.0; /* nomic-embed-text's rotary_emb_base */
    c->gte.rope_theta = 20000.0;   /* gte-multilingual-base's rope_theta and NTK factor */
    c->gte.ntk_factor = 8.0;
    return o;
}

/* The flags that are names or lists, resolved into the options. */
struct init_choices {
    const char *dtype, *labels, *act, *pooling, *problem, *model_type, *classifier_pooling;
    double eps;
    bool biases;
};

/* Returns CLI_EXIT_OK, or the exit status after saying what is wrong. */
static int apply_choices(const struct init_choices *ch, struct bert_synth_options *o)
{
    struct bert_config *c = &o->config;
    struct bert_modernbert *mb = &c->modern;
    c->layer_norm_eps = (float)ch->eps;
    if (strlen(ch->model_type) >= sizeof c->model_type) {
        fprintf(stderr, "bert init: --model-type '%s' is too long\n", ch->model_type);
        return CLI_EXIT_USAGE;
    }
    snprintf(c->model_type, sizeof c->model_type, "%s", ch->model_type);
    if (!cli_parse_dtype(ch->dtype, &o->dtype)) {
        fprintf(stderr, "bert init: --dtype must be f32, f16 or bf16\n");
        return CLI_EXIT_USAGE;
    }
    static const struct {
        const char *name;
        enum bert_activation act;
    } acts[] = {{"gelu", BERT_ACTIVATION_GELU},
                {"gelu_new", BERT_ACTIVATION_GELU_TANH},
                {"relu", BERT_ACTIVATION_RELU},
                {"silu", BERT_ACTIVATION_SILU}};
    bool act_ok = false;
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
        if (strcmp(ch->act, acts[i].name) == 0) {
            c->activation = acts[i].act;
            act_ok = true;
        }
    if (!act_ok || !bert_pooling_parse(ch->pooling, &c->pooling) ||
        !bert_pooling_parse(ch->classifier_pooling, &mb->classifier_pooling) ||
        mb->classifier_pooling == BERT_POOLING_MAX) {
        fprintf(stderr, "bert init: unknown --act '%s', --pooling '%s' or --classifier-pooling '%s'\n",
                ch->act, ch->pooling, ch->classifier_pooling);
        return CLI_EXIT_USAGE;
    }
    mb->attention_bias = mb->mlp_bias = mb->norm_bias = mb->classifier_bias = ch->biases;
    c->nomic.qkv_bias = c->nomic.fc1_bias = c->nomic.fc2_bias = ch->biases;
    if (ch->problem != NULL) {
        if (strcmp(ch->problem, "single_label") == 0)
            c->problem_type = BERT_PROBLEM_SINGLE_LABEL;
        else if (strcmp(ch->problem, "multi_label") == 0)
            c->problem_type = BERT_PROBLEM_MULTI_LABEL;
        else if (strcmp(ch->problem, "regression") == 0)
            c->problem_type = BERT_PROBLEM_REGRESSION;
        else {
            fprintf(stderr, "bert init: unknown --problem-type '%s'\n", ch->problem);
            return CLI_EXIT_USAGE;
        }
    }
    if (ch->labels != NULL) {
        o->classifier = true;
        c->num_labels = split_labels(ch->labels, &c->id2label);
        if (c->num_labels == 0) {
            fprintf(stderr, "bert init: out of memory\n");
            return CLI_EXIT_FAILURE;
        }
    }
    return CLI_EXIT_OK;
}

int cli_init_command(int argc, char **argv)
{
    struct bert_synth_options o = init_defaults();
    struct bert_config *c = &o.config;
    struct bert_modernbert *mb = &c->modern;
    const char *out = NULL;
    struct init_choices ch = {.dtype = "f32", .act = "gelu", .pooling = "mean",
                              .model_type = "bert", .classifier_pooling = "cls", .eps = 1e-12};
    struct cli_opt opts[] = {
        {"out", CLI_OPT_STRING, &out, "checkpoint folder to write (required)"},
        {"tokenizer", CLI_OPT_STRING, &o.tokenizer_dir, "folder to copy tokenizer files from (required)"},
        {"model-type", CLI_OPT_STRING, &ch.model_type,
         "bert, distilbert, roberta, xlm-roberta, camembert, electra, modernbert, mpnet, "
         "nomic_bert, deberta-v2, new (GTE) (bert)"},
        {"vocab-size", CLI_OPT_SIZE, &c->vocab_size,
         "embedding rows, at least the tokenizer's (0: the tokenizer's; more: padding rows)"},
        {"config", CLI_OPT_STRING, &o.config_file,
         "a real config.json: its family and geometry instead of the flags', kept as is"},
        {"embedding-size", CLI_OPT_SIZE, &c->embedding_size,
         "ELECTRA embedding width, projected to --hidden (hidden)"},
        {"layers", CLI_OPT_SIZE, &c->num_layers, "encoder layers (2)"},
        {"hidden", CLI_OPT_SIZE, &c->hidden_size, "hidden size (128)"},
        {"heads", CLI_OPT_SIZE, &c->num_heads, "attention heads (2)"},
        {"intermediate", CLI_OPT_SIZE, &c->intermediate_size, "feed-forward size (512)"},
        {"max-position", CLI_OPT_SIZE, &c->max_position_embeddings, "position embeddings (512)"},
        {"type-vocab", CLI_OPT_SIZE, &c->type_vocab_size, "token types (2)"},
        {"eps", CLI_OPT_DOUBLE, &ch.eps, "LayerNorm epsilon (1e-12)"},
        {"act", CLI_OPT_STRING, &ch.act,
         "hidden_act: gelu, gelu_new, relu, silu (gelu); NomicBERT: silu swiglu, gelu geglu"},
        {"rotary-base", CLI_OPT_DOUBLE, &c->nomic.rotary_base, "NomicBERT: rotary_emb_base (1000)"},
        {"rope-theta", CLI_OPT_DOUBLE, &c->gte.rope_theta, "GTE: rope_theta (20000)"},
        {"ntk-factor", CLI_OPT_DOUBLE, &c->gte.ntk_factor,
         "GTE: rope_scaling's NTK factor (8; 1: no rope_scaling)"},
        {"seed", CLI_OPT_U64, &o.seed, "generator seed (0)"},
        {"weight-std", CLI_OPT_DOUBLE, &o.weight_std, "std of weights and embeddings (0.02)"},
        {"bias-range", CLI_OPT_DOUBLE, &o.bias_range, "biases uniform in [-r, r] (0)"},
        {"ln-range", CLI_OPT_DOUBLE, &o.ln_range, "LayerNorm gamma 1 +- r, beta +- r (0)"},
        {"dtype", CLI_OPT_STRING, &ch.dtype, "f32, f16 or bf16 (f32)"},
        {"prefix", CLI_OPT_FLAG, &o.prefix,
         "name encoder tensors with the family prefix ('bert.', 'roberta.', ...)"},
        {"mlm", CLI_OPT_FLAG, &o.mlm, "add a masked-LM head"},
        {"untied-decoder", CLI_OPT_FLAG, &o.untied_decoder, "MLM decoder not tied to embeddings"},
        {"pooler", CLI_OPT_FLAG, &o.pooler, "add the pooler"},
        {"labels", CLI_OPT_STRING, &ch.labels, "add a classifier with these labels (a,b,c)"},
        {"problem-type", CLI_OPT_STRING, &ch.problem, "single_label | multi_label | regression"},
        {"sentence-transformers", CLI_OPT_FLAG, &o.sentence_transformers, "write modules.json and 1_Pooling"},
        {"pooling", CLI_OPT_STRING, &ch.pooling, "sentence-transformers pooling: cls, mean, max (mean)"},
        {"normalize", CLI_OPT_FLAG, &o.st_normalize, "sentence-transformers Normalize module"},
        {"max-seq-length", CLI_OPT_SIZE, &o.st_max_seq_length, "sentence_bert_config max_seq_length"},
        {"global-every", CLI_OPT_SIZE, &mb->global_attn_every,
         "ModernBERT: layer i attends globally when i % N == 0 (3)"},
        {"local-window", CLI_OPT_SIZE, &mb->local_window,
         "ModernBERT: local attention window, both sides together (128)"},
        {"global-theta", CLI_OPT_DOUBLE, &mb->global_rope_theta, "ModernBERT: global RoPE theta (160000)"},
        {"local-theta", CLI_OPT_DOUBLE, &mb->local_rope_theta, "ModernBERT: local RoPE theta (10000)"},
        {"classifier-pooling", CLI_OPT_STRING, &ch.classifier_pooling,
         "ModernBERT: classifier pooling, cls or mean (cls)"},
        {"discriminator", CLI_OPT_FLAG, &o.discriminator,
         "ELECTRA: add the discriminator head (ElectraForPreTraining)"},
        {"token-classification", CLI_OPT_FLAG, &o.token_classification,
         "a per-token classifier over --labels (*ForTokenClassification)"},
        {"question-answering", CLI_OPT_FLAG, &o.question_answering,
         "start and end logits per token (*ForQuestionAnswering)"},
        {"biases", CLI_OPT_FLAG, &ch.biases,
         "ModernBERT: attention, MLP, norm and head biases on; NomicBERT: qkv_proj_bias, "
         "mlp_fc1_bias, mlp_fc2_bias (the real checkpoints have none)"},
    };
    const size_t n_opts = sizeof opts / sizeof opts[0];
    if (!cli_parse("init", argc, argv, opts, n_opts))
        return CLI_EXIT_USAGE;
    if (out == NULL || o.tokenizer_dir == NULL) {
        fprintf(stderr, "usage: bert init --out DIR --tokenizer DIR [options]\n");
        cli_print_options(opts, n_opts);
        return CLI_EXIT_USAGE;
    }
    int rc = apply_choices(&ch, &o);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (o.token_classification)
        o.classifier = false; /* --labels name the per-token classes */
    struct bert_error err = {0};
    enum bert_status st = bert_synth_write(&o, out, &err);
    bert_config_free(c);
    if (st != BERT_OK) {
        fprintf(stderr, "bert init: %s\n", err.message);
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}
