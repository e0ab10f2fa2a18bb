#!/usr/bin/env bash
# Sixth A/B for issue 19: back off between owner polls only after a poll that
# missed the cache (KLOCK_POLL_MISS_TICKS=M: a load slower than the
# calibrated L1 hit by more than M TSC ticks), against the default doubling
# backoff and continuous polling; rounds interleaved by ab-env.py.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LB=target/release/lockbench
OUT=docs/results/2026-11-25/no-starvation
V=(--variant "default:" --variant "miss40:KLOCK_POLL_MISS_TICKS=40"
   --variant "miss80:KLOCK_POLL_MISS_TICKS=80" --variant "poll0:KLOCK_MUTEX_POLL_MAX_NS=0")
for W in long balanced hot; do
  python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload $W --threads 2,8,32 --duration 1 > $OUT/ab6-$W.md
done
# (ran 2026-11-25 21:50 UTC when the tunable was named KLOCK_MUTEX_POLL_MISS_TICKS and defaulted to 0)
# That name was never committed: the run's HEAD was c3d3df6 plus the
# uncommitted design-6 code, which was committed as KLOCK_POLL_MISS_TICKS,
# default 40, in 2752bcd. To re-run at 2752bcd, make the first variant
# "default:KLOCK_POLL_MISS_TICKS=0" (the default while this ran).
