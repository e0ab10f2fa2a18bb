#!/bin/bash
# like abn.sh but lb-v2a runs with default, lb-v2b with KLOCK_SPIN_HANDOFF_NS=$HO
T=$1; R=$2; shift 2
for i in $(seq 1 $R); do ./lb-v2a "$@" --runs 1 --quiet --json $T-lb-v2a-$i.json >/dev/null 2>&1; KLOCK_SPIN_HANDOFF_NS=$HO ./lb-v2b "$@" --runs 1 --quiet --json $T-lb-v2b-$i.json >/dev/null 2>&1; done
python3 /tmp/m/abn.py $T "lb-v2a lb-v2b"
