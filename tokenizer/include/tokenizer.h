/* Tokenizers of the BERT family, identical to Hugging Face `tokenizers` to
 * the id and the offset:
 *
 * - WordPiece (BERT, DistilBERT, ELECTRA): BertNormalizer, BertPreTokenizer,
 *   WordPiece, TemplateProcessing / BertProcessing;
 * - byte-level BPE (RoBERTa, GPT-2, ModernBERT): ByteLevel pre-tokenizer and
 *   decoder, BPE merges, RobertaProcessing / TemplateProcessing, offset
 *   trimming, added tokens with lstrip/rstrip (<mask>);
 * - Unigram (XLM-R, SentencePiece): Precompiled charsmap and the other
 *   normalizers (NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace, Prepend),
 *   Metaspace pre-tokenizer and decoder, Viterbi over the piece scores.
 *
 * Loads `tokenizer.json` or, when that file is absent, the older layouts
 * Hugging Face converts to the same pipelines: `vocab.txt` (WordPiece) or
 * `vocab.json` + `merges.txt` (RoBERTa's byte-level BPE), each with
 * `tokenizer_config.json` and `special_tokens_map.json` when present. Any
 * other component is refused with BERT_E_UNSUPPORTED naming it and what is
 * supported.
 *
 * Threading: a loaded tokenizer is read-only; any number of threads may call
 * the encode/decode functions at once, each with its own `bert_encoding`. */
#ifndef BERT_TOKENIZER_H
#define BERT_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

struct bert_tokenizer;

/* The model a tokenizer runs. */
enum bert_tokenizer_kind {
    BERT_TOKENIZER_WORDPIECE = 0,
    BERT_TOKENIZER_BPE,     /* byte-level or plain BPE */
    BERT_TOKENIZER_UNIGRAM, /* SentencePiece Unigram */
};

enum bert_truncation_side {
    BERT_TRUNCATE_RIGHT = 0, /* drop tokens from the end (Hugging Face's default) */
    BERT_TRUNCATE_LEFT,      /* drop tokens from the start */
};

struct bert_encode_options {
    bool add_special_tokens; /* apply the post-processor template ([CLS] a [SEP] b [SEP]) */
    size_t max_length;       /* limit in tokens, specials included; 0: no limit */
    bool truncate;           /* true: cut to max_length; false: over-long is BERT_E_TOO_LONG */
    enum bert_truncation_side side;
};

/* Sensible defaults: specials on, no limit, truncation right. */
struct bert_encode_options bert_encode_options_default(void);

/* One encoded input (or pair). Arrays have `n` valid entries; the struct owns
 * them and reuses them across calls (grow-only). Zero-initialise before the
 * first use; release with bert_encoding_free. */
struct bert_encoding {
    int32_t *ids;       /* (n) vocabulary ids */
    int32_t *type_ids;  /* (n) 0 for the first sequence and its specials, 1 for the pair */
    uint32_t *start;    /* (n) byte offset of the token's first byte in its input */
    uint32_t *stop;     /* (n) byte offset one past its last byte */
    uint8_t *special;   /* (n) 1 for tokens the template added ([CLS], [SEP]) */
    uint8_t *sequence;  /* (n) 0: from `text`, 1: from `pair`, 255: template special */
    uint32_t *word;     /* (n) the token's word within its sequence, counted from 0 as
                           `tokenizers` numbers them (each pre-tokenizer split, each added
                           token); UINT32_MAX for template specials */
    size_t n;
    size_t cap;
    size_t n_untruncated; /* token count before truncation (specials included) */
    bool truncated;       /* true when tokens were dropped */
};

void bert_encoding_free(struct bert_encoding *enc);

/* Load from a checkpoint folder: `dir/tokenizer.json` if present, otherwise
 * `dir/vocab.txt`, otherwise `dir/vocab.json` + `dir/merges.txt`, with
 * `dir/tokenizer_config.json` and `dir/special_tokens_map.json` when
 * present. On failure returns an error naming the file and the problem and
 * sets *out to NULL.
 *
 * As transformers does, tokenizer_config.json may override a tokenizer.json
 * BertNormalizer (do_lower_case, strip_accents, tokenize_chinese_chars: only
 * keys it sets) and names the role tokens ([MASK], [PAD], ...). */
enum bert_status bert_tokenizer_load(const char *dir, struct bert_tokenizer **out,
                                     struct bert_error *err);

/* Load one specific tokenizer.json file. */
enum bert_status bert_tokenizer_load_json(const char *path, struct bert_tokenizer **out,
                                          struct bert_error *err);

/* Load a vocab.txt with explicit settings (the old layout). */
enum bert_status bert_tokenizer_load_vocab(const char *vocab_path, bool lowercase,
                                           struct bert_tokenizer **out,
                                           struct bert_error *err);

/* NULL is a no-op. */
void bert_tokenizer_free(struct bert_tokenizer *tok);

/* Encode `text` (and `pair` if non-NULL) of the given byte lengths. Text need
 * not be NUL-terminated. Invalid UTF-8 is BERT_E_INVALID naming the byte
 * offset; an input longer than opts->max_length with truncate off is
 * BERT_E_TOO_LONG naming both numbers. Offsets are byte offsets into the
 * input the token came from (`text` or `pair`); template specials have
 * start == stop == 0. opts NULL means bert_encode_options_default().
 *
 * Truncation is `tokenizers`' LongestFirst, pairs included, exactly as the
 * reference cuts them; a max_length smaller than the specials the template
 * adds cannot be met and is BERT_E_INVALID. On any error `out` holds no
 * tokens (n == 0). Uses no heap memory for short inputs and O(log n)
 * allocations for long ones; `out` grows only. */
