/* DebertaV2Config (configuration_deberta_v2.py) beyond BERT's keys: the
 * disentangled attention's relative positions, and the variants bertserve
 * does not run, refused by name. */
#include <jansson.h>
#include <string.h>

#include "config.h"

/* An integer key that may be negative or absent (DeBERTa's -1 = "unset"). */
static enum bert_status get_int(const char *name, json_t *root, const char *key, long def,
                                long *out, struct bert_error *err)
{
    json_t *v = json_object_get(root, key);
    if (v == NULL || json_is_null(v)) {
        *out = def;
        return BERT_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) > 1000000 ||
        json_integer_value(v) < -1000000)
        return bert_error_set(err, BERT_E_FORMAT, "%s: \"%s\" must be an integer", name, key);
    *out = (long)json_integer_value(v);
    return BERT_OK;
}

/* pos_att_type: a list, or the older "p2c|c2p" string. */
static enum bert_status parse_pos_att_type(const char *name, json_t *root,
                                           struct bert_deberta *d, struct bert_error *err)
{
    json_t *v = json_object_get(root, "pos_att_type");
    char text[64] = "";
    if (json_is_string(v)) {
        snprintf(text, sizeof text, "%s", json_string_value(v));
    } else if (json_is_array(v)) {
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item) {
            if (!json_is_string(item) || strlen(text) + strlen(json_string_value(item)) + 2 >
                                             sizeof text)
                return bert_error_set(err, BERT_E_FORMAT,
                                      "%s: \"pos_att_type\" must list strings", name);
            strcat(text, i ? "|" : "");
            strcat(text, json_string_value(item));
        }
    } else if (v != NULL && !json_is_null(v)) {
        return bert_error_set(err, BERT_E_FORMAT, "%s: \"pos_att_type\" must be a list", name);
    }
    char *save = NULL;
    for (char *t = strtok_r(text, "|", &save); t != NULL; t = strtok_r(NULL, "|", &save)) {
        while (*t == ' ')
            t++;
        size_t len = strlen(t);
        while (len > 0 && t[len - 1] == ' ')
            t[--len] = '\0';
        if (strcmp(t, "c2p") == 0)
            d->c2p = true;
        else if (strcmp(t, "p2c") == 0)
            d->p2c = true;
        else
            return bert_error_set(err, BERT_E_UNSUPPORTED,
                                  "%s: pos_att_type \"%.20s\" is not supported (supported: "
                                  "c2p, p2c)",
                                  name, t);
    }
    return BERT_OK;
}

/* A flag that must have one value for bertserve to run the model. */
static enum bert_status require_flag(const char *name, json_t *root, const char *key, bool def,
                                     bool want, struct bert_error *err)
{
    json_t *v = json_object_get(root, key);
    const bool value = v == NULL || json_is_null(v) ? def : json_is_true(v);
    if (value != want)
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "%s: %s %s is not supported for deberta-v2 (supported: %s)", name,
                              key, value ? "true" : "false", want ? "true" : "false");
    return BERT_OK;
}

/* Keys whose presence with a non-default value means a layer bertserve
 * does not have. */
static enum bert_status refuse_extras(const char *name, json_t *root,
                                      const struct bert_config *cfg, struct bert_error *err)
{
    long v = 0;
    enum bert_status st;
    if ((st = get_int(name, root, "conv_kernel_size", 0, &v, err)) != BERT_OK)
        return st;
    if (v > 0)
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "%s: conv_kernel_size %ld is not supported (DeBERTa-v2's ConvLayer "
                              "after the first layer; DeBERTa-v3 has none)",
                              name, v);
    const long head = (long)(cfg->hidden_size / cfg->num_heads);
    if ((st = get_int(name, root, "attention_head_size", head, &v, err)) != BERT_OK)
        return st;
    if (v != head)
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "%s: attention_head_size %ld is not supported (supported: "
                              "hidden_size / num_attention_heads = %ld)",
                              name, v, head);
    const long H = (long)cfg->hidden_size;
    static const char *const widths[] = {"embedding_size", "pooler_hidden_size"};
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
        if ((st = get_int(name, root, widths[i], H, &v, err)) != BERT_OK)
            return st;
        if (v != H)
            return bert_error_set(err, BERT_E_UNSUPPORTED,
                                  "%s: %s %ld is not supported (supported: hidden_size %ld)",
                                  name, widths[i], v, H);
    }
    static const char mlm[] = "ForMaskedLM";
    const size_t al = strlen(cfg->architecture);
    if (al > sizeof mlm - 1 && strcmp(cfg->architecture + al - (sizeof mlm - 1), mlm) == 0)
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "%s: architectures \"%.60s\" is not supported for deberta-v2 "
                              "(supported: DebertaV2Model, DebertaV2ForSequenceClassification, "
                              "DebertaV2ForTokenClassification, DebertaV2ForQuestionAnswering)",
                              name, cfg->architecture);
    return BERT_OK;
}

enum bert_status bert_config_parse_deberta(const char *name, struct json_t *root,
                                           struct bert_config *cfg, struct bert_error *err)
{
    struct bert_deberta *d = &cfg->deberta;
    long types = 0, buckets = 0, max_rel = 0;
    enum bert_status st;
    if ((st = get_int(name, root, "type_vocab_size", 0, &types, err)) ||
        (st = get_int(name, root, "position_buckets", -1, &buckets, err)) ||
        (st = get_int(name, root, "max_relative_positions", -1, &max_rel, err)) ||
        (st = parse_pos_att_type(name, root, d, err)) ||
        (st = require_flag(name, root, "relative_attention", false, true, err)) ||
        (st = require_flag(name, root, "position_biased_input", true, false, err)) ||
        (st = require_flag(name, root, "share_att_key", false, true, err)) ||
        (st = refuse_extras(name, root, cfg, err)))
        return st;
    if (types < 0)
        return bert_error_set(err, BERT_E_FORMAT, "%s: \"type_vocab_size\" must be >= 0", name);
    cfg->type_vocab_size = (size_t)types;
    /* DebertaV2Encoder: max_relative_positions < 1 means max_position_embeddings. */
    d->max_relative_positions = max_rel < 1 ? cfg->max_position_embeddings : (size_t)max_rel;
    d->position_buckets = buckets > 0 ? (size_t)buckets : 0;
    d->att_span = d->position_buckets > 0 ? d->position_buckets : d->max_relative_positions;
    if (d->position_buckets > 0 && (d->position_buckets < 4 || d->max_relative_positions <= 1))
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "%s: position_buckets %zu with max_relative_positions %zu is not "
                              "supported",
                              name, d->position_buckets, d->max_relative_positions);
    /* norm_rel_ebd: "none" or "layer_norm" ("|"-separated). */
    json_t *norm = json_object_get(root, "norm_rel_ebd");
    const char *norm_name = json_is_string(norm) ? json_string_value(norm) : "none";
    d->rel_layer_norm = strstr(norm_name, "layer_norm") != NULL;
    if (!d->rel_layer_norm && strcmp(norm_name, "none") != 0)
        return bert_error_set(err, BERT_E_UNSUPPORTED,
                              "%s: norm_rel_ebd \"%.40s\" is not supported (supported: none, "
                              "layer_norm)",
                              name, norm_name);
    /* DebertaV2Config's layer_norm_eps default (parse_bert_geometry's is BERT's). */
    json_t *eps = json_object_get(root, "layer_norm_eps");
    if (eps == NULL || json_is_null(eps))
        cfg->layer_norm_eps = 1e-7f;
    return BERT_OK;
}
