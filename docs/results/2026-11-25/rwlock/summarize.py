#!/usr/bin/env python3
"""Issue 20's table from lockbench rwlock JSON reports (one R+W configuration
each): per lock, total Mops/s, writers' share of ops, each class's min/avg
ops per thread, p99.9 per class, and whether a thread starved (under a tenth
of the mean over all threads)."""
import json, sys

def fmt(ns):
    return f"{ns/1e6:.0f} ms" if ns >= 1e6 else f"{ns/1e3:.1f} us" if ns >= 1e3 else f"{ns:.0f} ns"

print("| config | lock | total Mops/s | writers | reader min/avg | writer min/avg | p99.9 R / W | min thread / mean |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for path in sys.argv[1:]:
    d = json.load(open(path))
    for r in d["results"]:
        if r.get("implicit") or not isinstance(r.get("readers"), dict):
            continue
        R, W = r["readers"], r["writers"]
        noise = r["params"].get("noise", 0)
        cfg = f"{R['threads']}+{W['threads']}" + (f" noise {noise}" if noise else "")
        mm = lambda c: c["ops_per_thread"]["min"] / c["ops_per_thread"]["avg"] if c["ops_per_thread"]["avg"] else 0.0
        share = r.get("min_thread_share")
        print(f"| {cfg} | {r['lock']} | {r['throughput_mops']:.2f} | {100*W['share_of_ops']:.0f}% | {mm(R):.2f} | {mm(W):.2f} | "
              f"{fmt(R['latency_ns']['p999'])} / {fmt(W['latency_ns']['p999'])} | {share if share is None else f'{share:.2f}'} |")
