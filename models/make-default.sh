#!/usr/bin/env bash
# Regenerate models/default: a deterministic, UNTRAINED BERT checkpoint (random
# weights from a fixed seed) with the real bert-base-uncased vocabulary, an MLM
# head and a two-label classifier, so the server has something to start on
# until the trainer's model replaces it. Same inputs, same bytes.
# Usage: bash models/make-default.sh [path/to/bert] [tokenizer folder]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bert="${1:-$here/../build/bin/bert}"
tokenizer="${2:-$here/../../shared/data/bert-base-uncased}"
out="$here/default"
keep="$out/README.md"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$bert" init --out "$tmp/default" --tokenizer "$tokenizer" --seed 20261203 \
  --layers 2 --hidden 128 --heads 2 --intermediate 512 --max-position 512 \
  --dtype f16 --mlm --pooler --labels NEGATIVE,POSITIVE --pooling mean
[ -f "$keep" ] && cp "$keep" "$tmp/default/README.md"
rm -rf "$out"
mv "$tmp/default" "$out"
ls -l "$out"
