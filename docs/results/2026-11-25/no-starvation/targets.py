#!/usr/bin/env python3
"""Issue 19's targets from lockbench JSON reports: for klock_mutex and
klock_unfair at each T, throughput / best peer's (std, parking_lot, pthread;
hot: / parking_lot), max/min against the fairest of std and parking_lot,
p99.9 against the best peer's, CPU ns/op against the best peer's."""
import json, sys

PEERS = ["std", "parking_lot", "pthread"]

def rec(recs, lock, t):
    return next((r for r in recs if r["lock"] == lock and r["threads"] == t), None)

for path in sys.argv[1:]:
    d = json.load(open(path))
    recs = [r for r in d["results"] if not r.get("implicit")]
    w = recs[0]["params"]["workload"]
    q = recs[0]["params"].get("quota_cpus")
    print(f"\n**{w}{f' --quota {q}' if q else ''}** ({path.split('/')[-1]})\n")
    print("| lock | T | x best peer | x parking_lot | max/min (fairest std/pl) | p99.9 (best peer) | CPU ns/op (best peer) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    ts = sorted({r["threads"] for r in recs})
    for lock in ["klock_mutex", "klock_unfair"]:
        for t in ts:
            k = rec(recs, lock, t)
            ps = [rec(recs, p, t) for p in PEERS]
            ps = [p for p in ps if p]
            best = max(ps, key=lambda p: p["throughput_mops"])
            pl = rec(recs, "parking_lot", t)
            fair = min(p.get("fairness_max_min") or float("inf") for p in ps if p["lock"] in ("std", "parking_lot"))
            p999 = min(p["latency_ns"]["p999"] for p in ps)
            cpu = min(p["cpu_ns_per_op"] for p in ps)
            kf = k.get("fairness_max_min") or float("inf")
            km, bm, pm = k["throughput_mops"], best["throughput_mops"], pl["throughput_mops"]
            kp = k["latency_ns"]["p999"]
            print(f"| {lock} | {t} | {km/bm:.2f} ({best['lock']}) | {km/pm:.2f} | {kf:.1f} ({fair:.1f}) | {kp/1e3:.1f} us ({p999/1e3:.1f} us) | {k['cpu_ns_per_op']:.0f} ({cpu:.0f}) |")
