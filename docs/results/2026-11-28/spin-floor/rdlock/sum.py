import sys, statistics as st
ops="mutex trylock recursive rdlock wrlock spin".split()
for f in sys.argv[1:]:
    rows=[[list(map(float,g.split())) for g in l.strip().rstrip('|').split('|')] for l in open(f) if l.strip()]
    nl=len(rows[0]); print(f, len(rows), "passes; median ns (per-pass ratio to lib 0)")
    for i,o in enumerate(ops):
        cells=[]
        for j in range(nl):
            med=st.median(r[j][i] for r in rows)
            rat=st.median(r[j][i]/r[0][i] for r in rows)
            cells.append(f"{med:6.2f} ({rat:.3f})")
        print(f"  {o:9s} "+" | ".join(cells))
