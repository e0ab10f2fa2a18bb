#!/usr/bin/env bash
# Issue 9 campaign (2026-11-24): klock::RwLock against std, parking_lot and
# glibc, same run, on the machine at hand. Run from the repository root on an
# otherwise idle machine, after `cargo build --release -p lockbench`
# (and `--features lockbench/stats` into target/stats for the slow-path table).
set -eu
OUT=docs/results/2026-11-24
mkdir -p "$OUT"
B=./target/release/lockbench
RW=klock_rwsem,klock_rwsem_nospin,std_rw,parking_lot_rw,pthread_rw,pthread_rw_wpref
$B rwlock --locks $RW --workload balanced --threads 4,8,16,36 --runs 5 --json $OUT/rwsem-balanced.json > $OUT/rwsem-balanced.txt
KLOCK_RWSEM_READER=2 $B rwlock --locks klock_rwsem,std_rw,parking_lot_rw --workload balanced --threads 4,8,16,36 --runs 5 --json $OUT/rwsem-balanced-rspin.json > $OUT/rwsem-balanced-rspin.txt
$B rwlock --locks klock_rwsem,std_rw,parking_lot_rw --workload balanced --threads 16,36 --runs 5 --noise 2 --json $OUT/rwsem-balanced-noise2.json > $OUT/rwsem-balanced-noise2.txt
$B fio --runs 5 --json $OUT/rwsem-fio.json > $OUT/rwsem-fio.txt
$B uncontended --locks klock_rwsem,std_rw,parking_lot_rw,pthread_rw --runs 5 > $OUT/rwsem-uncontended.txt
if [ -x target/stats/release/lockbench ]; then
  target/stats/release/lockbench rwsem --pairs 4,18 --runs 3 --duration 0.5 --json $OUT/rwsem-seed.json > $OUT/rwsem-seed.txt
else
  $B rwsem --pairs 4,18 --runs 3 --duration 0.5 --json $OUT/rwsem-seed.json > $OUT/rwsem-seed.txt
fi
