#!/bin/sh
# The multi-label and regression heads of `bert finetune` end to end in
# seconds: usage: train_heads.sh BERT DATA_DIR TOKENIZER WORK
#  1. a regression cross-encoder on 400 STS-B train pairs (dev: 100 pairs):
#     dev Pearson of the kept checkpoint >= 0.2, `bert eval` (the inference
#     engine) within 1e-3 of the trainer's Pearson, config.json declares
#     problem_type regression with one label, `bert classify` gives one score
#     (raw with function_to_apply none; sigmoid of it by default, as
#     transformers' pipeline does for one label);
#  2. a multi-label classifier on synthetic labels made from SST-2 rows (below):
#     the training loss falls below 0.5 nats from ln 2 at the start, `bert eval`
#     reports the trainer's micro-F1, config.json declares multi_label_classification;
#  3. bad input: a float label in single-label mode, a non-number in
#     regression and an unknown label name in multi-label mode are errors
#     naming the file and line; --labels with regression and multi-label
#     without --labels are usage errors.
set -eu
BERT=$1 DATA=$2 TOK=$3 WORK=$4
rm -rf "$WORK"
mkdir -p "$WORK"
fail() { echo "FAIL: $*"; exit 1; }
"$BERT" pretrain --corpus "$DATA/corpus.txt" --tokenizer "$TOK" --layers 2 --hidden 32 --heads 2 \
    --intermediate 64 --max-len 32 --steps 40 --batch 16 --lr 5e-3 --log-every 40 --threads 2 \
    --seed 1 --out "$WORK/a" > "$WORK/a.log"
FT="--model $WORK/a --batch 16 --lr 5e-3 --eval-every 25 --threads 2"
# |a - b| <= tol
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; exit !(d <= t && -d <= t) }'; }

# 1. regression
# shellcheck disable=SC2086
# Dropout off: this toy encoder's scores then spread instead of collapsing
# towards the mean, where Pearson would hinge on float rounding.
"$BERT" finetune $FT --problem regression --train "$DATA/stsb-train-400.tsv" \
    --dev "$DATA/stsb-dev-100.tsv" --out "$WORK/reg" --epochs 8 --patience 3 --dropout 0 \
    > "$WORK/reg.log"
cat "$WORK/reg.log"
best=$(awk '/^best dev pearson/{print $4}' "$WORK/reg.log")
[ -n "$best" ] || fail "no best dev pearson line"
near "$best" 0.6 0.4 || fail "regression dev Pearson $best below 0.2"
grep -q '"problem_type": "regression"' "$WORK/reg/config.json" || fail "problem_type not regression"
grep -q '"1":' "$WORK/reg/config.json" && fail "a regression head must have one label"
"$BERT" eval --model "$WORK/reg" --data "$DATA/stsb-dev-100.tsv" --threads 2 > "$WORK/reg-eval.log"
cat "$WORK/reg-eval.log"
r=$(awk '/^pearson/{print $2}' "$WORK/reg-eval.log")
near "$r" "$best" 0.001 || fail "bert eval Pearson $r != trainer's $best"
mse=$(awk '/dev-mse/ && /best, saved/ {for (i = 1; i < NF; i++) if ($i == "dev-mse") m = $(i + 1)} END {print m}' "$WORK/reg.log")
near "$(awk '/^mse/{print $2}' "$WORK/reg-eval.log")" "$mse" 0.001 || fail "bert eval MSE != trainer's $mse"
grep -q '^spearman ' "$WORK/reg-eval.log" && grep -q '^mse ' "$WORK/reg-eval.log" ||
    fail "bert eval printed no Spearman or MSE"
PAIR='"inputs": [["A man is playing a guitar.", "A man plays the guitar."]]'
echo "{$PAIR, \"parameters\": {\"function_to_apply\": \"none\"}}" |
    "$BERT" classify --model "$WORK/reg" > "$WORK/raw.json"
echo "{$PAIR}" | "$BERT" classify --model "$WORK/reg" > "$WORK/sig.json"
cat "$WORK/raw.json" "$WORK/sig.json"
score() { tr -d '[]{}' < "$1" | tr ',' '\n' | awk -F: '$1 == "\"score\"" {print $2; n++} END {exit n != 1}'; }
raw=$(score "$WORK/raw.json") || fail "regression classify did not give exactly one score"
sig=$(score "$WORK/sig.json") || fail "regression classify did not give exactly one score"
near "$sig" "$(awk -v x="$raw" 'BEGIN { print 1 / (1 + exp(-x)) }')" 1e-5 ||
    fail "default score $sig is not sigmoid($raw)"

