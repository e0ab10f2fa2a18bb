import gzip,json,glob,statistics as st,collections
# per binary, per T: klock runs, ratio per run vs best peer median of same file
res=collections.defaultdict(lambda: collections.defaultdict(list))
pl=collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob("*-r*.json.gz")):
    b=f.split('-r')[0]
    d=json.load(gzip.open(f))['results']
    by={(x['lock'],x['threads']):x for x in d}
    for T in (2,8):
        k=by[('klock_mutex',T)]; s=by[('std',T)]; p=by[('parking_lot',T)]
        best=max(s['throughput_mops'],p['throughput_mops'])
        res[b][T].append((k['throughput_mops'],k['throughput_mops']/s['throughput_mops'],k['throughput_mops']/best,k['per_op']['csw_voluntary'],k['latency_ns']['p999'],s['latency_ns']['p999'],p['latency_ns']['p999'],s['throughput_mops'],p['throughput_mops'],k['fairness_max_min'],s['fairness_max_min'],p['fairness_max_min']))
print("| binary | T | klock Mops/s median (min-max) | std | parking_lot | klock/std median (min-max) | klock/best median | vcsw/item | klock p99.9 | std p99.9 | pl p99.9 | max/min klock/std/pl |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for b in ['649d','cvspin','cvdirect','cv2']:
    for T in (2,8):
        v=res[b][T]; m=lambda i: st.median([x[i] for x in v]); mn=lambda i: min(x[i] for x in v); mx=lambda i: max(x[i] for x in v)
        print(f"| {b} | {T//2}+{T//2} | {m(0):.3f} ({mn(0):.3f}-{mx(0):.3f}) | {m(7):.3f} | {m(8):.3f} | {m(1):.2f} ({mn(1):.2f}-{mx(1):.2f}) | {m(2):.2f} | {m(3):.3f} | {m(4)/1000:.0f} µs | {m(5)/1000:.0f} µs | {m(6)/1000:.0f} µs | {m(9):.1f}/{m(10):.1f}/{m(11):.1f} |")
