import json,sys,glob,statistics as st
t=sys.argv[1]; bins=sys.argv[2].split()
v={}
for b in bins:
    for f in sorted(glob.glob(f"/tmp/m/{t}-{b}-*.json")):
        rs=json.load(open(f))["results"]
        byT={}
        for r in rs: byT.setdefault(r["threads"],{})[r["lock"]]=r
        for T,d in byT.items():
            best=max(d[k]["throughput_mops"] for k in ("std","parking_lot") if k in d)
            bp=min(d[k]["latency_ns"]["p999"] for k in ("std","parking_lot") if k in d) or 1
            for k,r in d.items():
                v.setdefault((k,T,b),[]).append((r["throughput_mops"]/best, r["fairness_max_min"] or float('inf'), r["latency_ns"]["p999"]/bp, r["throughput_mops"]))
for k in sorted(set((a,T) for a,T,_ in v)):
    cells=[]
    for b in bins:
        x=v.get((k[0],k[1],b))
        if not x: continue
        cells.append(f"{b}: x{st.median(y[0] for y in x):.2f} ({min(y[0] for y in x):.2f}-{max(y[0] for y in x):.2f}) f{st.median(y[1] for y in x):.1f} p999x{st.median(y[2] for y in x):.1f}")
    print(f"{k[0]:16} T={k[1]:<4} "+" | ".join(cells))
