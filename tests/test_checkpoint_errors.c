/* Bad checkpoints: every corruption must make bert_model_load fail with the
 * right status and a message naming the file and the tensor or key, never
 * crash, leak or accept the folder (STYLE.md habit 4).
 *
 * usage: test_checkpoint_errors WORK_DIR
 * Builds a valid tiny checkpoint with bert_synth_write, then one corrupted
 * copy per case. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "bert.h"
#include "check.h"
#include "safetensors.h"
#include "synth.h"

#define H 32 /* hidden size of the valid checkpoint */

static const char *const valid_files[] = {"config.json", "model.safetensors", "vocab.txt",
                                          "tokenizer_config.json"};

static char work[PATH_MAX - 128];

static void path_in(char *out, size_t size, const char *dir, const char *file)
{
    int n = snprintf(out, size, "%s/%s", dir, file);
    if (n < 0 || (size_t)n >= size) {
        fprintf(stderr, "%s/%s: path too long\n", dir, file);
        exit(EXIT_FAILURE);
    }
}

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf != NULL && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(fp);
    *len = (size_t)n;
    return buf;
}

static bool write_file(const char *path, const void *data, size_t len)
{
    FILE *fp = fopen(path, "wb");
    if (fp == NULL)
        return false;
    bool ok = fwrite(data, 1, len, fp) == len;
    return fclose(fp) == 0 && ok;
}

/* ---- safetensors surgery ---- */

/* A file split into its header (parsed) and data. */
struct image {
    json_t *header;
    uint8_t *data;
    size_t data_len;
};

static bool image_load(const char *dir, struct image *im)
{
    char path[PATH_MAX];
    path_in(path, sizeof path, dir, "model.safetensors");
    size_t len;
    uint8_t *buf = read_file(path, &len);
    if (buf == NULL || len < 8) {
        free(buf);
        return false;
    }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | buf[i];
    im->header = json_loadb((const char *)buf + 8, (size_t)n, 0, NULL);
    im->data_len = len - 8 - (size_t)n;
    im->data = malloc(im->data_len + 64);
    if (im->data != NULL)
        memcpy(im->data, buf + 8 + n, im->data_len);
    free(buf);
    return im->header != NULL && im->data != NULL;
}

/* Write the image back: header padded with spaces to 8 bytes, as the format
 * asks, then the data as it is. */
static bool image_save(const char *dir, struct image *im)
{
    char path[PATH_MAX];
    path_in(path, sizeof path, dir, "model.safetensors");
    char *text = json_dumps(im->header, JSON_COMPACT | JSON_SORT_KEYS);
    size_t n = strlen(text), padded = (n + 7) & ~(size_t)7;
    uint8_t *buf = malloc(8 + padded + im->data_len);
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    memcpy(buf + 8, text, n);
    memset(buf + 8 + n, ' ', padded - n);
    memcpy(buf + 8 + padded, im->data, im->data_len);
    bool ok = write_file(path, buf, 8 + padded + im->data_len);
    free(buf);
    free(text);
    json_decref(im->header);
    free(im->data);
    return ok;
}

static json_t *entry(struct image *im, const char *name)
{
    return json_object_get(im->header, name);
}

static size_t offset_of(struct image *im, const char *name, int which)
{
    return (size_t)json_integer_value(
        json_array_get(json_object_get(entry(im, name), "data_offsets"), (size_t)which));
}

static void set_offsets(struct image *im, const char *name, size_t begin, size_t end)
{
    json_object_set_new(entry(im, name), "data_offsets",
                        json_pack("[II]", (json_int_t)begin, (json_int_t)end));
}

/* The tensor whose data comes last in the file. */
static const char *last_tensor(struct image *im)
{
    const char *key, *last = NULL;
    json_t *v;
    size_t best = 0;
    json_object_foreach(im->header, key, v) {
        if (strcmp(key, "__metadata__") != 0 && (last == NULL || offset_of(im, key, 0) > best)) {
            best = offset_of(im, key, 0);
            last = key;
        }
    }
    return last;
}

/* Rebuild the data contiguously, dropping `drop` and storing `retype` as
 * `dtype` (F64, F16, BF16 or I8; its F32 values converted) with its shape
 * unchanged. */
