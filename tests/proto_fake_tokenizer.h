/* A tiny stand-in for the WordPiece tokenizer, so proto/job.c can be tested
 * without the engine: a fixed 24-token vocabulary, whitespace/punctuation
 * splitting, "[MASK]" as an added token, a trailing "s" as "##s", the
 * [CLS] a [SEP] b [SEP] template and a WordPiece-like decoder. It defines
 * the tokenizer.h functions proto/ calls, so the linker never needs the real
 * ones for this test. */
#ifndef PROTO_FAKE_TOKENIZER_H
#define PROTO_FAKE_TOKENIZER_H

#include "tokenizer.h"

enum {
    FAKE_PAD = 0,
    FAKE_UNK = 1,
    FAKE_CLS = 2,
    FAKE_SEP = 3,
    FAKE_MASK = 4,
    FAKE_THE = 5,
    FAKE_CAT = 6,
    FAKE_SAT = 7,
    FAKE_ON = 8,
    FAKE_MAT = 9,
    FAKE_DOG = 10,
    FAKE_DOT = 11,
    FAKE_PARIS = 12,
    FAKE_IS = 13,
    FAKE_CAPITAL = 14,
    FAKE_OF = 15,
    FAKE_FRANCE = 16,
    FAKE_S = 17, /* "##s" */
    FAKE_A = 18,
};

/* The one shared instance (static storage; never freed). */
struct bert_tokenizer *fake_tokenizer(void);

/* Pretend the vocabulary has no mask token (mask id -1) or has it again. */
void fake_tokenizer_set_has_mask(bool has_mask);

#endif
