/* The three tokenizer pipelines (WordPiece, byte-level BPE, Unigram) on
 * untrusted text, with every encode option. The first byte picks the
 * tokenizer and the options; the rest is the text, split into a pair at the
 * first 0x01 byte when the option bit asks for one. Invalid UTF-8 must be an
 * error, never a crash; valid text must give tokens whose offsets stay
 * inside their input and ids inside the vocabulary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "tokenizer.h"

static const char *const folders[] = {"minilm", "roberta-base", "xlmr"};
#define N_TOKENIZERS (sizeof folders / sizeof folders[0])

static struct bert_tokenizer *tokenizers[N_TOKENIZERS];

static void load_once(void)
{
    if (tokenizers[0] != NULL)
        return;
    for (size_t i = 0; i < N_TOKENIZERS; i++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/tokenizer/%s", BERT_FUZZ_DATA, folders[i]);
        struct bert_error err;
        if (bert_tokenizer_load(dir, &tokenizers[i], &err) != BERT_OK) {
            fprintf(stderr, "fuzz_tokenizer: %s\n", err.message);
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    load_once();
    if (size == 0)
        return 0;
    uint8_t sel = data[0];
    const struct bert_tokenizer *tok = tokenizers[sel % N_TOKENIZERS];
    const char *text = (const char *)data + 1;
    size_t text_len = size - 1;
    const char *pair = NULL;
    size_t pair_len = 0;
    if (sel & 0x04) {
        const char *split = memchr(text, 0x01, text_len);
        if (split != NULL) {
            pair = split + 1;
            pair_len = text_len - (size_t)(pair - text);
            text_len = (size_t)(split - text);
        }
    }
    struct bert_encode_options opts = bert_encode_options_default();
    opts.add_special_tokens = (sel & 0x08) == 0;
    opts.max_length = (sel & 0x10) ? (size_t)(sel >> 5) * 3 : 0;
    opts.truncate = (sel & 0x20) != 0;
    opts.side = (sel & 0x40) ? BERT_TRUNCATE_LEFT : BERT_TRUNCATE_RIGHT;

    struct bert_encoding enc = {0};
    struct bert_error err;
    if (bert_tokenizer_encode(tok, text, text_len, pair, pair_len, &opts, &enc, &err) ==
        BERT_OK) {
        size_t vocab = bert_tokenizer_vocab_size(tok);
        for (size_t i = 0; i < enc.n; i++) {
            size_t limit = enc.sequence[i] == 1 ? pair_len : text_len;
            if (enc.ids[i] < 0 || (size_t)enc.ids[i] >= vocab || enc.start[i] > enc.stop[i] ||
                enc.stop[i] > limit)
                abort();
        }
        char *decoded = bert_tokenizer_decode(tok, enc.ids, enc.n, true);
        free(decoded);
    }
    bert_encoding_free(&enc);
    return 0;
}
