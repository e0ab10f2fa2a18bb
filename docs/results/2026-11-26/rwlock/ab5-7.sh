#!/usr/bin/env bash
# Issue 20, designs 5-7 (2026-11-26): same-binary A/B through environment
# variables. The designs are experiments, not on main: apply
# designs-5-7.patch to 1f13527 (git apply), build lockbench, then run this
# from the repository root. 5 interleaved rounds, 1 s per run, klock_rwsem
# and parking_lot_rw in every round.
set -euo pipefail
AB=docs/results/2026-11-25/no-starvation/ab-env.py
LB=target/release/lockbench
OUT=docs/results/2026-11-26/rwlock
for r in 18 4; do
  python3 $AB --rounds 5 --variant "base:KLOCK_RWSEM_READER_FAIR_NS=0" \
    --variant "phase:KLOCK_RWSEM_PHASE_FAIR=1" \
    --variant "turns1ms:KLOCK_RWSEM_READER_FAIR_NS=1000000" \
    --variant "turns200us:KLOCK_RWSEM_READER_FAIR_NS=200000" -- \
    $LB rwlock --locks klock_rwsem,parking_lot_rw --workload balanced --readers $r --writers $r --duration 1 \
    > $OUT/ab5-$r+$r.md 2>&1
  python3 $AB --rounds 5 --variant "base:KLOCK_RWSEM_READER_WAKE_NS=0" \
    --variant "retry1ms:KLOCK_RWSEM_READER_WAKE_NS=1000000" \
    --variant "retry200us:KLOCK_RWSEM_READER_WAKE_NS=200000" \
    --variant "retry1ms+block:KLOCK_RWSEM_READER_WAKE_NS=1000000 KLOCK_RWSEM_PHASE_FAIR=2" \
    --variant "block:KLOCK_RWSEM_PHASE_FAIR=2" -- \
    $LB rwlock --locks klock_rwsem,parking_lot_rw --workload balanced --readers $r --writers $r --duration 1 \
    > $OUT/ab6-$r+$r.md 2>&1
done
