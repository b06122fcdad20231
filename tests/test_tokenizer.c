/* Tokenizer tests.
 *
 * Parity: every line of tests/data/tokenizer/<name>.jsonl (made by the
 * reference, Hugging Face `tokenizers`, see tests/tokenizer/README.md) must
 * give identical ids, type ids, byte offsets, special masks and sequence
 * ids, and the listed decodes. Then llama.cpp's bge and roberta vectors, and unit tests
 * for encoding errors, decode, truncation, roles and hostile input (loading
 * errors: test_tokenizer_load.c).
 *
 *   test_tokenizer                 all tests
 *   test_tokenizer --bench FILE [TOKENIZER]
 *                                  tokens/s over the first column of a TSV
 *                                  (TOKENIZER: a folder or a tokenizer.json,
 *                                  default the MiniLM folder) */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "test_tokenizer_util.h"
#include "tokenizer.h"

#define DATA "tests/data/tokenizer/"
/* Real checkpoints' tokenizer files, read in place beside the repository. */
#define SHARED "../shared/data/"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- parity ------------------------------------------------------------ */

struct suite {
    const char *name;
    const char *load_kind; /* "dir", "json" or "vocab" (lowercase) */
    const char *path;
    const char *expected;
    bool rust_decode; /* compare decodes with `tokenizers` (no transformers cleanup) */
    bool no_file_trunc; /* the file sets no truncation: skip the lines cut by the file's */
};

static const struct suite suites[] = {
    {"minilm (folder)", "dir", DATA "minilm", DATA "minilm.jsonl", false, false},
    {"minilm (tokenizer.json)", "json", DATA "minilm/tokenizer.json", DATA "minilm.jsonl", true,
     false},
    {"bert-base-uncased (vocab.txt folder)", "dir", DATA "bert-base-uncased",
     DATA "bert-base-uncased.jsonl", false, false},
    {"bert-base-uncased (vocab.txt, lowercase)", "vocab", DATA "bert-base-uncased/vocab.txt",
     DATA "bert-base-uncased.jsonl", false, false},
    {"bert-base-cased (vocab.txt folder)", "dir", DATA "bert-base-cased",
     DATA "bert-base-cased.jsonl", false, false},
    {"bert-base-chinese (vocab.txt folder)", "dir", DATA "bert-base-chinese",
     DATA "bert-base-chinese.jsonl", false, false},
    {"bert-base-chinese (tokenizer.json folder)", "dir", DATA "bert-base-chinese-json",
     DATA "bert-base-chinese-json.jsonl", false, false},
    {"custom (tokenizer.json)", "json", DATA "custom/tokenizer.json", DATA "custom.jsonl", true,
     false},
    {"roberta-base (vocab.json + merges.txt folder)", "dir", DATA "roberta-base",
     DATA "roberta-base.jsonl", false, false},
    {"modernbert-style (tokenizer.json)", "json", DATA "modernbert/tokenizer.json",
     DATA "modernbert.jsonl", true, false},
    {"xlmr-style (tokenizer.json)", "json", DATA "xlmr/tokenizer.json", DATA "xlmr.jsonl", true,
     false},
    {"unigram-options (tokenizer.json)", "json", DATA "unigram-options/tokenizer.json",
     DATA "unigram-options.jsonl", true, false},
    {"deberta-v3-style (tokenizer.json)", "json", DATA "deberta/tokenizer.json",
     DATA "deberta.jsonl", true, false},
    {"all-mpnet-base-v2 (real folder)", "dir", SHARED "all-mpnet-base-v2", DATA "mpnet.jsonl",
     false, false},
    {"all-mpnet-base-v2 (real tokenizer.json)", "json", SHARED "all-mpnet-base-v2/tokenizer.json",
     DATA "mpnet.jsonl", true, false},
    /* nomic-embed-text-v1.5's and jina-embeddings-v2-base-en's tokenizer.json
     * run MiniLM's (bert-base-uncased) pipeline without truncation or
     * padding: the same lines (tests/tokenizer/gen checks that the reference
     * agrees), less the 80 that the MiniLM file's own truncation cuts. */
    {"nomic-embed-text-v1.5 (real folder)", "dir", SHARED "nomic-embed-text-v1.5",
     DATA "minilm.jsonl", false, true},
    {"nomic-embed-text-v1.5 (real tokenizer.json)", "json",
     SHARED "nomic-embed-text-v1.5/tokenizer.json", DATA "minilm.jsonl", true, true},
    {"jina-embeddings-v2-base-en (real folder)", "dir", SHARED "jina-embeddings-v2-base-en",
     DATA "minilm.jsonl", false, true},
    {"jina-embeddings-v2-base-en (real tokenizer.json)", "json",
     SHARED "jina-embeddings-v2-base-en/tokenizer.json", DATA "minilm.jsonl", true, true},
};

/* Print s (at most 120 bytes) with control characters escaped. */
static void print_escaped(const char *s, size_t len)
{
    for (size_t i = 0; i < len && i < 120; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7F)
            fprintf(stderr, "\\x%02X", c);
        else
            fputc(c, stderr);
    }
    if (len > 120)
        fprintf(stderr, "... (%zu bytes)", len);
}

struct expected {
    const char *text, *pair;
    size_t text_len, pair_len;
    json_t *ids, *offsets;
    const char *types, *special, *seq;
};

