#!/usr/bin/python3
"""Hand-checked cases for pipelines.py (the reference the extraction goldens
come from): the pipelines' documented examples and the rules with quirks.

    /usr/bin/python3 tests/extraction/test_pipelines.py
"""

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pipelines as pl  # noqa: E402

WORDPIECE = pl.Decoder({"type": "WordPiece", "prefix": "##", "cleanup": True})


class Tok:
    """A TokenizerInfo stand-in: WordPiece decoder, "##" prefix, unk id 100."""
    decoder, subword_prefix, unk_id = WORDPIECE, "##", 100


def encoding(text, tokens, offsets, pair_from=None):
    """A single-sequence encoding with [CLS]/[SEP] around `tokens`."""
    n = len(tokens)
    return {"ids": [101] + list(range(1000, 1000 + n)) + [102],
            "tokens": ["[CLS]"] + tokens + ["[SEP]"], "type_ids": [0] * (n + 2),
            "offsets": [[0, 0]] + offsets + [[0, 0]],
            "word_ids": [None] + list(range(n)) + [None],
            "sequence_ids": [None] + [0] * n + [None], "special": [1] + [0] * n + [1]}


def one_hot_logits(labels, id2label, strong=5.0):
    """Logits that pick `labels` (one per token, specials included)."""
    return [[strong if id2label[i] == lab else 0.0 for i in range(len(id2label))] for lab in labels]


class Windows(unittest.TestCase):
    def test_tokenizers_truncate(self):
        # tokenizers' Encoding::truncate: [1, 2, 3] to 2 with stride 1 gives
        # [1, 2] and the overflow [2, 3].
        self.assertEqual(pl.part_windows(3, 2, 1), [(0, 2), (1, 3)])
        self.assertEqual(pl.part_windows(10, 4, 1), [(0, 4), (3, 7), (6, 10)])
        self.assertEqual(pl.part_windows(10, 4, 0), [(0, 4), (4, 8), (8, 10)])
        self.assertEqual(pl.part_windows(10, 4, None), [(0, 4)])
        self.assertEqual(pl.part_windows(3, 4, 3), [(0, 3)])  # fits: stride not checked
        with self.assertRaises(pl.WindowError):
            pl.part_windows(10, 4, 4)
        with self.assertRaises(pl.WindowError):
            pl.part_windows(10, 0, None)

    def test_specials_in_every_window(self):
        enc = encoding("a b c d e", list("abcde"), [[i * 2, i * 2 + 1] for i in range(5)])
        wins = pl.split_windows(enc, 0, 5, 1)  # 3 text tokens a window, step 2
        self.assertEqual([[enc["tokens"][i] for i in w] for w in wins],
                         [["[CLS]", "a", "b", "c", "[SEP]"], ["[CLS]", "c", "d", "e", "[SEP]"]])


