/* The refusals request.c and request_inputs.c both give (request_internal.h). */
#include "request_internal.h"

/* "a string", "an integer", ...: the `got ...` half of type errors. */
static const char *type_phrase(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "a list";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a float";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "an unknown type";
}

bool request_wrong_type(struct parse *p, const char *field, const char *expected,
                        const json_t *v)
{
    proto_error_set(p->err, PROTO_ERR_INVALID, "\"%s\" must be %s, got %s", field, expected,
                    type_phrase(v));
    return false;
}

bool request_out_of_memory(struct parse *p)
{
    proto_error_set(p->err, PROTO_ERR_INTERNAL, "out of memory while parsing the request");
    return false;
}
