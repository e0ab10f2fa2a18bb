#!/bin/bash
# usage: runtable.sh BIN TAG LOCKS
B=$1; T=$2; L=$3
for w in balanced long hot; do ./$B mutex --locks $L --workload $w --threads 2,8,32,128 --runs 5 --duration 0.5 --quiet --json $T-$w.json > $T-$w.txt 2>&1; done
./$B mutex --locks $L --workload balanced --threads 8,32 --runs 5 --duration 0.5 --quota 0.5 --quiet --json $T-quota.json > $T-quota.txt 2>&1
