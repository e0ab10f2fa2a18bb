#!/usr/bin/env bash
# Variants of design 6 (ab6b, ab7), run 2026-11-25 22:10-22:30 UTC from a working tree
# that had two experimental switches, since removed (the winner, per-poll, became
# KLOCK_POLL_MISS_TICKS): KLOCK_X_STICKY=1 ("sticky": after one miss with the same
# owner, back off until the owner changes) and KLOCK_X_MODE=2 ("calm": back off as
# before until a poll right after a pause hits, then poll continuously). The
# tunable was then named KLOCK_MUTEX_POLL_MISS_TICKS. These commands no longer
# reproduce sticky/calm; they are kept as the record of what ran.
#
# Settings that no longer exist (crates/klock/src/tune.rs has none of them):
# KLOCK_X_STICKY and KLOCK_X_MODE were never committed, and neither was the name
# KLOCK_MUTEX_POLL_MISS_TICKS: every commit that has the tunable calls it
# KLOCK_POLL_MISS_TICKS (since 2752bcd, default 40). klock ignores KLOCK_*
# variables it does not know, so with any committed code every variant below
# runs the defaults.
# Commit: the run's HEAD was c3d3df6 (2752bcd's parent), plus the uncommitted
# design-6 code and the two switches; the design-6 code, without the switches,
# was committed with this script in 2752bcd. What can be re-run: check out
# 2752bcd, build lockbench, and use the variants "default:KLOCK_POLL_MISS_TICKS=0"
# (the default while these ran) and "miss40:KLOCK_POLL_MISS_TICKS=40". Sticky
# and calm cannot be re-run from any commit.
#
# Paths are relative to the repository (the script cds to its root). The run
# wrote to a scratch directory and the tables were copied to $OUT/ab6b-*.md and
# $OUT/ab7-*.md; a re-run writes to $RES (default target/ab6b-ab7, not
# committed), so that it cannot overwrite the record.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
LB=target/release/lockbench
OUT=docs/results/2026-11-25/no-starvation
RES=${RES:-target/ab6b-ab7}
mkdir -p "$RES"
V=(--variant "default:" --variant "miss40:KLOCK_MUTEX_POLL_MISS_TICKS=40" --variant "miss40sticky:KLOCK_MUTEX_POLL_MISS_TICKS=40 KLOCK_X_STICKY=1")
for W in hot long balanced; do
  python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload $W --threads 2,8,32 --duration 1 > "$RES/ab6b-$W.md"
done
V=(--variant "default:" --variant "miss40:KLOCK_MUTEX_POLL_MISS_TICKS=40" --variant "calm40:KLOCK_MUTEX_POLL_MISS_TICKS=40 KLOCK_X_MODE=2" --variant "calm80:KLOCK_MUTEX_POLL_MISS_TICKS=80 KLOCK_X_MODE=2")
for W in hot long balanced; do
  python3 $OUT/ab-env.py --rounds 5 "${V[@]}" -- $LB mutex --locks klock_mutex --workload $W --threads 2,8,32 --duration 1 > "$RES/ab7-$W.md"
done
