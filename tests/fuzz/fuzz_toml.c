/* The TOML reader of the server config on arbitrary bytes. */
#include "fuzz_target.h"
#include "toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct toml_doc doc;
    struct toml_error err;
    if (toml_parse((const char *)data, size, &doc, &err))
        toml_doc_free(&doc);
    return 0;
}
