#!/bin/sh
# The trainer end to end in seconds: usage: train_cli.sh BERT DATA_DIR TOKENIZER WORK
#  1. a tiny `bert pretrain` on a 40 kB corpus: the mean loss of the last 5
#     steps must be at least 1.5 nats below that of the first 5;
#  2. the same run stopped at step 20 and resumed from its checkpoint must
#     print the same loss, accuracy and learning rate at every step 21..40
#     and write a bit-identical model;
#  3. `--init` continues from a model's weights;
#  4. `bert finetune` of a classifier on 400 SST-2 rows with early stopping,
#     then `bert eval` (the inference engine) on the dev rows must report
#     the accuracy the trainer measured for the checkpoint it kept;
#  5. `--mlm-weight` (here on a `--corpus`) trains the MLM head alongside
#     (plain fine-tuning never touches it).
set -eu
BERT=$1 DATA=$2 TOK=$3 WORK=$4
. "$(dirname "$0")/train_common.sh"

# shellcheck disable=SC2086
"$BERT" pretrain $GEO --out "$WORK/a" > "$WORK/a.log"
cat "$WORK/a.log"
loss_fell "$WORK/a.log" mlm-acc
grep -q '^held-out: .* MLM accuracy' "$WORK/a.log" || fail "no held-out accuracy"

# mlm-eval redraws pretrain's held-out masks: same predictions, same accuracy,
# split into [MASK] / random / kept; with a 100% [MASK] mix nothing is random or kept.
EVAL="--model $WORK/a --corpus $DATA/corpus.txt --max-len 32 --seed 1 --threads 2"
# shellcheck disable=SC2086
"$BERT" mlm-eval $EVAL > "$WORK/me.log"
cat "$WORK/me.log"
held=$(awk '/^held-out:/{print $4, $8}' "$WORK/a.log" | tr -d ,)
picked=$(awk '/^picked/{print $2, $3}' "$WORK/me.log")
[ "$held" = "$picked" ] || fail "mlm-eval ($picked) != pretrain's held-out ($held)"
awk '/^picked/{p=$2} /^\[MASK\]|^random|^kept/{s+=$2} END {exit !(p > 0 && s == p)}' \
    "$WORK/me.log" || fail "kinds do not add up to the picked positions"
# shellcheck disable=SC2086
"$BERT" mlm-eval $EVAL --mask-mix 1,0,0 > "$WORK/me100.log"
awk '/^random|^kept/{s+=$2} /^unmasked/{u=$2} END {exit !(s == 0 && u > 0)}' "$WORK/me100.log" ||
    fail "a 100% [MASK] mix left random or kept positions"
if "$BERT" mlm-eval $EVAL --mask-mix 0.8,0.1 2> /dev/null; then fail "a bad mix was accepted"; fi

# shellcheck disable=SC2086
"$BERT" pretrain $GEO --out "$WORK/b" --save-every 20 --stop-at 20 > "$WORK/b1.log"
[ ! -e "$WORK/b/model.safetensors" ] || fail "an interrupted run must not write the final model"
# shellcheck disable=SC2086
"$BERT" pretrain $GEO --out "$WORK/b" --resume > "$WORK/b2.log"
grep -q '^resumed at step 20' "$WORK/b2.log" || fail "did not resume at step 20"
same_resumed

# --init continues from a's weights with a fresh optimiser: its first steps
# start near a's last loss, far below a fresh model's first.
# shellcheck disable=SC2086
"$BERT" pretrain $GEO --out "$WORK/c" --init "$WORK/a" --steps 5 --lr 1e-4 > "$WORK/c.log"
awk 'FNR == 1 { f++ } f == 1 && /^step / { a[++n] = $4 } f == 2 && /^step 1\// { c = $4 }
     END { printf "init: a first %.3f, a last %.3f, init first %.3f\n", a[1], a[n], c
           exit !(c < a[n] + 0.5 && c < a[1] - 1.0) }' "$WORK/a.log" "$WORK/c.log" ||
    fail "--init did not start from the given weights"
if "$BERT" pretrain $GEO --out "$WORK/d" --init "$WORK/none" 2> "$WORK/d.err"; then
    fail "--init of a missing folder was accepted"
fi
grep -q "$WORK/none" "$WORK/d.err" || fail "the --init error does not name the folder"

"$BERT" finetune --model "$WORK/a" --train "$DATA/sst2-train-400.tsv" --dev "$DATA/sst2-dev-100.tsv" \
    --out "$WORK/cls" --labels NEGATIVE,POSITIVE --epochs 4 --batch 16 --lr 1e-3 --eval-every 5 \
    --patience 3 --threads 2 > "$WORK/ft.log"
