/* Tokenizer loading: every broken or hostile file refused with a message
 * naming it, Hub configs with integers beyond 64 bits, and folders whose
 * vocab.txt and tokenizer.json disagree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "test_tokenizer_util.h"
#include "tokenizer.h"

#define DATA "tests/data/tokenizer/"
/* Real checkpoints' tokenizer files, read in place beside the repository. */
#define SHARED "../shared/data/"

/* Write `content` to dir/name. */
static void write_file(const char *dir, const char *name, const char *content, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        fwrite(content, 1, len, f);
        fclose(f);
    }
}
static void remove_dir(const char *dir)
{
    static const char *const names[] = {"tokenizer.json", "vocab.txt", "tokenizer_config.json",
                                        "special_tokens_map.json"};
    char path[512];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}
static void expect_load_error(const char *kind, const char *path, enum bert_status want,
                              const char *msg1, const char *msg2)
{
    struct bert_tokenizer *tok = (struct bert_tokenizer *)1;
    struct bert_error err = {0};
    enum bert_status st = strcmp(kind, "dir") == 0    ? bert_tokenizer_load(path, &tok, &err)
                          : strcmp(kind, "json") == 0 ? bert_tokenizer_load_json(path, &tok, &err)
                                                      : bert_tokenizer_load_vocab(path, true, &tok, &err);
    CHECK_INT_EQ(st, want);
    CHECK(tok == NULL);
    CHECK_CONTAINS(err.message, msg1);
    if (msg2)
        CHECK_CONTAINS(err.message, msg2);
    if (st == BERT_OK)
        bert_tokenizer_free(tok);
}
static void test_load_errors(void)
{
    expect_load_error("dir", "/nonexistent/model", BERT_E_IO, "/nonexistent/model",
                      "no tokenizer.json, vocab.txt or vocab.json + merges.txt");
    expect_load_error("json", "/nonexistent/tokenizer.json", BERT_E_IO,
                      "/nonexistent/tokenizer.json", "cannot open");
    expect_load_error("vocab", "/nonexistent/vocab.txt", BERT_E_IO, "/nonexistent/vocab.txt",
                      "cannot open");

    char dir[] = "/tmp/bert-tok-test-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char json_path[256], vocab_path[256];
    snprintf(json_path, sizeof json_path, "%s/tokenizer.json", dir);
    snprintf(vocab_path, sizeof vocab_path, "%s/vocab.txt", dir);
    static const struct {
        const char *json;
        enum bert_status status;
        const char *message;
    } bad[] = {
        {"{\"model\": {\"vocab\": ", BERT_E_FORMAT, "line 1"},
        {"[1, 2]", BERT_E_FORMAT, "expected a JSON object"},
        {"{}", BERT_E_FORMAT, "model: missing"},
        {"{\"model\": {\"type\": \"WordLevel\", \"vocab\": {}}}", BERT_E_UNSUPPORTED,
         "model type \"WordLevel\" is not supported (only WordPiece, BPE and Unigram)"},
        {"{\"model\": {\"vocab\": {\"a\": \"x\"}}}", BERT_E_FORMAT, "model.vocab[\"a\"]"},
        {"{\"model\": {\"vocab\": {\"a\": -1}}}", BERT_E_FORMAT, "model.vocab[\"a\"]"},
        {"{\"model\": {\"vocab\": {}}}", BERT_E_FORMAT, "vocabulary is empty"},
        {"{\"model\": {\"vocab\": {\"a\": 0}}}", BERT_E_FORMAT, "unknown token \"[UNK]\""},
        {"{\"model\": {\"vocab\": {\"[UNK]\": 0}}, \"normalizer\": {\"type\": \"Nmt\"}}",
         BERT_E_UNSUPPORTED, "normalizer type \"Nmt\" is not supported (only BertNormalizer, NFC"},
        {"{\"model\": {\"vocab\": {\"[UNK]\": 0}}, \"normalizer\": {\"type\": "
         "\"BertNormalizer\", \"lowercase\": 1}}",
         BERT_E_FORMAT, "normalizer.lowercase"},
        {"{\"model\": {\"vocab\": {\"[UNK]\": 0}}, \"post_processor\": {\"type\": "
         "\"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"[X]\", "
         "\"type_id\": 0}}], \"pair\": [], \"special_tokens\": {}}}",
         BERT_E_FORMAT, "special token \"[X]\""},
        {"{\"model\": {\"vocab\": {\"[UNK]\": 0}}, \"added_tokens\": [{\"id\": 5}]}",
         BERT_E_FORMAT, "added_tokens[0]"},
        {"{\"model\": {\"vocab\": {\"[UNK]\": 0}}, \"truncation\": {\"max_length\": -3}}",
         BERT_E_FORMAT, "truncation.max_length"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a b c\"]}}",
         BERT_E_FORMAT, "model.merges[0]: expected \"a b\""},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [[\"a\", \"b\"]]}}",
         BERT_E_FORMAT, "model.merges[0]: a token of the merge or the merged token is not in"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], \"dropout\": 0.1}}",
         BERT_E_UNSUPPORTED, "model.dropout"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], \"unk_token\": "
         "\"<unk>\"}}",
         BERT_E_FORMAT, "model.unk_token"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": "
         "{\"type\": \"BertPreTokenizer\"}}",
         BERT_E_UNSUPPORTED, "BertPreTokenizer is supported with a WordPiece model only"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": "
         "{\"type\": \"Whitespace\"}}",
         BERT_E_UNSUPPORTED, "pre_tokenizer type \"Whitespace\" is not supported (only BertPreTokenizer, "
         "ByteLevel and Metaspace)"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": "
         "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Punctuation\"}, {\"type\": "
         "\"Metaspace\"}]}}",
         BERT_E_UNSUPPORTED, "a Sequence is supported with exactly one member"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": "
         "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Whitespace\"}]}}",
         BERT_E_UNSUPPORTED, "pre_tokenizer type \"Whitespace\" is not supported"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"decoder\": "
         "{\"type\": \"Fuse\"}}",
         BERT_E_UNSUPPORTED, "decoder type \"Fuse\" is not supported (only WordPiece, ByteLevel and "
         "Metaspace)"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"post_processor\": "
         "{\"type\": \"Odd\"}}",
         BERT_E_UNSUPPORTED, "post_processor type \"Odd\" is not supported (only TemplateProcessing, "
         "BertProcessing, RobertaProcessing, ByteLevel"},
        {"{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", -1.0]], \"unk_id\": null}}",
         BERT_E_UNSUPPORTED, "model.unk_id"},
        {"{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", -1.0]], \"unk_id\": 1}}",
         BERT_E_FORMAT, "model.unk_id"},
        {"{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\"]], \"unk_id\": 0}}",
         BERT_E_FORMAT, "model.vocab[0]: expected [piece, score]"},
        {"{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", 0]], \"unk_id\": 0}, "
         "\"normalizer\": {\"type\": \"Precompiled\", \"precompiled_charsmap\": \"AAA*\"}}",
         BERT_E_FORMAT, "normalizer.precompiled_charsmap: not valid base64"},
        {"{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", 0]], \"unk_id\": 0}, "
         "\"normalizer\": {\"type\": \"Precompiled\", \"precompiled_charsmap\": \"/////w==\"}}",
         BERT_E_FORMAT, "the trie size is larger than the blob"},
        {"{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", 0]], \"unk_id\": 0}, "
         "\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}, {\"type\": "
         "\"Replace\", \"pattern\": {\"Regex\": \"[a-z]+\"}, \"content\": \"\"}]}}",
         BERT_E_UNSUPPORTED, "normalizer.normalizers[1]: the regex \"[a-z]+\" is not supported"},
        {"{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", 0]], \"unk_id\": 0}, "
         "\"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"ab\"}}",
         BERT_E_FORMAT, "pre_tokenizer.replacement: expected one character"},
        {"{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", 0]], \"unk_id\": 0}, "
         "\"pre_tokenizer\": {\"type\": \"Metaspace\", \"prepend_scheme\": \"sometimes\"}}",
         BERT_E_FORMAT, "pre_tokenizer.prepend_scheme"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_file(dir, "tokenizer.json", bad[i].json, strlen(bad[i].json));
        expect_load_error("json", json_path, bad[i].status, json_path, bad[i].message);
        expect_load_error("dir", dir, bad[i].status, json_path, bad[i].message);
    }
    unlink(json_path);

    /* vocab.txt layout: empty vocabulary, corrupt config, then a working one
     * whose special tokens are missing from the vocabulary (new ids). */
    write_file(dir, "vocab.txt", "", 0);
    expect_load_error("dir", dir, BERT_E_FORMAT, vocab_path, "vocabulary is empty");
    const char *vocab = "[PAD]\n[UNK]\nhello\n##s\r\nworld\n";
    write_file(dir, "vocab.txt", vocab, strlen(vocab));
    const char *broken = "{\"do_lower_case\": tru";
    write_file(dir, "tokenizer_config.json", broken, strlen(broken));
    expect_load_error("dir", dir, BERT_E_FORMAT, "tokenizer_config.json", "line 1");
    const char *cased = "{\"do_lower_case\": false}";
    const char *map = "{\"mask_token\": {\"content\": \"<m>\"}}";
    write_file(dir, "tokenizer_config.json", cased, strlen(cased));
    write_file(dir, "special_tokens_map.json", map, strlen(map));
    struct bert_tokenizer *tok = NULL;
    struct bert_error err = {0};
    CHECK_INT_EQ(bert_tokenizer_load(dir, &tok, &err), BERT_OK);
    if (tok == NULL)
        fprintf(stderr, "%s\n", err.message);
    if (tok) {
        /* [UNK] 1, [SEP] 5, [PAD] 0, [CLS] 6, <m> 7 */
        CHECK_INT_EQ(bert_tokenizer_vocab_size(tok), 8);
        CHECK_INT_EQ(bert_tokenizer_sep_id(tok), 5);
        CHECK_INT_EQ(bert_tokenizer_cls_id(tok), 6);
        CHECK_INT_EQ(bert_tokenizer_mask_id(tok), 7);
        CHECK_STR_EQ(bert_tokenizer_mask_token(tok), "<m>");
        CHECK_INT_EQ(bert_tokenizer_token_to_id(tok, "##s"), 3); /* CRLF line end dropped */
        struct bert_encoding enc = {0};
        CHECK_INT_EQ(tok_encode_str(tok, "hellos <m> Hello", NULL, NULL, &enc, &err), BERT_OK);
        /* [CLS] hello ##s <m> [UNK] [SEP]: cased, so "Hello" is unknown */
        const int32_t want[] = {6, 2, 3, 7, 1, 5};
        CHECK_INT_EQ(enc.n, 6);
        for (size_t i = 0; i < 6 && i < enc.n; i++)
            CHECK_INT_EQ(enc.ids[i], want[i]);
        bert_encoding_free(&enc);
        bert_tokenizer_free(tok);
    }
    /* A tokenizer.json next to a config that disagrees: the config wins, as
     * in transformers' BertTokenizerFast. */
    const char *lower_json =
        "{\"model\": {\"vocab\": {\"[UNK]\": 0, \"hello\": 1, \"Hello\": 2}}, \"normalizer\": "
        "{\"type\": \"BertNormalizer\", \"lowercase\": true}, \"pre_tokenizer\": {\"type\": "
        "\"BertPreTokenizer\"}}";
    write_file(dir, "tokenizer.json", lower_json, strlen(lower_json));
    CHECK_INT_EQ(bert_tokenizer_load(dir, &tok, &err), BERT_OK);
    if (tok == NULL)
        fprintf(stderr, "%s\n", err.message);
    if (tok) {
        struct bert_encoding enc = {0};
        CHECK_INT_EQ(tok_encode_str(tok, "Hello", NULL, NULL, &enc, &err), BERT_OK);
        CHECK_INT_EQ(enc.n, 1); /* no post-processor: no specials */
        CHECK_INT_EQ(enc.ids[0], 2);
        bert_encoding_free(&enc);
        bert_tokenizer_free(tok);
    }
    remove_dir(dir);
}
/* Hub tokenizer configs carry Python's int(1e30) as model_max_length ("no
 * limit"): the genuine ModernBERT-base tokenizer_config.json (beside the
 * modernbert tokenizer.json) loads, and its folder encodes as the file
 * alone does. A number too big even for a double, or a fault after a big
 * integer, is still refused with the file named. */
