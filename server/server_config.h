/* bertserve's configuration: one key table (config.c) drives the TOML file,
 * the environment, the command-line flags, validation, the JSON shown by
 * /info and the --help text; config.example.toml is the manual and a test
 * keeps it in step with the table.
 *
 * Layering, weakest first:
 *   1. the table's defaults
 *   2. the TOML file named by --config PATH, else by BERTSERVE_CONFIG
 *   3. environment variables BERTSERVE_<SECTION>_<KEY>, e.g. BERTSERVE_SERVER_PORT
 *   4. command-line flags, e.g. --port 8080 or --port=8080
 *
 * Anything wrong is an error that stops start-up, in one line naming where:
 *   config.toml:12: [server] port: must be an integer between 1 and 65535
 *   BERTSERVE_SERVER_PORT: must be an integer between 1 and 65535 (got "80a")
 *   --port: must be an integer between 1 and 65535 (got "80a")
 * Unknown sections, keys and flags, wrong types, out-of-range values,
 * duplicate keys and malformed lines are all errors. An environment variable
 * BERTSERVE_<SECTION>_* for a known section but an unknown key is an error
 * too; other BERTSERVE_* names are ignored (Kubernetes, for one, defines
 * BERTSERVE_PORT and BERTSERVE_SERVICE_HOST for a Service named bertserve).
 *
 * A loaded config is read-only: any thread may read it at once. */
#ifndef SERVER_CONFIG_H
#define SERVER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/* [model] normalize, and any other key that is a boolean or "auto". */
enum server_config_tristate {
    SERVER_CONFIG_AUTO,
    SERVER_CONFIG_FALSE,
    SERVER_CONFIG_TRUE,
};

/* Each enum below lists its values in the order of the config strings. */
enum server_config_pooling {
    SERVER_CONFIG_POOLING_MODEL, /* "": the checkpoint's choice, else mean */
    SERVER_CONFIG_POOLING_CLS,
    SERVER_CONFIG_POOLING_MEAN,
    SERVER_CONFIG_POOLING_MAX,
};

enum server_config_dtype {
    SERVER_CONFIG_DTYPE_F32,
    SERVER_CONFIG_DTYPE_BF16,
    SERVER_CONFIG_DTYPE_INT8,
};

enum server_config_log_level {
    SERVER_CONFIG_LOG_DEBUG,
    SERVER_CONFIG_LOG_INFO,
    SERVER_CONFIG_LOG_WARN,
    SERVER_CONFIG_LOG_ERROR,
};

enum server_config_log_format {
    SERVER_CONFIG_LOG_FORMAT_TEXT,
    SERVER_CONFIG_LOG_FORMAT_JSON,
};

/* Field names match the TOML keys. Strings are malloc'd and owned by the
 * config; counts of bytes and tokens are size_t, everything else int. The
 * bounds of every number are in config.c's table (and in --help). */
struct server_config {
    struct {
        char *host;                  /* address to bind; never empty */
        int port;
        size_t max_body_bytes;
        int max_client_batch;        /* inputs per request */
        int max_connections;
        int max_concurrent_requests;
        int request_timeout_ms;
        int shutdown_timeout_ms;
        char *api_key;               /* "" = no auth; never printed or logged */
        int max_top_k;
        int max_fill_mask_decode;    /* masks x top_k x tokens per request */
        int max_fill_mask_targets;   /* "targets" of one /fill-mask request */
        size_t max_response_bytes;   /* one rendered answer */
        size_t max_pending_response_bytes; /* all answers not yet written, together */
        size_t offload_parse_bytes;  /* bodies this large: the prepare stage's large
                                        lane; 0 = no lane */
        char *cors_allow_origin;     /* "" = no CORS; "*" or comma-separated origins */
        int loop_threads;            /* event loops on the port (SO_REUSEPORT when > 1); 0: one per 8 CPUs */
    } server;
    struct {
        char *path;                  /* checkpoint folder; never empty */
        enum server_config_pooling pooling;
        enum server_config_tristate normalize;
        size_t max_input_tokens;     /* 0 = the model's own maximum */
        bool truncate;
        enum server_config_dtype dtype;
        char *served_model_name;     /* "" = the checkpoint folder's name */
        bool openai_unit_length;     /* /v1/embeddings' and Cohere's /v1/embed and
                                        /v2/embed's vectors of length 1 by default */
    } model;
    struct {
        size_t max_batch_tokens;
        int max_batch_requests;
        int max_wait_us;
        size_t max_queue_tokens;     /* >= max_batch_tokens */
    } batching;
    struct {
        int threads;                 /* 0 = auto: cpu_available() */
        int blas_threads;            /* 0 = auto */
        int prepare_threads;         /* 0 = auto: parse, tokenize, admit */
    } workers;
    struct {
        enum server_config_log_level level;
        enum server_config_log_format format;
    } log;
    char *config_file;               /* the TOML file read, or NULL */
};

enum server_config_result {
    SERVER_CONFIG_OK,      /* run with `cfg` */
    SERVER_CONFIG_HELP,    /* --help or -h: print server_config_usage, exit 0 */
    SERVER_CONFIG_VERSION, /* --version: print the version, exit 0 */
    SERVER_CONFIG_HEALTH_CHECK, /* --health-check: `cfg` is loaded as for a run; ask the
                                   server it describes for /health (health_check.h) */
    SERVER_CONFIG_ERROR,   /* `err` holds one line; exit non-zero */
};

/* Fill `cfg` from the defaults, the TOML file, the environment `envp` (a
 * NULL-terminated "NAME=value" array, e.g. `environ`; may be NULL) and
 * argv[1..argc). `cfg` holds the defaults or more after any result and the
 * caller always releases it with server_config_free. On SERVER_CONFIG_ERROR
 * `err` (errlen bytes, may be 0) holds the message, without a newline.
 * Flags may repeat: the last wins. Reads files; call once, at start-up. */
enum server_config_result server_config_load(struct server_config *cfg, int argc,
                                             char **argv, char **envp, char *err,
                                             size_t errlen);

/* Release what `cfg` owns and zero it. NULL is a no-op; so is a second call. */
void server_config_free(struct server_config *cfg);

/* {"server": {"host": ..., ...}, "model": {...}, ...} with every key; a
 * non-empty api_key is shown as "***". New reference, or NULL when out of
 * memory. */
json_t *server_config_to_json(const struct server_config *cfg);

/* Write the --help text (every flag, its key, env var, default and bounds). */
void server_config_usage(FILE *out);

/* Read-only view of the key table, for tests and docs. */
struct server_config_key_info {
    const char *section;      /* "server" */
    const char *name;         /* "port" */
    const char *flag;         /* "--port" */
    const char *default_text; /* "8080", as the environment would spell it */
};
size_t server_config_key_count(void);
/* i < server_config_key_count(). */
struct server_config_key_info server_config_key_at(size_t i);
/* "BERTSERVE_SERVER_PORT" for key i into buf; false if it does not fit. */
bool server_config_env_name(size_t i, char *buf, size_t len);

#endif
