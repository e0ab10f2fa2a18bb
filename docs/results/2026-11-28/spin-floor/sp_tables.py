#!/usr/bin/env python3
"""Issue 33 tables: sp_tables.py FILE.json [FILE...] -> markdown: Mops/s median (min-max)
xbest (best of std, parking_lot, ttas, ticket in that run) . max/min . p99.9 . futex/op"""
import gzip, json, sys
def load(f):
    return json.load(gzip.open(f,'rt') if f.endswith('.gz') else open(f))
def ns(n):
    return f"{n/1e6:.1f} ms" if n>=1e6 else f"{n/1e3:.1f} µs" if n>=1e3 else f"{n} ns"
for f in sys.argv[1:]:
    d=load(f)['results']
    locks=[]
    for x in d:
        if x['lock'] not in locks: locks.append(x['lock'])
    print(f"**{f}**: Mops/s median (min-max) ×best peer (std, parking_lot, ttas, ticket) · max/min · p99.9\n")
    print("| T | "+" | ".join(locks)+" |"); print("|---"*(len(locks)+1)+"|")
    for T in sorted(set(x['threads'] for x in d)):
        rows={x['lock']:x for x in d if x['threads']==T}
        best=max(rows[k]['throughput_mops'] for k in ('std','parking_lot','ttas','ticket') if k in rows)
        cells=[]
        for k in locks:
            v=rows[k]; r=v['runs_mops']; fm=v['fairness_max_min']
            cells.append(f"{v['throughput_mops']:.2f} ({min(r):.2f}-{max(r):.2f}) ×{v['throughput_mops']/best:.2f} · {'inf' if fm is None else f'{fm:.1f}'} · {ns(v['latency_ns']['p999'])}")
        print(f"| {T} | "+" | ".join(cells)+" |")
    print()
