#include "server_config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "toml.h"

/* Enum fields are written through an int: make sure they are one. */
_Static_assert(sizeof(enum server_config_tristate) == sizeof(int), "enum size");
_Static_assert(sizeof(enum server_config_pooling) == sizeof(int), "enum size");
_Static_assert(sizeof(enum server_config_dtype) == sizeof(int), "enum size");
_Static_assert(sizeof(enum server_config_log_level) == sizeof(int), "enum size");
_Static_assert(sizeof(enum server_config_log_format) == sizeof(int), "enum size");

enum config_kind {
    CONFIG_STRING,   /* char *, malloc'd */
    CONFIG_INT,      /* int within [min, max] */
    CONFIG_SIZE,     /* size_t within [min, max] */
    CONFIG_BOOL,     /* bool */
    CONFIG_TRISTATE, /* enum server_config_tristate: true, false or "auto" */
    CONFIG_ENUM,     /* an enum whose values index `choices` */
};

/* One row per key: everything the file, the environment, the flags, --help
 * and /info need to know about it. */
struct config_key {
    const char *section;
    const char *name;
    const char *flag;
    const char *arg;            /* --help's name for the value: "N", "PATH" */
    const char *def;            /* the default, as the environment would spell it */
    const char *doc;            /* one line for --help */
    enum config_kind kind;
    size_t offset;              /* of the field in struct server_config */
    long long min, max;         /* CONFIG_INT, CONFIG_SIZE */
    const char *const *choices; /* CONFIG_ENUM, NULL-terminated */
    /* CONFIG_STRING: extra rule; NULL if any string goes. Returns the
     * "must ..." message, or NULL when `value` is fine. */
    const char *(*check)(const char *value);
    bool secret;                /* never echo the value */
};

static const char *config_check_not_empty(const char *value)
{
    return value[0] == '\0' ? "must not be empty" : NULL;
}

/* A Bearer token travels in an HTTP header: printable ASCII, no spaces. */
static const char *config_check_token(const char *value)
{
    for (const char *p = value; *p; p++)
        if (*p <= ' ' || *p > '~')
            return "must be printable ASCII without spaces";
    return NULL;
}

/* A served model's name travels in JSON and in URLs (/v1/models/{id}, whose
 * path the server keeps 95 bytes of): printable, no spaces or control
 * characters, at most 80 bytes; "" means the folder's name. */
static const char *config_check_model_name(const char *value)
{
    if (strlen(value) > 80)
        return "must be at most 80 bytes long";
    for (const unsigned char *p = (const unsigned char *)value; *p; p++)
        if (*p <= ' ' || *p == 0x7F || *p == '?' || *p == '#' || *p == '%')
            return "must have no spaces, control characters, '?', '#' or '%'";
    return NULL;
}

/* "*", or origins ("https://app.example:8443") separated by commas. */
static const char *config_check_origins(const char *value)
{
    static const char *const must =
        "must be \"*\" or origins like https://app.example, separated by commas";
    for (const char *p = value; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, ",");
        while (n > 0 && p[n - 1] == ' ')
            n--;
        bool star = n == 1 && p[0] == '*';
        bool scheme = strncmp(p, "http://", 7) == 0 || strncmp(p, "https://", 8) == 0;
        for (size_t k = 0; k < n; k++)
            if ((unsigned char)p[k] <= ' ' || p[k] == 0x7F)
                return must;
        if (n > 0 && !star && !scheme)
            return must;
        p += n;
        while (*p == ' ')
            p++;
    }
    return NULL;
}

static const char *const config_pooling_names[] = {"", "cls", "mean", "max", NULL};
static const char *const config_dtype_names[] = {"f32", "bf16", "int8", NULL};
static const char *const config_log_level_names[] = {"debug", "info", "warn", "error", NULL};
static const char *const config_log_format_names[] = {"text", "json", NULL};

/* The type of each field is checked at compile time: a row whose kind does
 * not match its field does not build. */
#define CONFIG_FIELD(sec, key, type) \
    _Generic(((struct server_config *)0)->sec.key, type: offsetof(struct server_config, sec.key))
#define CONFIG_NUMBER_KIND(sec, key) \
    _Generic(((struct server_config *)0)->sec.key, int: CONFIG_INT, size_t: CONFIG_SIZE)

#define KEY_STRING(sec, key, flag, arg, def, check, secret, doc) \
    {#sec, #key, flag, arg, def, doc, CONFIG_STRING, CONFIG_FIELD(sec, key, char *), 0, 0, NULL, \
     check, secret}
#define KEY_NUMBER(sec, key, flag, arg, def, min, max, doc)                              \
    {#sec, #key, flag, arg, def, doc, CONFIG_NUMBER_KIND(sec, key),                      \
     offsetof(struct server_config, sec.key), min, max, NULL, NULL, false}