static void repack(struct image *im, const char *drop, const char *retype, const char *dtype)
{
    size_t cap = im->data_len * 2 + 64, used = 0;
    uint8_t *out = malloc(cap);
    json_t *header = json_object();
    const char *key;
    json_t *v;
    json_object_foreach(im->header, key, v) {
        if (strcmp(key, "__metadata__") == 0 || (drop && strcmp(key, drop) == 0))
            continue;
        size_t begin = offset_of(im, key, 0), end = offset_of(im, key, 1);
        json_t *e = json_deep_copy(v);
        if (retype && strcmp(key, retype) == 0) {
            size_t count = (end - begin) / 4;
            for (size_t i = 0; i < count; i++) {
                float f;
                memcpy(&f, im->data + begin + 4 * i, 4);
                if (strcmp(dtype, "F64") == 0) {
                    double d = f;
                    memcpy(out + used + 8 * i, &d, 8);
                } else if (strcmp(dtype, "F16") == 0 || strcmp(dtype, "BF16") == 0) {
                    uint16_t h = dtype[0] == 'F' ? bert_f32_to_f16(f) : bert_f32_to_bf16(f);
                    memcpy(out + used + 2 * i, &h, 2);
                } else {
                    out[used + i] = (uint8_t)(int8_t)(f * 100.0f);
                }
            }
            size_t esize = strcmp(dtype, "F64") == 0 ? 8 : strcmp(dtype, "I8") == 0 ? 1 : 2;
            json_object_set_new(e, "dtype", json_string(dtype));
            json_object_set_new(e, "data_offsets",
                                json_pack("[II]", (json_int_t)used,
                                          (json_int_t)(used + count * esize)));
            used += count * esize;
        } else {
            memcpy(out + used, im->data + begin, end - begin);
            json_object_set_new(e, "data_offsets",
                                json_pack("[II]", (json_int_t)used,
                                          (json_int_t)(used + end - begin)));
            used += end - begin;
        }
        json_object_set_new(header, key, e);
    }
    json_decref(im->header);
    free(im->data);
    im->header = header;
    im->data = out;
    im->data_len = used;
}

/* ---- config.json surgery ---- */

static json_t *config_load(const char *dir)
{
    char path[PATH_MAX];
    path_in(path, sizeof path, dir, "config.json");
    return json_load_file(path, 0, NULL);
}

static void config_save(const char *dir, json_t *cfg)
{
    char path[PATH_MAX];
    path_in(path, sizeof path, dir, "config.json");
    CHECK(json_dump_file(cfg, path, JSON_INDENT(2)) == 0);
    json_decref(cfg);
}

static void config_set(const char *dir, const char *key, json_t *value)
{
    json_t *cfg = config_load(dir);
    if (value != NULL)
        json_object_set_new(cfg, key, value);
    else
        json_object_del(cfg, key);
    config_save(dir, cfg);
}

static void remove_in(const char *dir, const char *file)
{
    char path[PATH_MAX];
    path_in(path, sizeof path, dir, file);
    CHECK(unlink(path) == 0);
}

/* ---- the cases ---- */

#define WEIGHT "bert.encoder.layer.0.attention.self.key.weight"
#define BIAS "bert.encoder.layer.0.attention.self.key.bias"
#define SECOND "bert.embeddings.position_embeddings.weight" /* second in the file */

static void no_config(const char *d) { remove_in(d, "config.json"); }
static void no_weights(const char *d) { remove_in(d, "model.safetensors"); }

static void no_tokenizer(const char *d)
{
    remove_in(d, "vocab.txt");
    remove_in(d, "tokenizer_config.json");
}

static void pickle_only(const char *d)
{
    char path[PATH_MAX];
    remove_in(d, "model.safetensors");
    path_in(path, sizeof path, d, "pytorch_model.bin");
    CHECK(write_file(path, "PK\3\4 not really a pickle", 24));
}

static void truncate_weights(const char *d, size_t keep)
{
    char path[PATH_MAX];
    path_in(path, sizeof path, d, "model.safetensors");
    size_t len;
    uint8_t *buf = read_file(path, &len);
    CHECK(buf != NULL && write_file(path, buf, keep < len ? keep : len / 2));
    free(buf);
}

static void truncated_half(const char *d) { truncate_weights(d, SIZE_MAX); }
static void truncated_tiny(const char *d) { truncate_weights(d, 5); }

