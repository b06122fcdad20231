/* Helpers the tokenizer tests share (test_tokenizer_util.h). */
#include "test_tokenizer_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bert_tokenizer *tok_load_or_die(const char *kind, const char *path)
{
    struct bert_error err = {0};
    struct bert_tokenizer *tok = NULL;
    enum bert_status st;
    if (strcmp(kind, "dir") == 0)
        st = bert_tokenizer_load(path, &tok, &err);
    else if (strcmp(kind, "json") == 0)
        st = bert_tokenizer_load_json(path, &tok, &err);
    else
        st = bert_tokenizer_load_vocab(path, true, &tok, &err);
    if (st != BERT_OK) {
        fprintf(stderr, "cannot load %s: %s\n", path, err.message);
        exit(EXIT_FAILURE);
    }
    return tok;
}

enum bert_status tok_encode_str(const struct bert_tokenizer *tok, const char *text,
                                const char *pair, const struct bert_encode_options *o,
                                struct bert_encoding *enc, struct bert_error *err)
{
    return bert_tokenizer_encode(tok, text, strlen(text), pair, pair ? strlen(pair) : 0, o, enc,
                                 err);
}