# 2. multi-label. Synthetic labels from SST-2 rows: "positive" when the
# SST-2 label is 1, "film" when the text has film(s)/movie(s), "story" when it
# has story/stories/character(s)/plot; rows with none have the empty set.
multi() { awk -F '\t' 'BEGIN { print "sentence\tlabels" }
    NR > 1 { l = ""
             if ($2 == 1) l = "positive"
             if ($1 ~ /(^| )(film|films|movie|movies)( |$)/) l = l (l == "" ? "" : ",") "film"
             if ($1 ~ /(^| )(story|stories|characters?|plot)( |$)/) l = l (l == "" ? "" : ",") "story"
             print $1 "\t" l }' "$1"; }
multi "$DATA/sst2-train-400.tsv" > "$WORK/multi-train.tsv"
multi "$DATA/sst2-dev-100.tsv" > "$WORK/multi-dev.tsv"
grep -q '	$' "$WORK/multi-train.tsv" || fail "the multi-label data has no empty label set"
grep -q ',' "$WORK/multi-train.tsv" || fail "the multi-label data has no row with two labels"
# shellcheck disable=SC2086
"$BERT" finetune $FT --problem multi --labels positive,film,story --train "$WORK/multi-train.tsv" \
    --dev "$WORK/multi-dev.tsv" --out "$WORK/multi" --epochs 6 --patience 3 > "$WORK/multi.log"
cat "$WORK/multi.log"
awk '/^step /{ l = $6 } END { printf "multi-label: last train loss %.4f (start ln 2)\n", l; exit !(l < 0.5) }' \
    "$WORK/multi.log" || fail "the multi-label training loss did not fall below 0.5"
best=$(awk '/^best dev micro-f1/{print $4}' "$WORK/multi.log")
grep -q '"problem_type": "multi_label_classification"' "$WORK/multi/config.json" ||
    fail "problem_type not multi_label_classification"
grep -q '"story"' "$WORK/multi/config.json" || fail "label names not in config.json"
"$BERT" eval --model "$WORK/multi" --data "$WORK/multi-dev.tsv" --threads 2 > "$WORK/multi-eval.log"
cat "$WORK/multi-eval.log"
f1=$(awk '/^micro-f1/{print $2}' "$WORK/multi-eval.log")
[ -n "$f1" ] && [ "$f1" = "$best" ] || fail "bert eval micro-F1 $f1 != trainer's $best"
grep -q '^macro-f1 ' "$WORK/multi-eval.log" && grep -q '^exact-match ' "$WORK/multi-eval.log" ||
    fail "bert eval printed no macro-F1 or exact match"
echo '{"inputs": "a gripping film"}' | "$BERT" classify --model "$WORK/multi" > "$WORK/m.json"
[ "$(grep -o '"label"' "$WORK/m.json" | wc -l)" -eq 3 ] || fail "multi-label classify: not 3 scores"

# 3. bad input: the error names the file and line.
bad() { # expect_in_error problem [finetune args...]
    want=$1
    shift
    # shellcheck disable=SC2086
    if "$BERT" finetune $FT --out "$WORK/bad" --epochs 1 "$@" > /dev/null 2> "$WORK/bad.err"; then
        fail "accepted: $*"
    fi
    grep -q -- "$want" "$WORK/bad.err" || { cat "$WORK/bad.err"; fail "error for '$*' lacks '$want'"; }
}
printf 'sentence\tlabel\na fine film\t1\na dull one\t0.5\n' > "$WORK/float.tsv"
bad "float.tsv:3:" --train "$WORK/float.tsv" --dev "$WORK/float.tsv"
printf 's1\ts2\tscore\na\tb\t2.5\nc\td\thigh\n' > "$WORK/nan.tsv"
bad "nan.tsv:3:" --problem regression --train "$WORK/nan.tsv" --dev "$DATA/stsb-dev-100.tsv"
printf 'sentence\tlabels\na film\tfilm\na story\tfilm,plot\n' > "$WORK/unknown.tsv"
bad "unknown.tsv:3:" --problem multi --labels positive,film,story --train "$WORK/unknown.tsv" \
    --dev "$WORK/multi-dev.tsv"
bad "usage" --problem regression --labels a,b --train "$DATA/stsb-train-400.tsv" \
    --dev "$DATA/stsb-dev-100.tsv"
bad "usage" --problem multi --train "$WORK/multi-train.tsv" --dev "$WORK/multi-dev.tsv"
bad "usage" --problem ordinal --train "$WORK/multi-train.tsv" --dev "$WORK/multi-dev.tsv"
# A family the trainer's BERT layers do not compute is refused by name.
"$BERT" init --model-type mpnet --tokenizer "$TOK" --layers 1 --hidden 32 --heads 2 \
    --intermediate 64 --mlm --out "$WORK/mpnet" > /dev/null
bad "this one is mpnet" --model "$WORK/mpnet" --train "$DATA/sst2-train-400.tsv" \
    --dev "$DATA/sst2-dev-100.tsv"
echo "ok"
