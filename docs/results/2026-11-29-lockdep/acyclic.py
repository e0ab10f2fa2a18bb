import sys, collections
# usage: cyc.py pairs-file...  -> summary + cycles (wait edges: not tried, not read->read)
for fn in sys.argv[1:]:
    lines=open(fn).read().split('\n')
    hdr=lines[0]; g=collections.defaultdict(set); n=0; tried=0; rr=0
    for l in lines[1:]:
        if not l: continue
        a,b,f=l.split(); f=int(f); ma=f>>4; mb=(f>>1)&7; t=f&1
        if t: tried+=1; continue
        if ma==1 and mb==1: rr+=1; continue
        g[a].add(b); n+=1
    # Tarjan SCC iterative
    idx={}; low={}; st=[]; on=set(); sccs=[]; c=0
    nodes=set(g)|{b for s in g.values() for b in s}
    for v in nodes:
        if v in idx: continue
        stack=[(v,iter(g.get(v,())))]; idx[v]=low[v]=c; c+=1; st.append(v); on.add(v)
        while stack:
            u,it=stack[-1]
            for w in it:
                if w not in idx:
                    idx[w]=low[w]=c; c+=1; st.append(w); on.add(w); stack.append((w,iter(g.get(w,())))); break
                elif w in on: low[u]=min(low[u],idx[w])
            else:
                stack.pop()
                if stack: low[stack[-1][0]]=min(low[stack[-1][0]],low[u])
                if low[u]==idx[u]:
                    comp=[]
                    while True:
                        w=st.pop(); on.discard(w); comp.append(w)
                        if w==u: break
                    if len(comp)>1: sccs.append(comp)
    print(hdr.replace('# ',''), f"| wait-edges={n} tried={tried} read-read={rr} nodes={len(nodes)} cyclic-SCCs={len(sccs)}", [len(s) for s in sccs][:5])