#define KEY_BOOL(sec, key, flag, def, doc) \
    {#sec, #key, flag, NULL, def, doc, CONFIG_BOOL, CONFIG_FIELD(sec, key, bool), 0, 0, NULL, \
     NULL, false}
#define KEY_TRISTATE(sec, key, flag, def, doc)                                                 \
    {#sec, #key, flag, NULL, def, doc, CONFIG_TRISTATE,                                        \
     CONFIG_FIELD(sec, key, enum server_config_tristate), 0, 0, NULL, NULL, false}
#define KEY_ENUM(sec, key, flag, type, choices, def, doc)                                 \
    {#sec, #key, flag, NULL, def, doc, CONFIG_ENUM, CONFIG_FIELD(sec, key, type), 0, 0, \
     choices, NULL, false}

/* Adding a key: a field in struct server_config, a row here, its
 * documentation in config.example.toml, and a line in tests/test_config.c. */
static const struct config_key config_keys[] = {
    KEY_STRING(server, host, "--host", "HOST", "0.0.0.0", config_check_not_empty, false,
               "address to listen on"),
    KEY_NUMBER(server, port, "--port", "N", "8080", 1, 65535, "TCP port to listen on"),
    KEY_NUMBER(server, max_body_bytes, "--max-body-bytes", "N", "2097152", 1, 1 << 30,
               "largest request body; larger ones get 413"),
    KEY_NUMBER(server, max_client_batch, "--max-client-batch", "N", "2048", 1, 65536,
               "most inputs in one request; more get 413"),
    KEY_NUMBER(server, max_connections, "--max-connections", "N", "1024", 1, 1000000,
               "most open client connections"),
    KEY_NUMBER(server, max_concurrent_requests, "--max-concurrent-requests", "N", "512", 1,
               1000000, "most requests queued or running; more get 429"),
    KEY_NUMBER(server, request_timeout_ms, "--request-timeout-ms", "MS", "30000", 1, 86400000,
               "longest a request or idle connection may take"),
    KEY_NUMBER(server, shutdown_timeout_ms, "--shutdown-timeout-ms", "MS", "30000", 0,
               86400000, "on SIGTERM, longest wait for queued requests"),
    KEY_STRING(server, api_key, "--api-key", "KEY", "", config_check_token, true,
               "Bearer token clients must send (\"\": no auth)"),
    KEY_NUMBER(server, max_top_k, "--max-top-k", "N", "100", 1, 1000000,
               "largest top_k for fill-mask and classify"),
    KEY_NUMBER(server, max_fill_mask_decode, "--max-fill-mask-decode", "N", "2000000", 1,
               1000000000, "fill-mask decode budget: masks x top_k x tokens"),
    KEY_NUMBER(server, max_fill_mask_targets, "--max-fill-mask-targets", "N", "1000", 1,
               1000000, "most fill-mask targets; more get 413"),
    KEY_NUMBER(server, max_response_bytes, "--max-response-bytes", "N", "33554432", 1024,
               1LL << 40, "largest answer; a larger one gets 413"),
    KEY_NUMBER(server, max_pending_response_bytes, "--max-pending-response-bytes", "N",
               "268435456", 1024, 1LL << 40,
               "unread answers, all together; past it 429"),
    KEY_NUMBER(server, offload_parse_bytes, "--offload-parse-bytes", "N", "65536", 0, 1 << 30,
               "bodies this large: a lane apart (0: none)"),
    KEY_STRING(server, cors_allow_origin, "--cors-allow-origin", "ORIGINS", "",
               config_check_origins, false, "CORS: origins, comma-separated, or \"*\""),
    KEY_NUMBER(server, loop_threads, "--loop-threads", "N", "0", 0, 64,
               "event-loop threads (0: one per 8 CPUs)"),

    KEY_STRING(model, path, "--model", "PATH", "models/default", config_check_not_empty, false,
               "checkpoint folder (Hugging Face layout)"),
    KEY_ENUM(model, pooling, "--pooling", enum server_config_pooling, config_pooling_names, "",
             "/embed pooling (\"\": checkpoint's, else mean)"),
    KEY_TRISTATE(model, normalize, "--normalize", "auto",
                 "L2-normalise embeddings (auto: as checkpoint)"),
    KEY_NUMBER(model, max_input_tokens, "--max-input-tokens", "N", "0", 0, 1 << 20,
               "longest input in tokens (0: model's maximum)"),
    KEY_BOOL(model, truncate, "--truncate", "false",
             "cut too-long inputs instead of answering 413"),
    KEY_ENUM(model, dtype, "--dtype", enum server_config_dtype, config_dtype_names, "f32",
             "dense layers' type: f32, bf16 or int8"),
    KEY_STRING(model, served_model_name, "--served-model-name", "NAME", "",
               config_check_model_name, false,
               "name in answers, /v1/models (\"\": folder)"),
    KEY_BOOL(model, openai_unit_length, "--openai-unit-length", "true",
             "unit-length OpenAI and Cohere embeddings"),

    KEY_NUMBER(batching, max_batch_tokens, "--max-batch-tokens", "N", "4096", 1, 1 << 24,
               "most tokens in one forward pass"),
    KEY_NUMBER(batching, max_batch_requests, "--max-batch-requests", "N", "64", 1, 65536,
               "most sequences in one forward pass"),
    KEY_NUMBER(batching, max_wait_us, "--max-wait-us", "US", "0", 0, 1000000,
               "wait to fill a batch (0: run at once)"),
    KEY_NUMBER(batching, max_queue_tokens, "--max-queue-tokens", "N", "65536", 1, 1 << 30,
               "most tokens waiting; more get 429"),

    KEY_NUMBER(workers, threads, "--threads", "N", "0", 0, 1024,
               "inference workers (0: one)"),
    KEY_NUMBER(workers, blas_threads, "--blas-threads", "N", "0", 0, 1024,
               "compute threads per worker (0: CPUs / workers)"),
    KEY_NUMBER(workers, prepare_threads, "--prepare-threads", "N", "0", 0, 256,
               "threads that parse and tokenize (0: auto)"),

    KEY_ENUM(log, level, "--log-level", enum server_config_log_level, config_log_level_names,
             "info", "least severe level logged"),
    KEY_ENUM(log, format, "--log-format", enum server_config_log_format, config_log_format_names,
             "text", "log lines as text or one JSON object each"),
};

