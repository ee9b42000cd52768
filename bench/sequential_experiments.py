#!/usr/bin/env python3
"""Live sequential experiments on this machine (issue #19): how often `run --versus --target-mde` answers
right, how long it takes, and whether its plan predicted the precision it reached.

  1. Calibration: yield's ns_per_yield here (9 repetitions), and spin_ns = INJECT % of it; or kernbench's
     elapsed_s with and without a probe of kernbench.unit_work_ms, and the work per compiler run that adds
     INJECT %: the injected slowdown is real extra work in every operation (a calibrated busy loop),
     never a scaled copy of measured values.
  2. N experiments `--versus yield.spin_ns=X --target-mde TARGET`: the fraction ending `worse`, the machine
     time of each (median, max), the effect they estimated (the injection as measured), the plan's MDE
     against the MDE the observed spread gives at the planned pairs.
  3. N A/A experiments (`--versus` the same value) with target and margin AA_MARGIN: false `better`/`worse`
     with a Clopper-Pearson interval, and the fraction ending `equivalent`.

Usage: bench/sequential_experiments.py [--binary build/schedlab] [--out DIR] [--experiments 20]
       [--inject 3] [--target 3] [--aa-margin 5] [--yields 200000] [--budget 10m] [--max-trials 400]
       [--workload kernbench --files 30 --inject 10 --target 10]   # kernbench.unit_work_ms injected
       [--repetitions R]
       bench/sequential_experiments.py --table tests/fixtures/aa-pool-yield/pairs.json [OUT/ID/experiment.json[:METRIC]...]
         # README's table, from the pool or from fixed A/A experiments (`run --versus` the same value)
Prints a JSON summary on stdout (and the table lines on stderr). Run it on a quiet machine: nothing else
heavy at the same time.
"""
import argparse
import glob
import json
import math
import os
import statistics
import subprocess
import sys


def clopper_pearson(k, n, conf=0.95):
    """Exact binomial interval by bisection on the binomial tail (no scipy needed)."""
    def term(i, p):  # binomial probability through logs: math.comb overflows a float beyond n ~ 1000
        if p <= 0 or p >= 1:
            return float(i == (0 if p <= 0 else n))
        return math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
                        + i * math.log(p) + (n - i) * math.log1p(-p))

    def tail_ge(p):  # P(X >= k)
        return sum(term(i, p) for i in range(k, n + 1))

    def tail_le(p):  # P(X <= k)
        return sum(term(i, p) for i in range(0, k + 1))

    a = (1 - conf) / 2

    def solve(f, target, increasing):
        lo, hi = 0.0, 1.0
        for _ in range(100):
            mid = (lo + hi) / 2
            if (f(mid) < target) == increasing:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    lower = 0.0 if k == 0 else solve(tail_ge, a, True)
    upper = 1.0 if k == n else solve(tail_le, a, False)
    return [lower, upper]


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def newest_record(out):
    records = sorted(glob.glob(os.path.join(out, "*", "experiment.json")), key=os.path.getmtime)
    return json.load(open(records[-1]))


def base_args(args):
    """The run both sides share: yield of --yields, or kernbench of the generated --files tree."""
    if args.workload == "kernbench":
        return ["--workload", "kernbench", "--param", f"kernbench.files={args.files}",
                "--repetitions", str(args.repetitions or 1)]
    return ["--workload", "yield", "--param", f"yield.yields={args.yields}"] + (
        ["--repetitions", str(args.repetitions)] if args.repetitions else [])


def headline(args):
    return "elapsed_s" if args.workload == "kernbench" else "ns_per_yield"


def median_of_run(args, out, extra, repetitions):
    run([args.binary, "run"] + base_args(args)[:4] + extra + ["--repetitions", str(repetitions),
                                                              "--settle-timeout", "0", "--out", out])
    bundle = json.load(open(sorted(glob.glob(os.path.join(out, "*.json")))[-1]))
    values = [r["metrics"][headline(args)]["value"] for r in bundle["instances"][0]["repetitions"]
              if r["status"] == "ok"]
    return statistics.median(values)