cat "$WORK/ft.log"
best=$(awk '/^best dev accuracy/{print $4}' "$WORK/ft.log")
grep -q '"POSITIVE"' "$WORK/cls/config.json" || fail "labels not in config.json"
"$BERT" eval --model "$WORK/cls" --data "$DATA/sst2-dev-100.tsv" --threads 2 > "$WORK/eval.log"
cat "$WORK/eval.log"
acc=$(awk '/^accuracy/{print $2}' "$WORK/eval.log")
[ "$acc" = "$best" ] || fail "bert eval accuracy $acc != trainer's best dev accuracy $best"
echo '{"inputs": "a charming and often affecting journey"}' | "$BERT" classify --model "$WORK/cls" \
    | grep -q POSITIVE\\\|NEGATIVE || fail "classify does not name a label"
echo '{"inputs": "the [MASK] of the ship"}' | "$BERT" fill-mask --model "$WORK/cls" \
    | grep -q token_str || fail "the fine-tuned model lost its MLM head"
# --mlm-weight trains the MLM head on masked copies of the batches as well;
# plain fine-tuning leaves that head's transform exactly as pretrained.
"$BERT" finetune --model "$WORK/a" --train "$DATA/sst2-train-400.tsv" --dev "$DATA/sst2-dev-100.tsv" \
    --out "$WORK/joint" --labels NEGATIVE,POSITIVE --max-steps 10 --batch 16 --lr 1e-3 \
    --eval-every 5 --threads 2 --mlm-weight 1 --corpus "$DATA/corpus.txt" > "$WORK/joint.log"
cat "$WORK/joint.log"
grep -q 'masked-LM loss kept on the corpus' "$WORK/joint.log" || fail "--corpus not used"
grep -q 'train-mlm-acc .* dev-mlm-acc' "$WORK/joint.log" || fail "no MLM accuracy on the progress line"
head_tensor() { # FILE: the MLM transform's weight, hex
    python3 -c 'import json, struct, sys
f = open(sys.argv[1], "rb"); n = struct.unpack("<Q", f.read(8))[0]; h = json.loads(f.read(n))
a, b = h["cls.predictions.transform.dense.weight"]["data_offsets"]
f.seek(8 + n + a); print(f.read(b - a).hex())' "$1"
}
pre=$(head_tensor "$WORK/a/model.safetensors")
[ "$(head_tensor "$WORK/cls/model.safetensors")" = "$pre" ] ||
    fail "plain fine-tuning changed the MLM head"
[ "$(head_tensor "$WORK/joint/model.safetensors")" != "$pre" ] ||
    fail "--mlm-weight did not train the MLM head"
if "$BERT" finetune --model "$WORK/a" --train "$DATA/sst2-train-400.tsv" \
    --dev "$DATA/sst2-dev-100.tsv" --out "$WORK/bad" --freeze-encoder --mlm-weight 1 \
    > /dev/null 2>&1; then
    fail "--mlm-weight with a frozen encoder was accepted"
fi
if "$BERT" finetune --model "$WORK/a" --train "$DATA/sst2-train-400.tsv" \
    --dev "$DATA/sst2-dev-100.tsv" --out "$WORK/bad" --corpus "$DATA/corpus.txt" \
    > /dev/null 2>&1; then
    fail "--corpus without --mlm-weight was accepted"
fi
# Text pairs (text_a<TAB>text_b<TAB>label, token types 0 / 1): "is b the same
# sentence as a"; the trainer and the engine must agree on the kept checkpoint.
pairs() { awk -F '\t' 'NR > 1 { t[++n] = $1 } END { print "a\tb\tlabel"
          for (i = 1; i < n; i++) { print t[i] "\t" t[i] "\t1"; print t[i] "\t" t[i + 1] "\t0" } }' "$1"; }
pairs "$DATA/sst2-train-400.tsv" > "$WORK/pairs-train.tsv"
pairs "$DATA/sst2-dev-100.tsv" > "$WORK/pairs-dev.tsv"
"$BERT" finetune --model "$WORK/a" --train "$WORK/pairs-train.tsv" --dev "$WORK/pairs-dev.tsv" \
    --out "$WORK/pair" --epochs 2 --batch 16 --lr 1e-3 --eval-every 10 --patience 2 --threads 2 \
    > "$WORK/pair.log"
cat "$WORK/pair.log"
best=$(awk '/^best dev accuracy/{print $4}' "$WORK/pair.log")
"$BERT" eval --model "$WORK/pair" --data "$WORK/pairs-dev.tsv" --threads 2 > "$WORK/pair-eval.log"
acc=$(awk '/^accuracy/{print $2}' "$WORK/pair-eval.log")
[ "$acc" = "$best" ] || fail "pairs: bert eval accuracy $acc != trainer's best $best"
echo "ok"
