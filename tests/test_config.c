/* Server configuration: every key's default, its valid and invalid values
 * from each of the three sources with the exact error, the layering order,
 * unknown names, rules between keys, the JSON dump, --help, and that
 * config.example.toml documents exactly the table's keys and defaults.
 *
 * The expectations below are written out by hand, independently of
 * config.c's table; a key added there without a row here fails the test. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "check.h"
#include "server_config.h"
#include "toml.h"

struct bad_value {
    const char *value;
    const char *must;
};

struct key_case {
    const char *section, *name, *flag;
    const char *default_json;
    const char *good_toml, *good_text, *good_json;
    struct bad_value bad_text[4]; /* as env values and flag values */
    struct bad_value bad_toml[4]; /* as TOML values */
};

#define RANGE(lo, hi) "must be an integer between " #lo " and " #hi
#define NUMBER_CASE(sec, key, flag, def, good, lo, hi, below, above)                      \
    {#sec, #key, flag, #def, #good, #good, #good,                                         \
     {{#below, RANGE(lo, hi)}, {#above, RANGE(lo, hi)}, {"12x", RANGE(lo, hi)},            \
      {"", RANGE(lo, hi)}},                                                               \
     {{#below, RANGE(lo, hi)}, {#above, RANGE(lo, hi)}, {"\"" #good "\"", RANGE(lo, hi)}, \
      {"true", RANGE(lo, hi)}}}

#define POOLING_MUST "must be one of \"\", \"cls\", \"mean\", \"max\""
#define LEVEL_MUST "must be one of \"debug\", \"info\", \"warn\", \"error\""
#define TRISTATE_MUST "must be true, false or \"auto\""

static const struct key_case key_cases[] = {
    {"server", "host", "--host", "\"0.0.0.0\"", "'127.0.0.1'", "127.0.0.1", "\"127.0.0.1\"",
     {{"", "must not be empty"}, {"bad\xC3\x28utf8", "must be valid UTF-8"}},
     {{"\"\"", "must not be empty"}, {"1", "must be a string"}, {"true", "must be a string"}}},
    NUMBER_CASE(server, port, "--port", 8080, 9000, 1, 65535, 0, 65536),
    NUMBER_CASE(server, max_body_bytes, "--max-body-bytes", 2097152, 1048576, 1, 1073741824, 0,
                1073741825),
    NUMBER_CASE(server, max_client_batch, "--max-client-batch", 2048, 64, 1, 65536, 0, 65537),
    NUMBER_CASE(server, max_connections, "--max-connections", 1024, 10, 1, 1000000, 0, 1000001),
    NUMBER_CASE(server, max_concurrent_requests, "--max-concurrent-requests", 512, 8, 1, 1000000,
                -1, 1000001),
    NUMBER_CASE(server, request_timeout_ms, "--request-timeout-ms", 30000, 5000, 1, 86400000, 0,
                86400001),
    NUMBER_CASE(server, shutdown_timeout_ms, "--shutdown-timeout-ms", 30000, 0, 0, 86400000, -1,
                86400001),
    {"server", "api_key", "--api-key", "\"\"", "\"s3cret-token\"", "s3cret-token", "\"***\"",
     {{"has space", "must be printable ASCII without spaces"},
      {"caf\xC3\xA9", "must be printable ASCII without spaces"},
      {"tab\there", "must be printable ASCII without spaces"}},
     {{"1", "must be a string"}, {"'a b'", "must be printable ASCII without spaces"}}},
    NUMBER_CASE(server, max_top_k, "--max-top-k", 100, 5, 1, 1000000, 0, 1000001),
    NUMBER_CASE(server, max_fill_mask_decode, "--max-fill-mask-decode", 2000000, 5, 1, 1000000000,
                0, 1000000001),
    NUMBER_CASE(server, max_fill_mask_targets, "--max-fill-mask-targets", 1000, 5, 1, 1000000, 0,
                1000001),
    NUMBER_CASE(server, max_response_bytes, "--max-response-bytes", 33554432, 1048576, 1024,
                1099511627776, 1023, 1099511627777),
    NUMBER_CASE(server, max_pending_response_bytes, "--max-pending-response-bytes", 268435456,
                536870912, 1024, 1099511627776, 1023, 1099511627777),
    NUMBER_CASE(server, offload_parse_bytes, "--offload-parse-bytes", 65536, 0, 0, 1073741824, -1,
                1073741825),
    NUMBER_CASE(server, loop_threads, "--loop-threads", 0, 4, 0, 64, -1, 65),
    {"server", "cors_allow_origin", "--cors-allow-origin", "\"\"",
     "\"https://a.example, http://localhost:3000\"", "https://a.example, http://localhost:3000",
     "\"https://a.example, http://localhost:3000\"",
     {{"a.example", "must be \"*\" or origins like https://app.example, separated by commas"},
      {"https://a b", "must be \"*\" or origins like https://app.example, separated by commas"},
      {"*, ftp://x", "must be \"*\" or origins like https://app.example, separated by commas"}},
     {{"1", "must be a string"}}},

    {"model", "path", "--model", "\"models/default\"", "\"/srv/m\\u00e9\"", "/srv/m\xC3\xA9",
     "\"/srv/m\xC3\xA9\"",
     {{"", "must not be empty"}, {"/srv/\xE9", "must be valid UTF-8"}},
     {{"''", "must not be empty"}, {"1", "must be a string"}}},
    {"model", "pooling", "--pooling", "\"\"", "'mean'", "mean", "\"mean\"",
     {{"avg", POOLING_MUST}, {"CLS", POOLING_MUST}, {" cls", POOLING_MUST}},
     {{"1", POOLING_MUST}, {"'avg'", POOLING_MUST}, {"true", POOLING_MUST}}},
    {"model", "normalize", "--normalize", "\"auto\"", "true", "true", "true",
     {{"yes", TRISTATE_MUST}, {"1", TRISTATE_MUST}, {"AUTO", TRISTATE_MUST}, {"", TRISTATE_MUST}},
     {{"'true'", TRISTATE_MUST}, {"1", TRISTATE_MUST}, {"'Auto'", TRISTATE_MUST}}},
    NUMBER_CASE(model, max_input_tokens, "--max-input-tokens", 0, 512, 0, 1048576, -1, 1048577),
    {"model", "truncate", "--truncate", "false", "true", "true", "true",
     {{"yes", "must be true or false"}, {"1", "must be true or false"},
      {"", "must be true or false"}},
     {{"'true'", "must be true or false"}, {"0", "must be true or false"}}},
    {"model", "served_model_name", "--served-model-name", "\"\"", "\"BAAI/bge-small\"",
     "BAAI/bge-small", "\"BAAI/bge-small\"",
     {{"has space", "must have no spaces, control characters, '?', '#' or '%'"},
      {"a?b", "must have no spaces, control characters, '?', '#' or '%'"},
      {"0123456789012345678901234567890123456789012345678901234567890123456789012345678901",
       "must be at most 80 bytes long"},
      {"bad\xC3\x28utf8", "must be valid UTF-8"}},
     {{"1", "must be a string"}, {"'a%20b'", "must have no spaces, control characters, '?', '#' or '%'"}}},
    {"model", "openai_unit_length", "--openai-unit-length", "true", "false", "false", "false",
     {{"yes", "must be true or false"}, {"1", "must be true or false"},
      {"", "must be true or false"}},
     {{"'true'", "must be true or false"}, {"0", "must be true or false"}}},
    {"model", "dtype", "--dtype", "\"f32\"", "\"bf16\"", "bf16", "\"bf16\"",
     {{"f16", "must be one of \"f32\", \"bf16\", \"int8\""}, {"F32", "must be one of \"f32\", \"bf16\", \"int8\""}},
     {{"16", "must be one of \"f32\", \"bf16\", \"int8\""}}},

    NUMBER_CASE(batching, max_batch_tokens, "--max-batch-tokens", 4096, 8192, 1, 16777216, 0,
                16777217),
    NUMBER_CASE(batching, max_batch_requests, "--max-batch-requests", 64, 16, 1, 65536, 0,
                65537),
    NUMBER_CASE(batching, max_wait_us, "--max-wait-us", 0, 500, 0, 1000000, -1, 1000001),
    NUMBER_CASE(batching, max_queue_tokens, "--max-queue-tokens", 65536, 100000, 1, 1073741824,
                0, 1073741825),

    NUMBER_CASE(workers, threads, "--threads", 0, 2, 0, 1024, -1, 1025),
    NUMBER_CASE(workers, blas_threads, "--blas-threads", 0, 1, 0, 1024, -1, 1025),
    NUMBER_CASE(workers, prepare_threads, "--prepare-threads", 0, 3, 0, 256, -1, 257),

    {"log", "level", "--log-level", "\"info\"", "'debug'", "debug", "\"debug\"",
     {{"verbose", LEVEL_MUST}, {"INFO", LEVEL_MUST}},
     {{"2", LEVEL_MUST}, {"false", LEVEL_MUST}}},
    {"log", "format", "--log-format", "\"text\"", "\"json\"", "json", "\"json\"",
     {{"xml", "must be one of \"text\", \"json\""}},
     {{"true", "must be one of \"text\", \"json\""}}},
};
#define N_CASES (sizeof key_cases / sizeof key_cases[0])

static char tmp_path[64];
static char err[1024];

/* Replace the temporary TOML file's content. */
static const char *write_toml(const char *text)
{
    FILE *f = fopen(tmp_path, "w");
    if (f == NULL) {
        perror(tmp_path);
        exit(EXIT_FAILURE);
    }
    fputs(text, f);
    fclose(f);
    return tmp_path;
}

/* Load with `env` (NULL-terminated, may be NULL) and the NULL-terminated
 * arguments after argv[0]. */
static enum server_config_result load(struct server_config *cfg, char **env, ...)
{
    char *argv[32] = {"bertserve"};
    int argc = 1;
    va_list ap;
    va_start(ap, env);
    for (char *a; (a = va_arg(ap, char *)) != NULL && argc < 31;)
        argv[argc++] = a;
    va_end(ap);
    memset(err, 'x', sizeof err); /* a stale message must not pass for a new one */
    err[sizeof err - 1] = '\0';
    enum server_config_result r = server_config_load(cfg, argc, argv, env, err, sizeof err);
    if (r != SERVER_CONFIG_ERROR)
        err[0] = '\0';
    CHECK(strchr(err, '\n') == NULL);
    return r;
}

/* cfg's value of [section] name, as JSON text (malloc'd). */
static char *value_json(const struct server_config *cfg, const char *section, const char *name)
{
    json_t *all = server_config_to_json(cfg);
    json_t *v = json_object_get(json_object_get(all, section), name);
    char *text = v ? json_dumps(v, JSON_ENCODE_ANY) : strdup("(missing)");
    json_decref(all);
    return text;
}

static void check_value(const struct server_config *cfg, const struct key_case *c,
                        const char *want_json, const char *how)
{
    char *got = value_json(cfg, c->section, c->name);
    json_t *want = json_loads(want_json, JSON_DECODE_ANY, NULL);
    json_t *have = json_loads(got, JSON_DECODE_ANY, NULL);
    bool same = want != NULL && have != NULL && json_equal(want, have);
    CHECK(same);
    if (!same)
        fprintf(stderr, "  [%s] %s via %s: got %s, want %s\n", c->section, c->name, how, got,
                want_json);
    json_decref(want);
    json_decref(have);
    free(got);
}

static void env_name(const struct key_case *c, char *out, size_t len)
{
    snprintf(out, len, "BERTSERVE_%s_%s", c->section, c->name);
    for (char *p = out; *p; p++)
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 'a' + 'A');
}

static void test_table_matches_cases(void)
{
    CHECK_INT_EQ(server_config_key_count(), N_CASES);
    for (size_t i = 0; i < server_config_key_count(); i++) {
        struct server_config_key_info info = server_config_key_at(i);
        const struct key_case *c = NULL;
        for (size_t j = 0; j < N_CASES && c == NULL; j++)
            if (strcmp(key_cases[j].section, info.section) == 0 &&
                strcmp(key_cases[j].name, info.name) == 0)
                c = &key_cases[j];
        CHECK(c != NULL);
        if (c == NULL) {
            fprintf(stderr, "  no test case for [%s] %s\n", info.section, info.name);
            continue;
        }
        CHECK_STR_EQ(info.flag, c->flag);
        char want[96], got[96];
        env_name(c, want, sizeof want);
        CHECK(server_config_env_name(i, got, sizeof got));
        CHECK_STR_EQ(got, want);
        CHECK(!server_config_env_name(i, got, 8)); /* too small a buffer */
    }
}

static void test_defaults(void)
{
    struct server_config cfg;
    CHECK_INT_EQ(load(&cfg, NULL, NULL), SERVER_CONFIG_OK);
    for (size_t i = 0; i < N_CASES; i++)
        check_value(&cfg, &key_cases[i], key_cases[i].default_json, "default");
    /* Spot-check the typed fields the rest of the server reads. */
    CHECK_STR_EQ(cfg.server.host, "0.0.0.0");
    CHECK_INT_EQ(cfg.server.port, 8080);
    CHECK_INT_EQ(cfg.server.max_body_bytes, 2097152);
    CHECK_STR_EQ(cfg.server.api_key, "");
    CHECK_STR_EQ(cfg.model.path, "models/default");
    CHECK_INT_EQ(cfg.model.pooling, SERVER_CONFIG_POOLING_MODEL);
    CHECK_INT_EQ(cfg.model.normalize, SERVER_CONFIG_AUTO);
    CHECK_INT_EQ(cfg.model.truncate, false);
    CHECK_INT_EQ(cfg.model.dtype, SERVER_CONFIG_DTYPE_F32);
    CHECK_INT_EQ(cfg.batching.max_batch_tokens, 4096);
    CHECK_INT_EQ(cfg.batching.max_queue_tokens, 65536);
    CHECK_INT_EQ(cfg.workers.threads, 0);
    CHECK_INT_EQ(cfg.log.level, SERVER_CONFIG_LOG_INFO);
    CHECK_INT_EQ(cfg.log.format, SERVER_CONFIG_LOG_FORMAT_TEXT);
    CHECK(cfg.config_file == NULL);
    server_config_free(&cfg);
    CHECK(cfg.server.host == NULL);
    server_config_free(&cfg); /* twice is fine */
    server_config_free(NULL);
}

/* Each key's valid value, from the file, the environment and both flag
 * spellings. */
static void test_good_values(void)
{
    for (size_t i = 0; i < N_CASES; i++) {
        const struct key_case *c = &key_cases[i];
        struct server_config cfg;
        char text[256], env_var[256], flag_eq[256];

        snprintf(text, sizeof text, "[%s]\n%s = %s\n", c->section, c->name, c->good_toml);
        CHECK_INT_EQ(load(&cfg, NULL, "--config", write_toml(text), NULL), SERVER_CONFIG_OK);
        CHECK_STR_EQ(err, "");
        check_value(&cfg, c, c->good_json, "file");
        server_config_free(&cfg);

        char name[96];
        env_name(c, name, sizeof name);
        snprintf(env_var, sizeof env_var, "%s=%s", name, c->good_text);
        char *env[] = {"PATH=/usr/bin", env_var, NULL};
        CHECK_INT_EQ(load(&cfg, env, NULL), SERVER_CONFIG_OK);
        check_value(&cfg, c, c->good_json, "env");
        server_config_free(&cfg);

        CHECK_INT_EQ(load(&cfg, NULL, c->flag, c->good_text, NULL), SERVER_CONFIG_OK);
        check_value(&cfg, c, c->good_json, "flag");
        server_config_free(&cfg);

        snprintf(flag_eq, sizeof flag_eq, "%s=%s", c->flag, c->good_text);
        CHECK_INT_EQ(load(&cfg, NULL, flag_eq, NULL), SERVER_CONFIG_OK);
        check_value(&cfg, c, c->good_json, "flag=");
        server_config_free(&cfg);
    }
}

/* The error must be `where: must ...` and, unless secret, name the value. */
static void check_error(const char *where, const struct bad_value *b, bool secret)
{
    char want[512];
    snprintf(want, sizeof want, "%s: %s", where, b->must);
    CHECK(strncmp(err, want, strlen(want)) == 0);
    if (strncmp(err, want, strlen(want)) != 0)
        fprintf(stderr, "  got  \"%s\"\n  want \"%s...\"\n", err, want);
    if (secret)
        CHECK(strstr(err, "got") == NULL && (b->value[0] == '\0' || !strstr(err, b->value)));
    else
        CHECK_CONTAINS(err, " (got \"");
}

static void test_bad_values(void)
{
    for (size_t i = 0; i < N_CASES; i++) {
        const struct key_case *c = &key_cases[i];
        bool secret = strcmp(c->name, "api_key") == 0;
        char name[96];
        env_name(c, name, sizeof name);
        for (size_t b = 0; b < 4 && c->bad_text[b].must != NULL; b++) {
            const struct bad_value *bad = &c->bad_text[b];
            struct server_config cfg;
            char env_var[256], flag_eq[256];
            snprintf(env_var, sizeof env_var, "%s=%s", name, bad->value);
            char *env[] = {env_var, NULL};
            CHECK_INT_EQ(load(&cfg, env, NULL), SERVER_CONFIG_ERROR);
            check_error(name, bad, secret);
            server_config_free(&cfg);

            snprintf(flag_eq, sizeof flag_eq, "%s=%s", c->flag, bad->value);
            CHECK_INT_EQ(load(&cfg, NULL, flag_eq, NULL), SERVER_CONFIG_ERROR);
            check_error(c->flag, bad, secret);
            server_config_free(&cfg);
        }
        for (size_t b = 0; b < 4 && c->bad_toml[b].must != NULL; b++) {
            const struct bad_value *bad = &c->bad_toml[b];
            struct server_config cfg;
            char text[256], where[256];
            snprintf(text, sizeof text, "# a comment\n[%s]\n%s = %s\n", c->section, c->name,
                     bad->value);
            CHECK_INT_EQ(load(&cfg, NULL, "--config", write_toml(text), NULL),
                         SERVER_CONFIG_ERROR);
            snprintf(where, sizeof where, "%s:3: [%s] %s", tmp_path, c->section, c->name);
            char want[512];
            snprintf(want, sizeof want, "%s: %s", where, bad->must);
            CHECK_STR_EQ(err, want);
            server_config_free(&cfg);
        }
    }
}

static void test_layering(void)
{
    struct server_config cfg;
    const char *path = write_toml("[server]\nport = 1000\nhost = 'file-host'\n"
                                  "[log]\nlevel = 'warn'\n");
    char *env[] = {"BERTSERVE_SERVER_PORT=2000", "BERTSERVE_LOG_LEVEL=error", NULL};

    CHECK_INT_EQ(load(&cfg, NULL, "--config", path, NULL), SERVER_CONFIG_OK);
    CHECK_INT_EQ(cfg.server.port, 1000);
    CHECK_STR_EQ(cfg.server.host, "file-host");
    CHECK_INT_EQ(cfg.log.level, SERVER_CONFIG_LOG_WARN);
    CHECK_STR_EQ(cfg.config_file, path);
    server_config_free(&cfg);

    /* env beats the file, only for the keys it sets */
    CHECK_INT_EQ(load(&cfg, env, "--config", path, NULL), SERVER_CONFIG_OK);
    CHECK_INT_EQ(cfg.server.port, 2000);
    CHECK_STR_EQ(cfg.server.host, "file-host");
    CHECK_INT_EQ(cfg.log.level, SERVER_CONFIG_LOG_ERROR);
    server_config_free(&cfg);

    /* flags beat both, wherever they stand relative to --config */
    CHECK_INT_EQ(load(&cfg, env, "--port", "3000", "--config", path, NULL), SERVER_CONFIG_OK);
    CHECK_INT_EQ(cfg.server.port, 3000);
    CHECK_INT_EQ(cfg.log.level, SERVER_CONFIG_LOG_ERROR);
    server_config_free(&cfg);

    /* the last of a repeated flag wins */
    CHECK_INT_EQ(load(&cfg, env, "--port=1", "--port", "2", NULL), SERVER_CONFIG_OK);
    CHECK_INT_EQ(cfg.server.port, 2);
    server_config_free(&cfg);

    /* BERTSERVE_CONFIG names the file; --config overrides it */
    char config_env[128];
    snprintf(config_env, sizeof config_env, "BERTSERVE_CONFIG=%s", path);
    char *env_file[] = {config_env, NULL};
    CHECK_INT_EQ(load(&cfg, env_file, NULL), SERVER_CONFIG_OK);
    CHECK_INT_EQ(cfg.server.port, 1000);
    server_config_free(&cfg);
    CHECK_INT_EQ(load(&cfg, env_file, "--config", "/nonexistent/x.toml", NULL),
                 SERVER_CONFIG_ERROR);
    CHECK_STR_EQ(err, "/nonexistent/x.toml: cannot open: No such file or directory");
    server_config_free(&cfg);
    char *env_empty[] = {"BERTSERVE_CONFIG=", NULL};
    CHECK_INT_EQ(load(&cfg, env_empty, NULL), SERVER_CONFIG_OK); /* empty: no file */
    CHECK(cfg.config_file == NULL);
    server_config_free(&cfg);

    /* booleans: alone, with a separate value, with = */
    CHECK_INT_EQ(load(&cfg, NULL, "--truncate", "--port", "81", NULL), SERVER_CONFIG_OK);
    CHECK_INT_EQ(cfg.model.truncate, true);
    CHECK_INT_EQ(cfg.server.port, 81);
    server_config_free(&cfg);
    char *env_true[] = {"BERTSERVE_MODEL_TRUNCATE=true", NULL};
    CHECK_INT_EQ(load(&cfg, env_true, "--truncate", "false", NULL), SERVER_CONFIG_OK);
    CHECK_INT_EQ(cfg.model.truncate, false);
    server_config_free(&cfg);
    CHECK_INT_EQ(load(&cfg, NULL, "--normalize", NULL), SERVER_CONFIG_OK);
    CHECK_INT_EQ(cfg.model.normalize, SERVER_CONFIG_TRUE);
    server_config_free(&cfg);
    CHECK_INT_EQ(load(&cfg, NULL, "--normalize=false", NULL), SERVER_CONFIG_OK);
    CHECK_INT_EQ(cfg.model.normalize, SERVER_CONFIG_FALSE);
    server_config_free(&cfg);
    CHECK_INT_EQ(load(&cfg, NULL, "--normalize", "auto", NULL), SERVER_CONFIG_OK);
    CHECK_INT_EQ(cfg.model.normalize, SERVER_CONFIG_AUTO);
    server_config_free(&cfg);

    /* a value may start with one dash, or with two after = */
    CHECK_INT_EQ(load(&cfg, NULL, "--host=--odd", "--api-key", "-k", NULL), SERVER_CONFIG_OK);
    CHECK_STR_EQ(cfg.server.host, "--odd");
    CHECK_STR_EQ(cfg.server.api_key, "-k");
    server_config_free(&cfg);
}

static void test_bad_names(void)
{
    struct server_config cfg;
    struct {
        const char *toml;
        const char *message; /* after "<path>:" */
    } files[] = {
        {"[server]\nprot = 80\n", "2: [server] prot: unknown key"},
        {"[server]\nport = 80\n[srever]\n", "3: [srever]: unknown section (known: server, "
                                            "model, batching, workers, log)"},
        {"port = 80\n", "1: port: every key belongs under a header such as [server]"},
        {"[server]\nport = 80\nport = 81\n", "3: duplicate key \"port\" (first set at line 2)"},
        {"[log]\nlevel = 'info'\n[log]\n", "3: section [log] is already defined at line 1"},
        {"[server]\nport = 80 81\n",
         "2: unexpected \"81\" after value (one key or header per line)"},
        {"[model]\npath = models/x\n", "2: invalid value \"models/x\" (strings must be quoted)"},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        CHECK_INT_EQ(load(&cfg, NULL, "--config", write_toml(files[i].toml), NULL),
                     SERVER_CONFIG_ERROR);
        char want[512];
        snprintf(want, sizeof want, "%s:%s", tmp_path, files[i].message);
        CHECK_STR_EQ(err, want);
        server_config_free(&cfg);
    }

    struct {
        const char *args[4];
        const char *message;
    } flags[] = {
        {{"--prot", "80"}, "--prot: unknown option (see --help)"},
        {{"--prot=80"}, "--prot: unknown option (see --help)"},
        {{"-p", "80"}, "unexpected argument (got \"-p\"): options start with -- (see --help)"},
        {{"serve"}, "unexpected argument (got \"serve\"): options start with -- (see --help)"},
        {{"--"}, "unexpected argument (got \"--\"): options start with -- (see --help)"},
        {{"--port"}, "--port: missing value"},
        {{"--host", "--port", "80"}, "--host: missing value"},
        {{"--config"}, "--config: missing value"},
        {{"--config="}, "--config: missing value"},
        {{"--help=yes"}, "--help: takes no value"},
        {{"--port", "80", "extra"},
         "unexpected argument (got \"extra\"): options start with -- (see --help)"},
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        const char *const *a = flags[i].args;
        CHECK_INT_EQ(load(&cfg, NULL, a[0], a[1], a[2], a[3], NULL), SERVER_CONFIG_ERROR);
        CHECK_STR_EQ(err, flags[i].message);
        server_config_free(&cfg);
    }

    /* An unknown key under a known section's prefix is a typo: refuse it. */
    char *typo[] = {"BERTSERVE_SERVER_PROT=80", NULL};
    CHECK_INT_EQ(load(&cfg, typo, NULL), SERVER_CONFIG_ERROR);
    CHECK_STR_EQ(err, "BERTSERVE_SERVER_PROT: unknown setting (see --help for the list)");
    server_config_free(&cfg);
    /* Names we do not own (Kubernetes service links, other tools) are ignored. */
    char *foreign[] = {"BERTSERVE_PORT=tcp://10.0.0.1:8080", "BERTSERVE_SERVICE_HOST=10.0.0.1",
                       "BERTSERVE_SERVER=x", "BERTSERVE_LOGS_DIR=/tmp", "NOT_BERTSERVE_X=1",
                       "BERTSERVE_NO_EQUALS", NULL};
    CHECK_INT_EQ(load(&cfg, foreign, NULL), SERVER_CONFIG_OK);
    CHECK_INT_EQ(cfg.server.port, 8080);
    server_config_free(&cfg);
    /* The error names the variable and shows the value, escaped and cut. */
    char *k8s[] = {"BERTSERVE_SERVER_PORT=tcp://10.0.0.1:8080", NULL};
    CHECK_INT_EQ(load(&cfg, k8s, NULL), SERVER_CONFIG_ERROR);
    CHECK_STR_EQ(err, "BERTSERVE_SERVER_PORT: must be an integer between 1 and 65535 "
                      "(got \"tcp://10.0.0.1:8080\")");
    server_config_free(&cfg);
    const char *odd = "a\"b\\c\x01\n0123456789012345678901234567890123456789";
    CHECK_INT_EQ(load(&cfg, NULL, "--log-level", odd, NULL), SERVER_CONFIG_ERROR);
    CHECK_STR_EQ(err, "--log-level: " LEVEL_MUST
                      " (got \"a\\\"b\\\\c\\x01\\x0A012345678901234567890123456789012...\")");
    server_config_free(&cfg);
}

static void test_help_and_version(void)
{
    struct server_config cfg;
    CHECK_INT_EQ(load(&cfg, NULL, "--help", NULL), SERVER_CONFIG_HELP);
    server_config_free(&cfg);
    CHECK_INT_EQ(load(&cfg, NULL, "--port", "1", "-h", NULL), SERVER_CONFIG_HELP);
    server_config_free(&cfg);
    CHECK_INT_EQ(load(&cfg, NULL, "--version", NULL), SERVER_CONFIG_VERSION);
    server_config_free(&cfg);
    /* --help does not read the file */
    CHECK_INT_EQ(load(&cfg, NULL, "--config", "/nonexistent.toml", "--help", NULL),
                 SERVER_CONFIG_HELP);
    server_config_free(&cfg);

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    server_config_usage(f);
    fclose(f);
    CHECK_CONTAINS(text, "Usage: bertserve");
    CHECK_CONTAINS(text, "--config PATH");
    CHECK_CONTAINS(text, "--port N");
    CHECK_CONTAINS(text, "default 8080, from 1 to 65535\n");
    CHECK_CONTAINS(text, "env BERTSERVE_SERVER_PORT\n");
    CHECK_CONTAINS(text, "default \"\"\n"); /* pooling */
    CHECK_CONTAINS(text, "default \"auto\"\n");
    CHECK_CONTAINS(text, "--log-format text|json");
    CHECK_CONTAINS(text, "--pooling \"\"|cls|mean|max");
    CHECK_CONTAINS(text, "--truncate [true|false]");
    CHECK_CONTAINS(text, "default \"models/default\"\n");
    /* At most 80 columns, for terminals. */
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        CHECK(n <= 80);
        line += n + (nl != NULL);
    }
    for (size_t i = 0; i < N_CASES; i++) {
        char name[96], flag[96];
        env_name(&key_cases[i], name, sizeof name);
        snprintf(flag, sizeof flag, "  %s ", key_cases[i].flag);
        CHECK_CONTAINS(text, name);
        CHECK_CONTAINS(text, flag);
    }
    free(text);
}

