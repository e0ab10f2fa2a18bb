#!/usr/bin/env bash
# Re-measurement of the mutex after the WAKING flag and owner-poll backoff
# (commit "mutex: WAKING flag ..."), same machine and day; run from the repo root.
set -u
B=./target/release/lockbench
D=docs/results/2026-11-21-rerun
mkdir -p "$D"
run() { local name=$1; shift; echo "== $name: lockbench $*" | tee -a "$D/commands.txt"; "$B" "$@" > "$D/$name.txt" 2>&1; echo "   exit $?" | tee -a "$D/commands.txt"; }
L=klock_mutex,klock_mutex_nospin,std,parking_lot,parking_lot_fair,pthread,pthread_adaptive
run uncontended uncontended --locks klock_mutex,klock_mutex_nospin,std,parking_lot --runs 10 --json "$D/uncontended.json"
run mutex-hot mutex --locks $L --workload hot --threads 2,8,32,128 --runs 5 --duration 1 --json "$D/mutex-hot.json"
run mutex-balanced mutex --locks $L --workload balanced --threads 1,2,4,8,32,128 --runs 5 --duration 1 --json "$D/mutex-balanced.json"
run mutex-noise mutex --locks $L --workload balanced --threads 2,8 --noise 2 --runs 5 --duration 1 --json "$D/mutex-noise.json"
run fserver fserver --runs 3 --json "$D/fserver.json"
