#!/usr/bin/python3
"""A/A calibration and power of `schedlab diff` on real runs (data: bench/aa_collect.sh).

Every trial of every batch ran the same kernel and workloads, so every diff among them is an A/A diff.
Three designs are cut from the batches, each at n = 5, 9 and 30 trials per side:
  interleaved  one batch's 2n consecutive trials, even against odd: the design diff trusts (paired test)
  blocked      n consecutive trials against the next n of the same batch, seconds apart
  batches      n trials of one batch against n trials of the next batch, minutes apart
For each: the rate of better/worse verdicts (false: nothing changed), a Kolmogorov-Smirnov test of the
headline p-values against uniform, the rates of the other verdicts, the median minimum detectable
effect, and the detection rate of +2/3/5/10% shifts injected into the other side's headline metrics.
    bench/aa_calibration.py AA_DIR [SCHEDLAB]

The two-instance campaign (issue #29): `--campaign TRIALS` runs yield with a two-instance sweep
(threads 1 and 2) for TRIALS real trials, cuts every trial into the bundles a campaign's steps write
(one instance each: A_x A_y B_x B_y ..., each pair's order a seeded coin flip AB or BA, both sides'
trials numbered by pair), and reports the rate of better/worse verdicts among the headline comparisons
of disjoint windows of 6, 9 and 12 pairs, with the test each got. Needs no scipy.
    bench/aa_calibration.py --campaign TRIALS [SCHEDLAB]
    bench/aa_calibration.py --campaign-dir RUN_DIR [SCHEDLAB]   # the same on bundles of such a run
The same on a real daemon campaign's run (configurations = ["running"], a two-instance sweep, many
trials; bench/aa_daemon.toml): its step bundles as the daemon wrote them, pair k the trials 2k+1 and
2k+2, which of them is A a seeded coin flip.
    bench/aa_calibration.py --daemon-run OUTPUT/CAMPAIGN/run-N-... [SCHEDLAB]
"""
import copy, glob, json, os, random, re, shutil, subprocess, sys, tempfile

aa_dir = sys.argv[1]
schedlab = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "build", "schedlab")