static void test_rules_between_keys(void)
{
    struct server_config cfg;
    /* The file sets the queue below the default batch: blame the file. */
    CHECK_INT_EQ(load(&cfg, NULL, "--config",
                      write_toml("[batching]\n\nmax_queue_tokens = 1000\n"), NULL),
                 SERVER_CONFIG_ERROR);
    char want[512];
    snprintf(want, sizeof want,
             "%s:3: [batching] max_queue_tokens: must be at least [batching] max_batch_tokens "
             "(4096)",
             tmp_path);
    CHECK_STR_EQ(err, want);
    server_config_free(&cfg);
    /* A flag raises the batch over the default queue: blame the flag. */
    CHECK_INT_EQ(load(&cfg, NULL, "--max-batch-tokens", "100000", NULL), SERVER_CONFIG_ERROR);
    CHECK_STR_EQ(err, "--max-batch-tokens: must be at most [batching] max_queue_tokens (65536)");
    server_config_free(&cfg);
    /* Both raised together is fine. */
    CHECK_INT_EQ(load(&cfg, NULL, "--max-batch-tokens", "100000", "--max-queue-tokens=100000",
                      NULL),
                 SERVER_CONFIG_OK);
    server_config_free(&cfg);
    /* An input longer than a batch could never run. */
    char *env[] = {"BERTSERVE_MODEL_MAX_INPUT_TOKENS=8192", NULL};
    CHECK_INT_EQ(load(&cfg, env, NULL), SERVER_CONFIG_ERROR);
    CHECK_STR_EQ(err, "BERTSERVE_MODEL_MAX_INPUT_TOKENS: must be at most [batching] "
                      "max_batch_tokens (4096)");
    server_config_free(&cfg);
    CHECK_INT_EQ(load(&cfg, env, "--max-batch-tokens", "512", NULL), SERVER_CONFIG_ERROR);
    CHECK_STR_EQ(err, "--max-batch-tokens: must be at least [model] max_input_tokens (8192)");
    server_config_free(&cfg);
    CHECK_INT_EQ(load(&cfg, env, "--max-batch-tokens", "8192", NULL), SERVER_CONFIG_OK);
    CHECK_INT_EQ(cfg.model.max_input_tokens, 8192);
    server_config_free(&cfg);
}

