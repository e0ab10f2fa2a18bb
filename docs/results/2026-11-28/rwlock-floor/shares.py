import sys,re,glob,os
d=sys.argv[1]
for f in sorted(glob.glob(d+'/r*-n*.txt'), key=lambda x:(int(re.search(r'-n(\d+)',x).group(1)), int(re.search(r'/r(\d+)-',x).group(1)))):
    name=os.path.basename(f)
    txt=open(f).read()
    m=re.search(r'klock vs peer.*?\n\|[-:| ]+\n(.*?)\n', txt, re.S)
    verdict=m.group(1) if m else ''
    print('==',name, '|', ' '.join(verdict.split('|')[3:7]).strip() if verdict else '')
    sec=txt.split('readers vs writers (median runs)')[1].split('###')[0]
    for line in sec.splitlines():
        if line.startswith('| ') and not line.startswith('| lock'):
            c=[x.strip() for x in line.strip('|').split('|')]
            # lock, R+W, rM, wM, rmin/avg/max, wmin/avg/max, share, wmaxmin, p99.9, ceil
            def minavg(s):
                a=[float(x.replace(',','')) for x in s.split('/')]
                return a[0]/a[1] if a[1] else 0
            tot=float(c[2])+float(c[3])
            print(f"  {c[0]:20s} tot {tot:6.3f}  wshare {c[6]:>6s}  rmin/avg {minavg(c[4]):.2f} wmin/avg {minavg(c[5]):.2f}  p99.9 {c[8]}")
