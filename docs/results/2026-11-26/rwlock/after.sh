#!/usr/bin/env bash
# Issue 20's table on the machine at hand: klock_rwsem against the rw peers,
# balanced, R+R = 2+2, 4+4, 8+8, 18+18, five interleaved 1 s runs, without and
# with --noise 2. Usage: before.sh PREFIX (writes PREFIX-*.txt/json here).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LB=target/release/lockbench
OUT=docs/results/2026-11-26/rwlock
P=${1:-after}
LOCKS=klock_rwsem,parking_lot_rw,std_rw,pthread_rw
for noise in 0 2; do
  for r in 2 4 8 18; do
    $LB rwlock --locks $LOCKS --workload balanced --readers $r --writers $r --runs 5 --duration 1 \
      --noise $noise --json $OUT/$P-$r+$r-noise$noise.json > $OUT/$P-$r+$r-noise$noise.txt 2>&1
  done
done
