/* The fine-tuning heads' data and metrics (train/data.c):
 *  - multi-label and regression rows load into the right targets (label
 *    sets with spaces around names, the empty set, CRLF line ends, pairs and
 *    single texts), and malformed label fields fail naming file and line;
 *  - micro/macro F1 and exact match, Pearson, Spearman (with ties) and MSE
 *    against tests/golden/metrics_reference.py (numpy, float64) within 1e-9.
 * argv[1]: tokenizer folder, argv[2]: work folder, argv[3]: train-metrics.json. */
#include <jansson.h>
#include <stdint.h>
#include <sys/stat.h>

#include "check.h"
#include "train_data.h"

static char *const NAMES[] = {"alpha", "beta", "gamma"};

static enum bert_status load(const struct bert_tokenizer *tok, const char *work, const char *text,
                             enum bert_problem_type problem, struct train_labeled *d,
                             struct bert_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/rows.tsv", work);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return bert_error_set(err, BERT_E_IO, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
    const struct train_label_spec spec = {problem, problem == BERT_PROBLEM_REGRESSION ? 1 : 3,
                                          NAMES};
    return train_labeled_load_spec(d, tok, path, 32, &spec, err);
}

static void check_rows(const struct bert_tokenizer *tok, const char *work)
{
    struct train_labeled d;
    struct bert_error err;
    CHECK(load(tok, work, "text\tlabels\r\na b\tgamma , alpha\r\nc d\t\r\ne\tbeta\r\n",
               BERT_PROBLEM_MULTI_LABEL, &d, &err) == BERT_OK);
    CHECK_INT_EQ(d.n, 3);
    CHECK_INT_EQ(d.width, 3);
    const float want[9] = {1, 0, 1, 0, 0, 0, 0, 1, 0};
    for (size_t k = 0; k < 9 && d.n == 3; k++)
        CHECK(d.targets[k] == want[k]);
    train_labeled_free(&d);

    CHECK(load(tok, work, "a\tb\tscore\nx y\tz\t4.25\nw\t-1e-1\n", BERT_PROBLEM_REGRESSION, &d,
               &err) == BERT_OK);
    CHECK_INT_EQ(d.n, 2);
    CHECK_INT_EQ(d.width, 1);
    CHECK(d.n == 2 && d.targets[0] == 4.25f && d.targets[1] == -0.1f);
    CHECK(d.n == 2 && d.types[d.start[1] - 1] == 1 && d.types[d.start[2] - 1] == 0);
    train_labeled_free(&d);

    static const struct {
        const char *text;
        enum bert_problem_type problem;
    } bad[] = {
        {"h\tl\nok\talpha\nno\tdelta\n", BERT_PROBLEM_MULTI_LABEL},   /* unknown name */
        {"h\tl\nok\talpha\nno\talpha,,beta\n", BERT_PROBLEM_MULTI_LABEL}, /* empty name */
        {"h\tl\nok\t1\nno\t2.5x\n", BERT_PROBLEM_REGRESSION},
        {"h\tl\nok\t1\nno\tnan\n", BERT_PROBLEM_REGRESSION},
        {"h\tl\nok\t1\nno\t\n", BERT_PROBLEM_REGRESSION},
        {"h\tl\nok\t1\nno\t1.0\n", BERT_PROBLEM_SINGLE_LABEL},
        {"h\tl\nok\t1\nno label\n", BERT_PROBLEM_SINGLE_LABEL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(load(tok, work, bad[i].text, bad[i].problem, &d, &err) == BERT_E_FORMAT);
        CHECK(strstr(err.message, "rows.tsv:3:") != NULL);
        CHECK(d.n == 0 && d.targets == NULL);
    }
}

static double want(json_t *c, const char *key)
{
    return json_number_value(json_object_get(json_object_get(c, "want"), key));
}

static float *floats(json_t *array)
{
    float *v = malloc((json_array_size(array) + 1) * sizeof *v);
    for (size_t i = 0; v != NULL && i < json_array_size(array); i++)
        v[i] = (float)json_number_value(json_array_get(array, i));
    return v;
}

static void check_metrics(const char *path)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    CHECK(root != NULL);
    json_t *cases = json_object_get(root, "cases"), *c;
    size_t i;
    json_array_foreach(cases, i, c) {
        const char *kind = json_string_value(json_object_get(c, "kind"));
        if (strcmp(kind, "multi") == 0) {
            const size_t C = (size_t)json_integer_value(json_object_get(c, "labels"));
            float *logits = floats(json_object_get(c, "logits"));
            float *targets = floats(json_object_get(c, "targets"));
            const size_t n = json_array_size(json_object_get(c, "targets")) / C;
            struct train_multi_scores s = train_score_multi(logits, targets, n, C);
            printf("multi-label: micro-F1 %.6f macro-F1 %.6f exact %.6f\n", s.micro_f1,
                   s.macro_f1, s.exact_match);
            CHECK_NEAR(s.micro_f1, want(c, "micro_f1"), 1e-9);
            CHECK_NEAR(s.macro_f1, want(c, "macro_f1"), 1e-9);
            CHECK_NEAR(s.exact_match, want(c, "exact_match"), 1e-9);
            free(logits);
            free(targets);
        } else {
            float *pred = floats(json_object_get(c, "pred"));
            float *gold = floats(json_object_get(c, "gold"));
            struct train_regression_scores s =
                train_score_regression(pred, gold, json_array_size(json_object_get(c, "gold")));
            printf("regression: Pearson %.6f Spearman %.6f MSE %.6f\n", s.pearson, s.spearman,
                   s.mse);
            CHECK_NEAR(s.pearson, want(c, "pearson"), 1e-9);
            CHECK_NEAR(s.spearman, want(c, "spearman"), 1e-9);
            CHECK_NEAR(s.mse, want(c, "mse"), 1e-9);
            free(pred);
            free(gold);
        }
    }
    CHECK_INT_EQ(json_array_size(cases), 3);
    json_decref(root);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s TOKENIZER_DIR WORK_DIR METRICS_JSON\n", argv[0]);
        return 2;
    }
    struct bert_tokenizer *tok;
    struct bert_error err;
    mkdir(argv[2], 0755);
    if (bert_tokenizer_load(argv[1], &tok, &err) != BERT_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    check_rows(tok, argv[2]);
    check_metrics(argv[3]);
    bert_tokenizer_free(tok);
    return check_exit();
}
