#!/bin/sh
# STS Benchmark (../shared/data/stsbenchmark/sts-*.csv) -> the trainer's
# pair-regression TSV: a header, then sentence1<TAB>sentence2<TAB>score.
# The source is tab-separated without quoting: genre, file, year, id,
# score (0-5), sentence1, sentence2, and on some lines two extra source
# columns, which are dropped. Usage: stsb_to_tsv.sh sts-train.csv > train.tsv
set -eu
awk -F '\t' 'BEGIN { print "sentence1\tsentence2\tscore" }
     NF < 7 { printf "%s:%d: %d columns, expected at least 7\n", FILENAME, FNR, NF > "/dev/stderr"; bad = 1; exit 1 }
     { print $6 "\t" $7 "\t" $5 }
     END { exit bad }' "$1"
