/* Prototype: the C tokenizer's whole encodings cut into windows
 * (extract_windows) against the goldens' windows: ids, character offsets,
 * word ids, sequence ids. usage: enc_check GOLDEN TESTS_DATA */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extract.h"
#include "tokenizer.h"

static int fails;

int main(int argc, char **argv)
{
    json_error_t je;
    json_t *g = json_load_file(argv[1], 0, &je);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/tokenizer.json", argv[2],
             json_string_value(json_object_get(g, "tokenizer")));
    struct bert_tokenizer *tok;
    struct bert_error err;
    if (bert_tokenizer_load_json(path, &tok, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    const char *task = json_string_value(json_object_get(g, "task"));
    size_t mml = (size_t)json_integer_value(json_object_get(g, "model_max_length"));
    bool qa = strcmp(task, "question-answering") == 0;
    if (strcmp(task, "zero-shot-classification") == 0)
        return 0;
    size_t ci, n_checked = 0;
    json_t *c;
    json_array_foreach(json_object_get(g, "cases"), ci, c)
    {
        json_t *in = json_object_get(c, "inputs"), *p = json_object_get(c, "parameters");
        const char *text = qa ? json_string_value(json_object_get(in, "question"))
                              : json_string_value(in);
        const char *pair = qa ? json_string_value(json_object_get(in, "context")) : NULL;
        struct bert_encoding e = {0};
        struct bert_encode_options o = bert_encode_options_default();
        if (bert_tokenizer_encode(tok, text, strlen(text), pair, pair ? strlen(pair) : 0, &o, &e,
                                  &err) != BERT_OK) {
            fprintf(stderr, "%s\n", err.message);
            return 1;
        }
        /* The part cut into windows: the text (NER) or the context (QA). */
        uint8_t part = qa ? 1 : 0;
        size_t p0 = e.n, p1 = 0;
        for (size_t i = 0; i < e.n; i++)
            if (e.sequence[i] == part) {
                p0 = i < p0 ? i : p0;
                p1 = i + 1;
            }
        if (p0 > p1)
            p0 = p1 = e.n - 1; /* empty text: [CLS] [SEP] */
        size_t max_len = mml, stride = 0;
        bool has_stride = false;
        json_t *v;
        if (qa) {
            max_len = (v = json_object_get(p, "max_seq_len")) ? (size_t)json_integer_value(v)
                                                              : (mml < 384 ? mml : 384);
            stride = (v = json_object_get(p, "doc_stride")) ? (size_t)json_integer_value(v)
                                                           : (max_len / 2 < 128 ? max_len / 2 : 128);
            has_stride = true;
        } else if ((v = json_object_get(p, "stride"))) {
            stride = (size_t)json_integer_value(v);
            has_stride = true;
        }
        size_t budget = e.n <= max_len ? p1 - p0 : max_len - (e.n - (p1 - p0));
        size_t nw = extract_window_count(p1 - p0, budget, has_stride, stride);
        struct extract_span *sp = malloc((nw + 1) * sizeof *sp);
        extract_windows(p1 - p0, budget, has_stride, stride, sp);
        json_t *wins = json_object_get(c, "windows");
        if (nw != json_array_size(wins)) {
            fprintf(stderr, "%s case %zu: %zu windows, want %zu\n", argv[1], ci, nw,
                    json_array_size(wins));
            fails++;
        }
        struct extract_text tt, tp;
        extract_text_init(&tt, text, strlen(text));
        extract_text_init(&tp, pair ? pair : "", pair ? strlen(pair) : 0);
        for (size_t w = 0; w < nw && w < json_array_size(wins); w++) {
            json_t *win = json_array_get(wins, w), *ids = json_object_get(win, "ids");
            size_t k = 0;
            for (size_t i = 0; i < e.n; i++) {
                if (i >= p0 && i < p1 && (i - p0 < sp[w].begin || i - p0 >= sp[w].end))
                    continue;
                const struct extract_text *src = e.sequence[i] == 1 ? &tp : &tt;
                uint32_t a = e.special[i] ? 0 : extract_text_char(src, e.start[i]);
                uint32_t b = e.special[i] ? 0 : extract_text_char(src, e.stop[i]);
                json_t *off = json_array_get(json_object_get(win, "offsets"), k);
                bool bad = e.ids[i] != json_integer_value(json_array_get(ids, k)) ||
                           a != json_integer_value(json_array_get(off, 0)) ||
                           b != json_integer_value(json_array_get(off, 1));
                if (qa) {
                    json_t *wd = json_array_get(json_object_get(win, "word_ids"), k);
                    uint32_t want = json_is_null(wd) ? UINT32_MAX : (uint32_t)json_integer_value(wd);
                    bad |= e.word[i] != want;
                }
                if (bad && fails++ < 10)
                    fprintf(stderr, "%s case %zu window %zu token %zu: id %d [%u, %u) word %u\n",
                            argv[1], ci, w, k, e.ids[i], a, b, e.word[i]);
                k++;
            }
            if (k != json_array_size(ids) && fails++ < 10)
                fprintf(stderr, "%s case %zu window %zu: %zu tokens, want %zu\n", argv[1], ci, w,
                        k, json_array_size(ids));
            n_checked++;
        }
        extract_text_free(&tt);
        extract_text_free(&tp);
        free(sp);
        bert_encoding_free(&e);
    }
    printf("%s: %zu windows checked, %d failures\n", json_string_value(json_object_get(g, "name")),
           n_checked, fails);
    bert_tokenizer_free(tok);
    json_decref(g);
    return fails != 0;
}