/* Compare one encoding with the expectation; on mismatch describe it. */
static bool same_encoding(const struct bert_encoding *enc, const struct expected *e, char *why,
                          size_t why_len)
{
    size_t n = json_array_size(e->ids);
    if (enc->n != n || strlen(e->types) != n || strlen(e->special) != n || strlen(e->seq) != n ||
        json_array_size(e->offsets) != 2 * n) {
        snprintf(why, why_len, "%zu tokens, expected %zu", enc->n, n);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        long long id = json_integer_value(json_array_get(e->ids, i));
        long long start = json_integer_value(json_array_get(e->offsets, 2 * i));
        long long stop = json_integer_value(json_array_get(e->offsets, 2 * i + 1));
        int type = e->types[i] - '0', special = e->special[i] - '0';
        int seq = e->seq[i] == 'x' ? 255 : e->seq[i] - '0';
        if (enc->ids[i] != id || enc->type_ids[i] != type || enc->start[i] != start ||
            enc->stop[i] != stop || enc->special[i] != special || enc->sequence[i] != seq) {
            snprintf(why, why_len,
                     "token %zu: got id %d type %d [%u,%u) special %d seq %d, expected id %lld "
                     "type %d [%lld,%lld) special %d seq %d",
                     i, enc->ids[i], enc->type_ids[i], enc->start[i], enc->stop[i],
                     enc->special[i], enc->sequence[i], id, type, start, stop, special, seq);
            return false;
        }
    }
    return true;
}

static bool same_decode(const struct bert_tokenizer *tok, const struct bert_encoding *enc,
                        const json_t *want, bool skip, char *why, size_t why_len)
{
    if (want == NULL)
        return true;
    char *got = bert_tokenizer_decode(tok, enc->ids, enc->n, skip);
    bool same = got && strcmp(got, json_string_value(want)) == 0;
    if (!same)
        snprintf(why, why_len, "decode(skip_special=%d) gave \"%.200s\", expected \"%.200s\"",
                 skip, got ? got : "(null)", json_string_value(want));
    free(got);
    return same;
}

static void run_suite(const struct suite *s, double *sst_tokens, double *sst_seconds)
{
    struct bert_tokenizer *tok = tok_load_or_die(s->load_kind, s->path);
    FILE *f = fopen(s->expected, "r");
    CHECK(f != NULL);
    if (f == NULL) {
        bert_tokenizer_free(tok);
        return;
    }
    struct bert_encoding enc = {0};
    char *line = NULL;
    size_t cap = 0;
    size_t lines = 0, identical = 0, decodes = 0, decodes_same = 0, shown = 0, departures = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        json_error_t je;
        json_t *j = json_loadb(line, (size_t)len, JSON_ALLOW_NUL, &je);
        if (j == NULL) {
            fprintf(stderr, "%s:%zu: %s\n", s->expected, lines + 1, je.text);
            CHECK(!"unreadable expected line");
            break;
        }
        if (s->no_file_trunc && json_is_true(json_object_get(j, "file_trunc"))) {
            json_decref(j);
            continue;
        }
        lines++;
        struct expected e = {0};
        json_t *text = json_object_get(j, "text"), *pair = json_object_get(j, "pair");
        e.text = json_string_value(text);
        e.text_len = json_string_length(text);
        e.pair = pair ? json_string_value(pair) : NULL;
        e.pair_len = pair ? json_string_length(pair) : 0;
        e.ids = json_object_get(j, "ids");
        e.offsets = json_object_get(j, "offsets");
        e.types = json_string_value(json_object_get(j, "types"));
        e.special = json_string_value(json_object_get(j, "special"));
        e.seq = json_string_value(json_object_get(j, "seq"));
        departures += json_object_get(j, "tjs_ids") != NULL;

        struct bert_encode_options o = bert_encode_options_default();
        o.add_special_tokens = !json_is_true(json_object_get(j, "nospecial"));
        if (json_object_get(j, "ml")) {
            o.max_length = (size_t)json_integer_value(json_object_get(j, "ml"));
            o.truncate = true;
        }
        if (json_is_true(json_object_get(j, "file_trunc"))) {
            o.max_length = bert_tokenizer_json_max_length(tok);
            o.truncate = true;
        }
        const char *side = json_string_value(json_object_get(j, "side"));
        o.side = side && strcmp(side, "left") == 0 ? BERT_TRUNCATE_LEFT : BERT_TRUNCATE_RIGHT;

        struct bert_error err = {0};
        char why[640] = "";
        bool sst = strcmp(json_string_value(json_object_get(j, "src")), "sst2") == 0;
        double t0 = sst ? now_seconds() : 0;
        enum bert_status st =
            bert_tokenizer_encode(tok, e.text, e.text_len, e.pair, e.pair_len, &o, &enc, &err);
        if (sst) {
            *sst_seconds += now_seconds() - t0;
            *sst_tokens += (double)enc.n;
        }
        bool ok = st == BERT_OK;
        if (!ok)
            snprintf(why, sizeof why, "encode failed: %s", err.message);
        ok = ok && same_encoding(&enc, &e, why, sizeof why);
        const json_t *untrunc = json_object_get(j, "untrunc");
        if (ok && untrunc &&
            (enc.n_untruncated != (size_t)json_integer_value(untrunc) ||
             enc.truncated != (enc.n_untruncated > enc.n))) {
            snprintf(why, sizeof why, "n_untruncated %zu truncated %d, expected %lld",
                     enc.n_untruncated, enc.truncated, json_integer_value(untrunc));
            ok = false;
        }
        if (ok && !untrunc && (enc.truncated || enc.n_untruncated != enc.n)) {
            snprintf(why, sizeof why, "reported truncation on a line without a limit");
            ok = false;
        }
        const char *dkey = s->rust_decode ? "dec_rust" : "dec";
        const char *dskip = s->rust_decode ? "dec_rust_skip" : "dec_skip";
        if (ok && json_object_get(j, dkey)) {
            decodes++;
            ok = same_decode(tok, &enc, json_object_get(j, dkey), false, why, sizeof why) &&
                 same_decode(tok, &enc, json_object_get(j, dskip), true, why, sizeof why);
            decodes_same += ok;
        }
        identical += ok;
        if (!ok && shown++ < 5) {
            fprintf(stderr, "%s: line %zu: ", s->expected, lines);
            print_escaped(e.text, e.text_len);
            if (e.pair) {
                fprintf(stderr, " | pair: ");
                print_escaped(e.pair, e.pair_len);
            }
            fprintf(stderr, "\n    %s\n", why);
        }
        json_decref(j);
    }
    free(line);
    fclose(f);
    fprintf(stderr,
            "%-45s %zu/%zu lines identical (ids, type ids, offsets, masks); %zu/%zu decodes; "
            "%zu lines where transformers.js departs; SST-2 lines at %.0f tokens/s\n",
            s->name, identical, lines, decodes_same, decodes, departures,
            *sst_seconds > 0 ? *sst_tokens / *sst_seconds : 0.0);
    CHECK(lines >= 900);
    CHECK_INT_EQ(identical, lines);
    bert_encoding_free(&enc);
    bert_tokenizer_free(tok);
}

