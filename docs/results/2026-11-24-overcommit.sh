#!/usr/bin/env bash
# Issue 8 campaign (2026-11-24): before (8f4db4f, main before the overcommit
# changes) and after (this commit) on the same machine, one after the other
# (each table's locks interleaved within its run; the interleaved before/after
# A/Bs of each change are on the results page).
# Run on an otherwise idle machine; it cds to the repository root. The
# "before" build is a scratch worktree under target/ (not committed; the run
# had it in a scratch directory outside the repository).
set -eu
cd "$(dirname "$0")/../.."
OUT=docs/results/2026-11-24
mkdir -p "$OUT"
AFTER=./target/release/lockbench
WT=target/wt-before-8f4db4f
BEFORE=${BEFORE:-$WT/target/release/lockbench}
if [ ! -x "$BEFORE" ]; then
  git worktree add --detach -f "$WT" 8f4db4f >/dev/null 2>&1 || true
  (cd "$WT" && cargo build --release -q -p lockbench)
fi
cargo build --release -q -p lockbench
L=klock_mutex,klock_unfair,std,parking_lot
for who in ${WHO:-before after}; do
  B=$AFTER; [ $who = before ] && B=$BEFORE
  $B mutex --locks $L --workload balanced --threads 2,4,8,32,128 --duration 1 --runs 5 --json $OUT/overcommit-$who-balanced.json > $OUT/overcommit-$who-balanced.txt
  $B mutex --locks $L --workload hot --threads 2,8,32,128 --duration 1 --runs 5 --json $OUT/overcommit-$who-hot.json > $OUT/overcommit-$who-hot.txt
done
[ -n "${SKIP_EXTRA:-}" ] && exit 0
$AFTER mutex --locks $L --workload balanced --threads 2,8,32,128 --duration 1 --runs 5 --noise 2 --json $OUT/overcommit-after-balanced-noise2.json > $OUT/overcommit-after-balanced-noise2.txt
$AFTER mutex --locks $L --workload hot --threads 2,8,32,128 --duration 1 --runs 5 --noise 2 --json $OUT/overcommit-after-hot-noise2.json > $OUT/overcommit-after-hot-noise2.txt
$AFTER fserver --users 2,8,32,128 --runs 3 --json $OUT/overcommit-after-fserver.json > $OUT/overcommit-after-fserver.txt
LOCKS="std parking_lot klock_unfair klock_mutex" B=$AFTER bash docs/results/2026-11-21-callgrind.sh > $OUT/overcommit-after-callgrind.md
