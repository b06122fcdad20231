/* `bert bench`: time the engine on a fixed workload and print one JSON line.
 * The bench/ drivers run it beside ONNX Runtime and PyTorch on the same
 * token ids, and beside the HTTP server on the same texts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>
#include <jansson.h>

#include "args.h"
#include "bert.h"
#include "cli.h"

/* Packed batches: batch b holds sequences [first[b], first[b + 1]). */
struct workload {
    size_t n_seqs, n_batches, n_tokens;
    int32_t **ids;     /* (n_seqs) */
    size_t *len;       /* (n_seqs) */
    size_t *first;     /* (n_batches + 1) */
};

static void workload_free(struct workload *w)
{
    for (size_t i = 0; i < w->n_seqs; i++)
        free(w->ids[i]);
    free(w->ids);
    free(w->len);
    free(w->first);
}

static bool workload_add(struct workload *w, const int32_t *ids, size_t n, size_t *cap)
{
    if (w->n_seqs == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        int32_t **p = realloc(w->ids, *cap * sizeof *p);
        size_t *l = p ? realloc(w->len, *cap * sizeof *l) : NULL;
        if (p)
            w->ids = p;
        if (!l)
            return false;
        w->len = l;
    }
    w->ids[w->n_seqs] = malloc(n * sizeof *ids);
    if (w->ids[w->n_seqs] == NULL)
        return false;
    memcpy(w->ids[w->n_seqs], ids, n * sizeof *ids);
    w->len[w->n_seqs++] = n;
    w->n_tokens += n;
    return true;
}

/* {"batches": [[[ids...], ...], ...]}: explicit batches, as the peers get them. */
static bool load_workload(const char *path, struct workload *w)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    json_t *batches = json_object_get(root, "batches");
    if (!json_is_array(batches)) {
        fprintf(stderr, "bert bench: %s: expected {\"batches\": [[[ids]]]} (%s)\n", path,
                root ? "no batches" : jerr.text);
        json_decref(root);
        return false;
    }
    size_t cap = 0, nb = json_array_size(batches);
    w->first = calloc(nb + 1, sizeof *w->first);
    bool ok = w->first != NULL;
    int32_t *buf = NULL;
    size_t buf_cap = 0;
    for (size_t b = 0; ok && b < nb; b++) {
        json_t *batch = json_array_get(batches, b);
        w->first[b] = w->n_seqs;
        for (size_t s = 0; ok && s < json_array_size(batch); s++) {
            json_t *seq = json_array_get(batch, s);
            size_t n = json_array_size(seq);
            if (n > buf_cap) {
                buf_cap = n;
                int32_t *nbuf = realloc(buf, n * sizeof *buf);
                ok = nbuf != NULL;
                if (ok)
                    buf = nbuf;
            }
            for (size_t t = 0; ok && t < n; t++)
                buf[t] = (int32_t)json_integer_value(json_array_get(seq, t));
            ok = ok && n > 0 && workload_add(w, buf, n, &cap);
        }
    }
    w->n_batches = nb;
    if (ok)
        w->first[nb] = w->n_seqs;
    free(buf);
    json_decref(root);
    if (!ok)
        fprintf(stderr, "bert bench: %s: empty sequence or out of memory\n", path);
    return ok;
}

/* One text per line, tokenised (truncated to the model's limit) and packed
 * greedily into batches of at most batch_tokens, as the server's batcher
 * packs a full queue. */