/* llama.cpp's tokenizer vectors (ids without specials, made by Hugging
 * Face): bge-small (bert-base-uncased vocabulary) and stsb-roberta-base
 * (roberta-base's byte-level BPE). */
static void test_llama_vectors(const char *name, const char *dir, const char *stem)
{
    struct bert_tokenizer *tok = tok_load_or_die("dir", dir);
    char inp_path[256], out_path[256];
    snprintf(inp_path, sizeof inp_path, DATA "%s.inp", stem);
    snprintf(out_path, sizeof out_path, DATA "%s.out", stem);
    FILE *fi = fopen(inp_path, "r");
    FILE *fo = fopen(out_path, "r");
    CHECK(fi && fo);
    if (!fi || !fo) {
        if (fi)
            fclose(fi);
        if (fo)
            fclose(fo);
        bert_tokenizer_free(tok);
        return;
    }
    static char inp[8192];
    size_t n = fread(inp, 1, sizeof inp - 1, fi);
    inp[n] = '\0';
    fclose(fi);
    const char *sep = "\n__ggml_vocab_test__\n";
    struct bert_encode_options o = bert_encode_options_default();
    o.add_special_tokens = false;
    struct bert_encoding enc = {0};
    char out_line[4096];
    int total = 0, same = 0;
    for (char *p = inp; *p || total == 0;) {
        char *end = strstr(p, sep);
        if (end == NULL || fgets(out_line, sizeof out_line, fo) == NULL)
            break;
        struct bert_error err;
        CHECK_INT_EQ(bert_tokenizer_encode(tok, p, (size_t)(end - p), NULL, 0, &o, &enc, &err),
                     BERT_OK);
        char got[4096] = "";
        size_t used = 0;
        for (size_t i = 0; i < enc.n && used < sizeof got - 16; i++)
            used += (size_t)snprintf(got + used, sizeof got - used, "%s%d", i ? " " : "", enc.ids[i]);
        out_line[strcspn(out_line, "\n")] = '\0';
        /* The .out lines start with a space. */
        const char *want = out_line + strspn(out_line, " ");
        total++;
        if (strcmp(got, want) == 0)
            same++;
        else
            fprintf(stderr, "%s vector %d: got \"%s\", expected \"%s\"\n", name, total, got, want);
        p = end + strlen(sep);
    }
    fclose(fo);
    fprintf(stderr, "llama.cpp %-35s %d/%d vectors identical\n", name, same, total);
    CHECK_INT_EQ(total, 46);
    CHECK_INT_EQ(same, total);
    bert_encoding_free(&enc);
    bert_tokenizer_free(tok);
}

/* ---- unit tests ---------------------------------------------------------- */

