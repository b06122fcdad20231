/* Windows of an input encoded whole, as job sequences (extract_cut.h). */
#include "extract_cut.h"

#include <stdlib.h>
#include <string.h>

enum extract_cut_status extract_cut_plan(struct extract_cut *c, uint8_t part, size_t max_len,
                                         bool has_stride, size_t stride)
{
    const struct bert_encoding *e = &c->whole;
    size_t p0 = e->n, p1 = 0;
    for (size_t i = 0; i < e->n; i++)
        if (e->sequence[i] == part) {
            p0 = i < p0 ? i : p0;
            p1 = i + 1;
        }
    if (p0 > p1) /* an empty part: its windows are empty, before the last special */
        p0 = p1 = e->n ? e->n - 1 : 0;
    c->p0 = p0;
    c->n_part = p1 - p0;
    const size_t rest = e->n - c->n_part;
    if (e->n > max_len && rest >= max_len)
        return EXTRACT_CUT_NO_ROOM;
    c->budget = e->n <= max_len ? c->n_part : max_len - rest;
    c->n_windows = extract_window_count(c->n_part, c->budget, has_stride, stride);
    if (c->n_windows == 0)
        return EXTRACT_CUT_STRIDE;
    c->spans = calloc(c->n_windows, sizeof *c->spans);
    if (c->spans == NULL)
        return EXTRACT_CUT_NO_MEMORY;
    extract_windows(c->n_part, c->budget, has_stride, stride, c->spans);
    return EXTRACT_CUT_OK;
}

void extract_cut_free(struct extract_cut *c)
{
    bert_encoding_free(&c->whole);
    free(c->spans);
    memset(c, 0, sizeof *c);
}

static bool alloc_encoding(struct bert_encoding *e, size_t n)
{
    memset(e, 0, sizeof *e);
    size_t m = n ? n : 1;
    e->ids = malloc(m * sizeof *e->ids);
    e->type_ids = malloc(m * sizeof *e->type_ids);
    e->start = malloc(m * sizeof *e->start);
    e->stop = malloc(m * sizeof *e->stop);
    e->special = malloc(m);
    e->sequence = malloc(m);
    e->word = malloc(m * sizeof *e->word);
    e->n = e->cap = n;
    return e->ids && e->type_ids && e->start && e->stop && e->special && e->sequence && e->word;
}

/* Tokens [from, to) of `e` to the end of `out` (*at onwards). */
static void copy_tokens(const struct bert_encoding *e, size_t from, size_t to,
                        struct bert_encoding *out, size_t *at)
{
    for (size_t i = from; i < to; i++) {
        size_t k = (*at)++;
        out->ids[k] = e->ids[i];
        out->type_ids[k] = e->type_ids[i];
        out->start[k] = e->start[i];
        out->stop[k] = e->stop[i];
        out->special[k] = e->special[i];
        out->sequence[k] = e->sequence[i];
        out->word[k] = e->word[i];
    }
}

bool extract_cut_to_job(struct proto_job *job, const struct extract_cut *cuts, size_t n,
                        bool one_type, struct proto_error *err)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += cuts[i].n_windows;
    job->seqs = calloc(total ? total : 1, sizeof *job->seqs);
    job->seq_input = calloc(total ? total : 1, sizeof *job->seq_input);
    if (job->seqs == NULL || job->seq_input == NULL)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        const struct extract_cut *c = &cuts[i];
        const struct bert_encoding *e = &c->whole;
        const size_t rest = e->n - c->n_part, p1 = c->p0 + c->n_part;
        for (size_t w = 0; w < c->n_windows; w++) {
            const struct extract_span *sp = &c->spans[w];
            struct proto_seq *seq = &job->seqs[job->n_seqs];
            const size_t len = rest + (sp->end - sp->begin);
            /* Counted before the check, so proto_job_free frees a
             * half-made encoding too. */
            job->seq_input[job->n_seqs++] = i;
            if (!alloc_encoding(&seq->enc, len))
                goto oom;
            size_t at = 0;
            copy_tokens(e, 0, c->p0, &seq->enc, &at);
            copy_tokens(e, c->p0 + sp->begin, c->p0 + sp->end, &seq->enc, &at);
            copy_tokens(e, p1, e->n, &seq->enc, &at);
            if (one_type)
                memset(seq->enc.type_ids, 0, len * sizeof *seq->enc.type_ids);
            seq->enc.truncated = c->n_windows == 1 && sp->end - sp->begin < c->n_part;
            seq->enc.n_untruncated = e->n;
            job->n_tokens += len;
            job->n_truncated += seq->enc.truncated;
        }
    }
    return true;
oom:
    proto_error_set(err, PROTO_ERR_INTERNAL, "out of memory for %zu sequences", total);
    return false;
}

size_t extract_max_tokens(const struct bert_model *model, const struct proto_limits *limits)
{
    size_t max_len = model->max_input_tokens;
    if (limits->max_input_tokens && (max_len == 0 || limits->max_input_tokens < max_len))
        max_len = limits->max_input_tokens;
    return max_len;
}

void extract_char_offsets(const struct bert_encoding *e, uint8_t part,
                          const struct extract_text *t, uint32_t *start, uint32_t *end)
{
    for (size_t j = 0; j < e->n; j++) {
        bool ours = e->sequence[j] == part && !e->special[j];
        start[j] = ours ? extract_text_char(t, e->start[j]) : 0;
        end[j] = ours ? extract_text_char(t, e->stop[j]) : 0;
    }
}
