#!/bin/bash
# pass.sh OUT PASSES MODE LIB... : each pass runs unc with every lib in turn ("-" = glibc)
out=$1; n=$2; mode=$3; shift 3
: > $out
for p in $(seq $n); do
  line=""
  for lib in "$@"; do
    if [ "$lib" = "-" ]; then r=$(./unc 10000000 $mode); else r=$(LD_PRELOAD=$lib ./unc 10000000 $mode); fi
    line="$line$(echo "$r" | awk '!/impl/{printf "%s ", $2}')| "
  done
  echo "$line" >> $out
done
