#!/usr/bin/env node
// Writes schedlab's Grafana dashboards (dashboards/json/*.json) from the tables below: one table of
// workloads and their exported families, one panel builder per kind of panel, so that three dashboards
// and ~100 panels do not become copy-pasted JSON. The JSON files are committed (Grafana's file provider
// reads them as they are); `node dashboards/generate.mjs --check` fails when they differ from what this
// script writes, and check/check.mjs (the dashboards tests) makes the same comparison.
//
// Metric names are the exporter's (daemon/exporter/README.md). Every panel and target names its
// datasource as {"type":"prometheus","uid":"${datasource}"}; every panel sets fieldConfig.defaults.unit.
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, 'json');

// The classic dashboard model's version in @grafana/schema 13.2.3 (its defaultDashboard); pinned, and
// the check compares it with the installed package's.
export const SCHEMA_VERSION = 42;

const DS = { type: 'prometheus', uid: '${datasource}' };

// Workloads as the daemon exports them, from the registry: dashboards/workloads.json is what
// `schedlab workloads --json` prints (the dashboards test fails when it is stale), so a workload reaches
// the dashboards by its own folder and one registration line. headline: its headline gauges (the
// exporter's family names); histogram: a schedlab_<workload>_latency_seconds histogram exists;
// perOperation: the workload reports an "operations" metric, so the runner's counters per operation exist
// (kernbench: a repetition is one build, so its counters are per repetition).
const REGISTRY = JSON.parse(readFileSync(join(here, 'workloads.json'), 'utf8'));

// Grafana's unit of an exported family, from the base-unit suffix the exporter gave it.
function grafanaUnit(family) {
  if (family.endsWith('_bytes_per_second')) return 'Bps';
  if (family.endsWith('_per_second')) return 'ops';
  if (family.endsWith('_seconds')) return 's';
  if (family.endsWith('_ratio')) return 'percentunit';
  if (family.endsWith('_bytes')) return 'bytes';
  return 'short';
}

export const WORKLOADS = REGISTRY.workloads.map((w) => ({
  name: w.name,
  title: `${w.name} — ${w.summary.split(/[:;]/)[0]}`,
  perOperation: w.operations,
  histogram: w.latency_histogram,
  headline: w.metrics.filter((m) => m.headline).map((m) => ({
    family: m.family, title: m.name, unit: grafanaUnit(m.family) })),
}));

const QUANTILES = [0.5, 0.9, 0.99, 0.999];

// ---- variables -------------------------------------------------------------------------------------
function datasourceVar() {
  return { name: 'datasource', label: 'Prometheus', type: 'datasource', query: 'prometheus',
           hide: 0, refresh: 1, options: [], skipUrlSync: false };
}
function queryVar(name, label, query, { multi = true, includeAll = true } = {}) {
  return { name, label, type: 'query', datasource: DS, query, regex: '',
           definition: query, refresh: 2, sort: 1, multi, includeAll, options: [], hide: 0,
           skipUrlSync: false };
}
function customVar(name, label, values, description) {
  return { name, label, description, type: 'custom', query: values.join(','), multi: false, includeAll: false,
           current: { text: values[0], value: values[0] },
           options: values.map((v, i) => ({ text: v, value: v, selected: i === 0 })), hide: 0,
           skipUrlSync: false };
}
// A host's class (daemon/exporter/README.md: the host label given in its campaign, else its shape, e.g.
// 2s-32c-smt-2n-intel-xeon-gold-6230): a lab's boxes compared like with like. First, so that the hosts
// listed are the chosen classes'; every query below selects class=~"$class" as well as host.
const classVar = () => queryVar('class', 'Host class', 'label_values(schedlab_daemon_info, class)');
const hostVar = () => queryVar('host', 'Host', 'label_values(schedlab_repetitions{class=~"$class"}, host)');
const configurationVar = () => queryVar('configuration', 'Configuration',
  'label_values(schedlab_repetitions{class=~"$class", host=~"$host"}, configuration)');
const workloadVar = () => queryVar('workload', 'Workload',
  'label_values(schedlab_repetitions{class=~"$class", host=~"$host", configuration=~"$configuration"}, workload)');
// An instance is its id (a sweep's spells its values: yield.threads=2) and its parameters' hash; the
// variable lists ids, each line's legend names its id, so a sweep's instances are never drawn as one.
const instanceVar = (scope) => queryVar('instance', 'Instance',
  `label_values(schedlab_repetitions{${scope}}, instance_id)`);

