#!/usr/bin/env bash
# Ninth A/B for issue 19: the SpinLock (klock_unfair) with the cache-miss-timed
# poll (KLOCK_POLL_MISS_TICKS=40, the new default) against the plain backoff (0).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LB=target/release/lockbench
OUT=docs/results/2026-11-25/no-starvation
V=(--variant "miss40:" --variant "miss0:KLOCK_POLL_MISS_TICKS=0")
for W in balanced long hot; do
  python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_unfair --workload $W --threads 2,8,32 --duration 1 > $OUT/ab9-$W.md
done
