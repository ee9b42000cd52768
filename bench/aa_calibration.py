#!/usr/bin/python3
"""A/A calibration and power of `schedlab diff` on real runs (data: bench/aa_collect.sh).

Pairs trials 2k and 2k+1 of each batch (A/A: same kernel, back to back); batches were taken minutes
apart. Reports the rate of better/worse verdicts, a Kolmogorov-Smirnov test of the headline p-values
against uniform, the rates of inconclusive / equivalent, and, with shifts injected into the other side,
the detection rate per n (first n repetitions of each trial).
    bench/aa_calibration.py AA_DIR [SCHEDLAB]
"""
import copy, glob, json, os, subprocess, sys, tempfile
from scipy import stats

aa_dir = sys.argv[1]
schedlab = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "build", "schedlab")


def trials(batch):
    return sorted(glob.glob(os.path.join(batch, "*.json")))


def cut(bundle, n, shift):
    b = copy.deepcopy(bundle)
    for inst in b["instances"]:
        inst["repetitions"] = inst["repetitions"][:n]
        for rep in inst["repetitions"]:
            for name, m in rep["metrics"].items():
                if inst["metric_info"].get(name, {}).get("headline"):
                    m["value"] *= 1 + shift
    return b


def diff(a, b, tmp):
    pa, pb = os.path.join(tmp, "a.json"), os.path.join(tmp, "b.json")
    for p, data in ((pa, a), (pb, b)):
        with open(p, "w") as f:
            json.dump(data, f)
    out = subprocess.run([schedlab, "diff", "--json", pa, pb], capture_output=True, text=True, check=True).stdout
    rows = []
    for inst in json.loads(out)["instances"]:
        for m in inst["metrics"]:
            if m["headline"]:
                c = m["comparisons"][0]
                rows.append((inst["id"] + "/" + m["name"], c["verdict"], c["p_value"], c["shift_pct"], c["mde_pct"]))
    for p in (pa, pb):
        os.unlink(p)
    return rows


pairs = []
for batch in sorted(glob.glob(os.path.join(aa_dir, "batch*"))):
    t = trials(batch)
    pairs += [(t[i], t[i + 1]) for i in range(0, len(t) - 1, 2)]
loaded = [(json.load(open(a)), json.load(open(b))) for a, b in pairs]
print(f"{len(pairs)} A/A pairs from {aa_dir}")
with tempfile.TemporaryDirectory() as tmp:
    for n in (5, 9, 30):
        rows = [r for a, b in loaded for r in diff(cut(a, n, 0), cut(b, n, 0), tmp)]
        verdicts = [r[1] for r in rows]
        ps = [r[2] for r in rows]
        sig = sum(v in ("better", "worse") for v in verdicts)
        print(f"\nA/A n={n}: {len(rows)} headline comparisons over {len(pairs)} diffs")
        for v in sorted(set(verdicts)):
            print(f"  {v:<20} {verdicts.count(v):3d}  ({100 * verdicts.count(v) / len(rows):.0f}%)")
        print(f"  false better/worse rate {sig / len(rows):.3f} (alpha 0.05)")
        print(f"  KS of p-values vs uniform: D={stats.kstest(ps, 'uniform').statistic:.3f} p={stats.kstest(ps, 'uniform').pvalue:.3g}")
        per_metric = {}
        for name, v, p, s, mde in rows:
            per_metric.setdefault(name, []).append((v, mde))
        for name, vs in sorted(per_metric.items()):
            mdes = sorted(m for _, m in vs if m is not None)
            print(f"  {name:<28} better/worse {sum(v in ('better','worse') for v, _ in vs)}/{len(vs)}  median MDE {mdes[len(mdes)//2]:.1f}%")
        for shift in (0.02, 0.03, 0.05, 0.10):
            rows = [r for a, b in loaded for r in diff(cut(a, n, 0), cut(b, n, shift), tmp)]
            by = {}
            for name, v, *_ in rows:
                by.setdefault(name, []).append(v)
            text = ", ".join(f"{k} {sum(v == 'worse' for v in vs)}/{len(vs)} worse ({sum(v == 'better' for v in vs)} better)" for k, vs in sorted(by.items()))
            print(f"  +{100 * shift:.0f}% injected: {text}")