#define CONFIG_KEY_COUNT (sizeof config_keys / sizeof config_keys[0])

static const char *const config_sections[] = {"server", "model", "batching", "workers", "log"};
#define CONFIG_SECTION_COUNT (sizeof config_sections / sizeof config_sections[0])

/* ---- messages ---- */

static void config_error(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void config_error(char *err, size_t errlen, const char *fmt, ...)
{
    if (errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    /* One printable line: start-up logs and tests rely on it, and names
     * echoed from argv or the environment may hold any byte. */
    for (char *p = err; *p; p++)
        if ((unsigned char)*p < ' ' || *p == 0x7F)
            *p = ' ';
}

/* ` (got "...")` with `value` escaped and cut, or "" for secrets. */
static void config_quote_value(const struct config_key *k, const char *value, char *out,
                               size_t len)
{
    out[0] = '\0';
    if (k != NULL && k->secret)
        return;
    size_t o = (size_t)snprintf(out, len, " (got \"");
    const size_t limit = 40;
    size_t i = 0;
    for (; value[i] && i < limit && o + 8 < len; i++) {
        unsigned char c = (unsigned char)value[i];
        if (c == '"' || c == '\\')
            o += (size_t)snprintf(out + o, len - o, "\\%c", c);
        else if (c < ' ' || c == 0x7F)
            o += (size_t)snprintf(out + o, len - o, "\\x%02X", c);
        else
            out[o++] = (char)c;
    }
    snprintf(out + o, len - o, "%s\")", value[i] ? "..." : "");
}

/* What a value of key `k` must be, e.g. "must be an integer between 1 and 65535". */
static void config_expectation(const struct config_key *k, char *out, size_t len)
{
    switch (k->kind) {
    case CONFIG_STRING: snprintf(out, len, "must be a string"); return;
    case CONFIG_INT:
    case CONFIG_SIZE:
        snprintf(out, len, "must be an integer between %lld and %lld", k->min, k->max);
        return;
    case CONFIG_BOOL: snprintf(out, len, "must be true or false"); return;
    case CONFIG_TRISTATE: snprintf(out, len, "must be true, false or \"auto\""); return;
    case CONFIG_ENUM: {
        size_t o = (size_t)snprintf(out, len, "must be one of");
        for (size_t i = 0; k->choices[i] && o < len; i++)
            o += (size_t)snprintf(out + o, len - o, "%s \"%s\"", i ? "," : "", k->choices[i]);
        return;
    }
    }
}

/* ---- storing values ---- */

static void *config_field(struct server_config *cfg, const struct config_key *k)
{
    return (char *)cfg + k->offset;
}

static const void *config_field_const(const struct server_config *cfg,
                                      const struct config_key *k)
{
    return (const char *)cfg + k->offset;
}

/* Check `v` against `k` and store it. On failure returns false with `why`
 * set to the "must ..." message; on out of memory `why` says so. */
static bool config_store(struct server_config *cfg, const struct config_key *k,
                         const struct toml_value *v, char *why, size_t whylen)
{
    void *field = config_field(cfg, k);
    switch (k->kind) {
    case CONFIG_STRING: {
        if (v->type != TOML_STRING)
            break;
        /* TOML guarantees UTF-8; the environment and argv do not, and
         * /info's JSON needs it. */
        const char *rule = !toml_utf8_valid(v->string, strlen(v->string)) ? "must be valid UTF-8"
                           : k->check                                    ? k->check(v->string)
                                                                         : NULL;
        if (rule != NULL) {
            snprintf(why, whylen, "%s", rule);
            return false;
        }
        char *copy = strdup(v->string);
        if (copy == NULL) {
            snprintf(why, whylen, "out of memory");
            return false;
        }
        free(*(char **)field);
        *(char **)field = copy;
        return true;
    }
    case CONFIG_INT:
    case CONFIG_SIZE:
        if (v->type != TOML_INTEGER || v->integer < k->min || v->integer > k->max)
            break;
        if (k->kind == CONFIG_INT)
            *(int *)field = (int)v->integer;
        else
            *(size_t *)field = (size_t)v->integer;
        return true;
    case CONFIG_BOOL:
        if (v->type != TOML_BOOLEAN)
            break;
        *(bool *)field = v->boolean;
        return true;
    case CONFIG_TRISTATE:
        if (v->type == TOML_BOOLEAN) {
            *(int *)field = v->boolean ? SERVER_CONFIG_TRUE : SERVER_CONFIG_FALSE;
            return true;
        }
        if (v->type == TOML_STRING && strcmp(v->string, "auto") == 0) {
            *(int *)field = SERVER_CONFIG_AUTO;
            return true;
        }
        break;
    case CONFIG_ENUM:
        if (v->type != TOML_STRING)
            break;
        for (int i = 0; k->choices[i]; i++) {
            if (strcmp(k->choices[i], v->string) == 0) {
                *(int *)field = i;
                return true;
            }
        }
        break;
    }
    config_expectation(k, why, whylen);
    return false;
}

/* Environment variables and flags are text: read it as the TOML value the
 * key expects, so that all three sources share config_store's checks. */
static bool config_store_text(struct server_config *cfg, const struct config_key *k,
                              const char *text, char *why, size_t whylen)
{
    struct toml_value v = {.type = TOML_STRING, .string = (char *)text};
    switch (k->kind) {
    case CONFIG_STRING:
    case CONFIG_ENUM: break;
    case CONFIG_INT:
    case CONFIG_SIZE:
        if (!toml_parse_integer(text, strlen(text), &v.integer)) {
            config_expectation(k, why, whylen);
            return false;
        }
        v.type = TOML_INTEGER;
        break;
    case CONFIG_BOOL:
    case CONFIG_TRISTATE:
        if (strcmp(text, "true") == 0 || strcmp(text, "false") == 0) {
            v.type = TOML_BOOLEAN;
            v.boolean = text[0] == 't';
        } else if (k->kind == CONFIG_BOOL) {
            config_expectation(k, why, whylen);
            return false;
        }
        break;
    }
    return config_store(cfg, k, &v, why, whylen);
}

/* ---- where a value came from ---- */

enum config_source {
    CONFIG_SOURCE_DEFAULT,
    CONFIG_SOURCE_FILE,
    CONFIG_SOURCE_ENV,
    CONFIG_SOURCE_FLAG,
};

struct config_origin {
    enum config_source source;
    int line; /* CONFIG_SOURCE_FILE */
};

struct config_loader {
    struct server_config *cfg;
    struct config_origin origins[CONFIG_KEY_COUNT];
    char env_names[CONFIG_KEY_COUNT][64];
    char *err;
    size_t errlen;
};

static size_t config_key_index(const struct config_key *k)
{
    return (size_t)(k - config_keys);
}

/* "config.toml:12: [server] port", "BERTSERVE_SERVER_PORT", "--port" or
 * "[server] port" for a default. */
static void config_where(const struct config_loader *ld, const struct config_key *k, char *out,
                         size_t len)
{
    const struct config_origin *o = &ld->origins[config_key_index(k)];
    switch (o->source) {
    case CONFIG_SOURCE_DEFAULT: snprintf(out, len, "[%s] %s", k->section, k->name); return;
    case CONFIG_SOURCE_FILE:
        snprintf(out, len, "%s:%d: [%s] %s", ld->cfg->config_file, o->line, k->section, k->name);
        return;
    case CONFIG_SOURCE_ENV: snprintf(out, len, "%s", ld->env_names[config_key_index(k)]); return;
    case CONFIG_SOURCE_FLAG: snprintf(out, len, "%s", k->flag); return;
    }
}

static const struct config_key *config_find(const char *section, const char *name)
{
    for (size_t i = 0; i < CONFIG_KEY_COUNT; i++)
        if (strcmp(config_keys[i].section, section) == 0 && strcmp(config_keys[i].name, name) == 0)
            return &config_keys[i];
    return NULL;
}

static bool config_is_section(const char *name)
{
    for (size_t i = 0; i < CONFIG_SECTION_COUNT; i++)
        if (strcmp(config_sections[i], name) == 0)
            return true;
    return false;
}

/* BERTSERVE_ + `section` + _ + `name` (may be ""), upper-cased. */
static bool config_env_spell(const char *section, const char *name, char *buf, size_t len)
{
    int n = snprintf(buf, len, "BERTSERVE_%s_%s", section, name);
    if (n < 0 || (size_t)n >= len)
        return false;
    for (char *p = buf; *p; p++)
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 'a' + 'A');
    return true;
}

bool server_config_env_name(size_t i, char *buf, size_t len)
{
    return config_env_spell(config_keys[i].section, config_keys[i].name, buf, len);
}

/* ---- the three sources ---- */

static bool config_apply_file(struct config_loader *ld, const char *path)
{
    struct server_config *cfg = ld->cfg;
    cfg->config_file = strdup(path);
    if (cfg->config_file == NULL) {
        config_error(ld->err, ld->errlen, "%s: out of memory", path);
        return false;
    }
    struct toml_doc doc;
    struct toml_error terr;
    if (!toml_parse_file(path, &doc, &terr)) {
        if (terr.line > 0)
            config_error(ld->err, ld->errlen, "%s:%d: %s", path, terr.line, terr.message);
        else
            config_error(ld->err, ld->errlen, "%s: %s", path, terr.message);
        return false;
    }
    bool ok = true;
    for (size_t i = 0; ok && i < doc.n_sections; i++) {
        if (!config_is_section(doc.sections[i].name)) {
            config_error(ld->err, ld->errlen,
                         "%s:%d: [%s]: unknown section (known: server, model, batching, "
                         "workers, log)",
                         path, doc.sections[i].line, doc.sections[i].name);
            ok = false;
        }
    }
    for (size_t i = 0; ok && i < doc.count; i++) {
        const struct toml_entry *e = &doc.entries[i];
        if (e->section[0] == '\0') {
            config_error(ld->err, ld->errlen,
                         "%s:%d: %s: every key belongs under a header such as [server]", path,
                         e->line, e->key);
            ok = false;
            break;
        }
        const struct config_key *k = config_find(e->section, e->key);
        if (k == NULL) {
            config_error(ld->err, ld->errlen, "%s:%d: [%s] %s: unknown key", path, e->line,
                         e->section, e->key);
            ok = false;
            break;
        }
        char why[160];
        if (!config_store(cfg, k, &e->value, why, sizeof why)) {
            config_error(ld->err, ld->errlen, "%s:%d: [%s] %s: %s", path, e->line, e->section,
                         e->key, why);
            ok = false;
            break;
        }
        ld->origins[config_key_index(k)] = (struct config_origin){CONFIG_SOURCE_FILE, e->line};
    }
    toml_doc_free(&doc);
    return ok;
}

/* The section whose BERTSERVE_<SECTION>_ prefix starts `name`, or NULL. */
static const char *config_env_section(const char *name, size_t name_len)
{
    for (size_t i = 0; i < CONFIG_SECTION_COUNT; i++) {
        char prefix[48];
        config_env_spell(config_sections[i], "", prefix, sizeof prefix);
        size_t n = strlen(prefix);
        if (name_len > n && strncmp(name, prefix, n) == 0)
            return config_sections[i];
    }
    return NULL;
}

static bool config_apply_env(struct config_loader *ld, char **envp)
{
    for (char **e = envp; e != NULL && *e != NULL; e++) {
        const char *eq = strchr(*e, '=');
        if (eq == NULL || strncmp(*e, "BERTSERVE_", 10) != 0)
            continue;
        size_t name_len = (size_t)(eq - *e);
        const struct config_key *k = NULL;
        for (size_t i = 0; i < CONFIG_KEY_COUNT && k == NULL; i++)
            if (strlen(ld->env_names[i]) == name_len &&
                strncmp(ld->env_names[i], *e, name_len) == 0)
                k = &config_keys[i];
        if (k == NULL) {
            if (config_env_section(*e, name_len) == NULL)
                continue; /* not ours: BERTSERVE_CONFIG, or a Kubernetes service link */
            config_error(ld->err, ld->errlen, "%.*s: unknown setting (see --help for the list)",
                         (int)name_len, *e);
            return false;
        }
        char why[160], got[256];
        if (!config_store_text(ld->cfg, k, eq + 1, why, sizeof why)) {
            config_quote_value(k, eq + 1, got, sizeof got);
            config_error(ld->err, ld->errlen, "%.*s: %s%s", (int)name_len, *e, why, got);
            return false;
        }
        ld->origins[config_key_index(k)] = (struct config_origin){CONFIG_SOURCE_ENV, 0};
    }
    return true;
}

/* One parsed command-line option: a key's flag, or one of --config, --help,
 * --version and --health-check (then `key` is NULL and `option` names it). */
struct config_flag {
    const struct config_key *key;
    const char *option;
    const char *value; /* NULL for --help, --version and --health-check */
};

/* Read the option at argv[*i] (advancing *i past its value). A value is
 * `--flag=value` or the next argument; booleans may stand alone (true), and
 * a separate value never starts with "--", so `--host --port 80` is a
 * missing host rather than a host named "--port". */
static bool config_read_flag(int argc, char **argv, int *i, struct config_flag *out, char *err,
                             size_t errlen)
{
    const char *arg = argv[*i];
    *out = (struct config_flag){0};
    if (strcmp(arg, "-h") == 0) {
        out->option = "--help";
        return true;
    }
    if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
        char got[256];
        config_quote_value(NULL, arg, got, sizeof got);
        config_error(err, errlen, "unexpected argument%s: options start with -- (see --help)",
                     got);
        return false;
    }
    const char *eq = strchr(arg, '=');
    size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
    static const char *const specials[] = {"--help", "--version", "--config", "--health-check"};
    for (size_t s = 0; s < sizeof specials / sizeof specials[0] && out->option == NULL; s++)
        if (strlen(specials[s]) == name_len && strncmp(arg, specials[s], name_len) == 0)
            out->option = specials[s];
    for (size_t k = 0; k < CONFIG_KEY_COUNT && out->option == NULL; k++) {
        if (strlen(config_keys[k].flag) == name_len &&
            strncmp(arg, config_keys[k].flag, name_len) == 0) {
            out->key = &config_keys[k];
            out->option = out->key->flag;
        }
    }
    const char *name = out->option;
    if (name == NULL) {
        config_error(err, errlen, "%.*s: unknown option (see --help)", (int)name_len, arg);
        return false;
    }
    bool takes_value = out->key != NULL || strcmp(name, "--config") == 0;
    bool value_optional = out->key != NULL &&
                          (out->key->kind == CONFIG_BOOL || out->key->kind == CONFIG_TRISTATE);
    if (!takes_value) {
        if (eq != NULL) {
            config_error(err, errlen, "%s: takes no value", name);
            return false;
        }
        return true;
    }
    if (eq != NULL) {
        out->value = eq + 1;
    } else if (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2) != 0) {
        out->value = argv[++*i];
    } else if (value_optional) {
        out->value = "true";
    } else {
        config_error(err, errlen, "%s: missing value", name);
        return false;
    }
    if (out->key == NULL && out->value[0] == '\0') {
        config_error(err, errlen, "%s: missing value", name);
        return false;
    }
    return true;
}

