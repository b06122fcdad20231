#!/bin/sh
# STS-B cross-encoder: regression fine-tune of a checkpoint on the full STS
# Benchmark train set (5,749 pairs), early stopping on dev Pearson, then
# `bert eval` (the serving engine) on dev and test.
# Usage: stsb_crossencoder.sh BERT MODEL_DIR WORK_DIR [LR]   (LR default 1e-4)
# Run where the CPU is shared: single thread, nice 10.
set -eu
BERT=$1 MODEL=$2 WORK=$3 LR=${4:-1e-4}
DATA=$(dirname "$0")/../../shared/data/stsbenchmark
HERE=$(dirname "$0")
mkdir -p "$WORK"
for split in train dev test; do
    sh "$HERE/stsb_to_tsv.sh" "$DATA/sts-$split.csv" > "$WORK/$split.tsv"
done
/usr/bin/time -f "wall %e s" nice -n 10 "$BERT" finetune --model "$MODEL" \
    --train "$WORK/train.tsv" --dev "$WORK/dev.tsv" --out "$WORK/model" --problem regression \
    --epochs 8 --batch 32 --lr "$LR" --eval-every 90 --patience 4 --threads 1
for split in dev test; do
    echo "== $split"
    nice -n 10 "$BERT" eval --model "$WORK/model" --data "$WORK/$split.tsv" --threads 1
done
