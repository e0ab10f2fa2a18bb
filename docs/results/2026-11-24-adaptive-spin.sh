#!/bin/bash
# The interleaved sysbench A/B of 2026-11-24-adaptive-spin.md.
# Build first (from the repository root; the scratch builds go under target/,
# which is not committed; the run used the same layout in a scratch directory
# outside the repository):
#   git worktree add target/wt-base 4b59a46 && (cd target/wt-base && CARGO_TARGET_DIR=../pA cargo build --release -p klock-preload)
#   CARGO_TARGET_DIR=target/pB cargo build --release -p klock-preload          # at 44a7bb5 or later
# Usage: 2026-11-24-adaptive-spin.sh ROUNDS OUT
# OUT lines: "threads ROUND T CONFIG EVENTS STEAL_TICKS" and "mutex ROUND 8 CONFIG SECONDS".
ROUNDS=${1:-3}; OUT=${2:-adaptive-spin.txt}; : > "$OUT"
ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
A=${A:-$ROOT/target/pA/release/libklock_preload.so}; B=${B:-$ROOT/target/pB/release/libklock_preload.so}
CONFIGS="glibc:-:X=1 base:$A:X=1 new:$B:X=1 new-off:$B:KLOCK_MUTEX_ADAPT=0"
run() { # CONFIG CMD...
  local c=$1; shift
  local lib=${c#*:}; lib=${lib%%:*}; local envs=${c##*:}
  if [ "$lib" = "-" ]; then env "$envs" "$@"; else env LD_PRELOAD="$lib" "$envs" "$@"; fi
}
for r in $(seq 1 "$ROUNDS"); do
  for T in 2 4 8 16; do
    for c in $CONFIGS; do
      ev=$(run "$c" sysbench threads --threads=$T --thread-locks=1 --thread-yields=100 --time=2 run 2>&1 |
        awk '/total number of events/{print $NF}')
      echo "threads $r $T ${c%%:*} $ev $(head -1 /proc/stat | awk '{print $9}')" >> "$OUT"
    done
  done
  for c in $CONFIGS; do
    tt=$(run "$c" sysbench mutex --threads=8 --mutex-num=1 --mutex-locks=200000 --mutex-loops=0 run 2>&1 |
      awk '/total time:/{print $NF}' | tr -d s)
    echo "mutex $r 8 ${c%%:*} $tt" >> "$OUT"
  done
done
