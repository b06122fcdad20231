/* Shared by the golden tests: the checkpoint a golden file's `bert init`
 * options describe, and the generator checksums it records
 * (tests/golden/make_goldens.py, tests/extraction/make_goldens.py). */
#include "golden_init.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine.h"
#include "safetensors.h"

void *golden_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(EXIT_FAILURE);
    }
    return p;
}

/* ---- checkpoint options from the golden file's `bert init` flags ---- */

static bool parse_activation(const char *s, enum bert_activation *out)
{
    static const struct {
        const char *name;
        enum bert_activation act;
    } table[] = {{"gelu", BERT_ACTIVATION_GELU},
                 {"gelu_new", BERT_ACTIVATION_GELU_TANH},
                 {"relu", BERT_ACTIVATION_RELU},
                 {"silu", BERT_ACTIVATION_SILU}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(s, table[i].name) == 0) {
            *out = table[i].act;
            return true;
        }
    return false;
}

static bool parse_problem(const char *s, enum bert_problem_type *out)
{
    static const char *const names[] = {[BERT_PROBLEM_SINGLE_LABEL] = "single_label",
                                        [BERT_PROBLEM_MULTI_LABEL] = "multi_label",
                                        [BERT_PROBLEM_REGRESSION] = "regression"};
    for (size_t i = 1; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (enum bert_problem_type)i;
            return true;
        }
    return false;
}

static size_t split_labels(const char *list, char ***out)
{
    size_t n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    char **labels = golden_xcalloc(n, sizeof *labels);
    const char *start = list;
    for (size_t i = 0; i < n; i++) {
        size_t len = strcspn(start, ",");
        labels[i] = strndup(start, len);
        start += len + 1;
    }
    *out = labels;
    return n;
}

/* A table-driven `bert init` option: exactly one target is set. */
struct init_field {
    const char *key;
    size_t *size;
    double *real;
    bool *flag;
};

static bool set_field(const struct init_field *f, size_t n, const char *key, json_t *v,
                      bool *ok)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(key, f[i].key) != 0)
            continue;
        if (f[i].size) {
            *ok = json_is_integer(v) && json_integer_value(v) >= 0;
            *f[i].size = (size_t)json_integer_value(v);
        } else if (f[i].real) {
            *ok = json_is_number(v);
            *f[i].real = json_number_value(v);
        } else {
            *ok = json_is_boolean(v);
            *f[i].flag = json_is_true(v);
        }
        return true;
    }
    return false;
}

/* The golden file lists every `bert init` option (make_goldens.py fills in
 * the defaults); each must be present and known, so a spec the test does
 * not understand fails instead of being half applied. */