def calibrate(args):
    """The injection for --inject %: yield's spin_ns as a share of ns_per_yield; kernbench's unit_work_ms
    from the measured slope of elapsed_s in it (a probe of PROBE ms per compiler run), since a build's
    elapsed time grows with its CPU work divided by the CPUs make keeps busy."""
    out = os.path.join(args.out, "calibration")
    base = median_of_run(args, os.path.join(out, "base"), [], 9 if args.workload == "yield" else 5)
    if args.workload == "yield":
        spin = round(base * args.inject / 100, 1)
        return {"ns_per_yield_median": base, "spin_ns": spin, "inject_pct": args.inject,
                "versus": f"yield.spin_ns={spin}"}
    probe = 100.0  # ms: its slowdown (~1.5 s here) must stand well above the noise of a median of 5
    probed = median_of_run(args, os.path.join(out, "probe"), ["--param", f"kernbench.unit_work_ms={probe}"], 5)
    slope = (probed - base) / probe  # s of elapsed per ms of work per compiler run
    ms = round(base * args.inject / 100 / slope, 2)
    return {"elapsed_s_median": base, "probe_ms": probe, "elapsed_s_at_probe": probed,
            "elapsed_s_per_unit_ms": slope, "unit_work_ms": ms, "inject_pct": args.inject,
            "versus": f"kernbench.unit_work_ms={ms}"}


def experiment(args, versus, target, margin, seed, out):
    cmd = [args.binary, "run"] + base_args(args) + [
           "--versus", versus, "--target-mde", str(target), "--max-trials", str(args.max_trials),
           "--budget", args.budget, "--seed", str(seed), "--settle-timeout", "0", "--out", out]
    if margin is not None:
        cmd += ["--margin", str(margin)]
    run(cmd)
    r = newest_record(out)
    stop, plan = r["stop"], r.get("plan") or {}
    return {
        "seed": seed,
        "verdict": stop["verdict"],
        "pairs": stop["pairs_used"],
        "elapsed_s": stop["elapsed_s"],
        "estimate_pct": stop.get("estimate_pct"),
        "planned_pairs": plan.get("pairs"),
        "plan_sd_source": plan.get("sd_source"),
        "predicted_mde_pct": plan.get("predicted_mde_pct"),
        "mde_at_planned_pairs_with_observed_sd_pct": stop.get("mde_at_planned_pairs_with_observed_sd_pct"),
        "achieved_mde_pct": stop.get("achieved_mde_pct"),
        "order_effect": r.get("order_effect"),
        "covariate": r.get("covariate"),
    }


def summarise(rows, want):
    n = len(rows)
    hits = sum(1 for r in rows if r["verdict"].startswith(want))
    times = [r["elapsed_s"] for r in rows]
    def agreement(source):
        ok = [abs(r["mde_at_planned_pairs_with_observed_sd_pct"] / r["predicted_mde_pct"] - 1) <= 0.25
              for r in rows if r["predicted_mde_pct"] and r["mde_at_planned_pairs_with_observed_sd_pct"]
              and (source is None or r["plan_sd_source"].startswith("pilot") == (source == "pilot"))]
        return f"{sum(ok)}/{len(ok)}"
    cov = [r["covariate"] for r in rows if r.get("covariate")]
    return {
        "experiments": n,
        f"{want}": hits,
        f"{want}_rate": hits / n,
        f"{want}_interval95": clopper_pearson(hits, n),
        "verdicts": {v: sum(1 for r in rows if r["verdict"] == v) for v in sorted({r["verdict"] for r in rows})},
        "machine_time_s": {"median": statistics.median(times), "max": max(times)},
        "pairs": {"median": statistics.median(r["pairs"] for r in rows), "max": max(r["pairs"] for r in rows)},
        "plan_mde_within_25pct": agreement(None),
        "plan_mde_within_25pct_planned_from_history": agreement("history"),
        "plan_mde_within_25pct_planned_from_pilot": agreement("pilot"),
        "ratio_mde_at_plan_observed_to_predicted": sorted(
            round(r["mde_at_planned_pairs_with_observed_sd_pct"] / r["predicted_mde_pct"], 3) for r in rows
            if r["predicted_mde_pct"] and r["mde_at_planned_pairs_with_observed_sd_pct"]),
        "covariate": None if not cov else {
            "experiments": len(cov),
            "correlation_median": statistics.median(c["correlation"] for c in cov),
            "variance_reduction_out_of_sample_median": statistics.median(
                c["variance_reduction_out_of_sample"] for c in cov)},
    }


