#!/usr/bin/env bash
# Variants of design 6 (ab6b, ab7), run 2026-11-25 22:10-22:30 UTC from a working tree
# that had two experimental switches, since removed (the winner, per-poll, became
# KLOCK_POLL_MISS_TICKS): KLOCK_X_STICKY=1 ("sticky": after one miss with the same
# owner, back off until the owner changes) and KLOCK_X_MODE=2 ("calm": back off as
# before until a poll right after a pause hits, then poll continuously). The
# tunable was then named KLOCK_MUTEX_POLL_MISS_TICKS. These commands no longer
# reproduce sticky/calm; they are kept as the record of what ran.
cd /work/main
LB=target/release/lockbench
OUT=docs/results/2026-11-25/no-starvation
V=(--variant "default:" --variant "miss40:KLOCK_MUTEX_POLL_MISS_TICKS=40" --variant "miss40sticky:KLOCK_MUTEX_POLL_MISS_TICKS=40 KLOCK_X_STICKY=1")
for W in hot long balanced; do
  python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload $W --threads 2,8,32 --duration 1 > /tmp/ab6b-$W.md
done
cd /work/main
LB=target/release/lockbench
OUT=docs/results/2026-11-25/no-starvation
V=(--variant "default:" --variant "miss40:KLOCK_MUTEX_POLL_MISS_TICKS=40" --variant "calm40:KLOCK_MUTEX_POLL_MISS_TICKS=40 KLOCK_X_MODE=2" --variant "calm80:KLOCK_MUTEX_POLL_MISS_TICKS=80 KLOCK_X_MODE=2")
for W in hot long balanced; do
  python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload $W --threads 2,8,32 --duration 1 > /tmp/ab7-$W.md
done
