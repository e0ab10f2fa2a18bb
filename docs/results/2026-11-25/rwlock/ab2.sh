#!/usr/bin/env bash
# Second A/B for issue 20 (klock_rwsem, balanced, interleaved rounds):
# eventual fairness for the rwsem (KLOCK_RWSEM_FAIR_HANDOFF_NS: a release gives
# a head first for that long its turn, even while a woken head is pending),
# alone and with the writer hand-off threshold at 1 ms, against the default
# and the 1 ms threshold alone.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LB=target/release/lockbench
OUT=docs/results/2026-11-25/rwlock
ABENV=docs/results/2026-11-25/no-starvation/ab-env.py
V=(--variant "default:" --variant "handoff1ms:KLOCK_RWSEM_HANDOFF_NS=1000000"
   --variant "fair1ms:KLOCK_RWSEM_FAIR_HANDOFF_NS=1000000"
   --variant "fair1ms+handoff1ms:KLOCK_RWSEM_FAIR_HANDOFF_NS=1000000 KLOCK_RWSEM_HANDOFF_NS=1000000")
for r in 4 8 18; do
  python3 $ABENV --rounds 5 "${V[@]}" -- $LB rwlock --locks klock_rwsem --workload balanced --readers $r --writers $r --duration 1 > $OUT/ab2-$r+$r.md
done
