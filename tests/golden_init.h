/* The golden tests' shared pieces (tests/golden_init.c). */
#ifndef BERT_TESTS_GOLDEN_INIT_H
#define BERT_TESTS_GOLDEN_INIT_H

#include <stdbool.h>

#include <jansson.h>

#include "synth.h"

/* The checkpoint of a golden file's "init" (every `bert init` option, as
 * make_goldens.py writes them) in `dtype` ("f32", "f16", "bf16") with the
 * tokenizer files of tokenizer_dir. False, saying why on stderr, for a
 * missing or unknown option. The caller frees o->config's labels
 * (bert_config_free). */
bool golden_synth_options(json_t *init, const char *dtype, const char *tokenizer_dir,
                          struct bert_synth_options *o);

/* The safetensors file at `path` against the golden's per-tensor checksums
 * (count, float64 sum and sum of squares, position-weighted bit sum): false
 * and a CHECK failure naming the tensor when the generator drifted. */
bool golden_check_checksums(const char *label, const char *path, json_t *expected);

/* calloc that exits the test on failure (and takes n == 0). */
void *golden_xcalloc(size_t n, size_t size);

#endif
