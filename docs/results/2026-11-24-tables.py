import json, sys
def load(p):
    d = json.load(open(p)); r = {}
    for x in d["results"]:
        r[(x["lock"], x["threads"])] = x
    return r
def fmt_lat(ns):
    return f"{ns/1e6:.1f} ms" if ns >= 1e6 else (f"{ns/1e3:.1f} µs" if ns >= 1e3 else f"{ns:.0f} ns")
def tables(files, threads, peers=("std", "parking_lot"), kl=("klock_mutex", "klock_unfair")):
    runs = {name: load(p) for name, p in files}
    hdr = "| lock | " + " | ".join(f"T={t}" for t in threads) + " |\n|---|" + "---:|" * len(threads)
    out = ["Throughput, Mops/s (ratio to the best of std and parking_lot in the same run):\n", hdr]
    for name, r in runs.items():
        for l in kl:
            cells = []
            for t in threads:
                best = max(r[(p, t)]["throughput_mops"] for p in peers)
                v = r[(l, t)]["throughput_mops"]
                cells.append(f"{v:.2f} ({v/best:.2f})")
            out.append(f"| {l}, {name} | " + " | ".join(cells) + " |")
        for p in peers:
            out.append(f"| {p}, {name} | " + " | ".join(f"{r[(p,t)]['throughput_mops']:.2f}" for t in threads) + " |")
    for title, key in (("Fairness, per-thread max/min:", "fairness_max_min"), ("p99.9 acquisition latency:", "p999"), ("CPU ns per op:", "cpu")):
        out += ["", title + "\n", hdr]
        for name, r in runs.items():
            for l in kl + tuple(peers):
                cells = []
                for t in threads:
                    x = r[(l, t)]
                    if key == "p999": cells.append(fmt_lat(x["latency_ns"]["p999"]))
                    elif key == "cpu": cells.append(f"{x['cpu_ns_per_op']:.0f}")
                    else:
                        f = x["fairness_max_min"]; cells.append("inf" if f is None else f"{f:.2f}")
                out.append(f"| {l}, {name} | " + " | ".join(cells) + " |")
    return "\n".join(out)
if __name__ == "__main__":
    threads = [int(x) for x in sys.argv[1].split(",")]
    files = [tuple(a.split("=", 1)) for a in sys.argv[2:]]
    print(tables(files, threads))
