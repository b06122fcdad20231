# Shared by the trainer's CLI tests (train_cli.sh, train_causal.sh), sourced
# after BERT, DATA, TOK and WORK are set: a fresh WORK, the tiny geometry
# and the checks both objectives make.
rm -rf "$WORK"
mkdir -p "$WORK"
GEO="--corpus $DATA/corpus.txt --tokenizer $TOK --layers 2 --hidden 32 --heads 2 --intermediate 64
     --max-len 32 --steps 40 --batch 16 --lr 5e-3 --log-every 1 --threads 2 --seed 1"
fail() { echo "FAIL: $*"; exit 1; }

# loss_fell LOG ACC: 40 progress lines reporting ACC (mlm-acc, clm-acc); the
# mean loss of the last 5 steps at least 1.5 nats below that of the first 5.
loss_fell() {
    awk -v acc="$2" '/^step /{n++; l[n]=$4; if ($5 != acc) bad = 1} END {
       if (n != 40 || bad) { print "expected 40 steps reporting " acc ", got " n; exit 1 }
       for (i = 1; i <= 5; i++) { f += l[i]; e += l[n - 5 + i] }
       f /= 5; e /= 5
       printf "loss: first 5 steps %.3f, last 5 %.3f, fell by %.3f (need >= 1.5)\n", f, e, f - e
       if (f - e < 1.5) exit 1 }' "$1" || fail "loss did not fall enough"
}

# same_resumed: $WORK/a (uninterrupted) and $WORK/b (b1.log stopped at step
# 20, b2.log resumed) print the same steps and write bit-identical models.
same_resumed() {
    steps() { awk '/^step /{print $1, $2, $3, $4, $5, $6, $7, $8}' "$@"; }
    steps "$WORK/a.log" > "$WORK/a.steps"
    steps "$WORK/b1.log" "$WORK/b2.log" > "$WORK/b.steps"
    cmp "$WORK/a.steps" "$WORK/b.steps" || { diff "$WORK/a.steps" "$WORK/b.steps"; fail "resumed run differs"; }
    cmp "$WORK/a/model.safetensors" "$WORK/b/model.safetensors" || fail "resumed model differs"
    echo "resume: steps 1-40 and the final model identical"
}
