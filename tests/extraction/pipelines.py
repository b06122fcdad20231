"""The Hugging Face pipelines' answers for token classification, extractive
question answering and zero-shot classification, computed from model logits.

Written for bertserve from the pipelines' documented behaviour (transformers
TokenClassificationPipeline and ZeroShotClassificationPipeline of 5.2, and
QuestionAnsweringPipeline of 4.57, the last release that has it: 5.0 removed
the extractive question-answering pipeline; 4.54 added the merging of answers
with the same text). No transformers code is used or copied; tests/extraction/
README.md lists every rule implemented here with the quirks kept on purpose.

Inputs are whole encodings from the official Rust tokenizer
(node/encode.js): per token its id, string, type id, character offsets (code
points, as the Python binding gives them), word id, sequence id and
special-token flag. The windows the pipelines feed the model (token
classification with `stride`, question-answering chunks, zero-shot's
truncated premise) are cut here from the whole encoding exactly as
`tokenizers`' Encoding.truncate cuts them in 0.22 (tokenizers 0.23.x stops
tokenizing at max_length and loses the windows: huggingface/tokenizers#2091).

Numbers are float64 throughout; the pipelines compute the same formulas in
float32 numpy.
"""

import math

# ---------------------------------------------------------------- decoders


def _bytes_to_unicode():
    """GPT-2's byte <-> printable character table (ByteLevel)."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1))
                 + list(range(0xAE, 0xFF + 1)))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


CHAR_TO_BYTE = {c: b for b, c in _bytes_to_unicode().items()}

# tokenizers' WordPiece decoder `cleanup`, applied to each token after its
# joining space was added (so the multi-word rule " do not" never fires).
WORDPIECE_CLEANUP = [(" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"),
                     (" n't", "n't"), (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"),
                     (" 've", "'ve"), (" 're", "'re")]


class Decoder:
    """transformers' convert_tokens_to_string for a fast tokenizer: the
    tokenizer.json decoder applied to token strings (WordPiece, ByteLevel,
    Metaspace; none joins with spaces)."""

    def __init__(self, spec):
        self.spec = spec
        kind = spec["type"] if spec else None
        if kind not in (None, "WordPiece", "ByteLevel", "Metaspace"):
            raise NotImplementedError(f"decoder {kind}")
        self.kind = kind

    def decode(self, tokens):
        if self.kind is None:
            return " ".join(tokens)
        if self.kind == "WordPiece":
            return "".join(self._wordpiece(i, t) for i, t in enumerate(tokens))
        if self.kind == "ByteLevel":
            raw = bytearray()
            for t in tokens:
                # A token with any character outside the table is kept as
                # its own UTF-8 bytes (so decoding decoded text adds bytes
                # back only where every character maps).
                if all(c in CHAR_TO_BYTE for c in t):
                    raw.extend(CHAR_TO_BYTE[c] for c in t)
                else:
                    raw.extend(t.encode("utf-8"))
            return raw.decode("utf-8", errors="replace")
        return "".join(self._metaspace(i, t) for i, t in enumerate(tokens))

    def _wordpiece(self, i, token):
        prefix = self.spec.get("prefix", "##")
        if i != 0:
            token = token[len(prefix):] if token.startswith(prefix) else " " + token
        if self.spec.get("cleanup", True):
            for dirty, clean in WORDPIECE_CLEANUP:
                token = token.replace(dirty, clean)
        return token

    def _metaspace(self, i, token):
        rep = self.spec.get("replacement", "\u2581")
        scheme = self.spec.get("prepend_scheme")
        if scheme is None:  # older files: add_prefix_space
            scheme = "always" if self.spec.get("add_prefix_space", True) else "never"
        drop_first = i == 0 and scheme != "never"
        return "".join(("" if drop_first else " ") if c == rep else c for c in token)


class TokenizerInfo:
    """What the pipelines read from a tokenizer besides the encodings."""

    def __init__(self, tokenizer_json, unk_token=None):
        """unk_token: the tokenizer's unknown-token role (tokenizer_config.json,
        or the tokenizer class's default: "<unk>" for RoBERTa's byte-level
        BPE, whose model names none); default: the model's own."""
        model = tokenizer_json["model"]
        vocab = model.get("vocab")
        ids = {}
        if isinstance(vocab, dict):
            ids.update(vocab)
        elif isinstance(vocab, list):  # Unigram: [[piece, score], ...]
            ids.update({piece: i for i, (piece, _) in enumerate(vocab)})
        for t in tokenizer_json.get("added_tokens", []):
            ids[t["content"]] = t["id"]
        unk = unk_token or model.get("unk_token")
        if unk is None and model.get("unk_id") is not None:
            unk = vocab[model["unk_id"]][0]
        self.unk_id = ids.get(unk) if unk is not None else None
        # The pipelines' "word aware" test: a model with a continuing
        # subword prefix ("##"); BPE without one and Unigram use the
        # whitespace heuristic.
        self.subword_prefix = model.get("continuing_subword_prefix") or None
        self.decoder = Decoder(tokenizer_json.get("decoder"))
        self.ids = ids


