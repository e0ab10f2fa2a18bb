#!/usr/bin/env python3
"""Summary tables for the 2026-11-24 rwsem page from the campaign's JSON:
total Mops (readers + writers), ratio to the best of std_rw/parking_lot_rw in
the same run, writer share, and each class's min/avg (no-starvation check)."""
import json, sys
for f in sys.argv[1:]:
    d = json.load(open(f))
    recs = [r for r in d["results"] if r.get("readers") and r["threads"] > 1]
    by = {(r["lock"], r["threads"]): r for r in recs}
    ts = sorted({r["threads"] for r in recs})
    print(f"\n{f}\n")
    print("| lock | R+W | total Mops/s [runs min-max] | / best peer | writer share | reader min/avg | writer min/avg |")
    print("|---|---|---|---|---|---|---|")
    for t in ts:
        peers = [by[(p, t)]["throughput_mops"] for p in ("std_rw", "parking_lot_rw") if (p, t) in by]
        best = max(peers) if peers else float("nan")
        for (l, tt), r in sorted(by.items(), key=lambda x: (x[0][1], x[0][0])):
            if tt != t: continue
            R, W = r["readers"], r["writers"]
            rr = R["ops_per_thread"]["min"] / max(R["ops_per_thread"]["avg"], 1)
            wr = W["ops_per_thread"]["min"] / max(W["ops_per_thread"]["avg"], 1)
            runs = r.get("runs_mops") or [r["throughput_mops"]]
            print(f"| {l} | {R['threads']}+{W['threads']} | {r['throughput_mops']:.2f} [{min(runs):.2f}-{max(runs):.2f}] | {r['throughput_mops']/best:.2f} | {W['share_of_ops']*100:.1f}% | {rr:.2f} | {wr:.2f} |")