def split_into_steps(trials, rng):
    """Pairs of real trials cut into the bundles a campaign's steps write: one instance each, A_x A_y B_x
    B_y ..., each pair's order a coin flip, both sides' trials numbered by pair."""
    sides = {"a": [], "b": []}
    step = 0
    for k in range(len(trials) // 2):
        order = ("a", "b") if rng.random() < 0.5 else ("b", "a")
        for side, trial in zip(order, trials[2 * k:2 * k + 2]):
            for inst in sorted(trial["instances"], key=lambda i: i["id"]):
                b = copy.deepcopy(trial)
                b["instances"] = [inst]
                b["trial"] = k
                b["started_at"] = f"2026-01-01T00:00:{step:06d}Z"
                step += 1
                sides[side].append(b)
    return sides


def daemon_steps(trials, rng):
    """A real daemon campaign's trials, each a list of its steps' bundles as the daemon wrote them: pair k is
    trials 2k and 2k+1, which of them is A a coin flip (the design's randomized order)."""
    sides = {"a": [], "b": []}
    for k in range(len(trials) // 2):
        order = ("a", "b") if rng.random() < 0.5 else ("b", "a")
        for side, steps in zip(order, trials[2 * k:2 * k + 2]):
            sides[side].extend(steps)
    return sides


def calibrate(trials, to_sides, tmp, rng):
    """False better/worse among the headline comparisons of disjoint windows of 6, 9 and 12 pairs."""
    for n in (6, 9, 12):
        false = total = 0
        tests = {}
        for start in range(0, len(trials) - 2 * n + 1, 2 * n):
            sides = to_sides(trials[start:start + 2 * n], rng)
            dirs = []
            for side, steps in sides.items():
                d = os.path.join(tmp, f"side-{side}")
                shutil.rmtree(d, ignore_errors=True)
                os.makedirs(d)
                for i, b in enumerate(steps):
                    with open(os.path.join(d, f"step{i:04d}.json"), "w") as f:
                        json.dump(b, f)
                dirs.append(d)
            res = subprocess.run([schedlab, "diff", "--json"] + dirs, capture_output=True, text=True)
            if res.returncode != 0:
                sys.exit(f"aa_calibration: schedlab diff failed: {res.stdout}{res.stderr}")
            for inst in json.loads(res.stdout)["instances"]:
                for m in inst["metrics"]:
                    if not m["headline"]:
                        continue
                    c = m["comparisons"][0]
                    total += 1
                    false += c["verdict"].split(" ")[0] in ("better", "worse")
                    tests[c["test"]] = tests.get(c["test"], 0) + 1
        print(f"n={n} pairs: {total} headline comparisons in {total // 2} A/A diffs, false better/worse "
              f"{false}/{total} ({100 * false / max(total, 1):.1f}%), tests {tests}")


def campaign(trials, runs=None):
    rng = random.Random(29)
    with tempfile.TemporaryDirectory() as tmp:
        if runs is None:
            runs = os.path.join(tmp, "runs")
            cmd = [schedlab, "run", "--workload", "yield", "--param", "yield.yields=20000", "--param",
                   "yield.threads=[1,2]", "--repetitions", "3", "--trials", str(trials), "--no-counters",
                   "--seed", "29", "--settle-timeout", "0", "--out", runs]
            print("$ " + " ".join(cmd), flush=True)
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"aa_calibration: schedlab run failed: {out.stdout[-2000:]}{out.stderr[-2000:]}")
        bundles = sorted((json.load(open(f)) for f in glob.glob(os.path.join(runs, "*.json"))), key=lambda b: b["trial"])
        # An interrupted run's last trial may be short: keep the whole ones.
        shape = lambda b: [len(i["repetitions"]) for i in sorted(b["instances"], key=lambda i: i["id"])]
        bundles = [b for b in bundles if shape(b) == shape(bundles[0])]
        print(f"{len(bundles)} real trials of {len(bundles[0]['instances'])} instances, "
              f"{bundles[0]['started_at']} .. {bundles[-1]['started_at']}")
        calibrate(bundles, split_into_steps, tmp, rng)


def daemon_run(run_dir):
    """The bundles of one run of a real daemon campaign (configurations = ["running"], a sweep), grouped by
    the trial in their step directory's key (OUTPUT/CAMPAIGN/run-N-.../INDEX-tT_running_.../attempt-K/)."""
    rng = random.Random(29)
    by_trial = {}
    for attempt in glob.glob(os.path.join(run_dir, "*", "attempt-*")):
        if attempt.endswith(".discarded"):
            continue  # set aside by the daemon, never a result
        step = os.path.basename(os.path.dirname(attempt))  # INDEX-KEY, the key's '/' written '_'
        trial = int(re.match(r"\d+-t(\d+)_", step).group(1))
        for path in glob.glob(os.path.join(attempt, "**", "*.json"), recursive=True):
            by_trial.setdefault(trial, []).append(json.load(open(path)))
    trials = [sorted(by_trial[t], key=lambda b: b["started_at"]) for t in sorted(by_trial)]
    whole = max(len(t) for t in trials)
    trials = [t for t in trials if len(t) == whole]  # a trial whose step failed is left out whole
    print(f"{len(trials)} trials of {whole} steps from the daemon's {run_dir}")
    with tempfile.TemporaryDirectory() as tmp:
        calibrate(trials, daemon_steps, tmp, rng)


if aa_dir in ("--campaign", "--campaign-dir", "--daemon-run"):
    schedlab = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.path.dirname(__file__), "..", "build", "schedlab")
    if aa_dir == "--campaign":
        campaign(int(sys.argv[2]))
    elif aa_dir == "--campaign-dir":
        campaign(0, sys.argv[2])
    else:
        daemon_run(sys.argv[2])
    sys.exit(0)

from scipy import stats  # only the batch analysis needs it
SHIFTS = (0.02, 0.03, 0.05, 0.10)
NS = (5, 9, 30)


def load_batch(path):
    trials = [json.load(open(f)) for f in glob.glob(os.path.join(path, "*.json"))]
    return sorted(trials, key=lambda b: b["trial"])