class TokenClassification(unittest.TestCase):
    ID2LABEL = ["O", "B-TAG", "I-TAG", "B-TAG2", "I-TAG2"]

    def test_docstring_example(self):
        # (A, B-TAG), (B, I-TAG), (C, I-TAG), (D, B-TAG2), (E, B-TAG2) ->
        # ABC as TAG, D and E as two TAG2 entities.
        text = "A B C D E"
        enc = encoding(text, list("ABCDE"), [[i * 2, i * 2 + 1] for i in range(5)])
        logits = [one_hot_logits(["O", "B-TAG", "I-TAG", "I-TAG", "B-TAG2", "B-TAG2", "O"],
                                 self.ID2LABEL)]
        out = pl.token_classification(text, enc, [list(range(7))], logits, self.ID2LABEL, Tok(),
                                      "simple")
        self.assertEqual([(e["entity_group"], e["word"], e["start"], e["end"]) for e in out],
                         [("TAG", "A B C", 0, 5), ("TAG2", "D", 6, 7), ("TAG2", "E", 8, 9)])
        p = math.exp(5) / (math.exp(5) + 4)
        self.assertAlmostEqual(out[0]["score"], p, places=12)

    def test_words_cannot_split(self):
        # micro|##soft tagged B-TAG / B-TAG2: "first" keeps the first
        # token's label for the whole word, "simple" splits it.
        text = "microsoft"
        enc = encoding(text, ["micro", "##soft"], [[0, 5], [5, 9]])
        logits = [one_hot_logits(["O", "B-TAG", "B-TAG2", "O"], self.ID2LABEL)]
        simple = pl.token_classification(text, enc, [list(range(4))], logits, self.ID2LABEL, Tok(),
                                         "simple")
        first = pl.token_classification(text, enc, [list(range(4))], logits, self.ID2LABEL, Tok(),
                                        "first")
        self.assertEqual([e["word"] for e in simple], ["micro", "##soft"])
        self.assertEqual([(e["entity_group"], e["word"]) for e in first], [("TAG", "microsoft")])

    def test_ignore_labels_compare_the_field_shown(self):
        # "none" compares the full label, the aggregated forms the group.
        text = "A"
        enc = encoding(text, ["A"], [[0, 1]])
        logits = [one_hot_logits(["O", "B-TAG", "O"], self.ID2LABEL)]
        run = lambda s, ig: pl.token_classification(text, enc, [[0, 1, 2]], logits,  # noqa: E731
                                                    self.ID2LABEL, Tok(), s, ig)
        self.assertEqual(len(run("none", ["TAG"])), 1)
        self.assertEqual(len(run("simple", ["TAG"])), 0)
        self.assertEqual(len(run("none", ["B-TAG"])), 0)

    CONLL = ["O", "B-MISC", "I-MISC", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]

    def rounded(self, ents):
        return [{k: round(v, 3) if k == "score" else v for k, v in e.items()} for e in ents]

    def test_transformers_aggregation_cases(self):
        # The expected answers of transformers' own tests
        # (tests/pipelines/test_pipelines_token_classification.py,
        # test_aggregation_strategy and test_aggregation_strategy_example2),
        # which call the pipeline's aggregate() on these gathered tokens.
        enzo = [
            {"scores": [0, 0, 0, 0, 0.9968166351318359, 0, 0, 0], "index": 1,
             "is_subword": False, "word": "En", "start": 0, "end": 2},
            {"scores": [0, 0, 0, 0, 0.9957635998725891, 0, 0, 0], "index": 2,
             "is_subword": True, "word": "##zo", "start": 2, "end": 4},
            {"scores": [0, 0, 0, 0, 0, 0.9986497163772583, 0, 0], "index": 7, "word": "UN",
             "is_subword": False, "start": 11, "end": 13}]
        run = lambda pre, s: self.rounded(pl.aggregate(pre, s, self.CONLL, Tok()))  # noqa: E731
        self.assertEqual(run(enzo, "none"), [
            {"entity": "I-PER", "score": 0.997, "index": 1, "word": "En", "start": 0, "end": 2},
            {"entity": "I-PER", "score": 0.996, "index": 2, "word": "##zo", "start": 2, "end": 4},
            {"entity": "B-ORG", "score": 0.999, "index": 7, "word": "UN", "start": 11, "end": 13}])
        for strategy, score in (("simple", 0.996), ("first", 0.997), ("max", 0.997),
                                ("average", 0.996)):
            self.assertEqual(run(enzo, strategy), [
                {"entity_group": "PER", "score": score, "word": "Enzo", "start": 0, "end": 4},
                {"entity_group": "ORG", "score": 0.999, "word": "UN", "start": 11, "end": 13}])
        rama = [
            {"scores": [0, 0.55, 0, 0.45, 0, 0, 0, 0, 0, 0], "is_subword": False, "index": 1,
             "word": "Ra", "start": 0, "end": 2},
            {"scores": [0, 0, 0, 0.2, 0, 0, 0, 0.8, 0, 0], "is_subword": True, "word": "##ma",
             "start": 2, "end": 4, "index": 2},
            {"scores": [0, 0, 0, 0.4, 0, 0, 0.6, 0, 0, 0], "is_subword": True,
             "word": "##zotti", "start": 11, "end": 13, "index": 3}]
        self.assertEqual(run(rama, "none"), [
            {"entity": "B-MISC", "score": 0.55, "index": 1, "word": "Ra", "start": 0, "end": 2},
            {"entity": "B-LOC", "score": 0.8, "index": 2, "word": "##ma", "start": 2, "end": 4},
            {"entity": "I-ORG", "score": 0.6, "index": 3, "word": "##zotti", "start": 11,
             "end": 13}])
        for strategy, group, score in (("first", "MISC", 0.55), ("max", "LOC", 0.8),
                                       ("average", "PER", 0.35)):
            self.assertEqual(run(rama, strategy), [{"entity_group": group, "score": score,
                                                    "word": "Ramazotti", "start": 0, "end": 13}])

    def test_overlapping_windows(self):
        ents = [{"start": 0, "end": 4, "score": 0.5}, {"start": 2, "end": 9, "score": 0.1},
                {"start": 2, "end": 9, "score": 0.3}, {"start": 12, "end": 14, "score": 0.9}]
        self.assertEqual(pl._merge_overlapping(ents), [ents[2], ents[3]])