static void set_header_length(const char *d, uint64_t n, bool from_size)
{
    char path[PATH_MAX];
    path_in(path, sizeof path, d, "model.safetensors");
    size_t len;
    uint8_t *buf = read_file(path, &len);
    if (from_size)
        n = len; /* 8 + n > len */
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)(n >> (8 * i));
    CHECK(write_file(path, buf, len));
    free(buf);
}

static void header_past_eof(const char *d) { set_header_length(d, 0, true); }
static void header_huge(const char *d) { set_header_length(d, UINT64_MAX, false); }

static void header_garbage(const char *d)
{
    char path[PATH_MAX];
    path_in(path, sizeof path, d, "model.safetensors");
    size_t len;
    uint8_t *buf = read_file(path, &len);
    memcpy(buf + 8, "{\"bert.x\": nope", 15);
    CHECK(write_file(path, buf, len));
    free(buf);
}

static void header_array(const char *d)
{
    struct image im;
    CHECK(image_load(d, &im));
    json_decref(im.header);
    im.header = json_pack("[i]", 1);
    CHECK(image_save(d, &im));
}

static void offsets_past_end(const char *d)
{
    struct image im;
    CHECK(image_load(d, &im));
    size_t b = offset_of(&im, BIAS, 0), e = offset_of(&im, BIAS, 1);
    set_offsets(&im, BIAS, b + im.data_len, e + im.data_len);
    CHECK(image_save(d, &im));
}

static void offsets_overlap(const char *d)
{
    struct image im;
    CHECK(image_load(d, &im));
    set_offsets(&im, SECOND, offset_of(&im, SECOND, 0) - 4, offset_of(&im, SECOND, 1) - 4);
    CHECK(image_save(d, &im));
}

static void offsets_gap(const char *d)
{
    struct image im;
    CHECK(image_load(d, &im));
    const char *last = last_tensor(&im);
    set_offsets(&im, last, offset_of(&im, last, 0) + 4, offset_of(&im, last, 1) + 4);
    memset(im.data + im.data_len, 0, 4);
    im.data_len += 4;
    CHECK(image_save(d, &im));
}

static void trailing_bytes(const char *d)
{
    struct image im;
    CHECK(image_load(d, &im));
    memset(im.data + im.data_len, 0, 16);
    im.data_len += 16;
    CHECK(image_save(d, &im));
}

static void size_vs_shape(const char *d)
{
    struct image im;
    CHECK(image_load(d, &im));
    json_object_set_new(entry(&im, BIAS), "shape", json_pack("[i]", H + 1));
    CHECK(image_save(d, &im));
}

static void unknown_dtype(const char *d)
{
    struct image im;
    CHECK(image_load(d, &im));
    json_object_set_new(entry(&im, BIAS), "dtype", json_string("Q4"));
    CHECK(image_save(d, &im));
}

static void retyped(const char *d, const char *dtype)
{
    struct image im;
    CHECK(image_load(d, &im));
    repack(&im, NULL, WEIGHT, dtype);
    CHECK(image_save(d, &im));
}

static void weight_f64(const char *d) { retyped(d, "F64"); }
static void weight_i8(const char *d) { retyped(d, "I8"); }

#define WORD "bert.embeddings.word_embeddings.weight"

/* Element `index` of `name` set to the bit pattern `bits` (4 bytes for F32,
 * 2 for F16/BF16), after storing the tensor as `dtype`. */
static void poke(const char *d, const char *name, const char *dtype, size_t index,
                 uint32_t bits)
{
    struct image im;
    CHECK(image_load(d, &im));
    if (strcmp(dtype, "F32") != 0)
        repack(&im, NULL, name, dtype);
    size_t size = strcmp(dtype, "F32") == 0 ? 4 : 2;
    uint8_t *at = im.data + offset_of(&im, name, 0) + size * index;
    if (size == 4)
        memcpy(at, &bits, 4);
    else
        memcpy(at, &(uint16_t){(uint16_t)bits}, 2);
    CHECK(image_save(d, &im));
}

/* Word embeddings are (vocab, H): element 3 * H + 5 is [3, 5]. */
static void nan_f32(const char *d) { poke(d, WORD, "F32", 3 * H + 5, 0x7fc00000u); }
static void nan_f16(const char *d) { poke(d, WORD, "F16", 3 * H + 5, 0x7e00u); }
static void inf_f16_position(const char *d) { poke(d, SECOND, "F16", 0, 0x7c00u); }
static void minus_inf_bf16(const char *d) { poke(d, BIAS, "BF16", 2, 0xff80u); }

