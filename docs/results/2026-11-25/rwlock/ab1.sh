#!/usr/bin/env bash
# First A/B for issue 20 (klock_rwsem, balanced, interleaved rounds via
# ../no-starvation/ab-env.py): the cache-miss-timed owner poll (default
# KLOCK_POLL_MISS_TICKS=40) against the plain backoff (0); the writer
# hand-off threshold at 1 ms instead of 4 ms; the kernel 5.11 reader policy
# (steal, no running wait: KLOCK_RWSEM_READER=1).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LB=target/release/lockbench
OUT=docs/results/2026-11-25/rwlock
ABENV=docs/results/2026-11-25/no-starvation/ab-env.py
V=(--variant "default:" --variant "miss0:KLOCK_POLL_MISS_TICKS=0"
   --variant "handoff1ms:KLOCK_RWSEM_HANDOFF_NS=1000000" --variant "reader1:KLOCK_RWSEM_READER=1")
for r in 4 18; do
  python3 $ABENV --rounds 5 "${V[@]}" -- $LB rwlock --locks klock_rwsem --workload balanced --readers $r --writers $r --duration 1 > $OUT/ab1-$r+$r.md
done
