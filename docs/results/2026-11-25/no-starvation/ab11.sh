#!/usr/bin/env bash
# Eleventh A/B for issue 19: design 9 (KLOCK_MUTEX_FAIR_HANDOFF_NS) with the
# head's wait checked on every 16th slow unlock of a thread instead of every
# one (the check is a clock read and a node load while the lock is held),
# at 1 ms and 4 ms.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LB=target/release/lockbench
OUT=docs/results/2026-11-25/no-starvation
V=(--variant "default:" --variant "fairho1ms/16:KLOCK_MUTEX_FAIR_HANDOFF_NS=1000000"
   --variant "fairho4ms/16:KLOCK_MUTEX_FAIR_HANDOFF_NS=4000000")
python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload hot --threads 8,32,128 --duration 1 > $OUT/ab11-hot.md
python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload balanced --threads 8,128 --duration 1 > $OUT/ab11-balanced.md
python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload long --threads 128 --duration 1 > $OUT/ab11-long.md