static void fifo_as(const char *d, const char *file)
{
    char path[PATH_MAX];
    remove_in(d, file);
    path_in(path, sizeof path, d, file);
    CHECK(mkfifo(path, 0644) == 0);
}

static void fifo_weights(const char *d) { fifo_as(d, "model.safetensors"); }
static void fifo_vocab(const char *d) { fifo_as(d, "vocab.txt"); }

/* One token of a megabyte: loading it used to take minutes (every prefix
 * rehashed), now the line is refused. */
static void vocab_huge_token(const char *d)
{
    char path[PATH_MAX];
    path_in(path, sizeof path, d, "vocab.txt");
    FILE *fp = fopen(path, "ab");
    CHECK(fp != NULL);
    if (fp == NULL)
        return;
    for (size_t i = 0; i < (1u << 20); i++)
        fputc('x', fp);
    fputc('\n', fp);
    fclose(fp);
}

static void missing_tensor(const char *d)
{
    struct image im;
    CHECK(image_load(d, &im));
    repack(&im, BIAS, NULL, NULL);
    CHECK(image_save(d, &im));
}

static void shape_vs_config(const char *d) { config_set(d, "intermediate_size", json_integer(96)); }
static void fewer_layers(const char *d) { config_set(d, "num_hidden_layers", json_integer(1)); }
static void gpt2(const char *d) { config_set(d, "model_type", json_string("gpt2")); }
/* A BERT checkpoint declared as ModernBERT: the binder looks for its names. */
static void modernbert(const char *d) { config_set(d, "model_type", json_string("modernbert")); }
/* A BERT checkpoint declared as RoBERTa: the binder looks for RoBERTa's names. */
static void roberta_names(const char *d) { config_set(d, "model_type", json_string("roberta")); }
/* MPNet with a bucket count modeling_mpnet.py does not compute (it always
 * buckets distances into 32). */
static void mpnet_buckets(const char *d)
{
    config_set(d, "model_type", json_string("mpnet"));
    config_set(d, "relative_attention_num_buckets", json_integer(64));
}
/* A BERT checkpoint declared as DeBERTa-v3, then given one setting the
 * engine does not run. */
static void deberta_v3(const char *d)
{
    config_set(d, "model_type", json_string("deberta-v2"));
    config_set(d, "relative_attention", json_true());
    config_set(d, "position_biased_input", json_false());
    config_set(d, "share_att_key", json_true());
    config_set(d, "position_buckets", json_integer(256));
}
static void deberta_conv(const char *d)
{
    deberta_v3(d);
    config_set(d, "conv_kernel_size", json_integer(3));
}
static void deberta_unshared(const char *d)
{
    deberta_v3(d);
    config_set(d, "share_att_key", json_false());
}
static void deberta_p2p(const char *d)
{
    deberta_v3(d);
    config_set(d, "pos_att_type", json_pack("[s,s]", "c2p", "p2p"));
}
static void deberta_mlm(const char *d)
{
    deberta_v3(d);
    config_set(d, "architectures", json_pack("[s]", "DebertaV2ForMaskedLM"));
}
static void no_layers_key(const char *d) { config_set(d, "num_hidden_layers", NULL); }
static void heads_3(const char *d) { config_set(d, "num_attention_heads", json_integer(3)); }
static void act_foo(const char *d) { config_set(d, "hidden_act", json_string("foo")); }

static void relative_key(const char *d)
{
    config_set(d, "position_embedding_type", json_string("relative_key"));
}

/* Only a causal BERT (the trainer's) parses; the engine refuses it later. */
static void roberta_decoder(const char *d)
{
    config_set(d, "model_type", json_string("roberta"));
    config_set(d, "is_decoder", json_true());
}

static void cross_attention(const char *d)
{
    config_set(d, "add_cross_attention", json_true());
}

static void config_not_json(const char *d)
{
    char path[PATH_MAX];
    path_in(path, sizeof path, d, "config.json");
    const char *text = "{\"model_type\": \"bert\",, \"hidden_size\": 32}";
    CHECK(write_file(path, text, strlen(text)));
}

