#!/usr/bin/env python3
"""Same-binary A/B of `lockbench fio` through KLOCK_* environment variables.

  ab-fio.py --rounds 5 --variant "base:" --variant "r3:KLOCK_RWSEM_READER=3" -- \
      target/release/lockbench fio --locks klock_rwsem,std_rw --threads 2,8,36

Every round runs each variant once (`ARGS --runs 1 --quiet --json`), interleaved.
Prints per variant and thread count: klock_rwsem's median MB/s, its min-max, and
the median of the per-round ratios klock_rwsem / std_rw (the peer in the same run).
"""
import argparse, json, os, statistics as st, subprocess, sys, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--variant", action="append", required=True, help="LABEL:K=V K=V")
ap.add_argument("cmd", nargs=argparse.REMAINDER)
a = ap.parse_args()
cmd = [x for x in a.cmd if x != "--"]
tmp = tempfile.mkdtemp(prefix="ab-fio-")
vals = {}
for i in range(a.rounds):
    for spec in a.variant:
        label, _, env_s = spec.partition(":")
        env = dict(os.environ)
        for kv in env_s.split():
            k, _, v = kv.partition("=")
            env[k] = v
        out = os.path.join(tmp, f"{label}-{i}.json")
        r = subprocess.run(cmd + ["--runs", "1", "--quiet", "--json", out], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            sys.exit(f"{label} round {i}: {r.stderr[-400:]}")
        cells = json.load(open(out))["cells"]
        by = {(c["lock"], c["threads"]): c["mbps"] for c in cells}
        for (lock, t), v in by.items():
            if lock == "klock_rwsem":
                d = vals.setdefault((label, t), {"k": [], "r": []})
                d["k"].append(v)
                if ("std_rw", t) in by:
                    d["r"].append(v / by[("std_rw", t)])
    print(f"round {i + 1}/{a.rounds} done", file=sys.stderr)
labels = [s.partition(":")[0] for s in a.variant]
ts = sorted({t for (_, t) in vals})
print("variants: " + "; ".join(a.variant) + f"; rounds: {a.rounds}")
print("Each cell: klock_rwsem median MB/s [min-max] / median per-round ratio to std_rw")
print("| T | " + " | ".join(labels) + " |")
print("|---:|" + "---:|" * len(labels))
for t in ts:
    row = []
    for l in labels:
        d = vals.get((l, t))
        row.append(f"{st.median(d['k']):.0f} [{min(d['k']):.0f}-{max(d['k']):.0f}] / {st.median(d['r']):.2f}x" if d else "-")
    print(f"| {t} | " + " | ".join(row) + " |")