enum bert_status bert_tokenizer_encode(const struct bert_tokenizer *tok,
                                       const char *text, size_t text_len,
                                       const char *pair, size_t pair_len,
                                       const struct bert_encode_options *opts,
                                       struct bert_encoding *out,
                                       struct bert_error *err);

/* An encoding of ids a client tokenized itself (OpenAI's token-array
 * input): the ids as given, no specials added (as text-embeddings-inference
 * takes them), type ids 0, offsets 0, word i for token i. An id outside
 * 0 .. vocab_size - 1 is BERT_E_INVALID naming its position and the range;
 * opts->max_length and opts->truncate apply as to a text (add_special_tokens
 * is ignored). On any error `out` holds no tokens. */
enum bert_status bert_encoding_from_ids(const struct bert_tokenizer *tok, const int32_t *ids,
                                        size_t n, const struct bert_encode_options *opts,
                                        struct bert_encoding *out, struct bert_error *err);

/* What bert_tokenizer_load chose that its caller should log, or NULL: when
 * a folder's tokenizer.json and vocab.txt disagree about ids (JinaBERT v2
 * ships two such files), tokenizer.json wins, and this says where they
 * differ. */
const char *bert_tokenizer_load_note(const struct bert_tokenizer *tok);

/* Vocabulary size (largest id + 1, added tokens included). */
size_t bert_tokenizer_vocab_size(const struct bert_tokenizer *tok);

/* The token string of `id` ("##ing", "[MASK]"), or NULL when out of range. */
const char *bert_tokenizer_id_to_token(const struct bert_tokenizer *tok, int32_t id);

/* The id of an exact token string, or -1. */
int32_t bert_tokenizer_token_to_id(const struct bert_tokenizer *tok, const char *token);

/* Ids of the roles the pipelines need; -1 when the tokenizer has none. The
 * roles come from tokenizer_config.json / special_tokens_map.json when
 * loaded from a folder, otherwise from the file: cls and sep from the
 * post-processor, pad from its padding settings, unk from the model, mask
 * "[MASK]" or "<mask>", bos "<s>" and eos "</s>" when those tokens exist. */
int32_t bert_tokenizer_mask_id(const struct bert_tokenizer *tok);
int32_t bert_tokenizer_pad_id(const struct bert_tokenizer *tok);
int32_t bert_tokenizer_cls_id(const struct bert_tokenizer *tok);
int32_t bert_tokenizer_sep_id(const struct bert_tokenizer *tok);
int32_t bert_tokenizer_unk_id(const struct bert_tokenizer *tok);
int32_t bert_tokenizer_bos_id(const struct bert_tokenizer *tok);
int32_t bert_tokenizer_eos_id(const struct bert_tokenizer *tok);

/* The model the tokenizer runs, and its name ("WordPiece", "BPE",
 * "Unigram"). */
enum bert_tokenizer_kind bert_tokenizer_kind(const struct bert_tokenizer *tok);
const char *bert_tokenizer_kind_name(enum bert_tokenizer_kind kind);

/* Whether the model expects token type ids: tokenizer_config.json's
 * model_input_names when it lists them, otherwise true when the
 * post-processor gives some token a non-zero type id (BERT's pair template)
 * and false otherwise (RoBERTa, XLM-R: every type id is 0). */
bool bert_tokenizer_uses_type_ids(const struct bert_tokenizer *tok);

/* True when `id` is a special token (added token with "special": true). */
bool bert_tokenizer_is_special(const struct bert_tokenizer *tok, int32_t id);

/* The mask token's text ("[MASK]", "<mask>"), used in error messages and
 * docs; NULL when there is no mask token. */
const char *bert_tokenizer_mask_token(const struct bert_tokenizer *tok);

/* Truncation length written in tokenizer.json ("truncation": {"max_length"}),
 * or 0 when the file sets none. */
size_t bert_tokenizer_json_max_length(const struct bert_tokenizer *tok);

/* Decode ids to text as Hugging Face's `tokenizer.decode(ids,
 * skip_special_tokens=skip_special)` does for this tokenizer: its decoder
 * (WordPiece: "##" joins and cleanup of spaces before punctuation and
 * contractions; ByteLevel: the bytes back, invalid UTF-8 as U+FFFD;
 * Metaspace: "▁" back to spaces) or, without one, the tokens joined by
 * spaces. Ids without a token are skipped. A tokenizer from
 * bert_tokenizer_load or bert_tokenizer_load_vocab then applies transformers'
 * clean_up_tokenization when tokenizer_config.json's
 * clean_up_tokenization_spaces says so (default true, BertTokenizer's
 * default); one from bert_tokenizer_load_json decodes exactly as
 * `tokenizers`' Tokenizer.decode. Returns a malloc'd NUL-terminated string
 * (caller frees), or NULL on allocation failure. */
char *bert_tokenizer_decode(const struct bert_tokenizer *tok, const int32_t *ids, size_t n,
                            bool skip_special);

/* The tokenizer's decoder on token strings, without the cleanup
 * bert_tokenizer_decode may add: transformers' convert_tokens_to_string
 * (the token-classification pipeline decodes its words with it, and
 * decodes decoded words again when it groups them). Strings need not be
 * vocabulary tokens. Returns a malloc'd NUL-terminated string (caller
 * frees), or NULL on allocation failure. */
char *bert_tokenizer_decode_tokens(const struct bert_tokenizer *tok, const char *const *tokens,
                                   size_t n);

#endif
