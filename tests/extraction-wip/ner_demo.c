/* Prototype: the whole token-classification chain in C on one text:
 * tokenizer (whole encoding, windows), engine (BERT_TASK_TOKENS),
 * post-processing (proto/extract_ner.c), printed as the pipeline's JSON.
 * usage: ner_demo MODEL_DIR STRATEGY TEXT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bert.h"
#include "extract.h"

static char *decode(const void *ctx, const char *const *tokens, size_t n)
{
    return bert_tokenizer_decode_tokens(ctx, tokens, n);
}

int main(int argc, char **argv)
{
    struct bert_model *m;
    struct bert_error err;
    if (argc != 4 || bert_model_load(argv[1], &m, &err) != BERT_OK)
        return 1;
    const char *text = argv[3];
    struct bert_encoding e = {0};
    struct bert_encode_options o = bert_encode_options_default();
    if (bert_tokenizer_encode(m->tokenizer, text, strlen(text), NULL, 0, &o, &e, &err) != BERT_OK)
        return 1;
    struct extract_text t;
    extract_text_init(&t, text, strlen(text));
    const size_t C = bert_token_head_width(m);
    float *logits = malloc(e.n * C * sizeof *logits);
    const char **toks = malloc(e.n * sizeof *toks);
    uint32_t *st = malloc(e.n * 4), *en = malloc(e.n * 4);
    for (size_t i = 0; i < e.n; i++) {
        toks[i] = bert_tokenizer_id_to_token(m->tokenizer, e.ids[i]);
        st[i] = e.special[i] ? 0 : extract_text_char(&t, e.start[i]);
        en[i] = e.special[i] ? 0 : extract_text_char(&t, e.stop[i]);
    }
    struct bert_scratch *s = bert_scratch_new(m, 512, 512, 1, &err);
    size_t starts[2] = {0, e.n};
    struct bert_batch b = {1, e.n, e.ids, e.type_ids, starts};
    struct bert_seq_task task = {.task = BERT_TASK_TOKENS, .token_logits = logits};
    if (bert_run(m, s, &b, &task, &err) != BERT_OK)
        return 1;
    struct ner_window w = {e.n, e.ids, toks, e.special, st, en, logits};
    struct ner_options no = {.n_labels = C, .id2label = (const char *const *)m->config.id2label,
                             .ignore = (const char *[]){"O"}, .n_ignore = 1,
                             .word_aware = bert_tokenizer_kind(m->tokenizer) == BERT_TOKENIZER_WORDPIECE,
                             .unk_id = bert_tokenizer_unk_id(m->tokenizer), .decode = decode,
                             .decode_ctx = m->tokenizer};
    ner_strategy_parse(argv[2], &no.strategy);
    struct ner_result r;
    ner_postprocess(&t, &w, 1, &no, &r);
    printf("[");
    for (size_t i = 0; i < r.n; i++) {
        const char *label = m->config.id2label[r.e[i].label];
        if (no.strategy == NER_STRATEGY_NONE)
            printf("%s{\"entity\": \"%s\", \"score\": %.4f, \"index\": %u, \"word\": \"%s\", "
                   "\"start\": %u, \"end\": %u}", i ? ", " : "", label, r.e[i].score,
                   r.e[i].index, r.e[i].word, r.e[i].start, r.e[i].end);
        else
            printf("%s{\"entity_group\": \"%s\", \"score\": %.4f, \"word\": \"%s\", \"start\": %u, "
                   "\"end\": %u}", i ? ", " : "", ner_group_name(label), r.e[i].score,
                   r.e[i].word, r.e[i].start, r.e[i].end);
    }
    printf("]\n");
    ner_result_free(&r);
    bert_scratch_free(s);
    bert_encoding_free(&e);
    extract_text_free(&t);
    free(logits);
    free(toks);
    free(st);
    free(en);
    bert_model_free(m);
    return 0;
}