bool golden_synth_options(json_t *init, const char *dtype, const char *tokenizer_dir,
                          struct bert_synth_options *o)
{
    *o = bert_synth_options_default();
    struct bert_config *c = &o->config;
    o->tokenizer_dir = tokenizer_dir;
    if (strcmp(dtype, "f32") == 0)
        o->dtype = BERT_DTYPE_F32;
    else if (strcmp(dtype, "f16") == 0)
        o->dtype = BERT_DTYPE_F16;
    else if (strcmp(dtype, "bf16") == 0)
        o->dtype = BERT_DTYPE_BF16;
    else {
        fprintf(stderr, "unknown dtype '%s'\n", dtype);
        return false;
    }
    const struct init_field fields[] = {
        {"embedding-size", &c->embedding_size, NULL, NULL},
        {"layers", &c->num_layers, NULL, NULL},
        {"hidden", &c->hidden_size, NULL, NULL},
        {"heads", &c->num_heads, NULL, NULL},
        {"intermediate", &c->intermediate_size, NULL, NULL},
        {"max-position", &c->max_position_embeddings, NULL, NULL},
        {"type-vocab", &c->type_vocab_size, NULL, NULL},
        {"max-seq-length", &o->st_max_seq_length, NULL, NULL},
        {"weight-std", NULL, &o->weight_std, NULL},
        {"bias-range", NULL, &o->bias_range, NULL},
        {"ln-range", NULL, &o->ln_range, NULL},
        {"prefix", NULL, NULL, &o->prefix},
        {"mlm", NULL, NULL, &o->mlm},
        {"untied-decoder", NULL, NULL, &o->untied_decoder},
        {"pooler", NULL, NULL, &o->pooler},
        {"sentence-transformers", NULL, NULL, &o->sentence_transformers},
        {"normalize", NULL, NULL, &o->st_normalize},
    };
    static const char *const special_keys[] = {"seed", "eps", "act", "pooling", "problem-type",
                                               "labels", "model-type"};
    /* ModernBERT specs carry these too (cli/init.c's defaults otherwise). */
    struct bert_modernbert *mb = &c->modern;
    bool biases = false;
    *mb = (struct bert_modernbert){.global_rope_theta = 160000.0, .local_rope_theta = 10000.0,
                                   .global_attn_every = 3, .local_window = 128,
                                   .classifier_activation = BERT_ACTIVATION_GELU};
    const struct init_field modern_fields[] = {
        {"global-every", &mb->global_attn_every, NULL, NULL},
        {"local-window", &mb->local_window, NULL, NULL},
        {"global-theta", NULL, &mb->global_rope_theta, NULL},
        {"local-theta", NULL, &mb->local_rope_theta, NULL},
        {"biases", NULL, NULL, &biases},
    };
    /* NomicBERT specs: its RoPE base, the vocabulary with padding rows,
     * and the biases flag it shares with ModernBERT. */
    c->nomic.rotary_base = 1000.0;
    const struct init_field nomic_fields[] = {
        {"rotary-base", NULL, &c->nomic.rotary_base, NULL},
        {"vocab-size", &c->vocab_size, NULL, NULL},
        {"biases", NULL, NULL, &biases},
    };
    const size_t n_nomic = sizeof nomic_fields / sizeof nomic_fields[0];
    const bool nomic = json_object_get(init, "rotary-base") != NULL;
    /* GTE specs: rope_theta and the NTK factor. */
    const struct init_field gte_fields[] = {
        {"rope-theta", NULL, &c->gte.rope_theta, NULL},
        {"ntk-factor", NULL, &c->gte.ntk_factor, NULL},
    };
    const size_t n_gte = sizeof gte_fields / sizeof gte_fields[0];
    const bool gte = json_object_get(init, "ntk-factor") != NULL;
    const size_t n_modern = sizeof modern_fields / sizeof modern_fields[0] + 1;
    const size_t n_fields = sizeof fields / sizeof fields[0];
    const size_t n_keys = n_fields + sizeof special_keys / sizeof special_keys[0];
    const bool modern = json_object_get(init, "global-every") != NULL;
    /* ELECTRA discriminator specs add "discriminator"; the extraction
     * goldens (tests/extraction) "token-classification" and
     * "question-answering". */
    const size_t want_keys = n_keys + (modern ? n_modern : 0) + (nomic ? n_nomic : 0) +
                             (gte ? n_gte : 0) +
                             (json_object_get(init, "discriminator") != NULL) +
                             (json_object_get(init, "token-classification") != NULL) +
                             (json_object_get(init, "question-answering") != NULL);
    if (json_object_size(init) != want_keys) {
        fprintf(stderr, "golden init: %zu options, want all %zu\n", json_object_size(init),
                want_keys);
        return false;
    }
    const char *key;
    json_t *v;
    json_object_foreach(init, key, v) {
        const char *s = json_string_value(v);
        bool ok = false;
        if (set_field(fields, n_fields, key, v, &ok) ||
            (modern && set_field(modern_fields, n_modern - 1, key, v, &ok)) ||
            (nomic && set_field(nomic_fields, n_nomic, key, v, &ok)) ||
            (gte && set_field(gte_fields, n_gte, key, v, &ok))) {
        } else if (strcmp(key, "token-classification") == 0) {
            ok = json_is_boolean(v);
            o->token_classification = json_is_true(v);
        } else if (strcmp(key, "question-answering") == 0) {
            ok = json_is_boolean(v);
            o->question_answering = json_is_true(v);
        } else if (strcmp(key, "discriminator") == 0) {
            ok = json_is_boolean(v);
            o->discriminator = json_is_true(v);
        } else if (modern && strcmp(key, "classifier-pooling") == 0) {
            ok = s != NULL && bert_pooling_parse(s, &mb->classifier_pooling);
        } else if (strcmp(key, "model-type") == 0) {
            ok = s != NULL && strlen(s) < sizeof c->model_type;
            if (ok)
                snprintf(c->model_type, sizeof c->model_type, "%s", s);
        } else if (strcmp(key, "seed") == 0) {
            ok = json_is_integer(v);
            o->seed = (uint64_t)json_integer_value(v);
        } else if (strcmp(key, "eps") == 0) {
            ok = json_is_number(v);
            c->layer_norm_eps = (float)json_number_value(v);
        } else if (strcmp(key, "act") == 0) {
            ok = s && parse_activation(s, &c->activation);
        } else if (strcmp(key, "pooling") == 0) {
            ok = s && bert_pooling_parse(s, &c->pooling);
        } else if (strcmp(key, "problem-type") == 0) {
            ok = json_is_null(v) || (s && parse_problem(s, &c->problem_type));
        } else if (strcmp(key, "labels") == 0) {
            ok = json_is_null(v) || s != NULL;
            if (s != NULL) {
                o->classifier = true;
                c->num_labels = split_labels(s, &c->id2label);
            }
        }
        if (!ok) {
            fprintf(stderr, "golden init: key '%s' is unknown or has a bad value\n", key);
            bert_config_free(c);
            return false;
        }
    }
    mb->attention_bias = mb->mlp_bias = mb->norm_bias = mb->classifier_bias = biases;
    c->nomic.qkv_bias = c->nomic.fc1_bias = c->nomic.fc2_bias = biases;
    if (o->token_classification)
        o->classifier = false; /* the labels are the per-token classes */
    return true;
}

