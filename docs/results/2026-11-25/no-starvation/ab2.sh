#!/usr/bin/env bash
# Second A/B for issue 19: the owner-poll backoff (KLOCK_MUTEX_POLL_MAX_NS=0:
# spinners poll the owner continuously, as the kernel's spin_on_owner does)
# and the hand-off threshold (KLOCK_MUTEX_HANDOFF_NS=0: a woken head that
# loses once asks for the lock at once and waits for it running), alone and
# together, on klock_mutex; rounds interleaved by ab-env.py.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LB=target/release/lockbench
OUT=docs/results/2026-11-25/no-starvation
V=(--variant "default:" --variant "poll0:KLOCK_MUTEX_POLL_MAX_NS=0"
   --variant "handoff0:KLOCK_MUTEX_HANDOFF_NS=0"
   --variant "both:KLOCK_MUTEX_POLL_MAX_NS=0 KLOCK_MUTEX_HANDOFF_NS=0")
for w in long balanced; do
  python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- \
    $LB mutex --locks klock_mutex --workload $w --threads 2,8,128 --duration 1 > $OUT/ab2-$w.md
done