/* Read all of argv into `flags` (key options, in order), *config_path and
 * *health_check; SERVER_CONFIG_HELP or _VERSION as soon as one is asked
 * for. */
static enum server_config_result config_scan_argv(int argc, char **argv,
                                                  struct config_flag *flags, size_t *n_flags,
                                                  const char **config_path, bool *health_check,
                                                  char *err, size_t errlen)
{
    for (int i = 1; i < argc; i++) {
        struct config_flag f;
        if (!config_read_flag(argc, argv, &i, &f, err, errlen))
            return SERVER_CONFIG_ERROR;
        if (f.key != NULL)
            flags[(*n_flags)++] = f;
        else if (strcmp(f.option, "--help") == 0)
            return SERVER_CONFIG_HELP;
        else if (strcmp(f.option, "--version") == 0)
            return SERVER_CONFIG_VERSION;
        else if (strcmp(f.option, "--health-check") == 0)
            *health_check = true;
        else
            *config_path = f.value;
    }
    return SERVER_CONFIG_OK;
}

/* ---- rules between keys ---- */

/* `larger` must be at least `smaller` (skipped when `smaller` is 0, "none"). */
struct config_rule {
    const char *larger_section, *larger, *smaller_section, *smaller;
};

static const struct config_rule config_rules[] = {
    /* A full batch must be able to wait in the queue. */
    {"batching", "max_queue_tokens", "batching", "max_batch_tokens"},
    /* The longest accepted input must fit in one forward pass. */
    {"batching", "max_batch_tokens", "model", "max_input_tokens"},
    /* One answer of the largest size must fit in the budget of all answers. */
    {"server", "max_pending_response_bytes", "server", "max_response_bytes"},
};

