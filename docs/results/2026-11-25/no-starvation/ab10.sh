#!/usr/bin/env bash
# Tenth A/B for issue 19 (fairness at T=128): eventual fairness by a
# rate-bounded hand-off to the (possibly sleeping) head: an unlock hands the
# lock to a head that has been first for KLOCK_MUTEX_FAIR_HANDOFF_NS (at most
# once per interval and lock), alone at 1 ms and 0.5 ms, and at 1 ms with the
# newcomer rule KLOCK_MUTEX_FAIR_NS=1ms. Default: KLOCK_POLL_MISS_TICKS=40.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LB=target/release/lockbench
OUT=docs/results/2026-11-25/no-starvation
V=(--variant "default:" --variant "fairho1ms:KLOCK_MUTEX_FAIR_HANDOFF_NS=1000000"
   --variant "fairho0.5ms:KLOCK_MUTEX_FAIR_HANDOFF_NS=500000"
   --variant "fairho1ms+fair1ms:KLOCK_MUTEX_FAIR_HANDOFF_NS=1000000 KLOCK_MUTEX_FAIR_NS=1000000")
python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload balanced --threads 8,32,128 --duration 1 > $OUT/ab10-balanced.md
python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload hot --threads 8,32,128 --duration 1 > $OUT/ab10-hot.md
python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload long --threads 32,128 --duration 1 > $OUT/ab10-long.md
