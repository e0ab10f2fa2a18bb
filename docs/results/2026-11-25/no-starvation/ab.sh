#!/usr/bin/env bash
# First designs for issue 19's starvation, A/B'd in one run per workload on
# klock_mutex (the settings cannot share a process, so each round runs every
# variant once, in turn: ab-env.py): the defaults; adaptive queue-first
# (KLOCK_MUTEX_FAIR_NS=1 ms: newcomers stop yielding once the wait-list head
# has waited 1 ms); static queue-first (KLOCK_MUTEX_QUEUE_FIRST=1); no yield
# rounds at all (KLOCK_MUTEX_YIELDS=0, sleep after spinning, as std does).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LB=target/release/lockbench
OUT=docs/results/2026-11-25/no-starvation
V=(--variant "default:" --variant "fair1ms:KLOCK_MUTEX_FAIR_NS=1000000"
   --variant "queuefirst:KLOCK_MUTEX_QUEUE_FIRST=1" --variant "yields0:KLOCK_MUTEX_YIELDS=0")
for w in balanced hot long; do
  python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- \
    $LB mutex --locks klock_mutex --workload $w --threads 2,8,32,128 --duration 1 > $OUT/ab-$w.md
done
python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- \
  $LB --quota 0.5 mutex --locks klock_mutex --workload balanced --threads 8,32,128 --duration 1 \
  > $OUT/ab-balanced-quota.md
