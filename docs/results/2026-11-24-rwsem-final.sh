#!/usr/bin/env bash
# Issue 9 closing re-run (2026-11-24, second session): the whole table with
# the shipped default (reader mode 4), same run against the peers, on the
# machine at hand. Run from the repository root on an otherwise idle machine,
# after `cargo build --release -p lockbench` and
# `CARGO_TARGET_DIR=target/stats cargo build --release -p lockbench --features lockbench/stats`.
set -eu
OUT=docs/results/2026-11-24/final
mkdir -p "$OUT"
B=./target/release/lockbench
RW=klock_rwsem,klock_rwsem_nospin,std_rw,parking_lot_rw,pthread_rw,pthread_rw_wpref
$B rwlock --locks $RW --workload balanced --threads 4,8,16,36 --runs 5 --json $OUT/balanced.json > $OUT/balanced.txt
$B rwlock --locks klock_rwsem,std_rw,parking_lot_rw --workload balanced --threads 16,36 --runs 5 --noise 2 --json $OUT/noise2.json > $OUT/noise2.txt
$B fio --runs 5 --json $OUT/fio.json > $OUT/fio.txt
$B uncontended --locks klock_rwsem,std_rw,parking_lot_rw,pthread_rw --runs 5 > $OUT/uncontended-write.txt
$B uncontended --read --locks klock_rwsem,std_rw,parking_lot_rw,pthread_rw --runs 5 > $OUT/uncontended-read.txt
target/stats/release/lockbench rwsem --pairs 4,18 --runs 3 --duration 0.5 --json $OUT/seed.json > $OUT/seed.txt