static void test_invalid_utf8(const struct bert_tokenizer *tok)
{
    static const struct {
        const char *bytes;
        size_t offset;
    } cases[] = {
        {"\xC3", 0},             /* truncated 2-byte sequence */
        {"ab\x80", 2},           /* lone continuation byte */
        {"\xC0\xAF", 0},         /* overlong '/' */
        {"\xE0\x80\xAF", 0},     /* overlong, 3 bytes */
        {"abc\xED\xA0\x80", 3},  /* UTF-16 surrogate encoded in UTF-8 */
        {"\xF4\x90\x80\x80", 0}, /* above U+10FFFF */
        {"ok \xFF", 3},          /* never valid */
        {"\xF0\x9F\x98", 0},     /* truncated emoji */
        {"caf\xC3\xA9 \xE2\x82", 6},
    };
    struct bert_encoding enc = {0};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct bert_error err = {0};
        CHECK_INT_EQ(tok_encode_str(tok, cases[i].bytes, NULL, NULL, &enc, &err), BERT_E_INVALID);
        char want[64];
        snprintf(want, sizeof want, "byte offset %zu", cases[i].offset);
        CHECK_CONTAINS(err.message, want);
        CHECK_CONTAINS(err.message, "text is not valid UTF-8");
        CHECK_INT_EQ(tok_encode_str(tok, "fine", cases[i].bytes, NULL, &enc, &err), BERT_E_INVALID);
        CHECK_CONTAINS(err.message, "pair is not valid UTF-8");
    }
    /* Embedded NUL is valid UTF-8 (and removed by BERT's clean_text). */
    struct bert_error err;
    CHECK_INT_EQ(bert_tokenizer_encode(tok, "a\0b", 3, NULL, 0, NULL, &enc, &err), BERT_OK);
    if (bert_tokenizer_kind(tok) == BERT_TOKENIZER_WORDPIECE) {
        CHECK_INT_EQ(enc.n, 3); /* [CLS] ab [SEP] */
        CHECK_INT_EQ(enc.stop[1], 3);
    }
    CHECK_INT_EQ(bert_tokenizer_encode(tok, NULL, 5, NULL, 0, NULL, &enc, &err), BERT_E_INVALID);
    CHECK_INT_EQ(bert_tokenizer_encode(tok, NULL, 0, NULL, 0, NULL, &enc, &err), BERT_OK);
    CHECK_INT_EQ(enc.n, 2);
    bert_encoding_free(&enc);
}

static void test_truncation(const struct bert_tokenizer *tok)
{
    /* 698 words + [CLS] + [SEP] = 700 tokens. */
    size_t words = 698;
    char *text = malloc(words * 2 + 1);
    for (size_t i = 0; i < words; i++)
        memcpy(text + 2 * i, "a ", 2);
    text[words * 2] = '\0';
    struct bert_encode_options o = bert_encode_options_default();
    o.max_length = 512;
    struct bert_encoding enc = {0};
    struct bert_error err = {0};
    CHECK_INT_EQ(tok_encode_str(tok, text, NULL, &o, &enc, &err), BERT_E_TOO_LONG);
    CHECK_STR_EQ(err.message, "input is 700 tokens long, more than the limit of 512 (set truncate "
                              "to true to cut it)");
    CHECK_INT_EQ(enc.n, 0);
    CHECK_INT_EQ(enc.n_untruncated, 700);
    o.truncate = true;
    CHECK_INT_EQ(tok_encode_str(tok, text, NULL, &o, &enc, &err), BERT_OK);
    CHECK_INT_EQ(enc.n, 512);
    CHECK(enc.truncated);
    CHECK_INT_EQ(enc.n_untruncated, 700);
    CHECK_INT_EQ(enc.ids[0], bert_tokenizer_cls_id(tok));
    CHECK_INT_EQ(enc.ids[511], bert_tokenizer_sep_id(tok));
    CHECK_INT_EQ(enc.start[1], 0); /* right truncation keeps the head */
    o.side = BERT_TRUNCATE_LEFT;
    CHECK_INT_EQ(tok_encode_str(tok, text, NULL, &o, &enc, &err), BERT_OK);
    CHECK_INT_EQ(enc.start[510], 2 * (words - 1)); /* ... left keeps the tail */
    /* Exactly at the limit is not truncated. */
    o.max_length = 700;
    CHECK_INT_EQ(tok_encode_str(tok, text, NULL, &o, &enc, &err), BERT_OK);
    CHECK(!enc.truncated);
    CHECK_INT_EQ(enc.n, 700);
    /* A limit below the template's own specials cannot be met. */
    o.max_length = 2;
    CHECK_INT_EQ(tok_encode_str(tok, "one two", "three", &o, &enc, &err), BERT_E_INVALID);
    CHECK_CONTAINS(err.message, "3 special tokens");
    /* Pairs: longest first, as in `tokenizers` (9 + 3 tokens into 8 - 3 = 5:
     * the shorter gets 2, the longer 3). */
    o.max_length = 8;
    o.side = BERT_TRUNCATE_RIGHT;
    CHECK_INT_EQ(tok_encode_str(tok, "a b c d e f g h i", "x y z", &o, &enc, &err), BERT_OK);
    CHECK_INT_EQ(enc.n, 8);
    size_t n_a = 0, n_b = 0;
    for (size_t i = 0; i < enc.n; i++) {
        n_a += enc.sequence[i] == 0;
        n_b += enc.sequence[i] == 1;
    }
    CHECK_INT_EQ(n_a, 3);
    CHECK_INT_EQ(n_b, 2);
    free(text);
    bert_encoding_free(&enc);
}