static bool load_texts(const char *path, const struct bert_model *m, size_t batch_tokens,
                       struct workload *w)
{
    FILE *fp = fopen(path, "r");
    if (fp == NULL) {
        fprintf(stderr, "bert bench: cannot open %s\n", path);
        return false;
    }
    struct bert_encode_options opts = bert_encode_options_default();
    opts.max_length = m->max_input_tokens;
    opts.truncate = true;
    struct bert_encoding enc = {0};
    char *line = NULL;
    size_t line_cap = 0, cap = 0, batch_fill = 0, batch_cap = 16;
    ssize_t len;
    bool ok = (w->first = malloc(batch_cap * sizeof *w->first)) != NULL;
    if (ok)
        w->first[0] = 0;
    while (ok && (len = getline(&line, &line_cap, fp)) > 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        if (len == 0 ||
            bert_tokenizer_encode(m->tokenizer, line, (size_t)len, NULL, 0, &opts, &enc, NULL) !=
                BERT_OK)
            continue;
        if (batch_fill + enc.n > batch_tokens && batch_fill > 0) {
            if (w->n_batches + 2 > batch_cap) {
                batch_cap *= 2;
                size_t *f = realloc(w->first, batch_cap * sizeof *f);
                ok = f != NULL;
                if (ok)
                    w->first = f;
            }
            w->first[++w->n_batches] = w->n_seqs;
            batch_fill = 0;
        }
        ok = ok && workload_add(w, enc.ids, enc.n, &cap);
        batch_fill += enc.n;
    }
    if (ok && batch_fill > 0)
        w->first[++w->n_batches] = w->n_seqs;
    free(line);
    bert_encoding_free(&enc);
    fclose(fp);
    if (w->n_seqs == 0) {
        fprintf(stderr, "bert bench: %s: no text\n", path);
        return false;
    }
    return ok;
}

/* Forward FLOPs (a multiply-add is 2): per layer and token 8H^2 + 4HI for the
 * dense layers, and 4nH per token for a sequence of n for attention; DeBERTa
 * adds 2RH per token for each of its c2p / p2c terms, R the relative
 * indexes the sequence reaches (min(2n - 1, 2 buckets)). */
static double encoder_flops(const struct bert_config *c, const struct workload *w)
{
    double H = (double)c->hidden_size, FF = (double)c->intermediate_size, total = 0;
    const double span2 = 2.0 * (double)c->deberta.att_span;
    const double terms = c->family == BERT_FAMILY_DEBERTA_V2
                             ? (double)c->deberta.c2p + (double)c->deberta.p2c
                             : 0.0;
    for (size_t i = 0; i < w->n_seqs; i++) {
        double n = (double)w->len[i];
        const double reach = 2 * n - 1 < span2 ? 2 * n - 1 : span2;
        total += n * (8 * H * H + 4 * H * FF) + 4 * n * n * H + terms * 2 * n * reach * H;
    }
    return total * (double)c->num_layers;
}

