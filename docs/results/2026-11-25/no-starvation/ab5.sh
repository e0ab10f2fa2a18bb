#!/usr/bin/env bash
# Fifth A/B for issue 19: a bounded sleep for the wait-list head
# (KLOCK_MUTEX_HEAD_WAKE_NS=1 ms: it wakes by itself, runs, and past the
# hand-off threshold asks for the lock), alone, with newcomers queueing
# behind an overdue head (KLOCK_MUTEX_FAIR_NS=1 ms), and with the hand-off
# asked at once (KLOCK_MUTEX_HANDOFF_NS=0); rounds interleaved by ab-env.py.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LB=target/release/lockbench
OUT=docs/results/2026-11-25/no-starvation
V=(--variant "default:" --variant "headwake:KLOCK_MUTEX_HEAD_WAKE_NS=1000000"
   --variant "headwake+fair:KLOCK_MUTEX_HEAD_WAKE_NS=1000000 KLOCK_MUTEX_FAIR_NS=1000000"
   --variant "headwake+fair+handoff0:KLOCK_MUTEX_HEAD_WAKE_NS=1000000 KLOCK_MUTEX_FAIR_NS=1000000 KLOCK_MUTEX_HANDOFF_NS=0")
python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload balanced --threads 8,32,128 --duration 1 > $OUT/ab5-balanced.md
python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload hot --threads 8,32,128 --duration 1 > $OUT/ab5-hot.md