def softmax(row):
    m = max(row)
    e = [math.exp(x - m) for x in row]
    s = sum(e)
    return [x / s for x in e]


def argmax(row):
    """First index of the largest value (numpy's argmax)."""
    best = 0
    for i, x in enumerate(row):
        if x > row[best]:
            best = i
    return best


# ------------------------------------------------------------------ windows


class WindowError(ValueError):
    """An input the pipeline cannot cut into windows (it raises too)."""


def part_windows(n_part, budget, stride):
    """Index ranges [start, stop) of a sequence part of n_part tokens cut to
    `budget` tokens with `stride` tokens of overlap (tokenizers'
    Encoding::truncate, right side): windows start every budget - stride
    tokens until one reaches the end. None stride: only the first window
    (plain truncation)."""
    if n_part <= budget:
        return [(0, n_part)]
    if budget <= 0:
        raise WindowError("the other tokens leave no room")
    if stride is None:
        return [(0, budget)]
    if stride >= budget:
        raise WindowError(f"stride {stride} must be less than the {budget} tokens a window holds")
    out, start = [], 0
    while True:
        stop = min(start + budget, n_part)
        out.append((start, stop))
        if stop == n_part:
            return out
        start += budget - stride


def split_windows(enc, part_sequence, max_length, stride):
    """Windows of a whole encoding: the tokens of sequence `part_sequence`
    (0: the text, 1: the pair) are cut, the other tokens (template specials,
    the question) are kept in every window. Returns lists of token indices
    into `enc`."""
    part = [i for i, s in enumerate(enc["sequence_ids"]) if s == part_sequence]
    if part and part != list(range(part[0], part[-1] + 1)):
        raise WindowError("the part to cut is not contiguous")
    n = len(enc["ids"])
    if n <= max_length:
        return [list(range(n))]
    head = list(range(part[0])) if part else list(range(n))
    tail = list(range(part[-1] + 1, n)) if part else []
    budget = max_length - (n - len(part))
    return [head + part[a:b] + tail for a, b in part_windows(len(part), budget, stride)]


def window_view(enc, idx):
    """The encoding restricted to the token indices `idx`."""
    return {k: [v[i] for i in idx] for k, v in enc.items()}


# ------------------------------------------------------ token classification

STRATEGIES = ("none", "simple", "first", "average", "max")


def _is_subword(text, token, start, end, tok):
    if tok.subword_prefix:
        # WordPiece: a token shorter or longer than its text carries the
        # prefix (or was normalised to another length).
        return len(token) != len(text[start:end])
    # No word-aware model: a token is a word start when a space precedes
    # it or is its first character.
    return start > 0 and " " not in text[start - 1:start + 1]


def _pre_entities(text, win, probs, tok):
    out = []
    for idx, row in enumerate(probs):
        if win["special"][idx]:
            continue
        word = win["tokens"][idx]
        start, end = win["offsets"][idx]
        is_subword = _is_subword(text, word, start, end, tok)
        if win["ids"][idx] == tok.unk_id:
            word, is_subword = text[start:end], False
        out.append({"word": word, "scores": row, "start": start, "end": end, "index": idx,
                    "is_subword": is_subword})
    return out


def _aggregate_word(group, strategy, id2label, tok):
    word = tok.decoder.decode([e["word"] for e in group])
    if strategy == "first":
        scores = group[0]["scores"]
    elif strategy == "max":
        best = group[0]
        for e in group[1:]:
            if max(e["scores"]) > max(best["scores"]):
                best = e
        scores = best["scores"]
    else:  # average
        scores = [sum(col) / len(group) for col in zip(*(e["scores"] for e in group))]
    i = argmax(scores)
    return {"entity": id2label[i], "score": scores[i], "word": word,
            "start": group[0]["start"], "end": group[-1]["end"]}


def _aggregate_words(pre, strategy, id2label, tok):
    words, group = [], None
    for e in pre:
        if group is None:
            group = [e]
        elif e["is_subword"]:
            group.append(e)
        else:
            words.append(_aggregate_word(group, strategy, id2label, tok))
            group = [e]
    if group is not None:
        words.append(_aggregate_word(group, strategy, id2label, tok))
    return words


def _tag(label):
    """(B or I, type): labels without a B-/I- prefix count as I-label."""
    if label.startswith("B-"):
        return "B", label[2:]
    if label.startswith("I-"):
        return "I", label[2:]
    return "I", label


