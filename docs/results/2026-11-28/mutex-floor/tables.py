#!/usr/bin/env python3
"""Issue 32's tables from lockbench JSON: `tables.py DIR TAG [TAG...]`
(the files may be gzipped: DIR/TAG-WORKLOAD.json.gz).

For each run TAG and workload (files DIR/TAG-{balanced,long,hot,quota}.json,
written by `lockbench mutex --json`), one markdown table: per thread count
and lock, the median throughput (Mops/s) with the min-max of the runs, the
ratio to the better of std and parking_lot in the same run, fairness
(max/min per-thread ops; inf = a thread starved), p99.9 of the sampled
acquisition latency, and voluntary context switches per 1000 ops.
"""
import gzip, json, os, sys

def ns(n):
    if n >= 1e6: return f"{n/1e6:.1f} ms"
    if n >= 1e3: return f"{n/1e3:.1f} µs"
    return f"{n} ns"

def fair(r):
    f = r["fairness_max_min"]
    return "inf" if f is None else f"{f:.1f}"

d, tags = sys.argv[1], sys.argv[2:]
for tag in tags:
    for w in ["balanced", "long", "hot", "quota"]:
        f = os.path.join(d, f"{tag}-{w}.json")
        if os.path.exists(f + ".gz"):
            j = json.load(gzip.open(f + ".gz", "rt"))
        elif os.path.exists(f):
            j = json.load(open(f))
        else:
            continue
        rows = {}
        for r in j["results"]:
            rows.setdefault(r["threads"], []).append(r)
        print(f"**{tag}, {w}**{' (--quota 0.5)' if w == 'quota' else ''}: Mops/s median (min-max) ×best-peer · max/min · p99.9 · vcsw/1000 ops\n")
        locks = [r["lock"] for r in rows[min(rows)]]
        print("| T | " + " | ".join(locks) + " |")
        print("|---|" + "---|" * len(locks))
        for t in sorted(rows):
            peers = [r["throughput_mops"] for r in rows[t] if r["lock"] in ("std", "parking_lot")]
            best = max(peers)
            cells = []
            for r in rows[t]:
                rr = sorted(r["runs_mops"])
                vc = r["per_op"]["csw_voluntary"] * 1000 if r.get("per_op") else float("nan")
                cells.append(f"{r['throughput_mops']:.2f} ({rr[0]:.2f}-{rr[-1]:.2f}) ×{r['throughput_mops']/best:.2f} · {fair(r)} · {ns(r['latency_ns']['p999'])} · {vc:.2f}")
            print(f"| {t} | " + " | ".join(cells) + " |")
        print()
