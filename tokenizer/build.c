/* The steps every loader shares (build.h): model lookups, role tokens,
 * post-processor templates, and tok_finish, the last step of every load. */
#include "build.h"

#include <stdlib.h>
#include <string.h>

#include "xform.h"

char *tok_strndup(const char *s, size_t len)
{
    char *p = malloc(len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

int32_t tok_model_token_to_id(const struct bert_tokenizer *tok, const char *s, size_t len)
{
    switch (tok->kind) {
    case BERT_TOKENIZER_BPE:
        return tok_vocab_get(&tok->bpe.vocab, s, len);
    case BERT_TOKENIZER_UNIGRAM:
        return tok_vocab_get(&tok->unigram.vocab, s, len);
    default:
        return tok_vocab_get(&tok->wp.vocab, s, len);
    }
}

const char *tok_model_id_to_token(const struct bert_tokenizer *tok, int32_t id)
{
    switch (tok->kind) {
    case BERT_TOKENIZER_BPE:
        return tok_vocab_token(&tok->bpe.vocab, id);
    case BERT_TOKENIZER_UNIGRAM:
        return tok_unigram_piece(&tok->unigram, id);
    default:
        return tok_vocab_token(&tok->wp.vocab, id);
    }
}

size_t tok_model_size(const struct bert_tokenizer *tok)
{
    switch (tok->kind) {
    case BERT_TOKENIZER_BPE:
        return tok->bpe.vocab.n_ids;
    case BERT_TOKENIZER_UNIGRAM:
        return tok->unigram.n;
    default:
        return tok->wp.vocab.n_ids;
    }
}

int32_t tok_lookup_id(const struct bert_tokenizer *tok, const char *s, size_t len)
{
    const struct tok_added_token *t = tok_added_find(&tok->added, s, len);
    return t ? t->id : tok_model_token_to_id(tok, s, len);
}

bool tok_add_special(struct bert_tokenizer *tok, const char *content, bool lstrip)
{
    size_t len = strlen(content);
    if (len == 0 || tok_added_find(&tok->added, content, len))
        return true;
    int32_t id = tok_model_token_to_id(tok, content, len);
    if (id < 0) {
        /* A new id as `tokenizers` assigns it: after the model vocabulary, or
         * after the largest added id already beyond it. */
        int32_t base = (int32_t)tok_model_size(tok);
        id = base;
        for (size_t i = 0; i < tok->added.n; i++)
            if (tok->added.tokens[i].id >= id)
                id = tok->added.tokens[i].id + 1;
    }
    return tok_added_push(&tok->added, content, len, id, true, false, lstrip, false, false);
}

bool tok_template_bert(struct bert_tokenizer *tok, int32_t cls_id, int32_t sep_id)
{
    struct tok_template *t[2] = {&tok->single, &tok->pair};
    for (int k = 0; k < 2; k++) {
        size_t n = k == 0 ? 3 : 5;
        t[k]->items = calloc(n, sizeof *t[k]->items);
        if (t[k]->items == NULL)
            return false;
        t[k]->n = n;
        t[k]->n_added = k == 0 ? 2 : 3;
        for (size_t i = 0; i < n; i++) {
            struct tok_template_item *it = &t[k]->items[i];
            it->type_id = i >= 3 ? 1 : 0;
            if (i == 1 || i == 3) {
                it->is_sequence = true;
                it->sequence = i == 3;
                continue;
            }
            it->ids = malloc(sizeof *it->ids);
            if (it->ids == NULL)
                return false;
            it->ids[0] = i == 0 ? cls_id : sep_id;
            it->n_ids = 1;
        }
    }
    tok->has_template = true;
    return true;
}

bool tok_template_roberta(struct bert_tokenizer *tok, int32_t cls_id, int32_t sep_id)
{
    /* <s>:0 $A:0 </s>:0 and <s> $A </s> </s> $B </s>, all type 0. */
    static const int32_t single[] = {0, -1, 1}, pair[] = {0, -1, 1, 1, -2, 1};
    struct tok_template *t[2] = {&tok->single, &tok->pair};
    const int32_t *layout[2] = {single, pair};
    for (int k = 0; k < 2; k++) {
        size_t n = k == 0 ? 3 : 6;
        t[k]->items = calloc(n, sizeof *t[k]->items);
        if (t[k]->items == NULL)
            return false;
        t[k]->n = n;
        t[k]->n_added = n - (size_t)(k + 1);
        for (size_t i = 0; i < n; i++) {
            struct tok_template_item *it = &t[k]->items[i];
            if (layout[k][i] < 0) {
                it->is_sequence = true;
                it->sequence = layout[k][i] == -2;
                continue;
            }
            if ((it->ids = malloc(sizeof *it->ids)) == NULL)
                return false;
            it->ids[0] = layout[k][i] == 0 ? cls_id : sep_id;
            it->n_ids = 1;
        }
    }
    tok->has_template = true;
    tok->zero_type_ids = true;
    return true;
}

enum bert_status tok_template_from_roles(struct bert_tokenizer *tok, bool roberta,
                                         const char *source, struct bert_error *err)
{
    const struct tok_added_token *cls =
        tok_added_find(&tok->added, tok->cls_token, strlen(tok->cls_token));
    const struct tok_added_token *sep =
        tok_added_find(&tok->added, tok->sep_token, strlen(tok->sep_token));
    if (cls == NULL || sep == NULL)
        return bert_error_set(err, BERT_E_FORMAT, "%s: the cls and sep tokens must not be empty",
                              source);
    if (!(roberta ? tok_template_roberta(tok, cls->id, sep->id)
                  : tok_template_bert(tok, cls->id, sep->id)))
        return bert_error_set(err, BERT_E_NOMEM, "%s: out of memory", source);
    return BERT_OK;
}

bool tok_normalize_segment(const struct bert_tokenizer *tok, const uint8_t *text, size_t start,
                           size_t end, struct tok_normalized *out, struct tok_normseq_work *work)
{
    if (tok->bert_normalizer)
        return tok_normalize(&tok->norm, text, start, end, out);
    return tok_normalized_identity(text, start, end, out) &&
           tok_normseq_apply(&tok->normseq, out, (uint32_t)start, work);
}

static int32_t role_id(const struct bert_tokenizer *tok, const char *token)
{
    return token ? tok_lookup_id(tok, token, strlen(token)) : -1;
}

/* The model's unknown token, as a string (NULL: none). */
static const char *model_unk(const struct bert_tokenizer *tok)
{
    switch (tok->kind) {
    case BERT_TOKENIZER_BPE:
        return tok->bpe.unk_token;
    case BERT_TOKENIZER_UNIGRAM:
        return tok_unigram_piece(&tok->unigram, tok->unigram.unk_id);
    default:
        return tok->wp.unk_token;
    }
}

enum bert_status tok_finish(struct bert_tokenizer *tok, const char *source,
                            struct bert_error *err)
{
    if (tok->kind == BERT_TOKENIZER_WORDPIECE) {
        struct tok_wordpiece *wp = &tok->wp;
        wp->unk_id = tok_vocab_get(&wp->vocab, wp->unk_token, strlen(wp->unk_token));
        if (wp->unk_id < 0)
            return bert_error_set(err, BERT_E_FORMAT,
                                  "%s: the unknown token \"%.64s\" is not in the vocabulary",
                                  source, wp->unk_token);
        wp->prefix_hash = TOK_VOCAB_HASH_INIT;
        for (size_t i = 0; i < wp->prefix_len; i++)
            wp->prefix_hash = tok_vocab_hash_step(wp->prefix_hash, (uint8_t)wp->prefix[i]);
    }

    /* Normalized added tokens match the normalized text, so their patterns
     * are normalized too. */
    struct tok_normalized norm = {0};
    struct tok_normseq_work work = {0};
    bool ok = true;
    for (size_t i = 0; i < tok->added.n && ok; i++) {
        struct tok_added_token *t = &tok->added.tokens[i];
        t->pattern = t->content;
        t->pattern_len = t->len;
        if (!t->normalized)
            continue;
        if (!tok_normalize_segment(tok, (const uint8_t *)t->content, 0, t->len, &norm, &work) ||
            (t->pattern = tok_strndup(norm.bytes.data, norm.len)) == NULL) {
            t->pattern = t->content;
            ok = false;
            break;
        }
        t->pattern_len = norm.len;
    }
    tok_normalized_release(&norm);
    tok_normalized_release(&work.tmp);
    tok_buf_release(&work.changes);
    if (!ok || !tok_added_build(&tok->added))
        return bert_error_set(err, BERT_E_NOMEM, "%s: out of memory", source);

    const char *unk = tok->unk_token ? tok->unk_token : model_unk(tok);
    if (unk == NULL)
        unk = "<unk>";
    tok->unk_id = role_id(tok, unk);
    tok->sep_id = role_id(tok, tok->sep_token);
    tok->pad_id = role_id(tok, tok->pad_token);
    tok->cls_id = role_id(tok, tok->cls_token);
    tok->mask_id = role_id(tok, tok->mask_token);
    tok->bos_id = role_id(tok, tok->bos_token);
    tok->eos_id = role_id(tok, tok->eos_token);

    tok->vocab_size = tok_model_size(tok);
    for (size_t i = 0; i < tok->added.n; i++)
        if ((size_t)tok->added.tokens[i].id + 1 > tok->vocab_size)
            tok->vocab_size = (size_t)tok->added.tokens[i].id + 1;
    return BERT_OK;
}

static void template_free(struct tok_template *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->items[i].ids);
    free(t->items);
    memset(t, 0, sizeof *t);
}

void tok_release(struct bert_tokenizer *tok)
{
    tok_wordpiece_free(&tok->wp);
    tok_bpe_free(&tok->bpe);
    tok_unigram_free(&tok->unigram);
    tok_normseq_free(&tok->normseq);
    tok_added_free(&tok->added);
    template_free(&tok->single);
    template_free(&tok->pair);
    free(tok->decoder_prefix);
    free(tok->unk_token);
    free(tok->sep_token);
    free(tok->pad_token);
    free(tok->cls_token);
    free(tok->mask_token);
    free(tok->bos_token);
    free(tok->eos_token);
}