static void test_roles(void)
{
    struct bert_tokenizer *tok = tok_load_or_die("dir", DATA "minilm");
    CHECK_INT_EQ(bert_tokenizer_vocab_size(tok), 30522);
    CHECK_INT_EQ(bert_tokenizer_mask_id(tok), 103);
    CHECK_INT_EQ(bert_tokenizer_pad_id(tok), 0);
    CHECK_INT_EQ(bert_tokenizer_cls_id(tok), 101);
    CHECK_INT_EQ(bert_tokenizer_sep_id(tok), 102);
    CHECK_INT_EQ(bert_tokenizer_unk_id(tok), 100);
    CHECK_STR_EQ(bert_tokenizer_mask_token(tok), "[MASK]");
    CHECK(bert_tokenizer_is_special(tok, 103));
    CHECK(!bert_tokenizer_is_special(tok, 7592));
    CHECK_STR_EQ(bert_tokenizer_id_to_token(tok, 7592), "hello");
    CHECK_STR_EQ(bert_tokenizer_id_to_token(tok, 2075), "##ing");
    CHECK(bert_tokenizer_id_to_token(tok, -1) == NULL);
    CHECK(bert_tokenizer_id_to_token(tok, 30522) == NULL);
    CHECK_INT_EQ(bert_tokenizer_token_to_id(tok, "hello"), 7592);
    CHECK_INT_EQ(bert_tokenizer_token_to_id(tok, "[MASK]"), 103);
    CHECK_INT_EQ(bert_tokenizer_token_to_id(tok, "hellow"), -1); /* a prefix, not a token */
    CHECK_INT_EQ(bert_tokenizer_token_to_id(tok, "no-such-token"), -1);
    CHECK_INT_EQ(bert_tokenizer_json_max_length(tok), 128);
    bert_tokenizer_free(tok);

    tok = tok_load_or_die("dir", DATA "bert-base-chinese");
    CHECK_INT_EQ(bert_tokenizer_vocab_size(tok), 21128);
    CHECK_STR_EQ(bert_tokenizer_id_to_token(tok, 343), "\xE2\x80\xA8"); /* U+2028 line */
    CHECK_INT_EQ(bert_tokenizer_json_max_length(tok), 0);
    CHECK_INT_EQ(bert_tokenizer_mask_id(tok), 103);
    bert_tokenizer_free(tok);

    tok = tok_load_or_die("json", DATA "custom/tokenizer.json");
    CHECK_INT_EQ(bert_tokenizer_vocab_size(tok), 8005);
    CHECK(bert_tokenizer_is_special(tok, 8000));  /* <ent> */
    CHECK(!bert_tokenizer_is_special(tok, 8001)); /* Hello World */
    CHECK_INT_EQ(bert_tokenizer_token_to_id(tok, "Hello World"), 8001);
    CHECK_INT_EQ(bert_tokenizer_cls_id(tok), 101); /* from BertProcessing */
    bert_tokenizer_free(tok);
}

static void test_roles_bpe_unigram(void)
{
    struct bert_tokenizer *tok = tok_load_or_die("dir", DATA "roberta-base");
    CHECK_INT_EQ(bert_tokenizer_kind(tok), BERT_TOKENIZER_BPE);
    CHECK_STR_EQ(bert_tokenizer_kind_name(bert_tokenizer_kind(tok)), "BPE");
    CHECK_INT_EQ(bert_tokenizer_vocab_size(tok), 50265);
    CHECK_INT_EQ(bert_tokenizer_cls_id(tok), 0);
    CHECK_INT_EQ(bert_tokenizer_bos_id(tok), 0);
    CHECK_INT_EQ(bert_tokenizer_pad_id(tok), 1);
    CHECK_INT_EQ(bert_tokenizer_sep_id(tok), 2);
    CHECK_INT_EQ(bert_tokenizer_eos_id(tok), 2);
    CHECK_INT_EQ(bert_tokenizer_unk_id(tok), 3);
    CHECK_INT_EQ(bert_tokenizer_mask_id(tok), 50264);
    CHECK_STR_EQ(bert_tokenizer_mask_token(tok), "<mask>");
    CHECK(!bert_tokenizer_uses_type_ids(tok));
    CHECK_STR_EQ(bert_tokenizer_id_to_token(tok, 31414), "Hello");
    CHECK_INT_EQ(bert_tokenizer_token_to_id(tok, "\xC4\xA0world"), 232); /* "Gworld" */
    struct bert_encoding enc = {0};
    struct bert_error err = {0};
    /* Pairs: <s> a </s></s> b </s>, every type id 0. */
    CHECK_INT_EQ(tok_encode_str(tok, "Hello", "world", NULL, &enc, &err), BERT_OK);
    const int32_t want[] = {0, 31414, 2, 2, 8331, 2};
    CHECK_INT_EQ(enc.n, 6);
    for (size_t i = 0; i < enc.n && i < 6; i++) {
        CHECK_INT_EQ(enc.ids[i], want[i]);
        CHECK_INT_EQ(enc.type_ids[i], 0);
    }
    char *s = bert_tokenizer_decode(tok, enc.ids, enc.n, true);
    CHECK_STR_EQ(s, "Helloworld");
    free(s);
    /* Invalid UTF-8 out of the byte-level decoder becomes U+FFFD: "Ã" is
     * the byte 0xC3, the first half of "é". */
    const int32_t half[] = {31414, bert_tokenizer_token_to_id(tok, "\xC3\x83"), 232};
    s = bert_tokenizer_decode(tok, half, 3, false);
    CHECK_STR_EQ(s, "Hello\xEF\xBF\xBD world");
    free(s);
    bert_encoding_free(&enc);
    bert_tokenizer_free(tok);

    tok = tok_load_or_die("json", DATA "modernbert/tokenizer.json");
    CHECK_INT_EQ(bert_tokenizer_kind(tok), BERT_TOKENIZER_BPE);
    CHECK_STR_EQ(bert_tokenizer_mask_token(tok), "[MASK]");
    CHECK_INT_EQ(bert_tokenizer_mask_id(tok), bert_tokenizer_token_to_id(tok, "[MASK]"));
    CHECK_INT_EQ(bert_tokenizer_cls_id(tok), bert_tokenizer_token_to_id(tok, "[CLS]"));
    CHECK(bert_tokenizer_cls_id(tok) > 50264);
    CHECK_INT_EQ(bert_tokenizer_pad_id(tok), bert_tokenizer_token_to_id(tok, "[PAD]"));
    CHECK(bert_tokenizer_uses_type_ids(tok)); /* its pair template has $B:1 */
    bert_tokenizer_free(tok);

    tok = tok_load_or_die("json", DATA "xlmr/tokenizer.json");
    CHECK_INT_EQ(bert_tokenizer_kind(tok), BERT_TOKENIZER_UNIGRAM);
    CHECK_STR_EQ(bert_tokenizer_kind_name(bert_tokenizer_kind(tok)), "Unigram");
    CHECK_INT_EQ(bert_tokenizer_cls_id(tok), 0);
    CHECK_INT_EQ(bert_tokenizer_pad_id(tok), 1);
    CHECK_INT_EQ(bert_tokenizer_eos_id(tok), 2);
    CHECK_INT_EQ(bert_tokenizer_unk_id(tok), 3);
    CHECK_STR_EQ(bert_tokenizer_mask_token(tok), "<mask>");
    CHECK_INT_EQ(bert_tokenizer_mask_id(tok), (int32_t)bert_tokenizer_vocab_size(tok) - 1);
    CHECK(!bert_tokenizer_uses_type_ids(tok));
    bert_tokenizer_free(tok);
}

