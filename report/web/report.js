// schedlab report: draws the tables and charts of one report from its embedded data (the
// `report-data` JSON element, written by report/report_data.cpp). Every number shown comes from that
// data: verdicts and statistics from the diff library, chart values from the bundles' repetitions.
// Text from bundles only ever reaches the page through textContent, never as markup.
"use strict";

(function () {
  const COLOURS = ["#1f6fb4", "#d1495b", "#2a9d55", "#8e5bb5", "#e08a0c", "#3a8f9a"];
  const CHART_WIDTH = 560;
  const CHART_HEIGHT = 300;
  const TOP_PROFILE_LINES = 10; // largest increases and largest decreases each

  // Every chart drawn, for people poking at the page and for tests/report_browser_test.cpp, which reads
  // back what each uPlot instance plots and compares it with the bundles.
  const charts = [];
  window.schedlabCharts = charts;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function colour(i) {
    return COLOURS[i % COLOURS.length];
  }

  function num(v) {
    if (v === null || v === undefined || !Number.isFinite(v)) return "n/a";
    const a = Math.abs(v);
    if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(3);
    return String(Number(v.toPrecision(4)));
  }

  function withUnit(v, unit) {
    return !unit || unit === "count" ? num(v) : num(v) + " " + unit;
  }

  function pct(v) {
    return v === null || v === undefined || !Number.isFinite(v) ? "n/a" : (v >= 0 ? "+" : "") + v.toFixed(1) + "%";
  }

  // An effect as the diff computes it: a % ratio, or a shift in the metric's unit where a side's
  // values are not all positive (diff/README.md).
  function effect(v, c) {
    if (c.effect_unit === "%" || c.effect_unit === undefined) return pct(v);
    if (v === null || v === undefined || !Number.isFinite(v)) return "n/a";
    return (v > 0 ? "+" : "") + withUnit(v, c.effect_unit);
  }

  // The diff writes undefined numbers (an infinite MDE, say) as null.
  function fixed(v, digits) {
    return v === null || v === undefined || !Number.isFinite(v) ? "n/a" : v.toFixed(digits);
  }

  function cvText(cv) {
    return fixed(cv === null ? null : 100 * cv, 1) + "%";
  }

  function pText(p) {
    if (p === null || p === undefined) return "";
    return p < 0.001 ? p.toExponential(1) : p.toFixed(3);
  }

  function paramsText(params) {
    return Object.entries(params || {})
      .map(([k, v]) => k + "=" + (typeof v === "string" ? v : JSON.stringify(v)))
      .join(" ");
  }

  function table(head, rows, cls) {
    const thead = el("thead", {}, el("tr", {}, ...head.map((h) => el("th", {}, h))));
    const tbody = el("tbody", {}, ...rows);
    return el("table", cls ? { class: cls } : {}, thead, tbody);
  }

  function row(cells, cls) {
    return el("tr", cls ? { class: cls } : {}, ...cells.map((c) => (c instanceof Node ? c : el("td", {}, c))));
  }

  // --- charts -------------------------------------------------------------------------------------

  function addChart(container, spec) {
    const id = "chart-" + charts.length;
    const box = el("div", { class: "chart", id: id, "data-kind": spec.kind });
    container.append(box);
    const plot = new uPlot(spec.opts, spec.data, box);
    charts.push({ id: id, kind: spec.kind, instance: spec.instance, metric: spec.metric || null,
                  side: spec.side || null, labels: spec.labels || null, plot: plot });
    return plot;
  }

  function pointsSeries(label, i) {
    return { label: label, stroke: colour(i), fill: colour(i), width: 0, paths: () => null,
             points: { show: true, size: 8, width: 1, stroke: colour(i), fill: colour(i) } };
  }

  function meanSeries(label, i) {
    return { label: label, stroke: colour(i), width: 1.5, dash: [6, 4], points: { show: false } };
  }

  // Per-repetition values (points, in run order, trials one after another) and each side's mean.
  function valuesChart(container, instance, metric) {
    const sides = metric.sides;
    const n = Math.max(...sides.map((s) => s.trials.reduce((k, t) => k + t.values.length, 0)));
    const x = Array.from({ length: n }, (_, i) => i + 1);
    const data = [x];
    const series = [{ label: "repetition" }];
    sides.forEach((s, i) => {
      const values = s.trials.flatMap((t) => t.values);
      data.push(x.map((_, k) => (k < values.length ? values[k] : null)));
      series.push(pointsSeries(s.side, i));
      data.push(x.map(() => s.summary.mean));
      series.push(meanSeries(s.side + " mean", i));
    });
    const unit = metric.unit ? " (" + metric.unit + ")" : "";
    addChart(container, {
      kind: "values", instance: instance.key, metric: metric.name, data: data,
      opts: {
        title: metric.name + " per repetition" + (metric.direction ? ", " + metric.direction.replaceAll("_", " ") : ""),
        width: CHART_WIDTH, height: CHART_HEIGHT,
        scales: { x: { time: false, range: [0.5, n + 0.5] } },
        series: series,
        axes: [
          { label: "repetition (run order, trials one after another)", splits: () => x },
          { label: metric.name + unit, size: 70 },
        ],
      },
    });
  }

  // Latency share per bucket, both axes logarithmic: the tail is where schedulers differ. x holds every
  // bucket's upper bound and, where a side's next non-empty bucket does not start at it, that bucket's
  // lower bound too, with no value: the line breaks there instead of bridging empty buckets.
  function histogramChart(container, instance) {
    const hs = instance.histograms;
    const gaps = new Set();
    for (const h of hs) {
      h.lower.forEach((lo, k) => { if (k === 0 || h.upper[k - 1] !== lo) gaps.add(lo); });
    }
    const bounds = new Set(hs.flatMap((h) => h.upper));
    for (const g of gaps) if (g > 0) bounds.add(g);
    const x = [...bounds].sort((a, b) => a - b);
    const data = [x];
    const series = [{ label: "latency" }];
    hs.forEach((h, i) => {
      const share = new Map(h.upper.map((u, k) => [u, (100 * h.counts[k]) / h.count]));
      data.push(x.map((u) => (share.has(u) ? share.get(u) : null)));
      series.push({ label: h.side + " (" + h.count + " samples, " + h.repetitions + " reps)", stroke: colour(i),
                    width: 1.5, paths: uPlot.paths.stepped({ align: -1 }), points: { size: 4 } }); // points where sparse
    });
    addChart(container, {
      kind: "histogram", instance: instance.key, data: data,
      opts: {
        title: "latency histogram (all ok repetitions pooled)",
        width: CHART_WIDTH, height: CHART_HEIGHT,
        scales: { x: { time: false, distr: 3, log: 10 }, y: { distr: 3, log: 10 } },
        series: series,
        axes: [{ label: "latency (" + (hs[0].unit || "us") + "), bucket upper bound, log" },
               { label: "share of samples (%), log", size: 70 }],
      },
    });
  }

  // The q-quantile as the histogram reads it (core/histogram.cpp): the lower bound of the bucket where
  // the running count first reaches q of all samples.
  function quantile(h, q) {
    const need = q * h.count;
    let seen = 0;
    for (let k = 0; k < h.counts.length; k++) {
      seen += h.counts[k];
      if (seen >= need && seen > 0) return h.lower[k];
    }
    return h.lower.length ? h.lower[h.lower.length - 1] : null;
  }

  // x is -log10(1 - q): 1 is p90, 2 is p99, 3 is p99.9, so every nine gets the same width.
  function percentileChart(container, instance) {
    const hs = instance.histograms;
    const maxNines = Math.min(5, Math.log10(Math.max(...hs.map((h) => h.count))));
    const x = [];
    for (let v = 0; v <= maxNines + 1e-9; v += 0.02) x.push(Number(v.toFixed(2)));
    const data = [x];
    const series = [{ label: "percentile", value: (u, v) => (v === null ? "" : percentileLabel(v)) }];
    hs.forEach((h, i) => {
      data.push(x.map((v) => {
        const q = 1 - Math.pow(10, -v);
        const lat = quantile(h, q);
        return lat > 0 ? lat : null; // a log axis has no 0
      }));
      series.push({ label: h.side, stroke: colour(i), width: 2, points: { show: false } });
    });
    addChart(container, {
      kind: "percentiles", instance: instance.key, data: data,
      opts: {
        title: "latency percentiles (all ok repetitions pooled)",
        width: CHART_WIDTH, height: CHART_HEIGHT,
        scales: { x: { time: false, range: [0, Math.max(1, maxNines)] }, y: { distr: 3, log: 10 } },
        series: series,
        axes: [
          { label: "percentile", splits: (u, ai, min, max) => integersBetween(min, max),
            values: (u, splits) => splits.map(percentileLabel) },
          { label: "latency (" + (hs[0].unit || "us") + "), log", size: 70 },
        ],
      },
    });
  }

  function integersBetween(min, max) {
    const out = [];
    for (let v = Math.ceil(min); v <= Math.floor(max); v++) out.push(v);
    return out;
  }

  function percentileLabel(v) {
    const p = 100 * (1 - Math.pow(10, -v));
    return "p" + String(Number(p.toFixed(Math.max(0, Math.ceil(v) - 2))));
  }

  // Bars of one symbol list; x is the rank, its tick labels the symbols.
  function symbolBars(container, spec) {
    const x = spec.symbols.map((_, i) => i);
    addChart(container, {
      kind: spec.kind, instance: spec.instance, side: spec.side, labels: spec.symbols, data: [x, spec.values],
      opts: {
        title: spec.title, width: CHART_WIDTH, height: CHART_HEIGHT + 150,
        padding: [12, 56, 0, 0], // room on the right for the last rotated symbol
        scales: { x: { time: false, range: [-0.6, x.length - 0.4] } },
        series: [{ label: "symbol", value: (u, v) => (v === null ? "" : spec.symbols[v]) },
                 { label: spec.seriesLabel, stroke: colour(spec.colour), fill: colour(spec.colour) + "99",
                   paths: uPlot.paths.bars({ size: [0.7, 40] }), points: { show: false } }],
        axes: [{ label: "kernel symbol", splits: () => x, values: (u, splits) => splits.map((i) => spec.symbols[i]),
                 rotate: -50, size: 170, gap: 4 },
               { label: spec.yLabel, size: 70 }],
      },
    });
  }

  function diffprofileChart(container, instance, profile, baseName) {
    const lines = profile.lines.slice(1).filter((l) => !l.within_noise);
    if (lines.length === 0) {
      container.append(el("p", { class: "note" }, "diffprofile " + baseName + " → " + profile.side +
                          ": every change is within Poisson noise"));
      return;
    }
    const shown = lines.length <= 2 * TOP_PROFILE_LINES
      ? lines : lines.slice(0, TOP_PROFILE_LINES).concat(lines.slice(-TOP_PROFILE_LINES));
    symbolBars(container, {
      kind: "diffprofile", instance: instance.key, side: profile.side, colour: 1,
      symbols: shown.map((l) => l.symbol), values: shown.map((l) => l.delta),
      title: "diffprofile " + baseName + " → " + profile.side + " (" + profile.event + ", outside Poisson noise)",
      seriesLabel: "Δ samples, " + profile.side + " scaled to " + baseName + "'s " + profile.normalised_per + "s",
      yLabel: "Δ samples (" + profile.event + ")",
    });
  }

  function profileChart(container, instance) {
    const p = instance.profile;
    symbolBars(container, {
      kind: "profile", instance: instance.key, side: null, colour: 0,
      symbols: p.symbols.map((s) => s[0]), values: p.symbols.map((s) => s[1]),
      title: "profile: top symbols (" + p.event + ", " + p.repetitions + " diagnostic repetitions)",
      seriesLabel: "samples", yLabel: "samples (" + p.event + ")",
    });
  }

  // --- sections -----------------------------------------------------------------------------------

  function identities(data) {
    const rows = [];
    data.sides.forEach((s, i) => {
      for (const b of s.bundles) {
        rows.push(row([el("td", {}, el("span", { class: "swatch", style: "background:" + colour(i) }), s.name),
                       s.role, b.label || "", b.kernel_release || "", b.kernel_version || "", b.hostname || "",
                       b.cpu_model || "", b.scheduler || "", String(b.trial + 1) + "/" + b.trials,
                       b.started_at, b.finished_at, el("td", { class: "path" }, b.path)]));
      }
    });
    return el("section", { id: "runs" }, el("h2", {}, "Runs"),
              table(["side", "role", "label", "kernel release", "kernel version", "host", "CPU", "scheduler",
                     "trial", "started", "finished", "bundle"], rows, "runs"));
  }

  function warnings(data) {
    const all = (data.diff ? data.diff.warnings : []).concat(data.warnings);
    if (all.length === 0) return null;
    return el("section", { id: "warnings" }, el("h2", {}, "Warnings"),
              el("ul", {}, ...all.map((w) => el("li", { class: "warning" }, w))));
  }

  function verdictCell(c, headline) {
    if (!headline || c.verdict === null) return el("td", {}, "");
    let text = c.verdict;
    // As `schedlab diff` prints it (diff/text_report.cpp).
    if (c.verdict === "inconclusive") {
      text += " (MDE " + (c.effect_unit === "%" ? fixed(c.mde_pct, 1) + "%" : effect(c.mde, c).replace(/^\+/, "")) + ")";
    }
    if (c.verdict === "too few runs") {
      text += c.test === "mann-whitney/repetitions" ? " (one trial)" : " (min p " + fixed(c.min_p, 3) + ")";
    }
    // `worse (not beyond ±2%)`: significant but inside the margin, shown apart from a plain `worse`.
    const cls = "verdict verdict-" + (c.verdict.includes("(not beyond") ? "qualified" : c.verdict.split(" ")[0]);
    const cell = el("td", { class: cls, "data-verdict": c.verdict }, text);
    if (c.verdict_reason) cell.title = c.verdict_reason;
    return cell;
  }

  function nText(s) {
    return s.trials > 1 ? s.trials + "×" + Math.round(s.repetitions / s.trials) : String(s.repetitions);
  }

  function diffRows(diffInstance, data, metrics) {
    const baseName = data.diff.sides[0].name;
    const rows = [];
    for (const m of metrics) {
      const name = m.name + (m.headline ? " *" : "");
      const cls = m.kind === "counter" ? "counter" : m.headline ? "headline" : "";
      rows.push(row([name, baseName, nText(m.base), withUnit(m.base.median, m.unit),
                     cvText(m.base.cv), "", "", "", "", ""], cls));
      for (const c of m.comparisons) {
        const tr = row(["", c.side, nText(c.stats), withUnit(c.stats.median, m.unit),
                        cvText(c.stats.cv), effect(c.shift, c),
                        // The level the interval achieves (exact rank intervals overshoot the one asked for).
                        "[" + effect(c.ci[0], c) + ", " + effect(c.ci[1], c) + "]" +
                          (Number.isFinite(c.ci_confidence) ? " " + fixed(100 * c.ci_confidence, 1) + "%" : ""),
                        m.headline ? pText(c.p_value) : "", m.headline ? pText(c.p_adjusted) : ""], cls);
        tr.append(verdictCell(c, m.headline));
        tr.dataset.metric = m.name;
        tr.dataset.side = c.side;
        rows.push(tr);
      }
    }
    return rows;
  }

  // kernbench's own report: Elapsed, System, User and CPU as mean (standard deviation) per side, from the
  // diff's statistics as `schedlab diff` prints them.
  function kernbenchTable(diffInstance, data) {
    const columns = [["elapsed_s", "Elapsed"], ["system_s", "System"], ["user_s", "User"], ["cpu_pct", "CPU"]];
    const byName = new Map(diffInstance.metrics.map((m) => [m.name, m]));
    const rows = data.diff.sides.map((side, i) => row([side.name, ...columns.map(([name]) => {
      const m = byName.get(name);
      const s = !m ? null : i === 0 ? m.base : (m.comparisons.find((c) => c.side === side.name) || {}).stats;
      return s ? fixed(s.mean, 2) + " (" + fixed(s.cv * s.mean, 2) + ")" : "-";
    })]));
    return table(["kernbench, mean (sd)", ...columns.map((c) => c[1])], rows, "kernbench");
  }

  // Metrics in view; counters (exploratory, never judged) folded away under them.
  function diffTables(diffInstance, data) {
    const head = ["metric (* headline)", "side", "n", "median", "CV", "change", "CI (achieved level)", "p", "p(BH)",
                  "verdict"];
    const metrics = diffInstance.metrics.filter((m) => m.kind !== "counter");
    // As `schedlab diff` shows them: the counters that moved beyond the noise of their repetitions in view,
    // every counter folded away below.
    const counters = diffInstance.metrics.filter((m) => m.kind === "counter");
    const names = new Set(counters.map((m) => m.name));
    // Per operation instead of the totals they come from, where the workload counts operations.
    const moved = counters.filter((m) => !names.has(m.name + "/op") && m.comparisons.some((c) => c.outside_noise));
    const out = [table(head, diffRows(diffInstance, data, metrics), "diff")];
    if (moved.length > 0) {
      out.push(el("p", { class: "note" }, moved.length + " of " + counters.filter((m) => !names.has(m.name + "/op")).length +
                  " counters moved beyond the noise of their repetitions (exploratory: effect sizes, no verdicts)"),
               table(head, diffRows(diffInstance, data, moved), "moved-counters"));
    }
    if (counters.length > 0) {
      out.push(el("details", {}, el("summary", {}, "all " + counters.length + " counters"),
                  table(head, diffRows(diffInstance, data, counters), "diff counters")));
    }
    return out;
  }

  function summaryRows(metrics) {
    const rows = [];
    for (const m of metrics) {
      for (const s of m.sides) {
        const cls = m.kind === "counter" ? "counter" : m.headline ? "headline" : "";
        rows.push(row([m.name + (m.headline ? " *" : ""), s.side, String(s.summary.repetitions),
                       withUnit(s.summary.median, m.unit), withUnit(s.summary.mean, m.unit),
                       cvText(s.summary.cv), withUnit(s.summary.min, m.unit),
                       withUnit(s.summary.max, m.unit)], cls));
      }
    }
    return rows;
  }

  // One side: a summary per metric; counters folded away as in the diff tables.
  function summaryTables(instance) {
    const head = ["metric (* headline)", "side", "n", "median", "mean", "CV", "min", "max"];
    const metrics = instance.metrics.filter((m) => m.kind !== "counter");
    const counters = instance.metrics.filter((m) => m.kind === "counter");
    const out = [table(head, summaryRows(metrics), "summary")];
    if (counters.length > 0) {
      out.push(el("details", {}, el("summary", {}, counters.length + " counters"),
                  table(head, summaryRows(counters), "summary counters")));
    }
    return out;
  }

  // An instance's section is where a verdict line of the summary leads.
  function anchorOf(key) {
    return "instance-" + key.replace(/[^A-Za-z0-9_-]/g, "-");
  }

  // The page opens on what `schedlab diff` prints first: a line per instance and headline metric, the
  // regressions first, each linking to its instance's section (the diff's `summary`, in its order).
  function verdictSummary(data) {
    const many = data.diff.sides.length > 2;
    const names = data.diff.sides.map((s) => s.name);
    const head = ["instance", "metric"].concat(many ? ["side", names[0], "other"] : [names[0], names[1]],
                                               ["change", "interval", "verdict"]);
    const rows = data.diff.summary.map((line) => {
      const key = line.workload + "/" + line.params_hash;
      const link = el("a", { href: "#" + anchorOf(key) }, line.label);
      const verdictClass = line.group === 0 ? "worse" : line.group === 2 ? "better" : line.group < 4 ? "qualified"
        : (line.verdict || "").startsWith("equivalent") ? "equivalent" : line.verdict === null && line.kind === "missing"
        ? "missing" : "inconclusive";
      const verdict = el("td", { class: "verdict verdict-" + verdictClass, "data-verdict": line.verdict === null ? "" : line.verdict },
                         line.text.verdict);
      const cells = [el("td", {}, link), line.metric || (line.kind === "failures" ? "failed repetitions" : "(not run)")];
      if (many) cells.push(line.side);
      cells.push(line.text.base || "-", line.text.other || "-", line.text.change || "-", line.text.interval || "-", verdict);
      const tr = row(cells);
      tr.dataset.instance = key;
      tr.dataset.side = line.side;
      if (line.metric) tr.dataset.metric = line.metric;
      return tr;
    });
    return el("section", { id: "verdicts" }, el("h2", {}, "Verdicts"),
              table(head, rows, "summary-verdicts"),
              el("p", { class: "note" }, "Regressions first, then improvements, then the rest; each line leads to its " +
                 "instance's tables and charts below."));
  }

  // The commits between git-built kernels, as `schedlab diff` prints them below its verdicts: the
  // changes in the code beside the changes in the numbers.
  function kernelCommits(data) {
    const all = data.diff ? data.diff.kernel_commits || [] : [];
    if (all.length === 0) return null;
    const section = el("section", { id: "kernel-commits" }, el("h2", {}, "Kernel commits"));
    for (const k of all) {
      section.append(el("p", { class: "commits-title" }, k.text.title), el("p", { class: "note" }, k.text.summary));
      const lines = k.log.map((c) => c.commit + " " + c.subject);
      if (k.text.more) lines.push(k.text.more);
      if (lines.length > 0) section.append(el("pre", { class: "commits" }, lines.join("\n")));
    }
    return section;
  }

  function instanceSection(instance, data) {
    const diffInstance = data.diff ? data.diff.instances.find((d) => d.workload + "/" + d.params_hash === instance.key) : null;
    const section = el("section", { class: "instance", "data-key": instance.key, id: anchorOf(instance.key) },
                       el("h2", {}, instance.id + " ", el("small", {}, instance.workload_version)),
                       el("p", { class: "params" }, paramsText(instance.params)));
    if (diffInstance) {
      for (const side of diffInstance.missing_from) section.append(el("p", { class: "note" }, "not in " + side));
      if (instance.workload === "kernbench") section.append(kernbenchTable(diffInstance, data));
      section.append(...diffTables(diffInstance, data));
    } else {
      section.append(...summaryTables(instance));
    }
    const grid = el("div", { class: "charts" });
    section.append(grid);
    for (const m of instance.metrics) {
      if (m.headline && m.sides.length > 0) valuesChart(grid, instance, m);
    }
    if (instance.histograms.length > 0) {
      histogramChart(grid, instance);
      percentileChart(grid, instance);
    }
    if (diffInstance) {
      for (const p of diffInstance.profiles) {
        for (const w of p.warnings) section.append(el("p", { class: "note" }, "diffprofile: " + w));
        if (p.lines.length > 0) diffprofileChart(grid, instance, p, data.diff.sides[0].name);
      }
    } else if (instance.profile) {
      profileChart(grid, instance);
    }
    return section;
  }

  function environment(data) {
    const names = data.sides.map((s) => s.name);
    const rows = data.environment.map((e) => {
      const tr = row([e.field, e.category, ...e.values.map((v) => el("td", { class: "value" }, v))],
                     e.differs ? "differs" : "");
      return tr;
    });
    const differing = data.environment.filter((e) => e.differs).length;
    const note = names.length > 1
      ? differing + " field(s) differ between the sides (highlighted)"
      : "one side: nothing to compare";
    return el("section", { id: "environment" }, el("h2", {}, "Environment"), el("p", { class: "note" }, note),
              table(["field", "category", ...names], rows, "environment"));
  }

  function render() {
    const data = JSON.parse(document.getElementById("report-data").textContent);
    const main = document.getElementById("report");
    const names = data.sides.map((s) => s.name);
    main.append(el("h1", {}, "schedlab report: " + names.join(" vs ")));
    if (data.diff) {
      const o = data.diff.options;
      main.append(el("p", { class: "note" },
        "Baseline " + names[0] + ". Verdicts on headline metrics (*): alpha " + o.alpha +
        " after Benjamini–Hochberg, equivalence margin ±" + o.min_effect_pct +
        "%; changes are Hodges–Lehmann shifts as % of the base median — the numbers of `schedlab diff`."));
    } else {
      main.append(el("p", { class: "note" }, "One side: values and summaries only, no verdicts."));
    }
    if (data.diff) main.append(verdictSummary(data));
    const commits = kernelCommits(data);
    if (commits) main.append(commits);
    main.append(identities(data));
    const w = warnings(data);
    if (w) main.append(w);
    for (const instance of data.instances) main.append(instanceSection(instance, data));
    main.append(environment(data));
    document.body.dataset.charts = String(charts.length);
    document.body.dataset.rendered = "true";
  }

  try {
    render();
  } catch (e) {
    console.error("schedlab report: " + (e && e.stack ? e.stack : e));
    document.body.dataset.rendered = "failed";
  }
})();
