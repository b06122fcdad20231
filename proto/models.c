/* GET /v1/models and /v1/models/{id}: OpenAI's model list, which many
 * OpenAI-compatible tools read before anything else. One model is served;
 * its name is [model] served_model_name (the server's choice), never a path. */
#include <string.h>

#include "json_writer.h"
#include "proto.h"
#include "proto_internal.h"

static void write_model(struct json_writer *w, const char *name, int64_t created)
{
    json_writer_begin_object(w);
    json_writer_key(w, "id");
    json_writer_cstring(w, name);
    json_writer_key(w, "object");
    json_writer_cstring(w, "model");
    json_writer_key(w, "created");
    json_writer_int(w, created);
    json_writer_key(w, "owned_by");
    json_writer_cstring(w, "bertserve");
    json_writer_end_object(w);
}

char *proto_models_body(const char *name, int64_t created, const char *id, size_t *len,
                        struct proto_error *err)
{
    if (id != NULL && strcmp(id, name) != 0) {
        char q[PROTO_QUOTE_SIZE];
        proto_error_set(err, PROTO_ERR_NOT_FOUND, "the model %s does not exist; this server has %s",
                        proto_quote(q, id, strlen(id)), name);
        return NULL;
    }
    struct json_writer w;
    json_writer_init(&w, 256 + strlen(name));
    if (id != NULL) {
        write_model(&w, name, created);
    } else {
        json_writer_begin_object(&w);
        json_writer_key(&w, "object");
        json_writer_cstring(&w, "list");
        json_writer_key(&w, "data");
        json_writer_begin_array(&w);
        write_model(&w, name, created);
        json_writer_end_array(&w);
        json_writer_end_object(&w);
    }
    char *body = json_writer_finish(&w, len);
    if (body == NULL)
        proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory rendering the model list");
    return body;
}