def _group(entities, tok):
    e0 = entities[0]
    return {"entity_group": e0["entity"].split("-", 1)[-1],
            "score": sum(e["score"] for e in entities) / len(entities),
            "word": tok.decoder.decode([e["word"] for e in entities]),
            "start": e0["start"], "end": entities[-1]["end"]}


def _group_entities(entities, tok):
    groups, current = [], []
    for e in entities:
        if current:
            bi, tag = _tag(e["entity"])
            if tag == _tag(current[-1]["entity"])[1] and bi != "B":
                current.append(e)
                continue
            groups.append(_group(current, tok))
        current = [e]
    if current:
        groups.append(_group(current, tok))
    return groups


def aggregate(pre, strategy, id2label, tok):
    """One window's entities from its gathered tokens (dicts with scores,
    word, start, end, index, is_subword): the pipeline's `aggregate`."""
    if strategy in ("none", "simple"):
        ents = []
        for p in pre:
            i = argmax(p["scores"])
            ents.append({"entity": id2label[i], "score": p["scores"][i], "index": p["index"],
                         "word": p["word"], "start": p["start"], "end": p["end"]})
    else:
        ents = _aggregate_words(pre, strategy, id2label, tok)
    return ents if strategy == "none" else _group_entities(ents, tok)


def _merge_overlapping(entities):
    """Entities of overlapping windows: sorted by start (stably), an entity
    that starts inside the previous one replaces it when it is longer, or as
    long with a higher score."""
    if not entities:
        return entities
    entities = sorted(entities, key=lambda e: e["start"])
    out, prev = [], entities[0]
    for e in entities:
        if prev["start"] <= e["start"] < prev["end"]:
            lp, le = prev["end"] - prev["start"], e["end"] - e["start"]
            if le > lp or (le == lp and e["score"] > prev["score"]):
                prev = e
        else:
            out.append(prev)
            prev = e
    out.append(prev)
    return out


def token_classification(text, enc, windows, logits, id2label, tok, strategy="simple",
                         ignore_labels=None):
    """The pipeline's answer for one text: `windows` (token index lists) and
    their `logits` ((n_tokens, n_labels) per window). Keys in the
    pipeline's order; scores float64."""
    if strategy not in STRATEGIES:
        raise ValueError(f"aggregation_strategy {strategy!r}")
    if ignore_labels is None:
        ignore_labels = ["O"]
    found = []
    for idx, rows in zip(windows, logits):
        win = window_view(enc, idx)
        pre = _pre_entities(text, win, [softmax(r) for r in rows], tok)
        found += [e for e in aggregate(pre, strategy, id2label, tok)
                  if e.get("entity") not in ignore_labels
                  and e.get("entity_group") not in ignore_labels]
    if len(windows) > 1:
        found = _merge_overlapping(found)
    return found


# ------------------------------------------------------- question answering