struct bad_case {
    const char *name;
    void (*corrupt)(const char *dir);
    enum bert_status status;
    const char *file;       /* the message names this file of the case folder */
    const char *needles[2]; /* and contains these */
};

static const struct bad_case cases[] = {
    {"no-config", no_config, BERT_E_IO, "config.json", {NULL, NULL}},
    {"no-weights", no_weights, BERT_E_IO, "model.safetensors", {NULL, NULL}},
    {"no-tokenizer", no_tokenizer, BERT_E_IO, NULL, {"vocab.txt", NULL}},
    {"pickle-only", pickle_only, BERT_E_UNSUPPORTED, "model.safetensors",
     {"pytorch_model.bin", "safetensors"}},
    {"truncated", truncated_half, BERT_E_FORMAT, "model.safetensors", {"truncated", NULL}},
    {"truncated-tiny", truncated_tiny, BERT_E_FORMAT, "model.safetensors", {"too short", NULL}},
    {"header-past-eof", header_past_eof, BERT_E_FORMAT, "model.safetensors",
     {"header length", "does not fit"}},
    {"header-huge", header_huge, BERT_E_FORMAT, "model.safetensors",
     {"header length 18446744073709551615", NULL}},
    {"header-not-json", header_garbage, BERT_E_FORMAT, "model.safetensors",
     {"not valid JSON", NULL}},
    {"header-array", header_array, BERT_E_FORMAT, "model.safetensors",
     {"not a JSON object", NULL}},
    {"offsets-past-end", offsets_past_end, BERT_E_FORMAT, "model.safetensors",
     {"'" BIAS "'", "past the end"}},
    {"offsets-overlap", offsets_overlap, BERT_E_FORMAT, "model.safetensors",
     {"'" SECOND "'", "overlapping"}},
    {"offsets-gap", offsets_gap, BERT_E_FORMAT, "model.safetensors", {"non-contiguous", NULL}},
    {"trailing-bytes", trailing_bytes, BERT_E_FORMAT, "model.safetensors",
     {"tensors cover", NULL}},
    {"size-vs-shape", size_vs_shape, BERT_E_FORMAT, "model.safetensors",
     {"'" BIAS "'", "dtype F32 and shape need"}},
    {"unknown-dtype", unknown_dtype, BERT_E_FORMAT, "model.safetensors",
     {"'" BIAS "'", "unknown dtype 'Q4'"}},
    {"weight-f64", weight_f64, BERT_E_UNSUPPORTED, "model.safetensors",
     {"'" WEIGHT "'", "dtype F64"}},
    {"weight-i8", weight_i8, BERT_E_UNSUPPORTED, "model.safetensors",
     {"'" WEIGHT "'", "dtype I8"}},
    {"nan-f32", nan_f32, BERT_E_FORMAT, "model.safetensors", {"'" WORD "'", "NaN at [3, 5]"}},
    {"nan-f16", nan_f16, BERT_E_FORMAT, "model.safetensors", {"'" WORD "'", "NaN at [3, 5]"}},
    {"inf-f16-position", inf_f16_position, BERT_E_FORMAT, "model.safetensors",
     {"'" SECOND "'", "+Inf at [0, 0]"}},
    {"minus-inf-bf16", minus_inf_bf16, BERT_E_FORMAT, "model.safetensors",
     {"'" BIAS "'", "-Inf at [2]"}},
    {"fifo-weights", fifo_weights, BERT_E_IO, "model.safetensors", {"is a FIFO", NULL}},
    {"fifo-vocab", fifo_vocab, BERT_E_IO, "vocab.txt", {"is a FIFO", NULL}},
    {"vocab-huge-token", vocab_huge_token, BERT_E_FORMAT, "vocab.txt",
     {"line 15: a token of 1048576 bytes", "more than 65536"}},
    {"missing-tensor", missing_tensor, BERT_E_FORMAT, "model.safetensors",
     {"missing tensor '" BIAS "'", NULL}},
    {"shape-vs-config", shape_vs_config, BERT_E_FORMAT, "model.safetensors",
     {"'bert.encoder.layer.0.intermediate.dense.weight' has shape [64, 32]",
      "config.json implies [96, 32]"}},
    {"extra-layers", fewer_layers, BERT_E_FORMAT, "model.safetensors",
     {"more than the 1 layers", "bert.encoder.layer.1."}},
    {"model-type-gpt2", gpt2, BERT_E_UNSUPPORTED, "config.json",
     {"model_type \"gpt2\"", "supported: bert, distilbert, roberta, xlm-roberta, camembert, "
                               "electra, modernbert"}},
    {"bert-weights-as-modernbert", modernbert, BERT_E_FORMAT, "model.safetensors",
     {"missing tensor 'embeddings.tok_embeddings.weight'", NULL}},
    {"bert-weights-as-roberta", roberta_names, BERT_E_FORMAT, "model.safetensors",
     {"missing tensor 'embeddings.word_embeddings.weight'", NULL}},
    {"mpnet-buckets", mpnet_buckets, BERT_E_UNSUPPORTED, "config.json",
     {"relative_attention_num_buckets 64 is not supported", "supported: 32"}},
    {"bert-weights-as-deberta", deberta_v3, BERT_E_FORMAT, "model.safetensors",
     {"missing tensor 'embeddings.word_embeddings.weight'", NULL}},
    {"deberta-conv", deberta_conv, BERT_E_UNSUPPORTED, "config.json",
     {"conv_kernel_size 3 is not supported", NULL}},
    {"deberta-unshared-keys", deberta_unshared, BERT_E_UNSUPPORTED, "config.json",
     {"share_att_key false is not supported", NULL}},
    {"deberta-p2p", deberta_p2p, BERT_E_UNSUPPORTED, "config.json",
     {"pos_att_type \"p2p\" is not supported", "supported: c2p, p2c"}},
    {"deberta-mlm", deberta_mlm, BERT_E_UNSUPPORTED, "config.json",
     {"\"DebertaV2ForMaskedLM\" is not supported", NULL}},
    {"relative-key", relative_key, BERT_E_UNSUPPORTED, "config.json",
     {"position_embedding_type \"relative_key\"", NULL}},
    {"roberta-decoder", roberta_decoder, BERT_E_UNSUPPORTED, "config.json",
     {"decoder configurations", NULL}},
    {"cross-attention", cross_attention, BERT_E_UNSUPPORTED, "config.json",
     {"add_cross_attention", NULL}},
    {"hidden-act-foo", act_foo, BERT_E_UNSUPPORTED, "config.json", {"hidden_act \"foo\"", NULL}},
    {"heads-not-divisor", heads_3, BERT_E_FORMAT, "config.json",
     {"hidden_size 32", "num_attention_heads 3"}},
    {"missing-key", no_layers_key, BERT_E_FORMAT, "config.json",
     {"missing required key \"num_hidden_layers\"", NULL}},
    {"config-not-json", config_not_json, BERT_E_FORMAT, "config.json", {"invalid JSON", NULL}},
};