static long long config_number(const struct server_config *cfg, const struct config_key *k)
{
    const void *field = config_field_const(cfg, k);
    return k->kind == CONFIG_INT ? *(const int *)field : (long long)*(const size_t *)field;
}

/* Blame whichever value came from the stronger source: that is the one the
 * operator set last and most likely meant to change. */
static bool config_check_rules(struct config_loader *ld)
{
    for (size_t r = 0; r < sizeof config_rules / sizeof config_rules[0]; r++) {
        const struct config_rule *rule = &config_rules[r];
        const struct config_key *big = config_find(rule->larger_section, rule->larger);
        const struct config_key *small = config_find(rule->smaller_section, rule->smaller);
        long long big_value = config_number(ld->cfg, big);
        long long small_value = config_number(ld->cfg, small);
        if (small_value == 0 || big_value >= small_value)
            continue;
        char where[512];
        if (ld->origins[config_key_index(big)].source >=
            ld->origins[config_key_index(small)].source) {
            config_where(ld, big, where, sizeof where);
            config_error(ld->err, ld->errlen, "%s: must be at least [%s] %s (%lld)", where,
                         small->section, small->name, small_value);
        } else {
            config_where(ld, small, where, sizeof where);
            config_error(ld->err, ld->errlen, "%s: must be at most [%s] %s (%lld)", where,
                         big->section, big->name, big_value);
        }
        return false;
    }
    return true;
}

