#!/usr/bin/python3
"""Entity-level precision, recall and F1 as CoNLL-2000's conlleval.pl counts
them (and seqeval's default mode): a chunk starts at B-X, at I-X after O or
after another type, and ends before the next start, an O or a sentence end;
a predicted chunk is correct when a gold chunk has the same first token, last
token and type. Tags are IOB2 (B-TYPE, I-TYPE, O); an I- tag that follows O
or another type opens a chunk, so IOB1 also reads the conlleval way.

The reference for `bert eval` on token-classification data
(tests/extraction/README.md):

    /usr/bin/python3 tests/extraction/conlleval.py GOLD PRED   # CoNLL files, tag last
    /usr/bin/python3 tests/extraction/conlleval.py --self-test
"""

import sys


def read_conll(path):
    """Sentences of a CoNLL file as [(tokens, tags)]: one token per line with
    the tag in the last column, blank lines between sentences, -DOCSTART-
    lines skipped."""
    sentences, tokens, tags = [], [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if not fields or fields[0] == "-DOCSTART-":
                if tokens:
                    sentences.append((tokens, tags))
                tokens, tags = [], []
                continue
            tokens.append(fields[0])
            tags.append(fields[-1])
    if tokens:
        sentences.append((tokens, tags))
    return sentences


def _split(tag):
    if tag == "O":
        return "O", ""
    prefix, _, kind = tag.partition("-")
    return prefix, kind


def _starts(prev_tag, tag, prev_type, kind):
    if tag in ("B", "S"):
        return True
    if (prev_tag, tag) in (("E", "E"), ("E", "I"), ("S", "E"), ("S", "I"), ("O", "E"),
                           ("O", "I")):
        return True
    return tag not in ("O", ".") and prev_type != kind


def _ends(prev_tag, tag, prev_type, kind):
    if prev_tag in ("E", "S"):
        return True
    if prev_tag in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev_tag not in ("O", ".") and prev_type != kind


def chunks(tags):
    """{(first, last, type)} of one sentence's tag sequence."""
    out, start = set(), None
    prev_tag, prev_type = "O", ""
    for i, t in enumerate(list(tags) + ["O"]):
        tag, kind = _split(t)
        if start is not None and _ends(prev_tag, tag, prev_type, kind):
            out.add((start, i - 1, prev_type))
            start = None
        if _starts(prev_tag, tag, prev_type, kind):
            start = i
        prev_tag, prev_type = tag, kind
    return out


def _prf(correct, guessed, gold):
    p = correct / guessed if guessed else 0.0
    r = correct / gold if gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": p, "recall": r, "f1": f, "correct": correct, "predicted": guessed,
            "gold": gold}


def evaluate(gold_tags, pred_tags):
    """gold_tags, pred_tags: lists of tag lists (one per sentence). Returns
    {"overall": {precision, recall, f1, correct, predicted, gold},
     "types": {TYPE: {...}}, "token_accuracy": float}."""
    if len(gold_tags) != len(pred_tags):
        raise ValueError("different numbers of sentences")
    correct, guessed, gold = {}, {}, {}
    tokens = right = 0
    for g, p in zip(gold_tags, pred_tags):
        if len(g) != len(p):
            raise ValueError("a sentence has different lengths")
        tokens += len(g)
        right += sum(a == b for a, b in zip(g, p))
        gc, pc = chunks(g), chunks(p)
        for c in gc:
            gold[c[2]] = gold.get(c[2], 0) + 1
        for c in pc:
            guessed[c[2]] = guessed.get(c[2], 0) + 1
        for c in gc & pc:
            correct[c[2]] = correct.get(c[2], 0) + 1
    types = sorted(set(gold) | set(guessed))
    return {"overall": _prf(sum(correct.values()), sum(guessed.values()), sum(gold.values())),
            "types": {t: _prf(correct.get(t, 0), guessed.get(t, 0), gold.get(t, 0))
                      for t in types},
            "token_accuracy": right / tokens if tokens else 0.0}


def report(result):
    o = result["overall"]
    lines = [f"accuracy {result['token_accuracy']:.4f}; precision {o['precision']:.4f}; "
             f"recall {o['recall']:.4f}; F1 {o['f1']:.4f} ({o['correct']} correct of "
             f"{o['predicted']} predicted, {o['gold']} gold)"]
    for t, v in result["types"].items():
        lines.append(f"  {t}: precision {v['precision']:.4f}; recall {v['recall']:.4f}; "
                     f"F1 {v['f1']:.4f} ({v['predicted']} predicted, {v['gold']} gold)")
    return "\n".join(lines)


def self_test():
    """Hand-counted cases, including the conlleval rules seqeval shares."""
    assert chunks(["B-PER", "I-PER", "O", "B-LOC"]) == {(0, 1, "PER"), (3, 3, "LOC")}
    assert chunks(["I-PER", "I-PER", "O"]) == {(0, 1, "PER")}            # I after O opens
    assert chunks(["B-PER", "I-LOC", "I-LOC"]) == {(0, 0, "PER"), (1, 2, "LOC")}
    assert chunks(["B-PER", "B-PER"]) == {(0, 0, "PER"), (1, 1, "PER")}
    assert chunks(["O", "O"]) == set()
    assert chunks(["B-MISC"]) == {(0, 0, "MISC")}                        # ends at sentence end
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    pred = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "B-MISC"]]
    r = evaluate(gold, pred)["overall"]
    assert (r["correct"], r["predicted"], r["gold"]) == (2, 4, 3)
    assert abs(r["f1"] - 2 * (2 / 4) * (2 / 3) / (2 / 4 + 2 / 3)) < 1e-12
    # A chunk cut short is wrong, not half right.
    r = evaluate([["B-PER", "I-PER"]], [["B-PER", "O"]])["overall"]
    assert r["correct"] == 0 and r["predicted"] == 1


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        print("conlleval self-test passed")
        return
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    gold, pred = read_conll(sys.argv[1]), read_conll(sys.argv[2])
    print(report(evaluate([t for _, t in gold], [t for _, t in pred])))


if __name__ == "__main__":
    main()