def qa_defaults(model_max_length, max_seq_len=None, doc_stride=None):
    """The pipeline's defaults: max_seq_len min(model_max_length, 384),
    doc_stride min(max_seq_len // 2, 128)."""
    if max_seq_len is None:
        max_seq_len = min(model_max_length, 384)
    if doc_stride is None:
        doc_stride = min(max_seq_len // 2, 128)
    return max_seq_len, doc_stride


def qa_windows(enc, max_seq_len, doc_stride):
    """Question + context chunks: the context (sequence 1) cut with
    `doc_stride` tokens of overlap, the question and specials in each."""
    if doc_stride > max_seq_len:
        raise WindowError(f"doc_stride ({doc_stride}) is larger than max_seq_len ({max_seq_len})")
    return split_windows(enc, 1, max_seq_len, doc_stride)


def _word_chars(win, word):
    """Encoding.word_to_chars(word, sequence_index=1) inside one window."""
    toks = [i for i, (s, w) in enumerate(zip(win["sequence_ids"], win["word_ids"]))
            if s == 1 and w == word]
    return win["offsets"][toks[0]][0], win["offsets"][toks[-1]][1]


def _span_chars(win, s, e, align_to_words):
    if align_to_words and win["word_ids"][s] is not None and win["word_ids"][e] is not None:
        return _word_chars(win, win["word_ids"][s])[0], _word_chars(win, win["word_ids"][e])[1]
    return win["offsets"][s][0], win["offsets"][e][1]


def qa_spans(win, rows, cls_id, top_k, max_answer_len):
    """One chunk: start and end probabilities over the context tokens and
    every [CLS]-id token (the rest is masked out of the softmax), the null
    score P(start = 0) P(end = 0), then index 0 zeroed, and the best
    (start, end) pairs with start <= end < start + max_answer_len by
    P(start) P(end). Returns (spans [(score, s, e)], null score, number of
    spans with a positive score)."""
    allowed = [(sq == 1 or tid == cls_id) for sq, tid in zip(win["sequence_ids"], win["ids"])]

    def probs(col):
        vals = [r[col] for r, ok in zip(rows, allowed) if ok]
        m = max(vals)
        total = sum(math.exp(v - m) for v in vals)
        return [math.exp(r[col] - m) / total if ok else 0.0 for r, ok in zip(rows, allowed)]

    start, end = probs(0), probs(1)
    null = start[0] * end[0]
    start[0] = end[0] = 0.0
    spans = []
    for s, ps in enumerate(start):
        if ps == 0.0:
            continue
        for e in range(s, min(s + max_answer_len, len(end))):
            if end[e] > 0.0:
                spans.append((ps * end[e], s, e))
    spans.sort(key=lambda x: (-x[0], x[1], x[2]))
    return spans[:top_k], null, len(spans)


def question_answering(context, enc, windows, logits, cls_id, top_k=1,
                       handle_impossible_answer=False, max_answer_len=15, align_to_words=True):
    """The pipeline's answer for one (question, context): a dict, or a list
    when more than one answer remains. Answers whose text is equal ignoring
    case are one answer, the scores summed (transformers >= 4.54)."""
    pre_topk = top_k * 2 + 10 if align_to_words else top_k
    answers, min_null, short = [], 1000000.0, False
    for idx, rows in zip(windows, logits):
        win = window_view(enc, idx)
        spans, null, n_spans = qa_spans(win, rows, cls_id, pre_topk, max_answer_len)
        short = short or n_spans < pre_topk
        min_null = min(min_null, null)
        for score, s, e in spans:
            a, b = _span_chars(win, s, e, align_to_words)
            text = context[a:b]
            same = next((x for x in answers if x["answer"].lower() == text.lower()), None)
            if same:
                same["score"] += score
            else:
                answers.append({"score": score, "start": a, "end": b, "answer": text})
    if handle_impossible_answer:
        answers.append({"score": min_null, "start": 0, "end": 0, "answer": ""})
    if short and len(answers) < top_k:
        # A chunk with fewer possible spans than it asked for makes the
        # pipeline add zero-score pairs (reversed or masked, in numpy's
        # argpartition order) as answers; bertserve answers only the real
        # spans, so the two differ once those would be shown (README).
        raise WindowError(f"only {len(answers)} answers for top_k {top_k}")
    answers = sorted(answers, key=lambda x: -x["score"])[:top_k]
    return answers[0] if len(answers) == 1 else answers


# --------------------------------------------------- zero-shot classification

DEFAULT_TEMPLATE = "This example is {}."


def parse_labels(labels):
    """A comma-separated string is split and stripped (empty parts
    dropped); a list is taken as is."""
    if isinstance(labels, str):
        return [x.strip() for x in labels.split(",") if x.strip()]
    return list(labels)


def hypotheses(labels, template=DEFAULT_TEMPLATE):
    if not labels:
        raise ValueError("You must include at least one label and at least one sequence.")
    if template.format(labels[0]) == template:
        raise ValueError(f'The provided hypothesis_template "{template}" was not able to be '
                         "formatted with the target labels.")
    return [template.format(x) for x in labels]


def entailment_id(config):
    """The first label (label2id order, as config.json lists it) starting
    with "entail", any case; -1 when none does."""
    label2id = config.get("label2id") or {v: int(k) for k, v in config.get("id2label", {}).items()}
    for label, i in label2id.items():
        if label.lower().startswith("entail"):
            return i
    return -1


def zs_truncate(enc, max_length):
    """The premise (sequence 0) cut from the right until the pair fits
    (truncation only_first); a pair that cannot be made to fit is left
    whole, as the pipeline retries without truncation."""
    try:
        return split_windows(enc, 0, max_length, None)[0]
    except WindowError:
        return list(range(len(enc["ids"])))


def zero_shot(sequence, labels, logits, entail, multi_label=False):
    """logits: (n_labels, n_classes), one row per hypothesis. Scores: with
    multi_label (or one label) a softmax of [contradiction, entailment] per
    label (contradiction: class 0, or the last class when entailment is 0),
    otherwise a softmax of the entailment logits across labels. Sorted by
    score, ties with the later label first (numpy's argsort, reversed)."""
    if multi_label or len(labels) == 1:
        contra = -1 if entail == 0 else 0
        scores = [softmax([r[contra], r[entail]])[1] for r in logits]
    else:
        scores = softmax([r[entail] for r in logits])
    order = sorted(range(len(labels)), key=lambda i: (scores[i], i), reverse=True)
    return {"sequence": sequence, "labels": [labels[i] for i in order],
            "scores": [scores[i] for i in order]}
