#!/usr/bin/env bash
# Third A/B for issue 20 (klock_rwsem, balanced, interleaved rounds): the
# reader policies on a failed fast path (KLOCK_RWSEM_READER): 4 steal then
# wait running (default), 0 queue at once, 2 spin on a writer owner through
# the OSQ (seed 003), 3 steal beside other readers.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LB=target/release/lockbench
OUT=docs/results/2026-11-25/rwlock
ABENV=docs/results/2026-11-25/no-starvation/ab-env.py
V=(--variant "reader4:" --variant "reader0:KLOCK_RWSEM_READER=0"
   --variant "reader2:KLOCK_RWSEM_READER=2" --variant "reader3:KLOCK_RWSEM_READER=3")
for r in 8 18; do
  python3 $ABENV --rounds 5 "${V[@]}" -- $LB rwlock --locks klock_rwsem --workload balanced --readers $r --writers $r --duration 1 > $OUT/ab3-$r+$r.md
done