def write_side(trials, shift, path):
    os.makedirs(path)
    for i, bundle in enumerate(trials):
        b = copy.deepcopy(bundle) if shift else bundle
        if shift:
            for inst in b["instances"]:
                headline = [k for k, v in inst["metric_info"].items() if v.get("headline")]
                for rep in inst["repetitions"]:
                    for name in headline:
                        if name in rep["metrics"] and rep["metrics"][name]["value"] is not None:
                            rep["metrics"][name]["value"] *= 1 + shift
        with open(os.path.join(path, f"t{i:03d}.json"), "w") as f:
            json.dump(b, f)


def diff(a, b, shift, tmp):
    pa, pb = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    write_side(a, 0, pa)
    write_side(b, shift, pb)
    out = subprocess.run([schedlab, "diff", "--json", pa, pb], capture_output=True, text=True)
    shutil.rmtree(pa)
    shutil.rmtree(pb)
    if out.returncode != 0:
        sys.exit(f"aa_calibration: schedlab diff failed: {out.stdout}{out.stderr}")
    rows = []
    for inst in json.loads(out.stdout)["instances"]:
        for m in inst["metrics"]:
            if m["headline"]:
                c = m["comparisons"][0]
                rows.append((inst["id"] + "/" + m["name"], c["verdict"], c["p_value"], c["mde_pct"], c["test"]))
    return rows


def designs(batches, n):
    out = {"interleaved": [], "blocked": [], "batches": []}
    for t in batches:
        for k in range(0, len(t) - 2 * n + 1, 2 * n):
            seg = t[k:k + 2 * n]
            out["interleaved"].append((seg[0::2], seg[1::2]))
            out["blocked"].append((seg[:n], seg[n:]))
    for t, u in zip(batches, batches[1:]):
        for k in range(0, min(len(t), len(u)) - n + 1, 2 * n):
            out["batches"].append((t[k:k + n], u[k:k + n]))
    return out


def pct(k, n):
    return f"{k}/{n} ({100 * k / n:.1f}%)" if n else "0/0"


batches = [load_batch(p) for p in sorted(glob.glob(os.path.join(aa_dir, "batch*")), key=lambda p: int("0" + p.rsplit("batch", 1)[1].split(".")[0])) if os.path.isdir(p)]
print(f"A/A data: {len(batches)} batches of {[len(t) for t in batches]} trials from {aa_dir}")
print(f"first trial {batches[0][0]['started_at']}, last {batches[-1][-1]['started_at']}")
with tempfile.TemporaryDirectory() as tmp:
    for n in NS:
        for design, pairs in designs(batches, n).items():
            if not pairs:
                continue
            rows = [r for a, b in pairs for r in diff(a, b, 0, tmp)]
            verdicts = [r[1] for r in rows]
            ps = [r[2] for r in rows if r[2] is not None]
            false = sum(v in ("better", "worse") for v in verdicts)
            ks = stats.kstest(ps, "uniform")
            tests = sorted(set(r[4] for r in rows))
            print(f"\nn={n} {design}: {len(pairs)} A/A diffs, {len(rows)} headline comparisons, test {', '.join(tests)}")
            print(f"  false better/worse: {pct(false, len(rows))}   (alpha 0.05)")
            print(f"  KS of p-values against uniform: D={ks.statistic:.3f} p={ks.pvalue:.3g}")
            print("  verdicts: " + ", ".join(f"{v} {pct(verdicts.count(v), len(rows))}" for v in sorted(set(verdicts))))
            by_metric = {}
            for name, v, p, mde, _ in rows:
                by_metric.setdefault(name, []).append((v, mde))
            for name, vs in sorted(by_metric.items()):
                mdes = sorted(m for _, m in vs if m is not None)
                med = f"{mdes[len(mdes) // 2]:.1f}%" if mdes else "n/a"
                print(f"    {name:<26} false {sum(v in ('better', 'worse') for v, _ in vs)}/{len(vs)}  median MDE {med}")
            if design != "interleaved":
                continue
            for shift in SHIFTS:
                rows = [r for a, b in pairs for r in diff(a, b, shift, tmp)]
                by = {}
                for name, v, *_ in rows:
                    by.setdefault(name, []).append(v)
                text = "; ".join(f"{k} {pct(sum(v == 'worse' for v in vs), len(vs))} worse, {sum(v == 'better' for v in vs)} better"
                                 for k, vs in sorted(by.items()))
                print(f"  +{100 * shift:.0f}% injected: {text}")
