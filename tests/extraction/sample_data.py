#!/usr/bin/python3
"""Copy the small samples the extraction tests use from ../shared/data into
tests/data/extraction (see its README.md for the origin of each file).
Deterministic: the first sentences / paragraphs / lines of each source.

    /usr/bin/python3 tests/extraction/sample_data.py [--shared ../shared/data]
"""

import argparse
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "tests", "data", "extraction")

# (source folder, files) copied as they are.
CHECKPOINT_FILES = {
    "dslim-bert-base-NER": ["config.json", "tokenizer.json", "tokenizer_config.json",
                            "special_tokens_map.json"],
    "distilbert-base-uncased-distilled-squad": ["config.json", "tokenizer_config.json",
                                                "special_tokens_map.json"],
    "roberta-large-mnli": ["config.json", "tokenizer.json", "tokenizer_config.json"],
}
# CoNLL-2003 split -> number of sentences kept (whole documents, from the top).
CONLL = {"train": 400, "valid": 120, "test": 120}
SQUAD_PARAGRAPHS = [(0, 0), (0, 1), (0, 2), (1, 0), (5, 3)]  # (article, paragraph)
NLI = {"mnli_dev_matched.jsonl": 24, "snli_1.0_dev.jsonl": 8}


def conll_head(src, dst, sentences):
    """The first documents of a CoNLL file holding at least `sentences`
    sentences, cut at a -DOCSTART- line."""
    with open(src, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, count = [], 0
    for i, line in enumerate(lines):
        if line.startswith("-DOCSTART-") and count >= sentences:
            break
        out.append(line)
        if line == "" and i > 0 and lines[i - 1] != "" and not lines[i - 1].startswith("-DOC"):
            count += 1
    while out and out[-1] == "":
        out.pop()
    with open(dst, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n\n")
    return count


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared", "data"))
    args = ap.parse_args()
    for folder, files in CHECKPOINT_FILES.items():
        os.makedirs(os.path.join(OUT, folder), exist_ok=True)
        for name in files:
            shutil.copyfile(os.path.join(args.shared, folder, name), os.path.join(OUT, folder, name))
    os.makedirs(os.path.join(OUT, "conll2003"), exist_ok=True)
    for split, n in CONLL.items():
        got = conll_head(os.path.join(args.shared, "conll2003", f"{split}.txt"),
                         os.path.join(OUT, "conll2003", f"{split}-head.txt"), n)
        print(f"conll2003/{split}-head.txt: {got} sentences")
    with open(os.path.join(args.shared, "squad-v1.1", "dev-v1.1.json"), encoding="utf-8") as f:
        squad = json.load(f)
    articles = {}
    for a, p in SQUAD_PARAGRAPHS:
        art = squad["data"][a]
        articles.setdefault(a, {"title": art["title"], "paragraphs": []})
        articles[a]["paragraphs"].append(art["paragraphs"][p])
    sample = {"version": squad["version"], "data": [articles[a] for a in sorted(articles)]}
    with open(os.path.join(OUT, "squad-v1.1-dev-sample.json"), "w", encoding="utf-8") as f:
        json.dump(sample, f, ensure_ascii=False, indent=1)
    for name, n in NLI.items():
        with open(os.path.join(args.shared, "nli-dev", name), encoding="utf-8") as f:
            head = [next(f) for _ in range(n)]
        with open(os.path.join(OUT, name.replace(".jsonl", "-head.jsonl")), "w",
                  encoding="utf-8") as f:
            f.writelines(head)


if __name__ == "__main__":
    main()
