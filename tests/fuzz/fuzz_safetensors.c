/* A model.safetensors image (8-byte header length, JSON header, data) on
 * arbitrary bytes; every tensor the parser accepts is then read end to end,
 * so an offset it let through past the data would show under ASan. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A private copy: the fuzzer's buffer is exactly `size` long, so ASan
     * sees any read past the end. */
    uint8_t *buf = malloc(size ? size : 1);
    if (buf == NULL)
        return 0;
    memcpy(buf, data, size);
    struct safetensors_file f;
    struct bert_error err;
    if (safetensors_parse("model.safetensors", buf, size, &f, &err) == BERT_OK) {
        volatile uint8_t sink = 0;
        for (size_t i = 0; i < f.n_tensors; i++) {
            const uint8_t *p = f.tensors[i].data;
            for (size_t j = 0; j < f.tensors[i].nbytes; j++)
                sink ^= p[j];
        }
        (void)sink;
        safetensors_close(&f);
    }
    free(buf);
    return 0;
}
