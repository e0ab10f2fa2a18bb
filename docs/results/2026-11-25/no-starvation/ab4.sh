#!/usr/bin/env bash
# Fourth A/B for issue 19: an owner-poll backoff capped by the hold so far
# (KLOCK_MUTEX_POLL_HOLD_DIV=N: each delay at most the current owner's hold
# time so far / N), against the default doubling backoff and continuous
# polling (KLOCK_MUTEX_POLL_MAX_NS=0); rounds interleaved by ab-env.py.
#
# Setting that no longer exists: KLOCK_MUTEX_POLL_HOLD_DIV (removed with its
# code in 721104a; not in crates/klock/src/tune.rs), so with today's code the
# holddiv variants run the defaults. The tunable's code, this script and its
# tables were committed together in 6b8ce18: check that commit out to re-run
# it.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LB=target/release/lockbench
OUT=docs/results/2026-11-25/no-starvation
V=(--variant "default:" --variant "holddiv4:KLOCK_MUTEX_POLL_HOLD_DIV=4"
   --variant "holddiv2:KLOCK_MUTEX_POLL_HOLD_DIV=2" --variant "poll0:KLOCK_MUTEX_POLL_MAX_NS=0")
python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload long --threads 2,8 --duration 1 > $OUT/ab4-long.md
python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload balanced --threads 2,8,32 --duration 1 > $OUT/ab4-balanced.md
python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload hot --threads 2,8,32 --duration 1 > $OUT/ab4-hot.md
