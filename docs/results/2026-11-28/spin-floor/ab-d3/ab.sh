#!/bin/bash
# ab.sh A B TAG ARGS...: interleave A and B (--runs 1) 5 rounds each
A=$1; B=$2; T=$3; shift 3
for i in 1 2 3 4 5; do ./$A "$@" --runs 1 --quiet --json $T-A$i.json >/dev/null 2>&1; ./$B "$@" --runs 1 --quiet --json $T-B$i.json > /dev/null 2>&1; done
python3 - "$T" <<'PY'
import json,sys,statistics as st
t=sys.argv[1]; v={}
for side in "AB":
    for i in range(1,6):
        for r in json.load(open(f"{t}-{side}{i}.json"))["results"]:
            v.setdefault((r["lock"],r["threads"]),{}).setdefault(side,[]).append((r["throughput_mops"], r["fairness_max_min"] or float('inf'), r["latency_ns"]["p999"]))
for k in sorted(v):
    a=v[k].get("A",[]); b=v[k].get("B",[])
    if not a or not b: continue
    ma=st.median(x[0] for x in a); mb=st.median(x[0] for x in b)
    fa=st.median(x[1] for x in a); fb=st.median(x[1] for x in b)
    pa=st.median(x[2] for x in a); pb=st.median(x[2] for x in b)
    print(f"{k[0]:20} T={k[1]:<4} A {ma:.3f} ({min(x[0] for x in a):.2f}-{max(x[0] for x in a):.2f}) f{fa:.1f} p{pa/1e3:.1f}us | B {mb:.3f} ({min(x[0] for x in b):.2f}-{max(x[0] for x in b):.2f}) f{fb:.1f} p{pb/1e3:.1f}us | B/A {mb/ma:.2f}")
PY