// ---- annotations -----------------------------------------------------------------------------------
// Change points of the store's nightly series (`schedlab changes`, exported by the daemon as
// schedlab_change_point_timestamp_seconds, one series per change, its time as the value). Grafana's
// Prometheus annotations with useValueForTime take a sample's value as the event time in milliseconds
// (it replaces the frame's time field, which is in ms), hence * 1000. Every status is drawn, tagged, so
// a suspected change is seen as one; the size is the series' `size` label (an annotation shows labels only).
function changePoints(scope) {
  return { name: 'Change points', datasource: DS, enable: true, hide: false, iconColor: 'orange',
           expr: `schedlab_change_point_timestamp_seconds${sel(...scope)} * 1000`, step: '1h',
           titleFormat: '{{metric}} {{status}} {{size}}',
           textFormat: '{{workload}} {{instance_id}} on {{host}}, {{configuration}} ({{direction}}); schedlab changes has the runs',
           tagKeys: 'status,direction', useValueForTime: true };
}

// ---- panels ----------------------------------------------------------------------------------------
let nextId = 1;
function target(expr, legend, refId, extra = {}) {
  return { datasource: DS, editorMode: 'code', expr, legendFormat: legend, refId, range: true, instant: false,
           ...extra };
}
function panel(type, title, unit, targets, gridPos, { description = '', options = {}, custom = {},
                                                       overrides = [], decimals, thresholds } = {}) {
  const defaults = { unit, custom };
  if (decimals !== undefined) defaults.decimals = decimals;
  if (thresholds) defaults.thresholds = thresholds;
  return { id: nextId++, type, title, description, datasource: DS, gridPos,
           fieldConfig: { defaults, overrides }, options, targets };
}
function row(title, y) {
  return { id: nextId++, type: 'row', title, collapsed: false, gridPos: { h: 1, w: 24, x: 0, y }, panels: [] };
}
const timeseries = (title, unit, targets, gridPos, extra = {}) =>
  panel('timeseries', title, unit, targets, gridPos, {
    custom: { drawStyle: 'line', lineInterpolation: 'stepAfter', showPoints: 'auto', spanNulls: false },
    options: { legend: { displayMode: 'table', placement: 'bottom', calcs: ['lastNotNull'] },
               tooltip: { mode: 'multi', sort: 'none' } },
    ...extra });
const sparkline = (title, unit, targets, gridPos, extra = {}) =>
  panel('stat', title, unit, targets, gridPos, {
    options: { graphMode: 'area', colorMode: 'none', justifyMode: 'auto', textMode: 'value_and_name',
               reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false }, orientation: 'auto' },
    ...extra });
const stat = (title, unit, targets, gridPos, extra = {}) =>
  panel('stat', title, unit, targets, gridPos, {
    options: { graphMode: 'none', colorMode: 'none', justifyMode: 'auto', textMode: 'value_and_name',
               reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false }, orientation: 'horizontal' },
    ...extra });
const bargauge = (title, unit, targets, gridPos, extra = {}) =>
  panel('bargauge', title, unit, targets, gridPos, {
    options: { displayMode: 'basic', orientation: 'horizontal', showUnfilled: true,
               reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false } },
    ...extra });
const RED_ABOVE_ZERO = { mode: 'absolute', steps: [{ color: 'green', value: null }, { color: 'red', value: 1 }] };

const sel = (...parts) => `{${parts.join(', ')}}`;
const BOXES = ['class=~"$class"', 'host=~"$host"'];
const SCOPE = [...BOXES, 'configuration=~"$configuration"'];
// The daemons' own series (state, step counters) carry no host or class: they are selected through
// schedlab_daemon_info, which has both and is 1, joined on the scrape target (one daemon per target).
const ofDaemons = (expr) =>
  `${expr} * on (job, instance) group_left () schedlab_daemon_info${sel(...BOXES)}`;

// The targets IPC panels carry: an empty answer is accepted only with this mark, and only when the
// bundles say these counters were unsupported (dashboards/README.md, "What the check accepts").
const HARDWARE = { schedlabHardwareCounters: ['instructions', 'cycles'] };