static void test_decode(void)
{
    struct bert_tokenizer *folder = tok_load_or_die("dir", DATA "minilm");
    struct bert_tokenizer *json = tok_load_or_die("json", DATA "minilm/tokenizer.json");
    /* [CLS] hello , world ! don ' t ##ing [SEP] */
    const int32_t ids[] = {101, 7592, 1010, 2088, 999, 2123, 1005, 1056, 2075, 102};
    size_t n = sizeof ids / sizeof *ids;
    char *s = bert_tokenizer_decode(folder, ids, n, true);
    CHECK_STR_EQ(s, "hello, world! don'ting");
    free(s);
    s = bert_tokenizer_decode(folder, ids, n, false);
    CHECK_STR_EQ(s, "[CLS] hello, world! don'ting [SEP]");
    free(s);
    /* tokenizer.json alone: `tokenizers` decode, no transformers cleanup. */
    s = bert_tokenizer_decode(json, ids, n, true);
    CHECK_STR_EQ(s, "hello, world! don ' ting");
    free(s);
    /* A leading "##" piece keeps its prefix; unknown ids are skipped. */
    const int32_t odd[] = {2075, -5, 7592, 99999, 2075};
    s = bert_tokenizer_decode(json, odd, 5, false);
    CHECK_STR_EQ(s, "##ing helloing");
    free(s);
    s = bert_tokenizer_decode(json, NULL, 0, true);
    CHECK_STR_EQ(s, "");
    free(s);
    /* Only specials, skipped. */
    const int32_t specials[] = {101, 102, 0};
    s = bert_tokenizer_decode(folder, specials, 3, true);
    CHECK_STR_EQ(s, "");
    free(s);
    bert_tokenizer_free(folder);
    bert_tokenizer_free(json);
}

/* Client-tokenized input (OpenAI's token arrays): ids as given, the
 * vocabulary and the limit checked, truncation on either side. */
static void test_encoding_from_ids(void)
{
    struct bert_tokenizer *tok = tok_load_or_die("dir", DATA "minilm");
    struct bert_encoding enc = {0};
    struct bert_error err = {0};
    const int32_t ids[] = {101, 7592, 2088, 102};
    struct bert_encode_options o = bert_encode_options_default();
    CHECK_INT_EQ(bert_encoding_from_ids(tok, ids, 4, &o, &enc, &err), BERT_OK);
    CHECK(enc.n == 4 && memcmp(enc.ids, ids, sizeof ids) == 0 && !enc.truncated);
    CHECK(enc.n == 4 && enc.type_ids[3] == 0 && enc.special[0] == 0 && enc.word[2] == 2);
    o.max_length = 3;
    CHECK_INT_EQ(bert_encoding_from_ids(tok, ids, 4, &o, &enc, &err), BERT_E_TOO_LONG);
    CHECK_CONTAINS(err.message, "input is 4 tokens long, more than the limit of 3");
    o.truncate = true;
    o.side = BERT_TRUNCATE_LEFT;
    CHECK_INT_EQ(bert_encoding_from_ids(tok, ids, 4, &o, &enc, &err), BERT_OK);
    CHECK(enc.n == 3 && enc.ids[0] == 7592 && enc.truncated && enc.n_untruncated == 4);
    const int32_t bad[] = {101, 30522};
    CHECK_INT_EQ(bert_encoding_from_ids(tok, bad, 2, &o, &enc, &err), BERT_E_INVALID);
    CHECK_CONTAINS(err.message, "token id 30522 at position 1 is not in the vocabulary (0 to 30521)");
    CHECK_INT_EQ(enc.n, 0);
    bert_encoding_free(&enc);
    bert_tokenizer_free(tok);
}

static void check_offsets_sane(const struct bert_encoding *enc, size_t text_len)
{
    bool ok = true;
    for (size_t i = 0; i < enc->n; i++)
        if (enc->start[i] > enc->stop[i] || enc->stop[i] > text_len ||
            (i > 0 && enc->special[i] == 0 && enc->special[i - 1] == 0 &&
             enc->start[i] < enc->start[i - 1]))
            ok = false;
    CHECK(ok);
}

