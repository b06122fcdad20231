/* The Hugging Face pipelines' post-processing for the extraction routes, on
 * one request's logits: token classification (TokenClassificationPipeline,
 * transformers 5.2), extractive question answering (QuestionAnsweringPipeline
 * of 4.57, the last release that has it) and zero-shot classification
 * (ZeroShotClassificationPipeline). tests/extraction/pipelines.py is the
 * reference and its README lists the rules; this file follows it function
 * for function.
 *
 * Offsets are in characters (Unicode code points) of the input text, as
 * the pipelines report them. All functions are pure and thread-safe; the
 * ones that allocate return false when out of memory and leave their
 * output empty. */
#ifndef PROTO_EXTRACT_H
#define PROTO_EXTRACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- windows -------------------------------------------------------- */

struct extract_span {
    size_t begin, end; /* [begin, end) */
};

/* Where the windows of a sequence part of `n_part` tokens start and stop
 * when at most `budget` of its tokens fit a window, `stride` of them
 * overlapping (tokenizers' Encoding::truncate, right side): a window every
 * budget - stride tokens until one reaches the end. `has_stride` false:
 * the first window only (plain truncation). `out` has room for
 * extract_window_count's answer. Returns the number of windows, or 0 when
 * the part cannot be cut that way (budget 0, or stride >= budget). */
size_t extract_window_count(size_t n_part, size_t budget, bool has_stride, size_t stride);
size_t extract_windows(size_t n_part, size_t budget, bool has_stride, size_t stride,
                       struct extract_span *out);

/* ---- text -------------------------------------------------------------- */

/* A UTF-8 text and where each of its characters starts. */
struct extract_text {
    const char *s;
    size_t len;            /* bytes */
    uint32_t *char_start;  /* (n_chars + 1): byte offset of character i; [n_chars] = len */
    size_t n_chars;
};

/* Index `s` (valid UTF-8). False when out of memory. */
bool extract_text_init(struct extract_text *t, const char *s, size_t len);
void extract_text_free(struct extract_text *t);
/* Byte offset -> character offset (the number of characters before it). */
uint32_t extract_text_char(const struct extract_text *t, uint32_t byte_offset);
/* Python's t[a:b] over characters, as bytes [*from, *from + *len): both
 * ends clipped to the text, empty when b <= a. */
void extract_text_slice(const struct extract_text *t, uint32_t a, uint32_t b, size_t *from,
                        size_t *len);

/* The tokenizer's decoder on token strings (transformers'
 * convert_tokens_to_string): malloc'd text, NULL when out of memory. */
typedef char *(*extract_decode_fn)(const void *ctx, const char *const *tokens, size_t n);

/* ---- token classification ------------------------------------------- */

enum ner_strategy {
    NER_STRATEGY_NONE,
    NER_STRATEGY_SIMPLE,
    NER_STRATEGY_FIRST,
    NER_STRATEGY_AVERAGE,
    NER_STRATEGY_MAX,
};

/* "none" | "simple" | "first" | "average" | "max"; false when unknown. */
bool ner_strategy_parse(const char *name, enum ner_strategy *out);

/* One window the model ran: every token, specials included. */
struct ner_window {
    size_t n;
    const int32_t *ids;        /* (n) */
    const char *const *tokens; /* (n) token strings (the vocabulary's) */
    const uint8_t *special;    /* (n) 1: a token the template added */
    const uint32_t *start;     /* (n) character offsets into the text */
    const uint32_t *end;       /* (n) */
    const float *logits;       /* (n x n_labels) */
};

struct ner_options {
    enum ner_strategy strategy;
    size_t n_labels;
    const char *const *id2label;  /* (n_labels) */
    const char *const *ignore;    /* labels to drop (compared with entity / entity_group) */
    size_t n_ignore;
    bool word_aware;              /* the model has a continuing-subword prefix ("##") */
    int32_t unk_id;               /* the unknown token, -1 if none */
    extract_decode_fn decode;
    const void *decode_ctx;
};

struct ner_entity {
    int32_t label;   /* id2label index; for a group, its first member's */
    double score;
    uint32_t index;  /* position in its window (NER_STRATEGY_NONE only) */
    char *word;      /* malloc'd */
    uint32_t start, end;
};

struct ner_result {
    struct ner_entity *e;
    size_t n, cap;
};

/* The pipeline's entities for one text over its windows (several windows
 * are merged where they overlap). The group name of a label is what
 * follows its first '-' (ner_group_name). */
bool ner_postprocess(const struct extract_text *text, const struct ner_window *windows,
                     size_t n_windows, const struct ner_options *o, struct ner_result *out);
void ner_result_free(struct ner_result *r);
/* "B-PER" -> "PER", "O" -> "O": a pointer into `label`. */
const char *ner_group_name(const char *label);

/* ---- question answering --------------------------------------------- */

/* One question + context chunk. */
struct qa_window {
    size_t n;
    const int32_t *ids;       /* (n) */
    const uint8_t *sequence;  /* (n) 0 question, 1 context, other: template special */
    const uint32_t *word;     /* (n) word index within its sequence (UINT32_MAX: none) */
    const uint32_t *start;    /* (n) character offsets into the token's own text (the */
    const uint32_t *end;      /* (n) context or the question), as Encoding.offsets */
    const float *logits;      /* (n x 2): start logit, end logit */
};

struct qa_options {
    uint32_t top_k;             /* >= 1 */
    uint32_t max_answer_len;    /* >= 1, tokens */
    bool handle_impossible_answer;
    bool align_to_words;
    int32_t cls_id;             /* the CLS token id (kept in the softmax), -1 if none */
};

struct qa_answer {
    double score;
    uint32_t start, end;  /* characters, the answer is context[start:end] as Python
                           * slices (a span from a question token can run past the
                           * context or backwards); the impossible answer is 0, 0 */
};

/* The pipeline's answers, best first (at most top_k; answers whose text is
 * equal ignoring case are one, scores summed). *out is malloc'd. */
bool qa_postprocess(const struct extract_text *context, const struct qa_window *windows,
                    size_t n_windows, const struct qa_options *o, struct qa_answer **out,
                    size_t *n_out);

/* ---- zero-shot classification --------------------------------------- */

/* The entailment class as the pipeline finds it: the first id, in id order,
 * whose label starts with "entail" in any case; -1 when none does. A scan
 * of a few names, so callers need not keep it. */
int zs_entailment_id(const char *const *id2label, size_t n);

/* Scores of n_labels hypotheses from their logits (n_labels x n_classes)
 * and their order, best first (ties: the later label first). With
 * multi_label or one label, per label the softmax of [contradiction,
 * entailment] (contradiction: class 0, or the last when entailment is 0);
 * otherwise the softmax of the entailment logits across labels. */
void zs_scores(const float *logits, size_t n_labels, size_t n_classes, int entailment,
               bool multi_label, double *scores, size_t *order);

#endif