// ---- Lab overview ----------------------------------------------------------------------------------
function overview() {
  nextId = 1;
  const panels = [];
  let y = 0;
  panels.push(row('Last runs per host and configuration', y++));
  const byHostConf = 'host, configuration';
  panels.push(stat('Last run finished', 'dateTimeFromNow', [
    target(`max by (${byHostConf}) (schedlab_instance_finished_timestamp_seconds${sel(...SCOPE)}) * 1000`,
           '{{host}} {{configuration}}', 'A', { instant: true, range: false }),
  ], { h: 8, w: 8, x: 0, y }, { description: 'The newest bundle of each configuration (its finished_at), per host.' }));
  panels.push(bargauge('Run duration', 's', [
    target(`sum by (${byHostConf}) (schedlab_instance_duration_seconds${sel(...SCOPE)})`,
           '{{host}} {{configuration}}', 'A', { instant: true, range: false }),
  ], { h: 8, w: 8, x: 8, y }, { description:
    'Wall time of every instance\'s repetitions (warm-up, timed, diagnostic) in the newest bundles, summed per host and configuration.' }));
  panels.push(bargauge('Failed or timed-out repetitions', 'short', [
    target(`sum by (${byHostConf}) (schedlab_repetitions${sel(...SCOPE, 'status!="ok"')})`,
           '{{host}} {{configuration}}', 'A', { instant: true, range: false }),
  ], { h: 8, w: 8, x: 16, y }, { thresholds: RED_ABOVE_ZERO, decimals: 0, description:
    'Timed repetitions whose status is not ok (failed, timeout, and any other status), newest bundles. 0 is a real zero: the exporter always exports ok, failed and timeout.' }));
  y += 8;
  panels.push(timeseries('Repetitions by status', 'short', [
    target(`sum by (${byHostConf}, status) (schedlab_repetitions${sel(...SCOPE)})`,
           '{{host}} {{configuration}} {{status}}', 'A'),
  ], { h: 8, w: 12, x: 0, y }, { decimals: 0 }));
  panels.push(timeseries('Daemon steps', 'short', [
    target(`sum by (instance) (${ofDaemons('schedlab_steps_started_total')})`, '{{instance}} started', 'A'),
    target(`sum by (instance) (${ofDaemons('schedlab_steps_finished_total')})`, '{{instance}} finished', 'B'),
    target(`sum by (instance) (${ofDaemons('schedlab_steps_failed_total')})`, '{{instance}} failed', 'C'),
    target(`sum by (instance) (${ofDaemons('schedlab_steps_timed_out_total')})`, '{{instance}} timed out', 'D'),
  ], { h: 8, w: 8, x: 12, y }, { decimals: 0, description:
    'The daemons\' step counters since each started (a step that failed without a bundle counts only here).' }));
  panels.push(sparkline('Daemon state', 'none', [
    target(`max by (instance, state) (${ofDaemons('schedlab_daemon_state')}) == 1`, '{{instance}}: {{state}}', 'A'),
  ], { h: 8, w: 4, x: 20, y }, { description: 'Each daemon\'s current state (starting, idle, running, booting, stopping).' }));
  y += 8;
  panels.push(row('Headline metrics (newest bundle of each configuration)', y++));
  const headlines = WORKLOADS.flatMap((w) => w.headline.map((h) => ({ ...h, workload: w.name })));
  const width = 6;
  headlines.forEach((h, i) => {
    panels.push(sparkline(`${h.workload}: ${h.title}`, h.unit, [
      target(`${h.family}${sel(...SCOPE)}`, '{{host}} {{configuration}} {{instance_id}}', 'A'),
    ], { h: 6, w: width, x: (i % 4) * width, y: y + Math.floor(i / 4) * 6 }, { description:
      `${h.family}: median of the ok repetitions of the newest bundle, one sparkline per host, configuration and instance.` }));
  });
  return dashboard('schedlab-overview', 'schedlab / Lab overview',
    'Last night\'s runs per host and configuration: when they finished, how long they took, what failed, and a sparkline per headline metric.',
    [datasourceVar(), classVar(), hostVar(), configurationVar()], panels, 'now-7d');
}

