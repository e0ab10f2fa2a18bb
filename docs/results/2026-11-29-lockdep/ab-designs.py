#!/usr/bin/env python3
"""A/B of lockdep designs in one run: each workload, each side, interleaved, N runs.
Sides: glibc (no interposer), klock (interposer d4, validation off), d1..d4 (KLOCK_LOCKDEP=1)."""
import subprocess, time, statistics, os, re, sys, json
N = int(sys.argv[1]) if len(sys.argv) > 1 else 5
R = '/tmp/ld/revs'
sides = [('glibc', None, False), ('klock', f'{R}/d5.so', False)] + [(f'{d}', f'{R}/{d}.so', True) for d in ['d1', 'd2', 'd3', 'd4', 'd5']]
def run(cmd, so, ld, parse):
    env = dict(os.environ)
    env.pop('KLOCK_LOCKDEP', None)
    if so: env['LD_PRELOAD'] = so
    if ld: env['KLOCK_LOCKDEP'] = '1'; env['KLOCK_LOCKDEP_FILE'] = '/tmp/ld/ab-reports.txt'
    t = time.monotonic()
    p = subprocess.run(cmd, shell=True, env=env, capture_output=True, text=True, timeout=300, cwd='/tmp/ld')
    wall = time.monotonic() - t
    return parse(p.stdout + p.stderr, wall)
def wall(out, w): return w
def nested(out, w): return float(re.search(r'([0-9.]+) s', out).group(1))
def sysb(out, w): return float(re.search(r'total time:\s+([0-9.]+)s', out).group(1))
def held(k):
    return lambda out, w: float(re.search(rf'held={k} ([0-9.]+) ns', out).group(1))
W = [
  ('nested 64 mutexes, 8 thr, 2-4 deep (s)', './nested 200000', nested),
  ('uncontended pair, 0 held (ns)', './held', held(0)),
  ('uncontended pair, 1 held (ns)', './held', held(1)),
  ('uncontended pair, 3 held (ns)', './held', held(3)),
  ('sysbench mutex 1 mutex, 2 thr, loops=0 (s)', 'sysbench mutex --threads=2 --mutex-num=1 --mutex-locks=500000 --mutex-loops=0 run', sysb),
  ('sysbench mutex defaults, 4 thr (s)', 'sysbench mutex --threads=4 run', sysb),
  ('kcstashtest order -th 4 50000 (s)', 'kcstashtest order -th 4 50000', wall),
  ('kcstashtest wicked -th 8 40000 (s)', 'kcstashtest wicked -th 8 40000', wall),
  ('kccachetest wicked -th 4 20000 (s)', 'kccachetest wicked -th 4 20000', wall),
  ('kctreetest order -th 4 20000 (s)', 'rm -f /tmp/ld/ab.kct && kctreetest order -th 4 /tmp/ld/ab.kct 20000', wall),
]
res = {w[0]: {s[0]: [] for s in sides} for w in W}
for r in range(N):
    for name, cmd, parse in W:
        order = sides if r % 2 == 0 else list(reversed(sides))
        for s, so, ld in order:
            try:
                res[name][s].append(run(cmd, so, ld, parse))
            except Exception as e:
                print('fail', name, s, e, file=sys.stderr)
json.dump(res, open('/tmp/ld/ab.json', 'w'), indent=1)
print(f"runs per cell: {N}, interleaved; cell = median [min-max]; ratio = median / klock's median")
print('| workload | ' + ' | '.join(s[0] for s in sides) + ' |')
print('|---|' + '---|' * len(sides))
for name, _, _ in W:
    k = statistics.median(res[name]['klock']) if res[name]['klock'] else None
    cells = []
    for s, _, _ in sides:
        v = res[name][s]
        if not v: cells.append('-'); continue
        m = statistics.median(v)
        c = f"{m:.3g} [{min(v):.3g}-{max(v):.3g}]"
        if k and s not in ('klock',): c += f" **{m/k:.2f}x**"
        cells.append(c)
    print(f"| {name} | " + ' | '.join(cells) + ' |')
