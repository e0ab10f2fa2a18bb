#!/usr/bin/env python3
"""Interleaved A/B of two already-built lockbench binaries (A B A B ...):
  ab-bin.py --rounds 5 A_BIN B_BIN -- rwlock --locks klock_rwsem --readers 4 --writers 4
Each round runs `BIN ARGS --runs 1 --quiet --json`; prints per (lock, threads)
the median throughput of A and B, B/A, and min-max of each."""
import argparse, json, os, statistics as st, subprocess, sys, tempfile
ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("a"); ap.add_argument("b"); ap.add_argument("args", nargs=argparse.REMAINDER)
o = ap.parse_args()
args = [x for x in o.args if x != "--"]
tmp = tempfile.mkdtemp(prefix="ab-bin-")
vals = {}
for i in range(o.rounds):
    for tag, b in (("A", o.a), ("B", o.b)):
        out = os.path.join(tmp, f"{tag}{i}.json")
        subprocess.run([b] + args + ["--runs", "1", "--quiet", "--json", out], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for r in json.load(open(out))["results"]:
            if r.get("implicit"):
                continue
            vals.setdefault((r["lock"], str(r["threads"])), {"A": [], "B": []})[tag].append(r["throughput_mops"])
    print(f"round {i + 1}/{o.rounds}", file=sys.stderr)
print(f"A = {o.a}\nB = {o.b}\nargs: {' '.join(args)}; rounds {o.rounds}")
print("| lock | T | A median [min-max] | B median [min-max] | B/A |")
print("|---|---:|---:|---:|---:|")
for (l, t), v in sorted(vals.items()):
    a, b = v["A"], v["B"]
    print(f"| {l} | {t} | {st.median(a):.3f} [{min(a):.3f}-{max(a):.3f}] | {st.median(b):.3f} [{min(b):.3f}-{max(b):.3f}] | {st.median(b)/st.median(a):.2f} |")
