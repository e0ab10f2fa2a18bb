#!/usr/bin/env python3
"""A/B/C... of environments for one lockbench build, in one measurement: in each
round every variant runs once (`lockbench ARGS --runs 1 --quiet --json`), in
turn, so all see the same machine state. Prints per (lock, workload, threads)
the median throughput of each variant with its ratio to the first, and the
median max/min fairness and p99.9. The way to compare klock tunable (KLOCK_*)
settings, which cannot share a process, on a noisy machine.

  ab-env.py --rounds 5 --variant "off:KLOCK_MUTEX_FAIR_NS=0" \\
      --variant "fair1ms:KLOCK_MUTEX_FAIR_NS=1000000" -- \\
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
    ap.add_argument("--variant", action="append", required=True, help="LABEL:ENV (ENV: K=V K=V ...)")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = [x for x in a.cmd if x != "--"]
    variants = [v.partition(":")[::2] for v in a.variant]
    tmp = tempfile.mkdtemp(prefix="ab-env-")
    vals = {}
    for i in range(a.rounds):
        for label, spec in variants:
            out = os.path.join(tmp, f"{label}{i}.json")
            r = subprocess.run(cmd + ["--runs", "1", "--quiet", "--json", out], env=env_of(spec),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if r.returncode != 0:
                sys.exit(f"{label} round {i} failed: {r.stderr.strip()[-400:]}")
            for rec in json.load(open(out)).get("results", []):
                if rec.get("implicit"):
                    continue
                key = (rec["params"].get("workload"), rec["lock"], rec["threads"])
                fair = rec.get("fairness_max_min")
                # rwlock records: writer share of ops and the reader class's min/avg.
                r, w = rec.get("readers"), rec.get("writers")
                rw = None
                if isinstance(r, dict) and isinstance(w, dict):
                    rw = (w.get("share_of_ops", 0.0),
                          r["ops_per_thread"]["min"] / r["ops_per_thread"]["avg"] if r["ops_per_thread"]["avg"] else 0.0)
                vals.setdefault(key, {}).setdefault(label, []).append(
                    (rec["throughput_mops"], fair if fair is not None else float("inf"),
                     rec["latency_ns"]["p999"], rec.get("cpu_ns_per_op", 0.0), rw))
        print(f"round {i + 1}/{a.rounds} done", file=sys.stderr)
    med = lambda xs: statistics.median(xs) if xs else float("nan")
    labels = [l for l, _ in variants]
    print("variants: " + "; ".join(f"{l} = {s or '(defaults)'}" for l, s in variants) + f"; rounds: {a.rounds}")
    print("Each cell: median Mops/s (ratio to " + labels[0] + ") / max/min / p99.9 us / CPU ns per op"
          " (rwlock: / writers' share of ops / reader min/avg)")
    print("| workload | lock | T | " + " | ".join(labels) + " |")
    print("|---|---|---:|" + "---:|" * len(labels))
    for (w, lock, t), d in sorted(vals.items(), key=lambda kv: (kv[0][0] or "", kv[0][1], kv[0][2])):
        base = med([x[0] for x in d.get(labels[0], [])])
        cells = []
        for l in labels:
            xs = d.get(l, [])
            m = med([x[0] for x in xs])
            cell = (f"{m:.3f} ({m / base if base else float('nan'):.2f}) / {med([x[1] for x in xs]):.1f} / "
                    f"{med([x[2] for x in xs]) / 1000:.0f} / {med([x[3] for x in xs]):.0f}")
            rws = [x[4] for x in xs if x[4] is not None]
            if rws:
                cell += f" / W {100 * med([x[0] for x in rws]):.0f}% / rmin {med([x[1] for x in rws]):.2f}"
            cells.append(cell)
        print(f"| {w} | {lock} | {t} | " + " | ".join(cells) + " |")

if __name__ == "__main__":
    main()
