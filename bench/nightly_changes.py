#!/usr/bin/env python3
"""A nightly-like series through the real daemon (#24): a campaign scheduled every few seconds on the
running kernel, one quiet CPU-bound instance (the yield loop with 5 us of injected work per yield), its
runtime configuration rewritten partway as a person would.

  switch: after --switch-at runs the knob becomes cpu_max "9500 10000" (95% of a CPU: +5.3% per yield
          expected, 1/0.95 - 1); the daemon must find the step within 5 runs of the switch, size it with
          an interval that covers the effect, and confirm it by its paired rerun.
  aa:     the same campaign with no effect: at --switch-at the knob becomes cpu_max "max 10000" (a
          cgroup with no limit: a configuration identity changes, the machine does not), and one run
          (--spike-at) is taken beside a busy loop on every CPU. No change may be confirmed; the
          planted spike may not be a change.

Prints one JSON summary per phase and the figures. Run it alone on the machine:
  flock /work/heavy.lock bench/nightly_changes.py [--runs 60] [--switch-at 30] [--interval 3] [--phase both]
"""
import argparse
import glob
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEDLAB = os.path.join(ROOT, "build", "schedlab")


def count_runs(store, where=""):
    """Campaign runs in the daemon's store (0 before it exists or while it is locked)."""
    if not os.path.exists(store):
        return 0
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5) as db:
            return db.execute("SELECT count(*) FROM campaign_runs " + where).fetchone()[0]
    except sqlite3.Error:
        return 0


def finished_runs(store):
    return count_runs(store, "WHERE status = 'finished'")


def started_runs(store):
    return count_runs(store)


def hogs():
    """A busy loop pinned to each CPU this process may use (the planted spike's neighbour)."""
    pids = []
    for cpu in sorted(os.sched_getaffinity(0)):
        pid = os.fork()
        if pid == 0:
            os.sched_setaffinity(0, {cpu})
            while True:
                pass
        pids.append(pid)
    return pids


def stop(pids):
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def phase(name, args, base):
    d = os.path.join(base, name)
    os.makedirs(d)
    knobs, store = os.path.join(d, "knobs.toml"), os.path.join(d, "store.db")
    with open(knobs, "w") as f:
        f.write("[configuration.knob]\n")
    with open(os.path.join(d, "campaign.toml"), "w") as f:
        f.write(f"""[campaign]
name = "nightly-{name}"
schedule = "*:*:0/{args.interval}"
store = "sqlite://{store}"
output = "{d}/bundles"
configurations = ["running:knob"]
runtime_configurations = "{knobs}"
counters = false
settle_timeout_s = 0
timeout_s = 60
seed = {args.seed}
[changes]
budget = "{args.budget}"
[exporter]
listen = ""
[[workload]]
name = "yield"
repetitions = {args.repetitions}
params = {{ yields = {args.yields}, spin_ns = 5000 }}
""")
    log = open(os.path.join(d, "daemon.log"), "w")
    daemon = subprocess.Popen([SCHEDLAB, "daemon", "--config", os.path.join(d, "campaign.toml")],
                              stdout=log, stderr=subprocess.STDOUT)
    switched, spike, spiked = False, None, False
    deadline = time.time() + args.runs * (args.interval + 10) + 1800
    try:
        while finished_runs(store) < args.runs and time.time() < deadline:
            done = finished_runs(store)
            if not switched and done >= args.switch_at:
                with open(knobs, "w") as f:
                    f.write('[configuration.knob]\ncpu_max = "%s"\n'
                            % ("9500 10000" if name == "switch" else "max 10000"))
                switched = True
            # The spike: a hog on every CPU from the end of run spike_at - 1 to the end of run spike_at.
            if name == "aa" and not spiked and spike is None and done == args.spike_at - 1:
                spike = hogs()
                spike_started = started_runs(store)
            if spike is not None and (done >= args.spike_at or started_runs(store) > spike_started + 1):
                stop(spike)
                spike, spiked = None, True
            if daemon.poll() is not None:
                raise SystemExit(f"the daemon exited ({daemon.returncode}): {d}/daemon.log")
            time.sleep(0.1)
    finally:
        if spike is not None:
            stop(spike)
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(30)
    out = subprocess.run([SCHEDLAB, "changes", "--store", store, "--json", "--seed", str(args.seed)],
                         capture_output=True, text=True, check=True).stdout
    changes = json.loads(out[out.index("{"):])["changes"]
    history = []
    for b in sorted(glob.glob(f"{d}/bundles/nightly-{name}/run-*/*/attempt-*/*.json"),
                    key=lambda p: json.load(open(p))["started_at"]):
        reps = [r for r in json.load(open(b))["instances"][0]["repetitions"] if r["status"] == "ok"]
        vals = sorted(r["metrics"]["ns_per_yield"]["value"] for r in reps)
        history.append(vals[len(vals) // 2] if vals else None)
    # When the daemon first decided on each change: the finished runs by then, from its log.
    first_seen = {}
    run_count = 0
    for line in open(os.path.join(d, "daemon.log")):
        if " finished: " in line and "run " in line:
            run_count += 1
        for c in changes:
            if f" at {c['started_at']}:" in line and c["started_at"] not in first_seen:
                first_seen[c["started_at"]] = run_count
    summary = {"phase": name, "runs": finished_runs(store), "switch_at": args.switch_at,
               "spike_at": args.spike_at if name == "aa" else None, "dir": d, "medians_ns": history,
               "changes": []}
    for c in changes:
        rerun = None
        if c.get("rerun"):
            stop_ = json.load(open(c["rerun"]))["stop"]
            rerun = {k: stop_.get(k) for k in ("verdict", "estimate_pct", "interval_pct", "pairs", "elapsed_s")}
        summary["changes"].append({
            "index": c["index"], "status": c["status"], "reason": c["status_reason"],
            "change_pct": round(c["change_pct"], 2),
            "interval_pct": [round(c["shift_lower_pct"], 2), round(c["shift_upper_pct"], 2)],
            "p": c["p_value"], "decided_after_runs": first_seen.get(c["started_at"]), "rerun": rerun})
    return summary


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=60)
    p.add_argument("--switch-at", type=int, default=30)
    p.add_argument("--spike-at", type=int, default=15)
    p.add_argument("--interval", type=int, default=3, help="seconds between scheduled runs")
    p.add_argument("--yields", type=int, default=50000)
    p.add_argument("--repetitions", type=int, default=3)
    p.add_argument("--budget", default="3m", help="of each confirmation rerun")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--phase", choices=["switch", "aa", "both"], default="both")
    args = p.parse_args()
    if not os.path.exists(SCHEDLAB):
        raise SystemExit(f"no {SCHEDLAB}: build first")
    base = tempfile.mkdtemp(prefix="nightly-changes.")
    for name in (["switch", "aa"] if args.phase == "both" else [args.phase]):
        s = phase(name, args, base)
        print(json.dumps(s))
        print(f"# {name}: {s['runs']} runs, switch after run {args.switch_at}; {len(s['changes'])} change(s)",
              file=sys.stderr)
        for c in s["changes"]:
            print(f"#   index {c['index']} (first run after: {c['index'] + 1}) {c['change_pct']:+.2f}% "
                  f"[{c['interval_pct'][0]:+.2f}%, {c['interval_pct'][1]:+.2f}%] p {c['p']:.4f} "
                  f"decided after run {c['decided_after_runs']}: {c['status']} ({c['reason']})", file=sys.stderr)


if __name__ == "__main__":
    main()
