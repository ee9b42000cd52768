#!/usr/bin/python3
"""Extracts one headline metric of real A/A trials (bench/aa_collect.sh output) into the compact CSV
that tests/diff_power_test.cpp reads: one line per trial, the median of its ok repetitions.
    bench/aa_fixture.py AA_DIR WORKLOAD METRIC > tests/fixtures/aa/WORKLOAD-METRIC.csv
"""
import glob, json, os, statistics, sys

aa_dir, workload, metric = sys.argv[1:4]
rows, info, first = [], None, None
for b, path in enumerate(p for p in sorted(glob.glob(os.path.join(aa_dir, "batch*")), key=lambda p: int("0" + p.rsplit("batch", 1)[1].split(".")[0])) if os.path.isdir(p)):
    for f in glob.glob(os.path.join(path, "*.json")):
        bundle = json.load(open(f))
        first = first or bundle
        for inst in bundle["instances"]:
            if inst["workload"] != workload:
                continue
            info = info or (inst["metric_info"][metric], inst["workload_version"], inst["params"])
            values = [r["metrics"][metric]["value"] for r in inst["repetitions"]
                      if r["status"] == "ok" and metric in r["metrics"]]
            if values:
                rows.append((b, bundle["trial"], bundle["started_at"], statistics.median(values)))
if not rows:
    sys.exit(f"aa_fixture: no {workload}/{metric} in {aa_dir}")
rows.sort()
print(f"# Real A/A trials captured by bench/aa_collect.sh on {first['host'].get('cpu_model', '?')}, "
      f"kernel {first['kernel'].get('release', '?')}, {rows[0][2]} .. {rows[-1][2]}")
print(f"# params: {json.dumps(info[2], sort_keys=True)}")
print(f"# metric: {workload} {info[1]} {metric} {info[0]['unit']} {info[0]['direction']}")
print("batch,trial,started_at,value")
for r in rows:
    print(f"{r[0]},{r[1]},{r[2]},{r[3]!r}")
