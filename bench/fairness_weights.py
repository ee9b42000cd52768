#!/usr/bin/env python3
"""The fairness workload's CPU shares against the kernel's weight table, and against plain niced
processes measured in the same run.

For each set of nice values (0/0, 0/1, 0/5, 0/10, 0/19 and a 3-way 0/3/6), in each round:
  schedlab: `schedlab run --workload fairness --param fairness.nices=... --param fairness.duration_s=D`
            (threads pinned to one CPU, each thread's CPU clock read at the window's edges);
  peer:     one `taskset -c CPU nice -n N sh -c 'while :; do :; done'` process per nice value, started
            together, each one's CPU time over D s from /proc/PID/schedstat (sum_exec_runtime in ns;
            utime+stime in /proc/PID/stat count 10 ms ticks, too coarse for a few seconds).
The two take turns (order flipped every round). Prints each run's shares and, per set, the table's
heaviest:lightest ratio, the medians of both measured ratios, of both max |share/entitled - 1|, and
schedlab's ratio / the peer's.

  flock /work/heavy.lock bench/fairness_weights.py [--rounds 3] [--duration 2] [--cpu 0]
  SCHEDLAB=path/to/schedlab (default build/schedlab)
"""
import argparse, glob, json, os, shutil, statistics, subprocess, sys, tempfile, time

WEIGHTS = [88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916,
           9548, 7620, 6100, 4904, 3906, 3121, 2501, 1991, 1586, 1277,
           1024, 820, 655, 526, 423, 335, 272, 215, 172, 137,
           110, 87, 70, 56, 45, 36, 29, 23, 18, 15]  # kernel/sched/core.c sched_prio_to_weight
SETS = [(0, 0), (0, 1), (0, 5), (0, 10), (0, 19), (0, 3, 6)]


def weight(nice):
    return WEIGHTS[nice + 20]


def entitled(nices):
    total = sum(weight(n) for n in nices)
    return [weight(n) / total for n in nices]


def schedlab_shares(binary, nices, duration, work):
    out = tempfile.mkdtemp(dir=work)
    subprocess.run([binary, "run", "--workload", "fairness", "--repetitions", "1", "--settle-timeout", "5",
                    "--no-counters", "--param", "fairness.nices=" + ",".join(map(str, nices)),
                    "--param", f"fairness.duration_s={duration}", "--out", out],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rep = json.load(open(glob.glob(out + "/*.json")[0]))["instances"][0]["repetitions"][0]
    if rep["status"] != "ok":
        raise SystemExit("schedlab failed: " + rep.get("reason", ""))
    return [t["share"] for t in rep["details"]["tasks"]]


def exec_ns(pid):
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def peer_shares(nices, duration, cpu, warmup=0.2):
    procs = [subprocess.Popen(["taskset", "-c", str(cpu), "nice", "-n", str(n), "sh", "-c", "while :; do :; done"])
             for n in nices]
    try:
        # taskset and nice exec into sh: the pid is the spinning shell's once it runs.
        time.sleep(warmup)
        t0 = [exec_ns(p.pid) for p in procs]
        time.sleep(duration)
        t1 = [exec_ns(p.pid) for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.wait()
    used = [b - a for a, b in zip(t0, t1)]
    return [u / sum(used) for u in used]


def max_error(shares, nices):
    return max(abs(s / e - 1) for s, e in zip(shares, entitled(nices)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=2.0)
    ap.add_argument("--cpu", type=int, default=os.sched_getaffinity(0) and min(os.sched_getaffinity(0)))
    a = ap.parse_args()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    binary = os.environ.get("SCHEDLAB", os.path.join(here, "build", "schedlab"))
    work = tempfile.mkdtemp()
    results = {s: {"schedlab": [], "peer": []} for s in SETS}
    print(f"# {a.rounds} rounds, {a.duration} s windows, CPU {a.cpu} (schedlab's same-cpu is the first allowed CPU)")
    try:
        for r in range(a.rounds):
            for s in SETS:
                order = ["schedlab", "peer"] if r % 2 == 0 else ["peer", "schedlab"]
                for who in order:
                    sh = (schedlab_shares(binary, s, a.duration, work) if who == "schedlab"
                          else peer_shares(s, a.duration, a.cpu))
                    results[s][who].append(sh)
                    print(f"round {r + 1} nices {'/'.join(map(str, s))} {who:8s} shares "
                          + " ".join(f"{x:.4f}" for x in sh), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n| nices | table ratio | schedlab ratio (median) | peer ratio (median) | schedlab max err % | "
          "peer max err % | schedlab / peer |")
    print("|---|---|---|---|---|---|---|")
    all_err = {"schedlab": [], "peer": []}
    for s in SETS:
        e = entitled(s)
        table = e[0] / e[-1]
        row = {}
        for who in ("schedlab", "peer"):
            ratios = [sh[0] / sh[-1] for sh in results[s][who]]
            errs = [max_error(sh, s) * 100 for sh in results[s][who]]
            all_err[who] += errs
            row[who] = (statistics.median(ratios), statistics.median(errs))
        print(f"| {'/'.join(map(str, s))} | {table:.3f} | {row['schedlab'][0]:.3f} | {row['peer'][0]:.3f} | "
              f"{row['schedlab'][1]:.2f} | {row['peer'][1]:.2f} | {row['schedlab'][0] / row['peer'][0]:.4f} |")
    print(f"\nmedian max |share/entitled - 1| over all runs: schedlab {statistics.median(all_err['schedlab']):.2f}%, "
          f"peer {statistics.median(all_err['peer']):.2f}%")


if __name__ == "__main__":
    sys.exit(main())