static double clock_s(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define BENCH_TOP_K 5

/* The buffers a timed pass assembles its batches in, and the outputs. */
struct bench_run {
    const struct bert_model *m;
    struct bert_scratch *s;
    enum bert_task task;
    bool encode_only;
    bool profile; /* --profile: time op classes over the timed passes */
    bool onednn;  /* --dtype bf16-onednn */
    int32_t *ids, *types, *top_ids;
    uint32_t *mask_positions;
    size_t *starts;
    float *out, *top_probs;
    struct bert_seq_task *tasks;
};

/* Scratch and buffers sized for the workload's largest batch. */
static bool bench_alloc(struct bench_run *r, const struct workload *w, size_t threads,
                        struct bert_error *err)
{
    size_t max_batch_tok = 0, max_batch_seq = 0, max_len = 0;
    for (size_t b = 0; b < w->n_batches; b++) {
        size_t t = 0;
        for (size_t i = w->first[b]; i < w->first[b + 1]; i++) {
            t += w->len[i];
            max_len = w->len[i] > max_len ? w->len[i] : max_len;
        }
        max_batch_tok = t > max_batch_tok ? t : max_batch_tok;
        size_t nseq = w->first[b + 1] - w->first[b];
        max_batch_seq = nseq > max_batch_seq ? nseq : max_batch_seq;
    }
    const size_t E = r->m->embed_dims;
    r->s = bert_scratch_new(r->m, max_batch_tok, max_len, threads, err);
    r->ids = malloc(max_batch_tok * sizeof *r->ids);
    r->types = calloc(max_batch_tok, sizeof *r->types);
    r->starts = malloc((max_batch_seq + 1) * sizeof *r->starts);
    r->tasks = calloc(max_batch_seq, sizeof *r->tasks);
    r->out = malloc(max_batch_seq * (E + r->m->config.num_labels) * sizeof *r->out);
    r->mask_positions = malloc(max_batch_tok * sizeof *r->mask_positions);
    r->top_ids = malloc(max_batch_tok * BENCH_TOP_K * sizeof *r->top_ids);
    r->top_probs = malloc(max_batch_tok * BENCH_TOP_K * sizeof *r->top_probs);
    if (r->s != NULL && !(r->ids && r->types && r->starts && r->tasks && r->out &&
                          r->mask_positions && r->top_ids && r->top_probs))
        bert_error_set(err, BERT_E_NOMEM, "out of memory");
    return r->s && r->ids && r->types && r->starts && r->tasks && r->out && r->mask_positions &&
           r->top_ids && r->top_probs;
}

static void bench_free(struct bench_run *r)
{
    free(r->ids);
    free(r->types);
    free(r->starts);
    free(r->tasks);
    free(r->out);
    free(r->mask_positions);
    free(r->top_ids);
    free(r->top_probs);
    bert_scratch_free(r->s);
}

/* Batch `b` of the workload packed into the buffers, each sequence with its
 * task (fill-mask: at its mask tokens), then run. */
static enum bert_status run_batch(struct bench_run *r, const struct workload *w, size_t b,
                                  struct bert_error *err)
{
    const struct bert_model *m = r->m;
    const size_t E = m->embed_dims, C = m->config.num_labels;
    const int32_t mask_id = bert_tokenizer_mask_id(m->tokenizer);
    size_t n = 0, k = 0, masks = 0;
    r->starts[0] = 0;
    for (size_t i = w->first[b]; i < w->first[b + 1]; i++, k++) {
        memcpy(r->ids + n, w->ids[i], w->len[i] * sizeof *r->ids);
        uint32_t n_masks = 0;
        for (size_t t = 0; r->task == BERT_TASK_FILL_MASK && t < w->len[i]; t++)
            if (w->ids[i][t] == mask_id)
                r->mask_positions[masks + n_masks++] = (uint32_t)t;
        r->tasks[k] = (struct bert_seq_task){
            .task = r->task, .pooling = BERT_POOLING_MEAN, .embedding = r->out + k * E,
            .mask_positions = r->mask_positions + masks, .n_masks = n_masks,
            .top_k = BENCH_TOP_K, .top_ids = r->top_ids + masks * BENCH_TOP_K,
            .top_probs = r->top_probs + masks * BENCH_TOP_K, .logits = r->out + k * C};
        masks += n_masks;
        n += w->len[i];
        r->starts[k + 1] = n;
    }
    struct bert_batch batch = {.n_seqs = k, .n_tokens = n, .ids = r->ids, .type_ids = r->types,
                               .seq_start = r->starts};
    const float *hidden;
    return r->encode_only ? bert_encode(m, r->s, &batch, &hidden, err)
                          : bert_run(m, r->s, &batch, r->tasks, err);
}

/* --profile: the encoder's time per op class (bert_scratch_profile), per
 * timed pass over the workload, summed over the team's members, as a
 * "profile" member of the JSON line and a table on stderr. */
static void report_profile(const struct bench_run *r, const struct workload *w, size_t repeat)
{
    double sec[BERT_OP_CLASSES], total = 0.0;
    bert_scratch_profile_read(r->s, sec);
    for (size_t op = 0; op < BERT_OP_CLASSES; op++)
        total += sec[op];
    const double per_pass = 1e3 / (double)repeat, pct = total > 0.0 ? 100.0 / total : 0.0;
    printf(",\"profile\":{\"clock\":\"thread_cpu\",\"pass_cpu_ms\":%.4f", total * per_pass);
    fprintf(stderr, "%-26s %10s %7s\n", "op class (encoder, CPU)", "ms/pass", "%");
    for (size_t op = 0; op < BERT_OP_CLASSES; op++) {
        const char *name = bert_op_class_name((enum bert_op_class)op);
        printf(",\"%s\":{\"ms\":%.4f,\"pct\":%.2f}", name, sec[op] * per_pass, sec[op] * pct);
        fprintf(stderr, "%-26s %10.3f %7.2f\n", name, sec[op] * per_pass, sec[op] * pct);
    }
    const double gemm = sec[BERT_OP_DENSE] + sec[BERT_OP_ATTENTION];
    printf(",\"outside_dense_pct\":%.2f,\"outside_gemm_pct\":%.2f}",
           (total - sec[BERT_OP_DENSE]) * pct, (total - gemm) * pct);
    fprintf(stderr, "%-26s %10.3f %7.2f   (%zu tokens, %zu members)\n", "pass", total * per_pass,
            100.0, w->n_tokens, bert_scratch_threads(r->s));
    fprintf(stderr,
            "outside the dense layers %.2f%%, outside the GEMMs (dense, attention) %.2f%%\n",
            (total - sec[BERT_OP_DENSE]) * pct, (total - gemm) * pct);
}

/* The JSON line: medians of the whole workload's and of each batch's
 * times (sorted in place), and of the process CPU time per pass (on a
 * shared machine, what a pass cost regardless of waiting for a core). */
static void report(const char *name, const char *task_name, const struct bench_run *r,
                   const struct workload *w, double *times, size_t repeat, double *batch_times,
                   double *cpu_times)
{
    qsort(times, repeat, sizeof *times, cmp_double);
    qsort(cpu_times, repeat, sizeof *cpu_times, cmp_double);
    double median = times[repeat / 2];
    /* Each batch's median over the repeats (in place: slot b precedes every
     * later batch's times), then the median over batches: with one text per
     * batch, the p50 a one-at-a-time client would see. */
    for (size_t b = 0; b < w->n_batches; b++) {
        qsort(batch_times + b * repeat, repeat, sizeof *batch_times, cmp_double);
        batch_times[b] = batch_times[b * repeat + repeat / 2];
    }
    qsort(batch_times, w->n_batches, sizeof *batch_times, cmp_double);
    const double batch_p50 = batch_times[w->n_batches / 2];
    printf("{\"name\":\"%s\",\"engine\":\"bertserve\",\"task\":\"%s\",\"batches\":%zu,"
           "\"sequences\":%zu,\"tokens\":%zu,\"repeat\":%zu,\"median_ms\":%.4f,\"min_ms\":%.4f,"
           "\"max_ms\":%.4f,\"batch_p50_ms\":%.4f,\"tokens_per_s\":%.1f,\"gflops\":%.2f,\"threads\":%d,\"dtype\":\"%s\","
           "\"scratch_bytes\":%zu,\"median_cpu_ms\":%.4f",
           name, task_name, w->n_batches, w->n_seqs, w->n_tokens, repeat, median * 1e3,
           times[0] * 1e3, times[repeat - 1] * 1e3, batch_p50 * 1e3,
           (double)w->n_tokens / median,
           encoder_flops(&r->m->config, w) / median / 1e9, (int)bert_scratch_threads(r->s),
           r->m->int8   ? "int8"
           : r->m->bf16 ? (r->onednn ? "bf16-onednn" : "bf16")
                        : "f32",
           bert_scratch_bytes(r->s),
           cpu_times[repeat / 2] * 1e3);
    if (r->profile)
        report_profile(r, w, repeat);
    printf("}\n");
}

/* `warmup` untimed passes over the workload, then `repeat` timed ones. */
static enum bert_status time_passes(struct bench_run *r, const struct workload *w,
                                    size_t warmup, size_t repeat, double *times,
                                    double *batch_times, double *cpu_times,
                                    struct bert_error *err)
{
    for (size_t pass = 0; pass < warmup + repeat; pass++) {
        if (pass == warmup)
            bert_scratch_profile(r->s, r->profile);
        const double t0 = now_s(), cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        for (size_t b = 0; b < w->n_batches; b++) {
            const double batch_t0 = now_s();
            enum bert_status st = run_batch(r, w, b, err);
            if (st != BERT_OK)
                return st;
            if (pass >= warmup)
                batch_times[b * repeat + pass - warmup] = now_s() - batch_t0;
        }
        if (pass >= warmup) {
            times[pass - warmup] = now_s() - t0;
            cpu_times[pass - warmup] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
        }
    }
    return BERT_OK;
}

int cli_bench_command(int argc, char **argv)
{
    const char *model_dir = "models/default", *workload_path = NULL, *texts_path = NULL;
    const char *task_name = "embed", *name = "bench", *dtype = "f32";
    size_t repeat = 10, warmup = 2, batch_tokens = 4096, threads = 0;
    bool profile = false;
    struct cli_opt opts[] = {
        {"model", CLI_OPT_STRING, &model_dir, "checkpoint folder (models/default)"},
        {"workload", CLI_OPT_STRING, &workload_path, "JSON {\"batches\": [[[ids]]]}"},
        {"texts", CLI_OPT_STRING, &texts_path, "one text per line, packed like the server"},
        {"batch-tokens", CLI_OPT_SIZE, &batch_tokens, "packing budget for --texts (4096)"},
        {"task", CLI_OPT_STRING, &task_name, "embed | fill-mask | classify | encode (embed)"},
        {"repeat", CLI_OPT_SIZE, &repeat, "timed passes over the workload (10)"},
        {"warmup", CLI_OPT_SIZE, &warmup, "untimed passes first (2)"},
        {"threads", CLI_OPT_SIZE, &threads, "compute threads (available CPUs)"},
        {"dtype", CLI_OPT_STRING, &dtype,
         "f32, bf16 or int8 for the dense layers, or bf16-onednn: bf16 on oneDNN's kernels, "
         "as with AMX, where bertserve's own would run (f32)"},
        {"name", CLI_OPT_STRING, &name, "label for the output line"},
        {"profile", CLI_OPT_FLAG, &profile, "split the encoder's time by op class"},
    };
    const size_t n_opts = sizeof opts / sizeof opts[0];
    if (!cli_parse("bench", argc, argv, opts, n_opts))
        return CLI_EXIT_USAGE;
    if ((!workload_path == !texts_path) || repeat == 0) {
        fprintf(stderr, "usage: bert bench --model DIR (--workload FILE | --texts FILE) [options]\n");
        cli_print_options(opts, n_opts);
        return CLI_EXIT_USAGE;
    }
    struct bench_run r = {.task = BERT_TASK_EMBED, .encode_only = strcmp(task_name, "encode") == 0,
                         .profile = profile};
    if (strcmp(task_name, "fill-mask") == 0)
        r.task = BERT_TASK_FILL_MASK;
    else if (strcmp(task_name, "classify") == 0)
        r.task = BERT_TASK_CLASSIFY;
    else if (strcmp(task_name, "embed") != 0 && !r.encode_only) {
        fprintf(stderr, "bert bench: unknown --task '%s'\n", task_name);
        return CLI_EXIT_USAGE;
    }
    /* The engine's team splits the products; OpenBLAS runs inside it. */
    openblas_set_num_threads(1);

    struct bert_error err = {0};
    struct bert_model *m;
    if (bert_model_load(model_dir, &m, &err) != BERT_OK) {
        fprintf(stderr, "bert bench: %s\n", err.message);
        return CLI_EXIT_FAILURE;
    }
    r.m = m;
    struct workload w = {0};
    int rc = CLI_EXIT_FAILURE;
    /* bf16-onednn measures AMX's code path on a CPU without AMX. */
    r.onednn = strcmp(dtype, "bf16-onednn") == 0;
    if (r.onednn && !bert_bf16_use_onednn(true)) {
        fprintf(stderr, "bert bench: oneDNN has no bf16 kernels here\n");
        bert_model_free(m);
        return CLI_EXIT_FAILURE;
    }
    rc = cli_apply_dtype("bench", m, r.onednn ? "bf16" : dtype);
    if (rc != CLI_EXIT_OK) {
        bert_model_free(m);
        return rc;
    }
    rc = CLI_EXIT_FAILURE;
    double *times = malloc(repeat * sizeof *times), *batch_times = NULL;
    double *cpu_times = malloc(repeat * sizeof *cpu_times);
    if (!(workload_path ? load_workload(workload_path, &w)
                        : load_texts(texts_path, m, batch_tokens, &w)))
        goto done;
    /* (batch, repeat): each batch's own times, for the median batch's time */
    batch_times = malloc(w.n_batches * repeat * sizeof *batch_times);
    const bool buffers = times && batch_times && cpu_times;
    if (!bench_alloc(&r, &w, threads ? threads : cli_cpus(), &err) || !buffers ||
        time_passes(&r, &w, warmup, repeat, times, batch_times, cpu_times, &err) != BERT_OK) {
        fprintf(stderr, "bert bench: %s\n", buffers ? err.message : "out of memory");
        goto done;
    }
    report(name, task_name, &r, &w, times, repeat, batch_times, cpu_times);
    rc = CLI_EXIT_OK;
done:
    free(times);
    free(cpu_times);
    free(batch_times);
    bench_free(&r);
    workload_free(&w);
    bert_model_free(m);
    return rc;
}
