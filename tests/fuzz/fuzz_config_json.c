/* A checkpoint's config.json on arbitrary bytes. */
#include "config.h"
#include "fuzz_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct bert_config cfg;
    struct bert_error err;
    if (bert_config_parse("config.json", (const char *)data, size, &cfg, &err) == BERT_OK)
        bert_config_free(&cfg);
    return 0;
}
