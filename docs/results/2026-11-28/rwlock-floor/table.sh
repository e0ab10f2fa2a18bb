#!/bin/bash
# table.sh BIN TAG [extra lockbench args]: the issue-34 share table, R=2,4,8,18, with and without --noise 2
bin=$1; tag=$2; shift 2
out=/tmp/rw/$tag; mkdir -p $out
for noise in 0 2; do for r in 2 4 8 18; do
  $bin rwlock --workload balanced --readers $r --writers $r --noise $noise --runs 5 --duration 0.5 --quiet "$@" > $out/r$r-n$noise.txt 2>&1
done; done
