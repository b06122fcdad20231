#!/usr/bin/python3
"""A most-frequent-tag tagger on CoNLL-2003, the floor a trained NER model
must clear (issue 21: "a most-frequent-tag dictionary tagger scores about
0.55").

Each word form seen in train.txt gets the tag it carried most often there
(ties: the tag seen first); unseen words get O. Scored at the entity level
with conlleval's rules (tests/extraction/conlleval.py).

    /usr/bin/python3 experiments/ner_baseline.py [--data ../shared/data/conll2003]

Measured (4 December 2026, the whole splits, entity-level, conlleval rules):

| word forms | valid F1 | test F1 (P / R) |
|---|---|---|
| cased | 0.6536 | **0.5488** (0.5936 / 0.5103) |
| lower-cased | 0.6386 | 0.5268 (0.5744 / 0.4865) |

Per type on test (cased): LOC 0.748, MISC 0.628, ORG 0.511, PER 0.293 (person
names rarely repeat between train and test). A trained model must beat 0.55.
"""

import argparse
import collections
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "extraction"))

import conlleval  # noqa: E402


def train_dictionary(sentences, fold_case):
    counts = collections.defaultdict(collections.Counter)
    order = {}
    for tokens, tags in sentences:
        for tok, tag in zip(tokens, tags):
            key = tok.lower() if fold_case else tok
            counts[key][tag] += 1
            order.setdefault((key, tag), len(order))
    return {k: max(c, key=lambda t: (c[t], -order[(k, t)])) for k, c in counts.items()}


def tag(sentences, dictionary, fold_case):
    return [[dictionary.get(t.lower() if fold_case else t, "O") for t in tokens]
            for tokens, _ in sentences]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "conll2003"))
    args = ap.parse_args()
    train = conlleval.read_conll(os.path.join(args.data, "train.txt"))
    for fold_case in (False, True):
        dictionary = train_dictionary(train, fold_case)
        for split in ("valid", "test"):
            gold = conlleval.read_conll(os.path.join(args.data, f"{split}.txt"))
            result = conlleval.evaluate([t for _, t in gold], tag(gold, dictionary, fold_case))
            print(f"most-frequent tag ({'lower-cased' if fold_case else 'cased'} word forms), "
                  f"{split}: {conlleval.report(result)}")


if __name__ == "__main__":
    main()
