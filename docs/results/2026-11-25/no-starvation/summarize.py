#!/usr/bin/env python3
"""Markdown tables from lockbench JSON reports: per file, for each threads
count, every lock's median Mops/s, max/min, p99.9 and CPU ns/op."""
import json, sys

def fmt_ns(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.0f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"

for path in sys.argv[1:]:
    d = json.load(open(path))
    recs = [r for r in d["results"] if not r.get("implicit")]
    locks = list(dict.fromkeys(r["lock"] for r in recs))
    ts = sorted({r["threads"] for r in recs})
    w = recs[0]["params"]["workload"]
    q = recs[0]["params"].get("quota_cpus")
    print(f"\n**{w}{f' under --quota {q}' if q else ''}** ({path.split('/')[-1]}; {d['machine']['date_utc']})\n")
    print("| lock | " + " | ".join(f"T={t}" for t in ts) + " |")
    print("|---|" + "---:|" * len(ts))
    for l in locks:
        cells = []
        for t in ts:
            r = next((r for r in recs if r["lock"] == l and r["threads"] == t), None)
            if r is None:
                cells.append("")
                continue
            f = r.get("fairness_max_min")
            cells.append(f"{r['throughput_mops']:.2f} · {('inf' if f is None else f'{f:.1f}')} · "
                         f"{fmt_ns(r['latency_ns']['p999'])} · {r['cpu_ns_per_op']:.0f}")
        print(f"| {l} | " + " | ".join(cells) + " |")
