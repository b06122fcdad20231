/* The tokenizer's private state, shared by its loaders, encoder and
 * decoder. Private to tokenizer/ (tests aside). */
#ifndef BERT_TOK_INTERNAL_H
#define BERT_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "added.h"
#include "bpe.h"
#include "metaspace.h"
#include "normalize.h"
#include "normseq.h"
#include "unigram.h"
#include "wordpiece.h"
#include "tokenizer.h"

/* One element of a TemplateProcessing template: a sequence ($A / $B) or
 * special tokens ([CLS] ...), each with its type id. */
struct tok_template_item {
    bool is_sequence;
    uint8_t sequence; /* 0: $A, 1: $B */
    int32_t type_id;
    int32_t *ids; /* special token ids (usually one) */
    size_t n_ids;
};

struct tok_template {
    struct tok_template_item *items;
    size_t n;
    size_t n_added; /* special tokens it adds */
};

enum tok_pretok {
    TOK_PRETOK_NONE,
    TOK_PRETOK_BERT,      /* BertPreTokenizer (WordPiece only) */
    TOK_PRETOK_BYTELEVEL, /* ByteLevel */
    TOK_PRETOK_METASPACE, /* Metaspace */
};

enum tok_decoder {
    TOK_DECODER_NONE, /* tokens joined by spaces */
    TOK_DECODER_WORDPIECE,
    TOK_DECODER_BYTELEVEL,
    TOK_DECODER_METASPACE,
};

struct bert_tokenizer {
    enum bert_tokenizer_kind kind; /* the model */

    /* Normalizer: BertNormalizer (norm), a sequence of others, or none. */
    struct tok_norm_cfg norm;
    bool bert_normalizer;
    struct tok_normseq normseq;

    enum tok_pretok pretok;
    bool bytelevel_prefix_space, bytelevel_use_regex;
    struct tok_metaspace metaspace;

    struct tok_wordpiece wp;
    struct tok_bpe bpe;
    struct tok_unigram unigram;
    struct tok_added added;

    bool has_template; /* a post-processor adds special tokens */
    struct tok_template single, pair;
    bool zero_type_ids;    /* RobertaProcessing: every type id is 0, specials or not */
    bool trim_offsets;     /* ByteLevel / RobertaProcessing offset trimming */
    bool trim_prefix_space;

    enum tok_decoder decoder;
    char *decoder_prefix; /* WordPiece */
    bool decoder_cleanup;
    struct tok_metaspace decoder_metaspace;
    bool cleanup_spaces; /* transformers' clean_up_tokenization_spaces */
    char load_note[256]; /* something the loader chose that the caller should log; "" if none */

    /* Role token strings (NULL: the role is absent); ids resolved at the end. */
    char *unk_token, *sep_token, *pad_token, *cls_token, *mask_token, *bos_token, *eos_token;
    int32_t unk_id, sep_id, pad_id, cls_id, mask_id, bos_id, eos_id;
    int uses_type_ids; /* -1: decided from the template */

    size_t json_max_length;
    size_t vocab_size;
};

#endif