class Decoders(unittest.TestCase):
    def test_wordpiece_cleanup_per_token(self):
        self.assertEqual(WORDPIECE.decode(["Hello", ",", "world", "!"]), "Hello, world!")
        self.assertEqual(WORDPIECE.decode(["don", "'", "t"]), "don ' t")
        self.assertEqual(WORDPIECE.decode(["##ing", "##s"]), "##ings")

    def test_bytelevel(self):
        d = pl.Decoder({"type": "ByteLevel"})
        self.assertEqual(d.decode(["\u0120New", "\u0120York"]), " New York")
        self.assertEqual(d.decode(["caf\u00c3\u00a9"]), "caf\u00e9")
        # Decoded text decoded again: a word whose characters all map is
        # read as bytes (so "é" becomes the invalid byte E9), one with a
        # space is kept as UTF-8.
        self.assertEqual(d.decode(["caf\u00e9"]), "caf\ufffd")
        self.assertEqual(d.decode([" caf\u00e9"]), " caf\u00e9")


class QuestionAnswering(unittest.TestCase):
    def qa_encoding(self, context, words):
        """[CLS] q [SEP] w0 w1 ... [SEP] with one token per word."""
        offs, pos = [], 0
        for w in words:
            pos = context.index(w, pos)
            offs.append([pos, pos + len(w)])
            pos += len(w)
        n = len(words)
        return {"ids": [101, 2000, 102] + list(range(3000, 3000 + n)) + [102],
                "type_ids": [0, 0, 0] + [1] * (n + 1),
                "offsets": [[0, 0], [0, 3], [0, 0]] + offs + [[0, 0]],
                "word_ids": [None, 0, None] + list(range(n)) + [None],
                "sequence_ids": [None, 0, None] + [1] * n + [None]}

    def test_best_span_and_null(self):
        context = "Paris is big"
        enc = self.qa_encoding(context, ["Paris", "is", "big"])
        # start favours "Paris", end favours "big"; the question and [SEP]
        # have huge logits that must not count.
        rows = [[0.0, 0.0], [9.0, 9.0], [9.0, 9.0], [3.0, 0.0], [0.0, 0.0], [0.0, 3.0], [9.0, 9.0]]
        out = pl.question_answering(context, enc, [list(range(7))], [rows], 101,
                                    align_to_words=False, handle_impossible_answer=True, top_k=2)
        e3 = math.exp(3)
        ps, pe = e3 / (e3 + 3), e3 / (e3 + 3)  # softmax over [CLS] + 3 context tokens
        self.assertEqual(out[0]["answer"], "Paris is big")
        self.assertAlmostEqual(out[0]["score"], ps * pe, places=12)
        self.assertEqual((out[0]["start"], out[0]["end"]), (0, 12))
        null = (1 / (e3 + 3)) ** 2
        self.assertNotIn("", [a["answer"] for a in out])
        self.assertLess(null, out[1]["score"])

    def test_same_text_ignoring_case_is_one_answer(self):
        context = "paris or Paris"
        enc = self.qa_encoding(context, ["paris", "or", "Paris"])
        rows = [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [2.0, 2.0], [0.0, 0.0], [1.5, 1.5], [0.0, 0.0]]
        out = pl.question_answering(context, enc, [list(range(7))], [rows], 101,
                                    align_to_words=False, top_k=3, max_answer_len=1)
        # The two single-token spans "paris" and "Paris" are one answer: the
        # first seen (the better) keeps its offsets, the scores add up; the
        # third best span, "or", is the second answer.
        z = 2 + math.exp(2) + math.exp(1.5)
        self.assertEqual([(a["answer"], a["start"]) for a in out], [("paris", 0), ("or", 6)])
        self.assertAlmostEqual(out[0]["score"], (math.exp(4) + math.exp(3)) / z ** 2, places=12)


class ZeroShot(unittest.TestCase):
    def test_entailment_id_and_contradiction(self):
        self.assertEqual(pl.entailment_id({"label2id": {"CONTRADICTION": 0, "NEUTRAL": 1,
                                                        "ENTAILMENT": 2}}), 2)
        self.assertEqual(pl.entailment_id({"id2label": {"0": "entailment", "1": "x"}}), 0)
        self.assertEqual(pl.entailment_id({"label2id": {"yes": 0, "no": 1}}), -1)
        # entailment 0: contradiction is the last class.
        out = pl.zero_shot("s", ["a"], [[2.0, 0.0, 1.0]], 0)
        self.assertAlmostEqual(out["scores"][0], 1 / (1 + math.exp(-1.0)), places=12)

    def test_labels_and_ties(self):
        self.assertEqual(pl.parse_labels(" a, b ,, c "), ["a", "b", "c"])
        self.assertEqual(pl.parse_labels([" a "]), [" a "])
        with self.assertRaises(ValueError):
            pl.hypotheses(["a"], "no placeholder")
        out = pl.zero_shot("s", ["x", "y", "z"], [[0, 1.0], [0, 3.0], [0, 1.0]], 1)
        self.assertEqual(out["labels"], ["y", "z", "x"])  # tie: the later label first
        self.assertAlmostEqual(sum(out["scores"]), 1.0, places=12)


if __name__ == "__main__":
    unittest.main()