static void test_big_integers_in_configs(void)
{
    struct bert_tokenizer *dir = tok_load_or_die("dir", DATA "modernbert");
    struct bert_tokenizer *json = tok_load_or_die("json", DATA "modernbert/tokenizer.json");
    static const char *const texts[] = {"Hello [MASK] world!", "  spaced   out <|endoftext|>"};
    for (size_t i = 0; i < 2; i++) {
        struct bert_encoding a = {0}, b = {0};
        struct bert_error err = {0};
        CHECK_INT_EQ(tok_encode_str(dir, texts[i], NULL, NULL, &a, &err), BERT_OK);
        CHECK_INT_EQ(tok_encode_str(json, texts[i], NULL, NULL, &b, &err), BERT_OK);
        CHECK_INT_EQ(a.n, b.n);
        CHECK(a.n == b.n && memcmp(a.ids, b.ids, a.n * sizeof *a.ids) == 0);
        bert_encoding_free(&a);
        bert_encoding_free(&b);
    }
    bert_tokenizer_free(dir);
    bert_tokenizer_free(json);

    char dirpath[] = "/tmp/bert-tok-bigint-XXXXXX";
    CHECK(mkdtemp(dirpath) != NULL);
    const char *vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n";
    write_file(dirpath, "vocab.txt", vocab, strlen(vocab));
    const char *big = "{\"model_max_length\": 1000000000000000019884624838656, \"x\": "
                      "[-99999999999999999999999, \"1e999 \\\" 123456789012345678901\"]}";
    write_file(dirpath, "tokenizer_config.json", big, strlen(big));
    struct bert_tokenizer *tok = tok_load_or_die("dir", dirpath);
    bert_tokenizer_free(tok);
    const char *huge = "{\"model_max_length\": 1e999}";
    write_file(dirpath, "tokenizer_config.json", huge, strlen(huge));
    expect_load_error("dir", dirpath, BERT_E_FORMAT, "tokenizer_config.json", "overflow");
    const char *broken = "{\"model_max_length\": 1000000000000000019884624838656, ]";
    write_file(dirpath, "tokenizer_config.json", broken, strlen(broken));
    expect_load_error("dir", dirpath, BERT_E_FORMAT, "tokenizer_config.json", "near ']'");
    remove_dir(dirpath);
}
/* A folder whose vocab.txt and tokenizer.json disagree (JinaBERT v2's):
 * tokenizer.json's ids win and the load note says where they differ; a
 * folder whose two files agree has nothing to say. */
static void test_vocab_txt_conflict(void)
{
    struct bert_tokenizer *tok = tok_load_or_die("dir", SHARED "jina-embeddings-v2-base-en");
    const char *note = bert_tokenizer_load_note(tok);
    CHECK(note != NULL && strstr(note, "disagree at 2 ids") != NULL &&
          strstr(note, "id 30525 is 'jonathangeuter' in vocab.txt, 'alaeddineabdessalem' in "
                       "tokenizer.json") != NULL);
    CHECK_INT_EQ(bert_tokenizer_token_to_id(tok, "alaeddineabdessalem"), 30525);
    bert_tokenizer_free(tok);
    tok = tok_load_or_die("dir", SHARED "all-mpnet-base-v2");
    CHECK(bert_tokenizer_load_note(tok) == NULL);
    bert_tokenizer_free(tok);
}

int main(void)
{
    test_load_errors();
    test_big_integers_in_configs();
    test_vocab_txt_conflict();
    return check_exit();
}