static void test_json(void)
{
    struct server_config cfg;
    char *env[] = {"BERTSERVE_SERVER_API_KEY=hunter2", NULL};
    CHECK_INT_EQ(load(&cfg, env, "--normalize", "false", "--max-wait-us", "250", NULL),
                 SERVER_CONFIG_OK);
    CHECK_STR_EQ(cfg.server.api_key, "hunter2");
    json_t *j = server_config_to_json(&cfg);
    CHECK(j != NULL);
    char *text = json_dumps(j, JSON_SORT_KEYS);
    CHECK(strstr(text, "hunter2") == NULL);
    CHECK_STR_EQ(json_string_value(json_object_get(json_object_get(j, "server"), "api_key")),
                 "***");
    CHECK(json_is_false(json_object_get(json_object_get(j, "model"), "normalize")));
    CHECK_INT_EQ(json_integer_value(json_object_get(json_object_get(j, "batching"),
                                                    "max_wait_us")),
                 250);
    /* exactly the five sections, each with exactly its keys */
    CHECK_INT_EQ(json_object_size(j), 5);
    size_t total = 0;
    const char *section;
    json_t *keys;
    json_object_foreach(j, section, keys) {
        CHECK(json_is_object(keys));
        total += json_object_size(keys);
    }
    CHECK_INT_EQ(total, N_CASES);
    free(text);
    json_decref(j);
    server_config_free(&cfg);
}