/* ---- public ---- */

enum server_config_result server_config_load(struct server_config *cfg, int argc,
                                             char **argv, char **envp, char *err,
                                             size_t errlen)
{
    *cfg = (struct server_config){0};
    if (errlen > 0)
        err[0] = '\0';
    struct config_loader ld = {.cfg = cfg, .err = err, .errlen = errlen};
    for (size_t i = 0; i < CONFIG_KEY_COUNT; i++) {
        char why[160];
        server_config_env_name(i, ld.env_names[i], sizeof ld.env_names[i]);
        if (!config_store_text(cfg, &config_keys[i], config_keys[i].def, why, sizeof why)) {
            config_error(err, errlen, "[%s] %s: bad built-in default: %s", config_keys[i].section,
                         config_keys[i].name, why);
            return SERVER_CONFIG_ERROR;
        }
    }

    /* Read every flag first: --help and --config act before anything else,
     * but flag values are applied last, over the file and the environment. */
    struct config_flag *flags = calloc(argc > 0 ? (size_t)argc : 1, sizeof *flags);
    if (flags == NULL) {
        config_error(err, errlen, "out of memory");
        return SERVER_CONFIG_ERROR;
    }
    size_t n_flags = 0;
    const char *config_path = NULL;
    bool health_check = false;
    enum server_config_result result = config_scan_argv(argc, argv, flags, &n_flags, &config_path,
                                                        &health_check, err, errlen);
    if (result == SERVER_CONFIG_OK && config_path == NULL) {
        for (char **e = envp; e != NULL && *e != NULL; e++)
            if (strncmp(*e, "BERTSERVE_CONFIG=", 17) == 0 && (*e)[17] != '\0')
                config_path = *e + 17;
    }
    if (result == SERVER_CONFIG_OK && config_path != NULL && !config_apply_file(&ld, config_path))
        result = SERVER_CONFIG_ERROR;
    if (result == SERVER_CONFIG_OK && !config_apply_env(&ld, envp))
        result = SERVER_CONFIG_ERROR;
    for (size_t i = 0; i < n_flags && result == SERVER_CONFIG_OK; i++) {
        const struct config_key *k = flags[i].key;
        char why[160], got[256];
        if (!config_store_text(cfg, k, flags[i].value, why, sizeof why)) {
            config_quote_value(k, flags[i].value, got, sizeof got);
            config_error(err, errlen, "%s: %s%s", k->flag, why, got);
            result = SERVER_CONFIG_ERROR;
        } else {
            ld.origins[config_key_index(k)] = (struct config_origin){CONFIG_SOURCE_FLAG, 0};
        }
    }
    free(flags);
    if (result == SERVER_CONFIG_OK && !config_check_rules(&ld))
        result = SERVER_CONFIG_ERROR;
    if (result == SERVER_CONFIG_OK && health_check)
        result = SERVER_CONFIG_HEALTH_CHECK;
    return result;
}