static void test_hostile_input(const struct bert_tokenizer *tok)
{
    struct bert_encoding enc = {0};
    struct bert_error err = {0};
    /* 1 MB of mixed text. */
    const char *piece = "Héllo wörld, 中文 😀 naïve [MASK] \t\x01 ";
    size_t plen = strlen(piece), big_len = 1 << 20;
    char *big = malloc(big_len + 1);
    size_t used = 0;
    while (used + plen <= big_len) {
        memcpy(big + used, piece, plen);
        used += plen;
    }
    big[used] = '\0';
    struct bert_encode_options o = bert_encode_options_default();
    o.add_special_tokens = false;
    CHECK_INT_EQ(bert_tokenizer_encode(tok, piece, plen, NULL, 0, &o, &enc, &err), BERT_OK);
    size_t per_piece = enc.n;
    double t0 = now_seconds();
    CHECK_INT_EQ(bert_tokenizer_encode(tok, big, used, NULL, 0, NULL, &enc, &err), BERT_OK);
    double dt = now_seconds() - t0;
    CHECK_INT_EQ(enc.n, 2 + used / plen * per_piece);
    check_offsets_sane(&enc, used);
    fprintf(stderr, "1 MB mixed input: %zu tokens in %.3f s\n", enc.n, dt);

    /* One 1 MB word: a single [UNK] covering it. */
    memset(big, 'x', big_len);
    CHECK_INT_EQ(bert_tokenizer_encode(tok, big, big_len, NULL, 0, NULL, &enc, &err), BERT_OK);
    CHECK_INT_EQ(enc.n, 3);
    CHECK_INT_EQ(enc.ids[1], bert_tokenizer_unk_id(tok));
    CHECK_INT_EQ(enc.stop[1], big_len);

    /* 10,000 spaces, then 1 MB of spaces. */
    memset(big, ' ', big_len);
    CHECK_INT_EQ(bert_tokenizer_encode(tok, big, 10000, NULL, 0, NULL, &enc, &err), BERT_OK);
    CHECK_INT_EQ(enc.n, 2);
    CHECK_INT_EQ(bert_tokenizer_encode(tok, big, big_len, NULL, 0, NULL, &enc, &err), BERT_OK);
    CHECK_INT_EQ(enc.n, 2);

    /* A word of 100 characters is tokenized, 101 is [UNK]. */
    memset(big, 'q', 101);
    CHECK_INT_EQ(bert_tokenizer_encode(tok, big, 100, NULL, 0, NULL, &enc, &err), BERT_OK);
    CHECK(enc.n > 3);
    CHECK_INT_EQ(bert_tokenizer_encode(tok, big, 101, NULL, 0, NULL, &enc, &err), BERT_OK);
    CHECK_INT_EQ(enc.n, 3);

    /* Random bytes: either rejected with an offset or tokenized in bounds. */
    uint32_t seed = 12345;
    size_t valid = 0;
    for (int round = 0; round < 20000; round++) {
        size_t n = (size_t)(round % 64) + 1;
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            uint8_t b = (uint8_t)(seed >> 16);
            /* Bias towards ASCII and lead bytes so some inputs are valid. */
            big[i] = (char)(round % 3 == 0 ? b : (b & 0x80 ? (b | 0xC0) & 0xEF : b));
        }
        enum bert_status st = bert_tokenizer_encode(tok, big, n, big, n / 2, NULL, &enc, &err);
        CHECK(st == BERT_OK || st == BERT_E_INVALID);
        if (st == BERT_OK) {
            valid++;
            check_offsets_sane(&enc, n);
        }
    }
    CHECK(valid > 100);

    /* Reuse: a long encoding, then a short one in the same struct. */
    CHECK_INT_EQ(tok_encode_str(tok, "hello world", NULL, NULL, &enc, &err), BERT_OK);
    CHECK_INT_EQ(enc.n, 4);
    /* Pairs without specials: type ids 0 then 1. */
    CHECK_INT_EQ(tok_encode_str(tok, "hello", "world", &o, &enc, &err), BERT_OK);
    CHECK_INT_EQ(enc.n, 2);
    CHECK_INT_EQ(enc.type_ids[0], 0);
    CHECK_INT_EQ(enc.type_ids[1], 1);
    CHECK_INT_EQ(enc.sequence[1], 1);
    free(big);
    bert_encoding_free(&enc);
}

/* Hostile input for the byte-level and Unigram pipelines: long words (the
 * BPE merge loop must stay O(n log n)), long space runs, random bytes. */