/* ---- generator checksums ---- */

/* Same statistics as make_goldens.py: float64 sum and sum of squares of the
 * stored values, and sum(bits_i * (2i + 1)) mod 2^64 of their bit patterns. */
bool golden_check_checksums(const char *label, const char *path, json_t *expected)
{
    struct safetensors_file f;
    struct bert_error err = {0};
    if (safetensors_open(path, &f, &err) != BERT_OK) {
        fprintf(stderr, "%s: %s\n", label, err.message);
        CHECK(false);
        return false;
    }
    bool ok = f.n_tensors == json_object_size(expected);
    if (!ok)
        fprintf(stderr, "%s: generator drifted: %zu tensors, golden has %zu\n", label,
                f.n_tensors, json_object_size(expected));
    const char *name;
    json_t *want;
    json_object_foreach(expected, name, want) {
        const struct safetensors_tensor *t = safetensors_find(&f, name);
        if (t == NULL) {
            fprintf(stderr, "%s: generator drifted: no tensor '%s'\n", label, name);
            ok = false;
            continue;
        }
        size_t esize = bert_dtype_size(t->dtype), count = t->nbytes / esize;
        const uint8_t *raw = t->data;
        double sum = 0.0, sum_sq = 0.0;
        uint64_t mixed = 0;
        for (size_t i = 0; i < count; i++) {
            float v;
            uint64_t bits;
            if (esize == 4) {
                uint32_t b;
                memcpy(&b, raw + 4 * i, 4);
                memcpy(&v, &b, 4);
                bits = b;
            } else {
                uint16_t b;
                memcpy(&b, raw + 2 * i, 2);
                v = t->dtype == BERT_DTYPE_F16 ? bert_f16_to_f32(b) : bert_bf16_to_f32(b);
                bits = b;
            }
            sum += v;
            sum_sq += (double)v * v;
            mixed += bits * (2 * (uint64_t)i + 1);
        }
        char hex[17];
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)mixed);
        double want_sum = json_number_value(json_object_get(want, "sum"));
        double want_sq = json_number_value(json_object_get(want, "sum_sq"));
        /* The sums differ from numpy's pairwise order only by rounding. */
        bool same = (size_t)json_integer_value(json_object_get(want, "count")) == count &&
                    strcmp(hex, json_string_value(json_object_get(want, "bits"))) == 0 &&
                    fabs(sum - want_sum) <= 1e-9 * (fabs(want_sq) + 1.0) &&
                    fabs(sum_sq - want_sq) <= 1e-9 * fabs(want_sq);
        if (!same) {
            fprintf(stderr,
                    "%s: generator drifted: tensor '%s': count %zu sum %.17g sum_sq %.17g bits "
                    "%s; golden %lld %.17g %.17g %s\n",
                    label, name, count, sum, sum_sq, hex,
                    (long long)json_integer_value(json_object_get(want, "count")), want_sum,
                    want_sq, json_string_value(json_object_get(want, "bits")));
            ok = false;
        }
    }
    safetensors_close(&f);
    CHECK(ok);
    return ok;
}