def half_width(t, sd, r, alpha=0.05):
    v = t * sd * sd * r + 1
    return math.sqrt(2 * v / (t * t * r) * math.log(math.sqrt(v) / alpha))


def tuning(t, sd, alpha=0.05):
    """stats::sequence_tuning: golden-section search for the r narrowest at t."""
    a = -2 * math.log(sd) - math.log(t) - 12
    b = a + 24
    g = (math.sqrt(5) - 1) / 2
    for _ in range(200):
        c, d = b - g * (b - a), a + g * (b - a)
        if half_width(t, sd, math.exp(c), alpha) < half_width(t, sd, math.exp(d), alpha):
            b = d
        else:
            a = c
    return math.exp((a + b) / 2)


def pairs_needed(sd, target_pct, alpha=0.05, z_power=0.8416212335729143):
    """stats::plan_sequential: the first n whose detectable shift reaches the target."""
    target = math.log1p(target_pct / 100)
    n = 2
    while True:
        r = tuning(n, sd, alpha)
        if half_width(n, sd, r, alpha) + z_power * sd / math.sqrt(n) <= target:
            return n
        n += 1 if n < 64 else max(1, n // 64)


def levels_of(trials):
    """sigma within trials (pooled) and of trial means beyond it, from per-trial lists of ln values."""
    within = [statistics.variance(t) for t in trials if len(t) >= 2]
    s_rep2 = statistics.mean(within) if within else None
    reps = statistics.mean(len(t) for t in trials)
    s_means2 = statistics.variance([statistics.mean(t) for t in trials])
    s_trial2 = max(0.0, s_means2 - (s_rep2 or 0) / reps)
    return {"sigma_repetition": math.sqrt(s_rep2) if s_rep2 is not None else None,
            "sigma_trial": math.sqrt(s_trial2)}


def pairs_for_metric(path, f, metric):
    """Pairs of trial medians of METRIC, read from the experiment's bundles (a/ and b/ beside PATH), and the
    levels of that metric (side a and b pooled, each around its own trials)."""
    base = os.path.dirname(path)
    by_pair = {}
    trials = []
    for side in ("a", "b"):
        for bundle_path in glob.glob(os.path.join(base, side, "*.json")):
            b = json.load(open(bundle_path))
            values = [r["metrics"][metric]["value"] for r in b["instances"][0]["repetitions"]
                      if r["status"] == "ok" and metric in r["metrics"] and r["metrics"][metric]["value"] > 0]
            if values:
                by_pair.setdefault(b["experiment"]["pair"], {})[side] = statistics.median(values)
                trials.append([math.log(v) for v in values])
    seconds = {p["pair"]: p["seconds"] for p in f["pairs"]}
    pairs = [{"a": v["a"], "b": v["b"], "seconds": seconds[k]} for k, v in sorted(by_pair.items()) if len(v) == 2]
    return pairs, levels_of(trials)


def table(path, metric=None):
    """The README's table for this machine: sigma by level, pairs and machine time per MDE. PATH is the
    A/A pool fixture or an experiment.json of a fixed A/A experiment (`run --versus` of the same value);
    METRIC another of its metrics, read from the trial bundles."""
    f = json.load(open(path))
    if metric:
        pairs, lv = pairs_for_metric(path, f, metric)
    else:
        pairs = [p for p in f["pairs"] if isinstance(p.get("a"), (int, float))
                 and isinstance(p.get("b"), (int, float)) and p["a"] > 0 and p["b"] > 0]
        lv = f["levels"]["a"] if "a" in f["levels"] else f["levels"]
    d = [math.log(p["b"] / p["a"]) for p in pairs]
    sd = statistics.stdev(d)
    pair_s = statistics.median(p["seconds"] for p in pairs)
    rows = []
    for target in (2, 3, 5, 10):
        n = pairs_needed(sd, target)
        rows.append({"mde_pct": target, "pairs": n, "minutes": n * pair_s / 60})
    out = {"metric": metric or f["metric"]["name"], "source": path, "pairs": len(pairs), "sigma_repetition": lv.get("sigma_repetition"),
           "sigma_trial": lv.get("sigma_trial"), "repetition_seconds": lv.get("repetition_seconds"),
           "trial_overhead_seconds": lv.get("trial_overhead_seconds"),
           "best_repetitions_per_trial": lv.get("best_repetitions_per_trial"),
           "sigma_pair_ln_ratio": sd, "pair_seconds": pair_s, "rows": rows}
    if f.get("covariate") and not metric:
        out["covariate"] = f["covariate"]
    return out


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--table":
        # PATH or PATH:METRIC
        print(json.dumps([table(*arg.split(":", 1)) for arg in sys.argv[2:]], indent=2))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="build/schedlab")
    ap.add_argument("--out", default="results/sequential-bench")
    ap.add_argument("--experiments", type=int, default=20)
    ap.add_argument("--inject", type=float, default=3.0)
    ap.add_argument("--target", type=float, default=3.0)
    ap.add_argument("--aa-margin", type=float, default=5.0)
    ap.add_argument("--workload", choices=["yield", "kernbench"], default="yield")
    ap.add_argument("--yields", type=int, default=200000)
    ap.add_argument("--files", type=int, default=30, help="kernbench: units of the generated tree")
    ap.add_argument("--repetitions", type=int, default=0, help="per trial (default: run's 3; kernbench 1)")
    ap.add_argument("--budget", default="10m")
    ap.add_argument("--max-trials", type=int, default=400)
    ap.add_argument("--skip", default="", help="comma list: injected,aa")
    args = ap.parse_args()
    skip = set(args.skip.split(",")) if args.skip else set()
    os.makedirs(args.out, exist_ok=True)
    result = {"workload": args.workload, "base": base_args(args), "target_pct": args.target}
    result["calibration"] = calibrate(args)
    print(f"calibration: {result['calibration']}", file=sys.stderr)
    if "injected" not in skip:
        rows = []
        for i in range(args.experiments):
            rows.append(experiment(args, result["calibration"]["versus"], args.target, None, 1000 + i,
                                   os.path.join(args.out, "injected")))
            print(f"injected {i + 1}: {rows[-1]['verdict']} after {rows[-1]['pairs']} pairs, "
                  f"{rows[-1]['elapsed_s']:.0f} s, estimate {rows[-1]['estimate_pct']}", file=sys.stderr)
        result["injected"] = summarise(rows, "worse")
        est = [r["estimate_pct"] for r in rows if r["estimate_pct"] is not None]
        result["injected"]["estimated_effect_pct_median"] = statistics.median(est) if est else None
        result["injected"]["rows"] = rows
    if "aa" not in skip:
        rows = []
        for i in range(args.experiments):
            same = f"kernbench.files={args.files}" if args.workload == "kernbench" else f"yield.yields={args.yields}"
            rows.append(experiment(args, same, args.aa_margin, args.aa_margin, 2000 + i,
                                   os.path.join(args.out, "aa")))
            print(f"A/A {i + 1}: {rows[-1]['verdict']} after {rows[-1]['pairs']} pairs, "
                  f"{rows[-1]['elapsed_s']:.0f} s", file=sys.stderr)
        s = summarise(rows, "equivalent")
        false = sum(1 for r in rows if r["verdict"].startswith(("worse", "better")))
        s["false_alarms"] = false
        s["false_alarm_interval95"] = clopper_pearson(false, len(rows))
        s["rows"] = rows
        result["aa"] = s
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
