#!/usr/bin/env bash
# Eighth A/B for issue 19 (fairness at T=128): a process-wide cap on threads in
# yield rounds (KLOCK_MUTEX_YIELDERS=N; the others queue at once), alone and
# with the head's bounded sleep, against design 5's best (head wake-up +
# KLOCK_MUTEX_FAIR_NS). The default here already has KLOCK_POLL_MISS_TICKS=40.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LB=target/release/lockbench
OUT=docs/results/2026-11-25/no-starvation
V=(--variant "default:" --variant "yielders2:KLOCK_MUTEX_YIELDERS=2"
   --variant "yielders2+headwake:KLOCK_MUTEX_YIELDERS=2 KLOCK_MUTEX_HEAD_WAKE_NS=1000000"
   --variant "headwake+fair:KLOCK_MUTEX_HEAD_WAKE_NS=1000000 KLOCK_MUTEX_FAIR_NS=1000000")
python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload balanced --threads 32,128 --duration 1 > $OUT/ab8-balanced.md
python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload hot --threads 8,32,128 --duration 1 > $OUT/ab8-hot.md
python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload long --threads 128 --duration 1 > $OUT/ab8-long.md
