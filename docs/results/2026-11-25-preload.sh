#!/usr/bin/env bash
# Issue 17 measurements (2026-11-25): the interposer as a drop-in. Unmodified
# programs with glibc's locks and under klock's interposer, side by side in
# one run, before (baa7a5b's interposer) and after (this commit's); the
# uncontended cost of every interposed pair. Run from the repository root on
# an otherwise idle machine (needs the packages of
# crates/klock-preload/tests/packages.txt and gcc). It cds to the
# repository root; scratch files and the "before" worktree go under target/
# (not committed; the run kept them in a scratch directory outside the
# repository).
set -eu
cd "$(dirname "$0")/../.."
OUT=docs/results/2026-11-25/preload
mkdir -p "$OUT"
cargo build --release -p lockbench -p klock-preload
B=./target/release/lockbench
L=$PWD/target/release/libklock_preload.so
# The interposer before this issue, built from baa7a5b in a scratch worktree.
BASE=$PWD/target/wt-base-baa7a5b
if [ ! -f "$BASE/target/release/libklock_preload.so" ]; then
  git worktree add -f "$BASE" baa7a5b
  (cd "$BASE" && cargo build --release -p klock-preload)
fi
LB=$BASE/target/release/libklock_preload.so

# 1. Uncontended pairs: glibc, before, after, interleaved; single-threaded
#    process and with an idle second thread; best of 60 passes of 1 M pairs.
cc -O2 docs/results/2026-11-25-preload-uncontended.c -o target/klock-unc -lpthread
for i in 1 2 3 4 5; do
  for mode in single threaded; do
    echo "== glibc $mode";  taskset -c 1 ./target/klock-unc 1000000 60 $mode
    echo "== before $mode"; LD_PRELOAD=$LB taskset -c 1 ./target/klock-unc 1000000 60 $mode
    echo "== after $mode";  LD_PRELOAD=$L taskset -c 1 ./target/klock-unc 1000000 60 $mode
  done
done > $OUT/uncontended.txt

# 2. Real programs: the issue's table (stress-ng at 1-8 instances, memcached,
#    sysbench), then the programs added by this issue. After, then before.
W=sysbench-threads,sysbench-mutex,stress-mutex,memcached
$B preload --workloads $W --threads 1,2,4,8,16 --runs 5 --duration 3 --lib "$L" \
  --json $OUT/after.json > $OUT/after.txt
$B preload --workloads kc-stash,kc-cache,kc-tree,pigz --threads 2,4,8,16 --runs 5 --lib "$L" \
  --json $OUT/after-new.json > $OUT/after-new.txt
$B preload --workloads $W --threads 1,2,4,8,16 --runs 5 --duration 3 --lib "$LB" \
  --json $OUT/before.json > $OUT/before.txt

# 3. The two workloads the issue found below glibc, longer and more often
#    (7 runs of 3 s per side and point), with three designs for real-time
#    waiters: this commit's (real-time threads never spin or yield), the
#    same library with no spinning for any thread (KLOCK_MUTEX=nospin), and
#    baa7a5b's (real-time threads spin and yield like the others). glibc is
#    measured in each run; compare the ratios.
W2=stress-mutex,memcached
$B preload --workloads $W2 --threads 1,2,4,8 --runs 7 --duration 3 --lib "$L" \
  --json $OUT/long-after.json > $OUT/long-after.txt
KLOCK_MUTEX=nospin $B preload --workloads $W2 --threads 1,2,4,8 --runs 7 --duration 3 --lib "$L" \
  --json $OUT/long-nospin.json > $OUT/long-nospin.txt
$B preload --workloads $W2 --threads 1,2,4,8 --runs 7 --duration 3 --lib "$LB" \
  --json $OUT/long-before.json > $OUT/long-before.txt