static bool copy_valid(const char *from, const char *to)
{
    if (mkdir(to, 0755) != 0 && errno != EEXIST)
        return false;
    for (size_t i = 0; i < sizeof valid_files / sizeof valid_files[0]; i++) {
        char src[PATH_MAX], dst[PATH_MAX];
        path_in(src, sizeof src, from, valid_files[i]);
        path_in(dst, sizeof dst, to, valid_files[i]);
        size_t len;
        uint8_t *buf = read_file(src, &len);
        unlink(dst); /* an earlier run's FIFO would block the write */
        bool ok = buf != NULL && write_file(dst, buf, len);
        free(buf);
        if (!ok)
            return false;
    }
    /* Leftovers of an earlier run would change what the case tests. */
    char extra[PATH_MAX];
    path_in(extra, sizeof extra, to, "pytorch_model.bin");
    unlink(extra);
    return true;
}

/* Finite weights that overflow: the embedding LayerNorm's sum over the row
 * of "the" (id 5, every element 3e38) is +Inf, so that sequence's encoder
 * output is NaN. Every task on it must
 * come back with a NaN first value (the tanh and top-k would otherwise hide
 * it), and a sequence without "the" in the same batch must stay finite. */
static void check_run_time_overflow(const char *valid)
{
    char dir[PATH_MAX];
    path_in(dir, sizeof dir, work, "overflow");
    CHECK(copy_valid(valid, dir));
    struct image im;
    CHECK(image_load(dir, &im));
    float huge = 3e38f;
    for (size_t j = 0; j < H; j++)
        memcpy(im.data + offset_of(&im, WORD, 0) + 4 * (5 * H + j), &huge, 4);
    CHECK(image_save(dir, &im));

    struct bert_model *model = NULL;
    struct bert_error err = {0};
    CHECK_INT_EQ(bert_model_load(dir, &model, &err), BERT_OK);
    if (model == NULL)
        return;
    struct bert_scratch *s = bert_scratch_new(model, 64, 16, 1, &err);
    CHECK(s != NULL);
    /* [CLS] the [MASK] [SEP] and [CLS] cat [MASK] [SEP], three tasks each. */
    const int32_t ids[] = {2, 5, 4, 3, 2, 6, 4, 3, 2, 5, 4, 3, 2, 6, 4, 3, 2, 5, 4, 3, 2, 6, 4, 3};
    const int32_t types[24] = {0};
    const size_t starts[] = {0, 4, 8, 12, 16, 20, 24};
    const struct bert_batch batch = {6, 24, ids, types, starts};
    float emb[2][H], logits[2][2], probs[2][3];
    int32_t top[2][3];
    const uint32_t mask_position = 2; /* [MASK], after [CLS] and the word */
    struct bert_seq_task tasks[6];
    memset(tasks, 0, sizeof tasks);
    for (int k = 0; k < 2; k++) {
        tasks[k] = (struct bert_seq_task){.task = BERT_TASK_EMBED, .pooling = BERT_POOLING_MEAN,
                                          .embedding = emb[k]};
        tasks[2 + k] = (struct bert_seq_task){.task = BERT_TASK_CLASSIFY, .logits = logits[k]};
        tasks[4 + k] = (struct bert_seq_task){.task = BERT_TASK_FILL_MASK, .top_k = 3,
                                              .mask_positions = &mask_position, .n_masks = 1,
                                              .top_ids = top[k], .top_probs = probs[k]};
    }
    if (s != NULL) {
        CHECK_INT_EQ(bert_run(model, s, &batch, tasks, &err), BERT_OK);
        CHECK(isnan(emb[0][0]) && isnan(logits[0][0]) && isnan(probs[0][0]));
        CHECK(isfinite(emb[1][0]) && isfinite(logits[1][0]) && isfinite(probs[1][0]));
    }
    bert_scratch_free(s);
    bert_model_free(model);
}