// ---- Workload detail -------------------------------------------------------------------------------
function workloadDetail() {
  nextId = 1;
  const panels = [];
  let y = 0;
  for (const w of WORKLOADS) {
    panels.push(row(w.title, y++));
    const scope = [...SCOPE, `workload="${w.name}"`, 'workload=~"$workload"', 'instance_id=~"$instance"'];
    const legend = '{{host}} {{configuration}} {{instance_id}}';
    let x = 0;
    const place = (width, height = 8) => {
      if (x + width > 24) { x = 0; y += height; }
      const gp = { h: height, w: width, x, y };
      x += width;
      return gp;
    };
    for (const h of w.headline)
      panels.push(timeseries(h.title, h.unit, [target(`${h.family}${sel(...scope)}`, legend, 'A')],
        place(12), { description: `${h.family} over time, one line per configuration (and instance): each step is a new nightly bundle.` }));
    if (w.histogram)
      panels.push(timeseries('Latency percentiles (exported histogram)', 's', QUANTILES.map((q, i) =>
        target(`histogram_quantile(${q}, sum by (le, host, configuration, instance_id) (schedlab_${w.name}_latency_seconds_bucket${sel(...scope)}))`,
               `p${String(q * 100).replace('.', '')} {{host}} {{configuration}} {{instance_id}}`, String.fromCharCode(65 + i))),
        place(12), { description:
          `histogram_quantile over schedlab_${w.name}_latency_seconds, per host, configuration and instance (a sweep's instances are not added up: their latencies are different experiments). The buckets hold the newest bundle's counts (replaced on publish), so they are read directly, not through rate(). Bucket bounds 1, 2, 3, 5, 7 per decade: a quantile is interpolated within its bucket; verdicts stay with schedlab diff.` }));
    const per = w.perOperation ? 'operation' : 'repetition';
    const perTitle = w.perOperation ? 'per operation' : 'per build (repetition)';
    panels.push(timeseries(`Context switches ${perTitle}`, 'short', [
      target(`schedlab_context_switches_per_${per}${sel(...scope)}`, legend, 'A')], place(8), { description:
      `perf::CONTEXT-SWITCHES${w.perOperation ? '/op (divided by the workload\'s operations)' : ' per repetition'}, median of the ok repetitions. Absent where the bundle says the counter is unsupported.` }));
    panels.push(timeseries(`CPU migrations ${perTitle}`, 'short', [
      target(`schedlab_cpu_migrations_per_${per}${sel(...scope)}`, legend, 'A')], place(8)));
    panels.push(timeseries('Instructions per cycle (hardware counters)', 'short', [
      target(`schedlab_instructions_per_cycle${sel(...scope)}`, legend, 'A', HARDWARE)], place(8), {
      description: 'Needs a hardware PMU (cycles and instructions): empty on VMs without one, where the bundles record the counters as unsupported.' }));
    panels.push(timeseries('Repetitions not ok', 'short', [
      target(`sum by (host, configuration, status) (schedlab_repetitions${sel(...scope, 'status!="ok"')})`,
             '{{host}} {{configuration}} {{status}}', 'A')], place(12), { decimals: 0 }));
    panels.push(timeseries('Instance duration', 's', [
      target(`schedlab_instance_duration_seconds${sel(...scope)}`, legend, 'A')], place(12)));
    y += 8;
  }
  return dashboard('schedlab-workloads', 'schedlab / Workload detail',
    'One row per workload: the headline metric over time per configuration, latency percentiles from the exported histograms, context switches and migrations per operation, IPC where hardware counters exist.',
    [datasourceVar(), classVar(), hostVar(), configurationVar(), workloadVar(),
     instanceVar(`${SCOPE.join(', ')}, workload=~"$workload"`)], panels, 'now-30d',
    [changePoints([...SCOPE, 'workload=~"$workload"', 'instance_id=~"$instance"'])]);
}

