#!/usr/bin/env bash
# Third A/B for issue 19: continuous owner polling (KLOCK_MUTEX_POLL_MAX_NS=0)
# on `hot` (the workload the poll backoff was tuned for), and the quota-aware
# yield rounds (KLOCK_MUTEX_QUOTA_YIELDS, default 0 here) against the old 4
# under a 0.5-CPU quota; rounds interleaved by ab-env.py.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LB=target/release/lockbench
OUT=docs/results/2026-11-25/no-starvation
python3 $OUT/ab-env.py --rounds 5 --variant "default:" --variant "poll0:KLOCK_MUTEX_POLL_MAX_NS=0" -- \
  $LB mutex --locks klock_mutex --workload hot --threads 2,8,32,128 --duration 1 > $OUT/ab3-hot.md
python3 $OUT/ab-env.py --rounds 5 --variant "quotayields0:" --variant "quotayields4:KLOCK_MUTEX_QUOTA_YIELDS=4" \
  --variant "quotayields0+poll0:KLOCK_MUTEX_POLL_MAX_NS=0" -- \
  $LB --quota 0.5 mutex --locks klock_mutex --workload balanced --threads 8,32,128 --duration 1 > $OUT/ab3-balanced-quota.md
