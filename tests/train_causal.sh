#!/bin/sh
# The causal-LM objective end to end in seconds (`bert pretrain --objective
# clm`, then a last-token fine-tune): usage: train_causal.sh BERT DATA_DIR TOKENIZER WORK
#  1. a tiny causal pretrain: the mean loss of the last 5 steps at least 1.5
#     nats below that of the first 5, next-token accuracy in the progress and
#     held-out lines, "is_decoder": true saved, the parameter count of the
#     masked-LM run of the same geometry; mlm-eval refuses the causal model;
#  2. stopped at step 20 and resumed: the same steps 21..40 and a
#     bit-identical model; resuming it as --objective mlm is refused;
#  3. `bert finetune` of the causal model classifies from the last token and
#     keeps is_decoder; the inference engine (`bert eval`) refuses it by name.
set -eu
BERT=$1 DATA=$2 TOK=$3 WORK=$4
. "$(dirname "$0")/train_common.sh"

# shellcheck disable=SC2086
"$BERT" pretrain $GEO --objective clm --out "$WORK/a" > "$WORK/a.log"
cat "$WORK/a.log"
loss_fell "$WORK/a.log" clm-acc
grep -q '^held-out: .* CLM accuracy' "$WORK/a.log" || fail "no held-out next-token accuracy"
grep -q '"is_decoder": true' "$WORK/a/config.json" || fail "is_decoder not saved"
params() { sed -n 's/.* \([0-9]*\) parameters;.*/\1/p' "$1"; }
# shellcheck disable=SC2086
"$BERT" pretrain $GEO --steps 1 --out "$WORK/mlm" > "$WORK/mlm.log"
[ "$(params "$WORK/a.log")" = "$(params "$WORK/mlm.log")" ] ||
    fail "clm and mlm models differ in size: $(params "$WORK/a.log") vs $(params "$WORK/mlm.log")"
if grep -q is_decoder "$WORK/mlm/config.json"; then fail "a masked-LM model is marked is_decoder"; fi
if "$BERT" mlm-eval --model "$WORK/a" --corpus "$DATA/corpus.txt" --max-len 32 2> "$WORK/me.err"; then
    fail "mlm-eval accepted a causal model"
fi
grep -q "causal LM (is_decoder)" "$WORK/me.err" || fail "mlm-eval's refusal does not say why"

# shellcheck disable=SC2086
"$BERT" pretrain $GEO --objective clm --out "$WORK/b" --save-every 20 --stop-at 20 > "$WORK/b1.log"
# shellcheck disable=SC2086
if "$BERT" pretrain $GEO --out "$WORK/b" --resume 2> "$WORK/b.err"; then
    fail "a causal checkpoint resumed as masked LM"
fi
grep -q 'objective clm' "$WORK/b.err" || fail "the objective mismatch is not explained"
# shellcheck disable=SC2086
"$BERT" pretrain $GEO --objective clm --out "$WORK/b" --resume > "$WORK/b2.log"
same_resumed

"$BERT" finetune --model "$WORK/a" --train "$DATA/sst2-train-400.tsv" --dev "$DATA/sst2-dev-100.tsv" \
    --out "$WORK/cls" --labels NEGATIVE,POSITIVE --epochs 2 --batch 16 --lr 1e-3 --eval-every 10 \
    --patience 2 --threads 2 > "$WORK/ft.log"
cat "$WORK/ft.log"
grep -q 'causal, last-token head' "$WORK/ft.log" || fail "finetune did not use the last token"
grep -q '^best dev accuracy 0\.[0-9]' "$WORK/ft.log" || fail "no dev accuracy"
grep -q '"is_decoder": true' "$WORK/cls/config.json" || fail "the fine-tuned model lost is_decoder"
if "$BERT" eval --model "$WORK/cls" --data "$DATA/sst2-dev-100.tsv" --threads 2 2> "$WORK/eval.err"; then
    fail "the engine ran a causal model"
fi
cat "$WORK/eval.err"
grep -q "cls/config.json: is_decoder (causal) models are trainer-only" "$WORK/eval.err" ||
    fail "the engine's refusal does not name the file"
echo "ok"
