#!/usr/bin/env bash
# Fourth A/B for issue 20 (klock_rwsem, balanced, interleaved rounds). Stats
# at 18+18 (KLOCK_STATS=1, one run): 482 653 reader slow paths, of which
# 482 029 stole the lock while waiting running, and only 624 slept, against
# 3.2 M writer acquisitions. So the readers lose the free window to the
# writers while they poll with the backoff. Variants: continuous owner polling
# (KLOCK_MUTEX_POLL_MAX_NS=0, for the readers' running wait and the writers'
# spinning alike), and a longer running wait for readers (KLOCK_RWSEM_READ_WAIT_NS).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LB=target/release/lockbench
OUT=docs/results/2026-11-25/rwlock
ABENV=docs/results/2026-11-25/no-starvation/ab-env.py
V=(--variant "default:" --variant "poll0:KLOCK_MUTEX_POLL_MAX_NS=0"
   --variant "readwait100us:KLOCK_RWSEM_READ_WAIT_NS=100000"
   --variant "poll0+readwait100us:KLOCK_MUTEX_POLL_MAX_NS=0 KLOCK_RWSEM_READ_WAIT_NS=100000")
for r in 4 18; do
  python3 $ABENV --rounds 5 "${V[@]}" -- $LB rwlock --locks klock_rwsem --workload balanced --readers $r --writers $r --duration 1 > $OUT/ab4-$r+$r.md
done
