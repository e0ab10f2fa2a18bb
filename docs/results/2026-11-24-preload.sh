#!/usr/bin/env bash
# Issue 10 measurements (2026-11-24): unmodified programs with glibc's locks
# and under klock's interposer, side by side in one run; the uncontended cost
# of the interposed calls; glibc's default mutex against klock and
# parking_lot in lockbench. Run from the repository root on an otherwise idle
# machine (needs sysbench, stress-ng, memcached, libmemcached-tools, gcc).
# Scratch files go under target/ (not committed; the run kept them in a
# scratch directory outside the repository).
set -eu
cd "$(dirname "$0")/../.."
OUT=docs/results/2026-11-24/preload
mkdir -p "$OUT"
cargo build --release -p lockbench -p klock-preload
B=./target/release/lockbench
L=$PWD/target/release/libklock_preload.so
$B preload --runs 3 --json $OUT/preload.json > $OUT/preload.txt
cc -O2 docs/results/2026-11-24-preload-uncontended.c -o target/klock-unc -lpthread
for i in 1 2 3; do
  echo "== glibc"; ./target/klock-unc
  echo "== klock preload"; LD_PRELOAD=$L ./target/klock-unc
done > $OUT/uncontended.txt
$B mutex --locks klock_mutex,pthread,parking_lot,std --workload balanced --threads 2,8,32 --runs 3 --json $OUT/mutex-balanced.json > $OUT/mutex-balanced.txt
