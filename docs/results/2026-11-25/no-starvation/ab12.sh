#!/usr/bin/env bash
# Twelfth A/B for issue 19: design 6 (KLOCK_POLL_MISS_TICKS=40) cost `hot`
# T=2 (31.4 against 41.7 Mops/s in the after table): in a 20 ns hold the
# owner leaves the word unwritten long enough for a quick re-poll to hit, so
# the waiter polled on every hold. Variant: pause KLOCK_POLL_HIT_PAUSE_NS
# after a hit (so a hit means the word stayed unwritten that long), against
# no pause and the plain backoff (miss0).
#
# Setting that no longer exists: KLOCK_POLL_HIT_PAUSE_NS (removed with its
# code in 721104a; not in crates/klock/src/tune.rs), so with today's code the
# hit128/hit256 variants run the defaults. The tunable's code, this script
# and its tables were committed together in 626839d: check that commit out
# to re-run it.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LB=target/release/lockbench
OUT=docs/results/2026-11-25/no-starvation
V=(--variant "hit0:" --variant "hit128:KLOCK_POLL_HIT_PAUSE_NS=128"
   --variant "hit256:KLOCK_POLL_HIT_PAUSE_NS=256" --variant "miss0:KLOCK_POLL_MISS_TICKS=0")
for W in hot long balanced; do
  python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload $W --threads 2,8,32 --duration 1 > $OUT/ab12-$W.md
done
