/* The framing rules (server/http_framing.c) on arbitrary request heads: the
 * first line is the HTTP version, each further line "name:value" a header. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "http_framing.h"

static void check_framing(const char *text, size_t size)
{
    struct http_framing f;
    const char *end = text + size;
    const char *nl = memchr(text, '\n', size);
    char version[16] = "";
    size_t vlen = (size_t)((nl ? nl : end) - text);
    memcpy(version, text, vlen < sizeof version - 1 ? vlen : sizeof version - 1);
    http_framing_begin(&f, version);
    for (const char *line = nl ? nl + 1 : end; line < end;) {
        const char *stop = memchr(line, '\n', (size_t)(end - line));
        if (stop == NULL)
            stop = end;
        const char *colon = memchr(line, ':', (size_t)(stop - line));
        if (colon != NULL)
            http_framing_header(&f, line, (size_t)(colon - line), colon + 1,
                                (size_t)(stop - colon - 1));
        line = stop + 1;
    }
    if (http_framing_end(&f) != HTTP_FRAMING_OK && f.reason[0] == '\0')
        abort(); /* every refusal says why */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_framing((const char *)data, size);
    return 0;
}
