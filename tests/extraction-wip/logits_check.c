/* Prototype: engine logits for the extraction goldens' windows vs the
 * float64 reference. usage: logits_check GOLDEN CHECKPOINT_DIR */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bert.h"

int main(int argc, char **argv)
{
    json_error_t je;
    json_t *g = json_load_file(argv[1], 0, &je);
    struct bert_model *m;
    struct bert_error err;
    if (bert_model_load(argv[2], &m, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    const char *task = json_string_value(json_object_get(g, "task"));
    bool nli = strcmp(task, "zero-shot-classification") == 0;
    size_t width = nli ? m->config.num_labels : bert_token_head_width(m);
    struct bert_scratch *s = bert_scratch_new(m, 4096, 512, 1, &err);
    double worst = 0;
    size_t n_win = 0;
    size_t ci;
    json_t *c;
    json_array_foreach(json_object_get(g, "cases"), ci, c)
    {
        size_t wi;
        json_t *w;
        json_array_foreach(json_object_get(c, "windows"), wi, w)
        {
            json_t *ids = json_object_get(w, "ids"), *types = json_object_get(w, "type_ids");
            size_t n = json_array_size(ids);
            int32_t *id = malloc(n * 4), *ty = malloc(n * 4);
            for (size_t k = 0; k < n; k++) {
                id[k] = (int32_t)json_integer_value(json_array_get(ids, k));
                ty[k] = (int32_t)json_integer_value(json_array_get(types, k));
            }
            size_t starts[2] = {0, n};
            struct bert_batch b = {1, n, id, ty, starts};
            float *out = malloc((n * width + 1) * sizeof *out);
            struct bert_seq_task t = {.task = nli ? BERT_TASK_CLASSIFY : BERT_TASK_TOKENS};
            if (nli)
                t.logits = out;
            else
                t.token_logits = out;
            if (bert_run(m, s, &b, &t, &err) != BERT_OK) {
                fprintf(stderr, "%s\n", err.message);
                return 1;
            }
            json_t *want = json_array_get(json_object_get(c, "logits"), wi);
            size_t rows = nli ? 1 : n;
            for (size_t r = 0; r < rows; r++)
                for (size_t k = 0; k < width; k++) {
                    double d = fabs(out[r * width + k] -
                                    json_number_value(json_array_get(json_array_get(want, r), k)));
                    worst = d > worst ? d : worst;
                }
            n_win++;
            free(id);
            free(ty);
            free(out);
        }
    }
    printf("%s: %zu windows, worst logit difference %.3g\n", json_string_value(json_object_get(g, "name")),
           n_win, worst);
    bert_scratch_free(s);
    bert_model_free(m);
    json_decref(g);
    return worst > 1e-4;
}