void server_config_free(struct server_config *cfg)
{
    if (cfg == NULL)
        return;
    for (size_t i = 0; i < CONFIG_KEY_COUNT; i++)
        if (config_keys[i].kind == CONFIG_STRING)
            free(*(char **)config_field(cfg, &config_keys[i]));
    free(cfg->config_file);
    *cfg = (struct server_config){0};
}

static json_t *config_value_json(const struct server_config *cfg, const struct config_key *k)
{
    const void *field = config_field_const(cfg, k);
    switch (k->kind) {
    case CONFIG_STRING: {
        const char *s = *(char *const *)field;
        return json_string(k->secret && s[0] != '\0' ? "***" : s);
    }
    case CONFIG_INT:
    case CONFIG_SIZE: return json_integer(config_number(cfg, k));
    case CONFIG_BOOL: return json_boolean(*(const bool *)field);
    case CONFIG_TRISTATE: {
        int v = *(const int *)field;
        return v == SERVER_CONFIG_AUTO ? json_string("auto")
                                       : json_boolean(v == SERVER_CONFIG_TRUE);
    }
    case CONFIG_ENUM: return json_string(k->choices[*(const int *)field]);
    }
    return NULL;
}

json_t *server_config_to_json(const struct server_config *cfg)
{
    json_t *root = json_object();
    if (root == NULL)
        return NULL;
    for (size_t i = 0; i < CONFIG_KEY_COUNT; i++) {
        const struct config_key *k = &config_keys[i];
        json_t *section = json_object_get(root, k->section);
        if (section == NULL) {
            section = json_object();
            if (json_object_set_new(root, k->section, section) != 0)
                section = NULL;
        }
        if (section == NULL || json_object_set_new(section, k->name, config_value_json(cfg, k))) {
            json_decref(root);
            return NULL;
        }
    }
    return root;
}

