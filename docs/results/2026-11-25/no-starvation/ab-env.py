#!/usr/bin/env python3
"""A/B two environments of one lockbench build in one measurement: rounds of
(A, B) interleaved, each `lockbench ARGS --runs 1 --quiet --json`, then per
(lock, threads, quota): medians of throughput, max/min fairness and p99.9 for
A and B, and B/A. The way to compare a klock tunable (KLOCK_*) setting on a
noisy machine when the two settings cannot share a process.

  ab-env.py --rounds 5 --a "" --b "KLOCK_MUTEX_QUEUE_FIRST=1" -- \
      target/release/lockbench mutex --locks klock_mutex,std --threads 8,128
"""
import argparse, json, os, shlex, statistics, subprocess, sys, tempfile

def env_of(spec):
    e = dict(os.environ)
    for kv in shlex.split(spec):
        k, _, v = kv.partition("=")
        e[k] = v
    return e

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--a", default="")
    ap.add_argument("--b", required=True)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = [x for x in a.cmd if x != "--"]
    tmp = tempfile.mkdtemp(prefix="ab-env-")
    vals = {}
    for i in range(a.rounds):
        for tag, spec in (("A", a.a), ("B", a.b)):
            out = os.path.join(tmp, f"{tag}{i}.json")
            r = subprocess.run(cmd + ["--runs", "1", "--quiet", "--json", out], env=env_of(spec),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if r.returncode != 0:
                sys.exit(f"{tag} round {i} failed: {r.stderr.strip()[-400:]}")
            for rec in json.load(open(out)).get("results", []):
                if rec.get("implicit"):
                    continue
                key = (rec["lock"], rec["threads"], rec["params"].get("workload"))
                d = vals.setdefault(key, {"A": [], "B": []})
                fair = rec.get("fairness_max_min")
                d[tag].append((rec["throughput_mops"], fair if fair is not None else float("inf"),
                               rec["latency_ns"]["p999"]))
        print(f"round {i + 1}/{a.rounds} done", file=sys.stderr)
    med = lambda xs: statistics.median(xs) if xs else float("nan")
    print(f"A: {a.a or '(defaults)'}   B: {a.b}   rounds: {a.rounds}")
    print(f"| lock | workload | T | A Mops/s | B Mops/s | B/A | A max/min | B max/min | A p99.9 ns | B p99.9 ns |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for (lock, t, w), d in sorted(vals.items(), key=lambda kv: (kv[0][2] or "", kv[0][0], kv[0][1])):
        ta, tb = med([x[0] for x in d["A"]]), med([x[0] for x in d["B"]])
        print(f"| {lock} | {w} | {t} | {ta:.3f} | {tb:.3f} | {tb / ta if ta else float('nan'):.2f} | "
              f"{med([x[1] for x in d['A']]):.1f} | {med([x[1] for x in d['B']]):.1f} | "
              f"{med([x[2] for x in d['A']]):.0f} | {med([x[2] for x in d['B']]):.0f} |")

if __name__ == "__main__":
    main()