// ---- Kernel A/B ------------------------------------------------------------------------------------
function kernelAB() {
  nextId = 1;
  const panels = [];
  let y = 0;
  const side = (s) => [...BOXES, `configuration="$${s}"`, 'workload=~"$workload"', 'instance_id=~"$instance"'];
  const AB = [['a', 'A'], ['b', 'B']];
  const median = (family, parts) => `quantile_over_time(0.5, ${family}${sel(...parts)}[\${runs}d])`;
  const legendAB = (s) => `${s === 'a' ? 'A' : 'B'} {{configuration}} {{host}} {{instance_id}}`;
  for (const w of WORKLOADS) {
    panels.push(row(w.title, y++));
    let x = 0;
    const place = (width, height = 8) => {
      if (x + width > 24) { x = 0; y += height; }
      const gp = { h: height, w: width, x, y };
      x += width;
      return gp;
    };
    const wside = (s) => [...side(s), `workload="${w.name}"`];
    for (const h of w.headline) {
      panels.push(timeseries(`${h.title}: A and B over time`, h.unit, AB.map(([s, ref]) =>
        target(`${h.family}${sel(...wside(s))}`, legendAB(s), ref)), place(10), { description:
        `${h.family} for configuration $a (A) and $b (B); each step is a run.` }));
      panels.push(bargauge(`${h.title}: median of the last \${runs} nightly runs`, h.unit, AB.map(([s, ref]) =>
        target(median(h.family, wside(s)), legendAB(s), ref, { instant: true, range: false })), place(8), { description:
        'quantile_over_time(0.5) of the gauge over the last ${runs} days: with one run a night, the last ${runs} runs (time-weighted: a run counts as long as it stayed the newest). Exploratory: verdicts come from schedlab diff over the store.' }));
      panels.push(sparkline(`${h.title}: B / A`, 'percentunit', [
        // params_hash ignored too: a kernel booted with another CPU count resolves other defaults.
        target(`${median(h.family, wside('b'))} / ignoring(configuration, params_hash) ${median(h.family, wside('a'))}`,
               '{{host}} {{instance_id}}', 'A', { instant: true, range: false })],
        place(6), { description: 'B\'s median over A\'s, per host and instance (100% = the same).' }));
    }
    if (w.histogram)
      panels.push(bargauge('Latency percentiles, newest bundle', 's', AB.flatMap(([s, ref]) =>
        [0.5, 0.99].map((q) => target(
          `histogram_quantile(${q}, sum by (le, configuration, instance_id) (schedlab_${w.name}_latency_seconds_bucket${sel(...wside(s))}))`,
          `${ref} p${q * 100} {{configuration}} {{instance_id}}`, `${ref}${q * 100}`, { instant: true, range: false }))),
        place(12)));
    const per = w.perOperation ? 'operation' : 'repetition';
    panels.push(timeseries(`Context switches per ${w.perOperation ? 'operation' : 'build'}: A and B`, 'short',
      AB.map(([s, ref]) => target(`schedlab_context_switches_per_${per}${sel(...wside(s))}`, legendAB(s), ref)),
      place(12)));
    panels.push(timeseries(`CPU migrations per ${w.perOperation ? 'operation' : 'build'}: A and B`, 'short',
      AB.map(([s, ref]) => target(`schedlab_cpu_migrations_per_${per}${sel(...wside(s))}`, legendAB(s), ref)),
      place(12)));
    panels.push(timeseries('Instructions per cycle: A and B (hardware counters)', 'short',
      AB.map(([s, ref]) => target(`schedlab_instructions_per_cycle${sel(...wside(s))}`, legendAB(s), ref, HARDWARE)),
      place(12), { description: 'Needs a hardware PMU; empty where the bundles record cycles/instructions as unsupported.' }));
    y += 8;
  }
  const confVar = (name, label) => queryVar(name, label,
    `label_values(schedlab_repetitions{${BOXES.join(', ')}}, configuration)`, { multi: false, includeAll: false });
  return dashboard('schedlab-kernel-ab', 'schedlab / Kernel A/B',
    'Two configurations (kernels) side by side: their headline metrics over time, medians over the last N nightly runs, B relative to A, latency percentiles and counters. Exploratory: verdicts come from schedlab diff.',
    [datasourceVar(), classVar(), hostVar(), confVar('a', 'Configuration A'), confVar('b', 'Configuration B'),
     queryVar('workload', 'Workload', `label_values(schedlab_repetitions{${BOXES.join(', ')}}, workload)`),
     instanceVar(`${BOXES.join(', ')}, workload=~"$workload"`),
     customVar('runs', 'Last N runs (nights)', ['7', '14', '30'],
               'How many nightly runs the medians cover: one run a night, so N days.')],
    // Changes whose first run after is A or B: the runs these panels compare.
    panels, 'now-30d', [changePoints([...BOXES, 'configuration=~"$a|$b"', 'workload=~"$workload"',
                                      'instance_id=~"$instance"'])]);
}

function dashboard(uid, title, description, variables, panels, from, annotations = []) {
  return {
    uid, title, description, tags: ['schedlab'], editable: true, graphTooltip: 1, timezone: 'utc',
    schemaVersion: SCHEMA_VERSION, version: 1, refresh: '', time: { from, to: 'now' },
    timepicker: {}, fiscalYearStartMonth: 0, liveNow: false, weekStart: '',
    annotations: { list: annotations }, links: [
      { title: 'schedlab dashboards', type: 'dashboards', tags: ['schedlab'], asDropdown: true, icon: 'external link',
        includeVars: true, keepTime: true, targetBlank: false, tooltip: '', url: '' }],
    templating: { list: variables }, panels,
  };
}

export function dashboards() {
  return { 'lab-overview.json': overview(), 'workload-detail.json': workloadDetail(), 'kernel-ab.json': kernelAB() };
}

const render = (d) => JSON.stringify(d, null, 2) + '\n';

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  let stale = 0;
  mkdirSync(outDir, { recursive: true });
  for (const [file, d] of Object.entries(dashboards())) {
    const path = join(outDir, file);
    if (check) {
      let old = '';
      try { old = readFileSync(path, 'utf8'); } catch { /* missing: stale */ }
      if (old !== render(d)) { console.error(`${path}: differs from generate.mjs's output (run node dashboards/generate.mjs)`); stale++; }
    } else {
      writeFileSync(path, render(d));
    }
  }
  process.exit(stale ? 1 : 0);
}