void server_config_usage(FILE *out)
{
    fputs("Usage: bertserve [OPTION]...\n"
          "Serve BERT-family encoders over HTTP: fill-mask, classify, embed, tokenize.\n"
          "\n"
          "Every setting is a key of the TOML config file, an environment variable\n"
          "and an option; later ones win: defaults < config file < environment < options.\n"
          "Give a value as --port 8080 or --port=8080; a boolean option alone means true.\n"
          "config.example.toml documents every key.\n"
          "\n"
          "  --config PATH                  TOML config file (env BERTSERVE_CONFIG)\n"
          "  -h, --help                     print this help and exit\n"
          "  --version                      print the version and exit\n"
          "  --health-check                 ask the server this config describes for\n"
          "                                 /health; exit 0 when it answers 200, else 1\n",
          out);
    const char *section = "";
    for (size_t i = 0; i < CONFIG_KEY_COUNT; i++) {
        const struct config_key *k = &config_keys[i];
        if (strcmp(section, k->section) != 0) {
            section = k->section;
            fprintf(out, "\n[%s]\n", section);
        }
        char arg[64];
        if (k->kind == CONFIG_ENUM) {
            size_t o = 0;
            arg[0] = '\0';
            for (size_t c = 0; k->choices[c] && o < sizeof arg; c++)
                o += (size_t)snprintf(arg + o, sizeof arg - o, "%s%s", c ? "|" : "",
                                      k->choices[c][0] ? k->choices[c] : "\"\"");
        } else if (k->kind == CONFIG_BOOL) {
            snprintf(arg, sizeof arg, "[true|false]");
        } else if (k->kind == CONFIG_TRISTATE) {
            snprintf(arg, sizeof arg, "[auto|true|false]");
        } else {
            snprintf(arg, sizeof arg, "%s", k->arg);
        }
        char head[128], env[64];
        snprintf(head, sizeof head, "%s %s", k->flag, arg);
        server_config_env_name(i, env, sizeof env);
        if (strlen(head) < 30)
            fprintf(out, "  %-30s %s\n", head, k->doc);
        else
            fprintf(out, "  %s\n  %-30s %s\n", head, "", k->doc);
        /* The default as the TOML file spells it. */
        bool quoted = k->kind == CONFIG_STRING || k->kind == CONFIG_ENUM ||
                      (k->kind == CONFIG_TRISTATE && strcmp(k->def, "auto") == 0);
        fprintf(out, "  %-30s default %s%s%s", "", quoted ? "\"" : "", k->def, quoted ? "\"" : "");
        if (k->kind == CONFIG_INT || k->kind == CONFIG_SIZE)
            fprintf(out, ", from %lld to %lld", k->min, k->max);
        fprintf(out, "\n  %-30s env %s\n", "", env);
    }
}

size_t server_config_key_count(void)
{
    return CONFIG_KEY_COUNT;
}

struct server_config_key_info server_config_key_at(size_t i)
{
    const struct config_key *k = &config_keys[i];
    return (struct server_config_key_info){k->section, k->name, k->flag, k->def};
}
