#!/usr/bin/env bash
# Issue 19's tables on the machine at hand, after the lock changes of designs 6 and 8 (and 9 if adopted): every
# workload the issue names at T = 2, 8, 32, 128, five interleaved 1 s runs,
# without and with a CPU quota of 0.5 CPUs (lockbench --quota, cgroup v1 here).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LB=target/release/lockbench
OUT=docs/results/2026-11-25/no-starvation
LOCKS=klock_mutex,klock_unfair,std,parking_lot,pthread
for w in balanced long hot; do
  $LB mutex --locks $LOCKS --workload $w --threads 2,8,32,128 --runs 5 --duration 1 \
    --json $OUT/after-$w.json > $OUT/after-$w.txt 2>&1
  $LB --quota 0.5 mutex --locks $LOCKS --workload $w --threads 2,8,32,128 --runs 5 --duration 1 \
    --json $OUT/after-$w-quota.json > $OUT/after-$w-quota.txt 2>&1
done