/* config.example.toml: every key of the table, each with exactly its
 * default, nothing else; and each documented with its variable and option. */
static void test_example_in_step(const char *path)
{
    struct toml_doc doc;
    struct toml_error terr;
    bool ok = toml_parse_file(path, &doc, &terr);
    CHECK(ok);
    if (!ok) {
        fprintf(stderr, "  %s:%d: %s\n", path, terr.line, terr.message);
        return;
    }
    CHECK_INT_EQ(doc.count, server_config_key_count());
    for (size_t i = 0; i < server_config_key_count(); i++) {
        struct server_config_key_info info = server_config_key_at(i);
        int found = 0;
        for (size_t e = 0; e < doc.count; e++)
            found += strcmp(doc.entries[e].section, info.section) == 0 &&
                     strcmp(doc.entries[e].key, info.name) == 0;
        CHECK_INT_EQ(found, 1);
        if (found != 1)
            fprintf(stderr, "  [%s] %s appears %d times in %s\n", info.section, info.name, found,
                    path);
    }
    toml_doc_free(&doc);

    /* Loading the example gives the same config as loading nothing. */
    struct server_config defaults, example;
    CHECK_INT_EQ(load(&defaults, NULL, NULL), SERVER_CONFIG_OK);
    CHECK_INT_EQ(load(&example, NULL, "--config", path, NULL), SERVER_CONFIG_OK);
    CHECK_STR_EQ(err, "");
    json_t *a = server_config_to_json(&defaults), *b = server_config_to_json(&example);
    CHECK(json_equal(a, b));
    if (!json_equal(a, b)) {
        char *sa = json_dumps(a, JSON_SORT_KEYS), *sb = json_dumps(b, JSON_SORT_KEYS);
        fprintf(stderr, "  defaults %s\n  example  %s\n", sa, sb);
        free(sa);
        free(sb);
    }
    json_decref(a);
    json_decref(b);
    server_config_free(&defaults);
    server_config_free(&example);

    /* The manual names each key's variable and option. */
    FILE *f = fopen(path, "r");
    static char text[1 << 16];
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f)
        fclose(f);
    text[n] = '\0';
    for (size_t i = 0; i < N_CASES; i++) {
        char want[160], name[96];
        env_name(&key_cases[i], name, sizeof name);
        snprintf(want, sizeof want, "# env %s, option %s\n", name, key_cases[i].flag);
        CHECK_CONTAINS(text, want);
    }
}

int main(int argc, char **argv)
{
    snprintf(tmp_path, sizeof tmp_path, "/tmp/test_config_%ld.toml", (long)getpid());
    test_table_matches_cases();
    test_defaults();
    test_good_values();
    test_bad_values();
    test_layering();
    test_bad_names();
    test_help_and_version();
    test_rules_between_keys();
    test_json();
    test_example_in_step(argc > 1 ? argv[1] : "config.example.toml");
    unlink(tmp_path);
    return check_exit();
}
