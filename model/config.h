/* Model configuration: Hugging Face `config.json` plus the
 * sentence-transformers files that choose pooling and normalisation. The
 * struct is public (bert.h); reading and writing it is the engine's and the
 * trainer's business. */
#ifndef BERT_CONFIG_H
#define BERT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bert.h"

/* Read `dir/config.json` and the optional sentence-transformers files.
 * Unsupported model_type, position_embedding_type or hidden_act is
 * BERT_E_UNSUPPORTED with a message listing what is supported; a missing or
 * malformed key is BERT_E_FORMAT naming the file and key. On failure `cfg`
 * holds nothing to free. */
enum bert_status bert_config_load(const char *dir, struct bert_config *cfg,
                                  struct bert_error *err);

/* Parse config.json text (no sentence-transformers files); for fuzzing and
 * tests. `name` is used in messages. */
enum bert_status bert_config_parse(const char *name, const char *json, size_t len,
                                   struct bert_config *cfg, struct bert_error *err);

/* config.json's name of an activation ("gelu", "gelu_new", ...). */
const char *bert_activation_name(enum bert_activation act);

struct json_t;
/* DebertaV2Config's relative-position keys into cfg->deberta, its
 * type_vocab_size (0 allowed) and layer_norm_eps default, after BERT's
 * geometry; variants bertserve does not run are BERT_E_UNSUPPORTED naming
 * the key (config_deberta.c). */
enum bert_status bert_config_parse_deberta(const char *name, struct json_t *root,
                                           struct bert_config *cfg, struct bert_error *err);

/* Write `cfg` as a Hugging Face config.json at `path`. */
enum bert_status bert_config_write(const struct bert_config *cfg, const char *path,
                                   struct bert_error *err);

#endif