/* A tiny uncased WordPiece vocabulary in the vocab.txt layout. */
static bool write_tokenizer(const char *dir)
{
    static const char vocab[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\non\nmat\n"
                                "a\n##s\n.\n,\n";
    static const char config[] = "{\"do_lower_case\": true}\n";
    char path[PATH_MAX];
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return false;
    path_in(path, sizeof path, dir, "vocab.txt");
    if (!write_file(path, vocab, sizeof vocab - 1))
        return false;
    path_in(path, sizeof path, dir, "tokenizer_config.json");
    return write_file(path, config, sizeof config - 1);
}

static bool build_valid(const char *dir, const char *tokenizer_dir)
{
    struct bert_synth_options o = bert_synth_options_default();
    o.config.num_layers = 2;
    o.config.hidden_size = H;
    o.config.num_heads = 2;
    o.config.intermediate_size = 64;
    o.config.max_position_embeddings = 64;
    o.config.type_vocab_size = 2;
    o.config.layer_norm_eps = 1e-12f;
    o.prefix = true;
    o.mlm = true;
    o.pooler = true;
    char negative[] = "NEGATIVE", positive[] = "POSITIVE";
    char *labels[] = {negative, positive};
    o.classifier = true;
    o.config.num_labels = 2;
    o.config.id2label = labels;
    o.tokenizer_dir = tokenizer_dir;
    struct bert_error err = {0};
    enum bert_status st = bert_synth_write(&o, dir, &err);
    if (st != BERT_OK)
        fprintf(stderr, "bert_synth_write: %s\n", err.message);
    return st == BERT_OK;
}

/* bert_synth_write (`bert init`) refuses what it cannot write and names
 * the flag at fault. Each case changes one thing of a writable tiny BERT. */
static void check_init_refusals(const char *tokenizer_dir)
{
    static const struct {
        const char *model_type;
        size_t hidden, heads;
        bool mlm, token_classification, question_answering, labels;
        const char *reason;
    } refusals[] = {
        {"bert", 30, 4, false, false, false, false, "--hidden must be a positive multiple"},
        {"bert", 32, 2, false, true, false, false, "needs --labels"},
        {"bert", 32, 2, false, false, true, true, "one task head at most"},
        {"deberta-v2", 32, 2, true, false, false, false, "no masked-LM head for DeBERTa-v2"},
        {"nomic_bert", 32, 2, false, false, true, false, "no per-token heads for NomicBERT"},
        {"modernbert", 36, 4, false, false, false, false, "even head size"},
    };
    char negative[] = "NEGATIVE", positive[] = "POSITIVE";
    char *labels[] = {negative, positive};
    char dir[PATH_MAX];
    path_in(dir, sizeof dir, work, "refused");
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        struct bert_synth_options o = bert_synth_options_default();
        snprintf(o.config.model_type, sizeof o.config.model_type, "%s", refusals[i].model_type);
        o.config.num_layers = 1;
        o.config.hidden_size = refusals[i].hidden;
        o.config.num_heads = refusals[i].heads;
        o.config.intermediate_size = 64;
        o.config.max_position_embeddings = 64;
        o.config.type_vocab_size = 2;
        o.config.activation = BERT_ACTIVATION_SILU;
        o.config.nomic.rotary_base = 1000.0f;
        o.mlm = refusals[i].mlm;
        o.token_classification = refusals[i].token_classification;
        o.question_answering = refusals[i].question_answering;
        if (refusals[i].labels) {
            o.classifier = true;
            o.config.num_labels = 2;
            o.config.id2label = labels;
        }
        o.tokenizer_dir = tokenizer_dir;
        struct bert_error err = {0};
        CHECK_INT_EQ(bert_synth_write(&o, dir, &err), BERT_E_INVALID);
        printf("init %-11s %s\n", refusals[i].model_type, err.message);
        CHECK(strstr(err.message, refusals[i].reason) != NULL);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s WORK_DIR\n", argv[0]);
        return EXIT_FAILURE;
    }
    snprintf(work, sizeof work, "%s", argv[1]);
    setvbuf(stdout, NULL, _IOLBF, 0); /* keep the report in step with stderr */
    if (mkdir(work, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "%s: %s\n", work, strerror(errno));
        return EXIT_FAILURE;
    }
    char tokenizer_dir[PATH_MAX], valid[PATH_MAX];
    path_in(tokenizer_dir, sizeof tokenizer_dir, work, "tokenizer");
    path_in(valid, sizeof valid, work, "valid");
    CHECK(write_tokenizer(tokenizer_dir));
    CHECK(build_valid(valid, tokenizer_dir));
    check_init_refusals(tokenizer_dir);

    /* The untouched copy loads: the failures below are the corruption's. */
    struct bert_model *model = NULL;
    struct bert_error err = {0};
    CHECK_INT_EQ(bert_model_load(valid, &model, &err), BERT_OK);
    if (model == NULL) {
        fprintf(stderr, "valid checkpoint: %s\n", err.message);
        return check_exit();
    }
    CHECK(model->can_fill_mask);
    CHECK(model->can_classify);
    bert_model_free(model);
    check_run_time_overflow(valid);

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct bad_case *c = &cases[i];
        char dir[PATH_MAX];
        path_in(dir, sizeof dir, work, c->name);
        CHECK(copy_valid(valid, dir));
        c->corrupt(dir);
        err = (struct bert_error){0};
        model = NULL;
        enum bert_status st = bert_model_load(dir, &model, &err);
        printf("%-18s %-11s %s\n", c->name, bert_status_str(st), err.message);
        if (st != c->status)
            fprintf(stderr, "case %s: status %s, want %s\n", c->name, bert_status_str(st),
                    bert_status_str(c->status));
        CHECK_INT_EQ(st, c->status);
        CHECK(model == NULL);
        if (st == BERT_OK)
            bert_model_free(model);
        if (c->file != NULL) {
            char file[PATH_MAX];
            path_in(file, sizeof file, dir, c->file);
            CHECK_CONTAINS(err.message, file);
        }
        for (int k = 0; k < 2; k++)
            if (c->needles[k] != NULL)
                CHECK_CONTAINS(err.message, c->needles[k]);
    }
    return check_exit();
}
