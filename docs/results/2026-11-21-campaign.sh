#!/usr/bin/env bash
# The exact commands behind docs/results/2026-11-21-*.md (after `report --full`).
# Run from the repository root on an otherwise idle machine.
set -u
B=./target/release/lockbench
D=docs/results/2026-11-21
mkdir -p "$D"
run() { local name=$1; shift; echo "== $name: lockbench $*" | tee -a "$D/commands.txt"; "$B" "$@" > "$D/$name.txt" 2>&1; echo "   exit $?" | tee -a "$D/commands.txt"; }

SPIN=std,parking_lot,ttas,klock_tas,klock_ticket,klock_pvticket,klock_qspin,klock_pvqspin_base,klock_pvqspin,klock_unfair
MUTEX=klock_mutex,klock_mutex_nospin,std,parking_lot,parking_lot_fair,pthread,pthread_adaptive

# Uncontended lock+unlock, all locks (issue 3 and 4 targets)
run uncontended uncontended --runs 10 --json "$D/uncontended.json"
# Spinlocks: balanced, overcommitted, and T=2 with 2 noise threads
run spin-balanced mutex --locks $SPIN --workload balanced --threads 2,4,8,32 --runs 5 --duration 1 --json "$D/spin-balanced.json"
run spin-noise mutex --locks $SPIN --workload balanced --threads 2 --noise 2 --runs 5 --duration 1 --json "$D/spin-noise.json"
run spin-hot mutex --locks $SPIN --workload hot --threads 2,8,32 --runs 5 --duration 1 --json "$D/spin-hot.json"
# Seed 001's experiment
run spin-seed spin --noise 2 --runs 3 --timeout 5 --json "$D/spin-seed.json"
# Mutex: balanced and hot at T up to 128, and with noise
run mutex-balanced mutex --locks $MUTEX --workload balanced --threads 1,2,4,8,32,128 --runs 5 --duration 1 --json "$D/mutex-balanced.json"
run mutex-hot mutex --locks $MUTEX --workload hot --threads 2,8,32,128 --runs 5 --duration 1 --json "$D/mutex-hot.json"
run mutex-noise mutex --locks $MUTEX --workload balanced --threads 2,8 --noise 2 --runs 5 --duration 1 --json "$D/mutex-noise.json"
# Seed 004's experiment
run fserver fserver --runs 3 --json "$D/fserver.json"