static void test_hostile_generic(const char *name, const struct bert_tokenizer *tok)
{
    struct bert_encoding enc = {0};
    struct bert_error err = {0};
    size_t big_len = 1 << 20;
    char *big = malloc(big_len + 1);
    const char *piece = "H\xC3\xA9llo w\xC3\xB6rld, \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80 it's "
                        "<mask> [MASK] \t\x01  ";
    size_t plen = strlen(piece), used = 0;
    while (used + plen <= big_len) {
        memcpy(big + used, piece, plen);
        used += plen;
    }
    double t0 = now_seconds();
    CHECK_INT_EQ(bert_tokenizer_encode(tok, big, used, NULL, 0, NULL, &enc, &err), BERT_OK);
    double mixed = now_seconds() - t0;
    CHECK(enc.n > used / plen * 10);
    check_offsets_sane(&enc, used);
    size_t n_mixed = enc.n;
    /* One 1 MB word, then 1 MB of spaces: every byte covered, in order. */
    memset(big, 'x', big_len);
    t0 = now_seconds();
    CHECK_INT_EQ(bert_tokenizer_encode(tok, big, big_len, NULL, 0, NULL, &enc, &err), BERT_OK);
    double word = now_seconds() - t0;
    CHECK(enc.n > 2);
    check_offsets_sane(&enc, big_len);
    CHECK_INT_EQ(enc.stop[enc.n - 2], big_len);
    memset(big, ' ', big_len);
    CHECK_INT_EQ(bert_tokenizer_encode(tok, big, big_len, NULL, 0, NULL, &enc, &err), BERT_OK);
    check_offsets_sane(&enc, big_len);
    fprintf(stderr, "%s: 1 MB mixed input: %zu tokens in %.3f s; 1 MB word in %.3f s\n", name,
            n_mixed, mixed, word);
    uint32_t seed = 777;
    size_t valid = 0;
    for (int round = 0; round < 20000; round++) {
        size_t n = (size_t)(round % 64) + 1;
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            uint8_t b = (uint8_t)(seed >> 16);
            big[i] = (char)(round % 3 == 0 ? b : (b & 0x80 ? (b | 0xC0) & 0xEF : b));
        }
        struct bert_encode_options o = bert_encode_options_default();
        o.max_length = round % 5 ? 0 : 8 + (size_t)(round % 7);
        o.truncate = true;
        o.side = round % 2 ? BERT_TRUNCATE_LEFT : BERT_TRUNCATE_RIGHT;
        enum bert_status st = bert_tokenizer_encode(tok, big, n, big, n / 2, &o, &enc, &err);
        CHECK(st == BERT_OK || st == BERT_E_INVALID);
        if (st == BERT_OK) {
            valid++;
            check_offsets_sane(&enc, n);
            char *d = bert_tokenizer_decode(tok, enc.ids, enc.n, round % 2);
            CHECK(d != NULL);
            free(d);
        }
    }
    CHECK(valid > 100);
    free(big);
    bert_encoding_free(&enc);
}

/* tokens/s over the first column of a TSV (header skipped). */
static int bench(const char *path, const char *tokenizer)
{
    struct stat st;
    bool is_dir = stat(tokenizer, &st) == 0 && S_ISDIR(st.st_mode);
    struct bert_tokenizer *tok = tok_load_or_die(is_dir ? "dir" : "json", tokenizer);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        perror(path);
        return EXIT_FAILURE;
    }
    char *line = NULL;
    size_t cap = 0, n_lines = 0, n_tokens = 0, n_bytes = 0;
    ssize_t len;
    struct bert_encoding enc = {0};
    struct bert_error err;
    double seconds = 0;
    bool header = true;
    while ((len = getline(&line, &cap, f)) > 0) {
        if (header) {
            header = false;
            continue;
        }
        size_t n = strcspn(line, "\t\n");
        double t0 = now_seconds();
        if (bert_tokenizer_encode(tok, line, n, NULL, 0, NULL, &enc, &err) != BERT_OK) {
            fprintf(stderr, "%s\n", err.message);
            return EXIT_FAILURE;
        }
        seconds += now_seconds() - t0;
        n_lines++;
        n_tokens += enc.n;
        n_bytes += n;
    }
    printf("%zu lines, %zu bytes, %zu tokens in %.3f s: %.0f tokens/s, %.2f MB/s, %.2f us/line\n",
           n_lines, n_bytes, n_tokens, seconds, (double)n_tokens / seconds,
           (double)n_bytes / seconds / 1e6, seconds / (double)n_lines * 1e6);
    free(line);
    fclose(f);
    bert_encoding_free(&enc);
    bert_tokenizer_free(tok);
    return EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
    if ((argc == 3 || argc == 4) && strcmp(argv[1], "--bench") == 0)
        return bench(argv[2], argc == 4 ? argv[3] : DATA "minilm");
    double sst_tokens = 0, sst_seconds = 0;
    for (size_t i = 0; i < sizeof suites / sizeof *suites; i++) {
        double tokens = 0, seconds = 0;
        run_suite(&suites[i], &tokens, &seconds);
        if (i == 0) {
            sst_tokens = tokens;
            sst_seconds = seconds;
        }
    }
    fprintf(stderr, "SST-2 (minilm): %.0f tokens in %.3f s: %.0f tokens/s\n", sst_tokens,
            sst_seconds, sst_tokens / sst_seconds);
    test_llama_vectors("bge", DATA "minilm", "ggml-vocab-bert-bge.gguf");
    test_llama_vectors("roberta", DATA "roberta-base", "ggml-vocab-roberta-bpe.gguf");
    struct bert_tokenizer *tok = tok_load_or_die("dir", DATA "minilm");
    test_invalid_utf8(tok);
    test_truncation(tok);
    test_hostile_input(tok);
    bert_tokenizer_free(tok);
    test_roles();
    test_roles_bpe_unigram();
    static const char *const other[][2] = {{"dir", DATA "roberta-base"},
                                           {"json", DATA "modernbert/tokenizer.json"},
                                           {"json", DATA "xlmr/tokenizer.json"}};
    for (size_t i = 0; i < 3; i++) {
        tok = tok_load_or_die(other[i][0], other[i][1]);
        test_invalid_utf8(tok);
        test_hostile_generic(other[i][1] + strlen(DATA), tok);
        bert_tokenizer_free(tok);
    }
    test_decode();
    test_encoding_from_ids();
    return check_exit();
}
