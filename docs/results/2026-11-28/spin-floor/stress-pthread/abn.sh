#!/bin/bash
# abn.sh TAG ROUNDS "BIN1 BIN2 ..." ARGS...: interleave binaries (--runs 1) ROUNDS rounds; per-round ratio to the best of std/parking_lot
T=$1; R=$2; BINS=$3; shift 3
for i in $(seq 1 $R); do for b in $BINS; do ./$b "$@" --runs 1 --quiet --json $T-$b-$i.json >/dev/null 2>&1; done; done
python3 /tmp/m/abn.py $T "$BINS"
