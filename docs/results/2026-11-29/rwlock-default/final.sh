#!/bin/bash
# final.sh BIN TAG: issue 34's whole table (except the main job), one binary
bin=$1; tag=$2; out=/tmp/rw/$tag; mkdir -p $out
L=klock_rwlock_batched,klock_rwlock_floor,klock_rwsem,std_rw,parking_lot_rw
for noise in 0 2; do for r in 2 4 8 18; do
  $bin rwlock --workload balanced --readers $r --writers $r --noise $noise --runs 5 --duration 0.5 --quiet --locks $L > $out/r$r-n$noise.txt 2>&1
done; done
$bin rwlock --workload balanced --readers 4 --writers 4 --quota 0.5 --runs 5 --duration 0.5 --quiet --locks $L > $out/quota.txt 2>&1
$bin fio --threads 2,8,36 --runs 5 --quiet --locks $L > $out/fio.txt 2>&1
$bin preload --workloads kc-stash,kc-cache,kc-tree --threads 2,8 --runs 5 --quiet > $out/kc.txt 2>&1
echo done > $out/DONE
