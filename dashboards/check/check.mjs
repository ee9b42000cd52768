#!/usr/bin/env node
// Offline check of schedlab's Grafana dashboards (dashboards/README.md, "The check"):
//   1. each file is JSON;
//   2. it validates (ajv) against a JSON Schema generated from @grafana/schema's classic Dashboard type
//      (ts-json-schema-generator, --additional-properties), and schemaVersion is the pinned one;
//   3. uid lint: every panel, target and query variable names its datasource exactly as
//      {"type":"prometheus","uid":"${datasource}"}, and a `datasource` variable of type datasource exists;
//   4. every panel sets fieldConfig.defaults.unit, and every target's and annotation's label selectors
//      each hold class=~"$class" (the host class variable);
//   5. with --prometheus URL: every target's PromQL, its template variables replaced by values read from that
//      server (label_values(...) through /api/v1/label/.../values), runs as an instant query and must return
//      at least one sample with a finite value. An empty answer is accepted only for a target marked
//      "schedlabHardwareCounters": [...], whose every schedlab_* family is in the exporter's catalogue
//      (--catalogue, daemon/exporter/README.md), and when the bundles (--bundles DIR) say those counters
//      were unsupported. Every schedlab_* family named must be in that catalogue (or be a per-workload
//      schedlab_<workload>_... family of a workload the server knows). The series a target returns must
//      differ in their legends (legendFormat): two lines a reader cannot tell apart are a merge;
//   6. with --prometheus and --bundles: every instance of the bundles (workload, instance_id, params_hash)
//      of a configuration the server holds has its own series (schedlab_repetitions), and every dashboard
//      variable named "instance" lists its id, so that a sweep's instances are never one line.
//   7. annotations (the change points): each Prometheus annotation names its datasource as panels do, and one
//      with useValueForTime multiplies by 1000 (Grafana reads the value as milliseconds); with --prometheus its
//      expression runs like a target's and must return series whose values are millisecond times and that
//      carry every label its titleFormat, textFormat and tagKeys name.
// With no files given it checks dashboards/json/*.json and that they are what dashboards/generate.mjs writes.
// Exit 0 when everything passed, 1 when anything failed (each failure printed), 2 on bad usage.
import { readFileSync, readdirSync, existsSync, mkdirSync, renameSync } from 'node:fs';
import { dirname, join, resolve, basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const EXPECTED_DS = { type: 'prometheus', uid: '${datasource}' };

// ---- arguments -------------------------------------------------------------------------------------
const args = { files: [], prometheus: '', bundles: '', catalogue: resolve(here, '../../daemon/exporter/README.md') };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  const value = () => {
    if (i + 1 >= process.argv.length) usage(`${a} needs a value`);
    return process.argv[++i];
  };
  if (a === '--prometheus') args.prometheus = value().replace(/\/$/, '');
  else if (a === '--bundles') args.bundles = value();
  else if (a === '--catalogue') args.catalogue = value();
  else if (a === '--write-schema') args.writeSchema = true;
  else if (a.startsWith('-')) usage(`unknown option ${a}`);
  else args.files.push(a);
}
function usage(why) {
  console.error(`check.mjs: ${why}\nusage: node check.mjs [--prometheus URL] [--bundles DIR] [--catalogue README] [FILE.json...]`);
  process.exit(2);
}

const failures = [];
const fail = (where, what) => failures.push(`${where}: ${what}`);
const stats = { dashboards: 0, panels: 0, targets: 0, withData: 0, hardwareEmpty: 0, variables: 0, instances: 0,
  annotations: 0, annotationsWithData: 0 };

// ---- the schema --------------------------------------------------------------------------------------
// Generated from the installed (pinned) @grafana/schema into node_modules/.cache, so that `npm ci` of
// another version regenerates it; ci/setup generates it right after npm ci (--write-schema).
function schema() {
  const pkg = require('@grafana/schema/package.json');
  const gen = require('ts-json-schema-generator/package.json');
  const cache = join(here, 'node_modules', '.cache', 'schedlab');
  const file = join(cache, `dashboard-${pkg.version}-tsjsg-${gen.version}.schema.json`);
  if (!existsSync(file)) {
    mkdirSync(cache, { recursive: true });
    const types = join(here, 'node_modules/@grafana/schema/dist/types/raw/dashboard/x/types.gen.d.ts');
    execFileSync(process.execPath, [join(here, 'node_modules/ts-json-schema-generator/bin/ts-json-schema-generator.js'),
      '-p', types, '-t', 'Dashboard', '--no-type-check', '--additional-properties', '-o', file + '.tmp'],
    { stdio: ['ignore', 'ignore', 'inherit'] });
    renameSync(file + '.tmp', file);
  }
  return { schema: JSON.parse(readFileSync(file, 'utf8')), version: pkg.version };
}

// ---- static checks -----------------------------------------------------------------------------------
const sameDs = (ds) => ds && typeof ds === 'object' && ds.type === EXPECTED_DS.type && ds.uid === EXPECTED_DS.uid &&
  Object.keys(ds).length === 2;

function allPanels(d) {
  const out = [];
  for (const p of d.panels ?? []) {
    out.push(p);
    if (p.type === 'row') for (const q of p.panels ?? []) out.push(q);
  }
  return out;
}

// Annotations that run a query (Grafana's built-in "Annotations & Alerts" has none).
const queryAnnotations = (d) => (d.annotations?.list ?? []).filter((a) => !a.builtIn && 'expr' in a);

// Every query selects the chosen host classes: each label selector {...} (not a ${variable}) holds
// class=~"$class", and there is one. A selector without it would mix every class of a lab's boxes
// into a panel whose class variable says otherwise.
const CLASS_MATCHER = 'class=~"$class"';
function classLint(where, expr) {
  const selectors = [...expr.matchAll(/(?<!\$)\{([^}]*)\}/g)].map((m) => m[1]);
  if (!selectors.length) fail(where, `no label selector: a query must select ${CLASS_MATCHER}`);
  for (const sel of selectors)
    if (!sel.includes(CLASS_MATCHER)) fail(where, `selector {${sel}} does not select ${CLASS_MATCHER}`);
}

function staticChecks(file, d, validate, pinned) {
  if (!validate(d)) {
    // Panel|RowPanel anyOf makes lists noisy: the first few specific errors are what matters.
    const errs = validate.errors.filter((e) => e.keyword !== 'anyOf').slice(0, 5)
      .map((e) => `${e.instancePath || '/'} ${e.message}`);
    fail(file, `schema: ${errs.join('; ')}`);
  }
  if (d.schemaVersion !== pinned) fail(file, `schemaVersion ${d.schemaVersion}, expected the pinned ${pinned}`);
  if (!d.uid) fail(file, 'no dashboard uid (provisioned dashboards need a stable one)');
  const vars = d.templating?.list ?? [];
  stats.variables += vars.length;
  const dsVar = vars.find((v) => v.name === 'datasource');
  if (!dsVar || dsVar.type !== 'datasource' || dsVar.query !== 'prometheus')
    fail(file, 'no template variable "datasource" of type datasource with query "prometheus"');
  for (const v of vars) {
    if (v.type === 'query' && !sameDs(v.datasource))
      fail(file, `variable ${v.name}: datasource ${JSON.stringify(v.datasource)}, expected ${JSON.stringify(EXPECTED_DS)}`);
  }
  for (const a of queryAnnotations(d)) {
    const where = `${file}: annotation "${a.name}"`;
    if (!sameDs(a.datasource)) fail(where, `datasource ${JSON.stringify(a.datasource)}, expected ${JSON.stringify(EXPECTED_DS)}`);
    if (typeof a.expr === 'string' && a.expr.trim()) classLint(where, a.expr);
    if (typeof a.expr !== 'string' || !a.expr.trim()) fail(where, 'no expr');
    // Grafana replaces the event's time (ms since the epoch) with the value: seconds would land in 1970.
    else if (a.useValueForTime && !/\*\s*1000\s*$/.test(a.expr))
      fail(where, 'useValueForTime reads the value as milliseconds: the expression must end in * 1000');
  }
  for (const p of allPanels(d)) {
    const where = `${file}: panel ${p.id} "${p.title}"`;
    if (p.type === 'row') continue;
    stats.panels++;
    if (!sameDs(p.datasource)) fail(where, `datasource ${JSON.stringify(p.datasource)}, expected ${JSON.stringify(EXPECTED_DS)}`);
    const unit = p.fieldConfig?.defaults?.unit;
    if (typeof unit !== 'string' || unit === '') fail(where, 'no fieldConfig.defaults.unit');
    if (!Array.isArray(p.targets) || p.targets.length === 0) fail(where, 'no targets');
    for (const t of p.targets ?? []) {
      if (!sameDs(t.datasource))
        fail(`${where} target ${t.refId}`, `datasource ${JSON.stringify(t.datasource)}, expected ${JSON.stringify(EXPECTED_DS)}`);
      if (typeof t.expr !== 'string' || !t.expr.trim()) fail(`${where} target ${t.refId}`, 'no expr');
      else classLint(`${where} target ${t.refId}`, t.expr);
    }
  }
}

// ---- Prometheus --------------------------------------------------------------------------------------
// GET: the label values endpoint takes no POST in Prometheus 2.42 (405).
async function api(path, params) {
  const query = new URLSearchParams(params).toString();
  const r = await fetch(`${args.prometheus}${path}${query ? '?' + query : ''}`, { signal: AbortSignal.timeout(10000) });
  const j = await r.json().catch(() => ({ status: 'error', error: `HTTP ${r.status}, not JSON` }));
  if (j.status !== 'success') throw new Error(`${path} ${JSON.stringify(params)}: ${j.errorType ?? ''} ${j.error ?? r.status}`);
  return j.data;
}

const BUILTINS = { __range: '1h', __range_s: '3600', __range_ms: '3600000', __interval: '15s', __interval_ms: '15000',
  __rate_interval: '1m' };
const VAR_RE = /\$\{(\w+)(?::(\w+))?\}|\[\[(\w+)\]\]|\$(\w+)/g;

function regexEscape(s) { return s.replace(/[\\^$*+?.()|[\]{}]/g, '\\\\$&'); }

function substitute(text, values, where) {
  return text.replace(VAR_RE, (m, a, _fmt, b, c) => {
    const name = a ?? b ?? c;
    if (name in BUILTINS) return BUILTINS[name];
    if (!(name in values)) {
      fail(where, `unknown template variable $${name}`);
      return m;
    }
    return values[name];
  });
}

// Values as Grafana would put them into PromQL: a multi-value or All selection as (a|b) with regex
// metacharacters escaped, a single value as it is. Single-valued query variables with the same query
// (Configuration A and B) take successive values, so that A and B differ when the data allows.
const instanceVariables = [];  // [file, values] of every variable named "instance"

async function variableValues(file, d) {
  const values = {};
  const used = new Map();
  for (const v of d.templating?.list ?? []) {
    const where = `${file}: variable ${v.name}`;
    if (v.type === 'datasource') { values[v.name] = 'prometheus'; continue; }
    if (v.type === 'custom') {
      values[v.name] = String(v.current?.value ?? v.query.split(',')[0]).trim();
      continue;
    }
    if (v.type !== 'query') { fail(where, `type ${v.type}: the check knows datasource, custom and query`); continue; }
    const q = substitute(typeof v.query === 'string' ? v.query : v.query.query, values, where);
    const m = /^label_values\((?:(.*),\s*)?(\w+)\)$/.exec(q.trim());
    if (!m) { fail(where, `query ${q}: the check knows label_values(...)`); continue; }
    let got;
    try {
      got = await api(`/api/v1/label/${m[2]}/values`, m[1] ? { 'match[]': m[1] } : {});
    } catch (e) { fail(where, e.message); continue; }
    if (!got.length) { fail(where, `label_values gave nothing for ${q}`); continue; }
    if (v.multi || v.includeAll) {
      values[v.name] = `(${got.map(regexEscape).join('|')})`;
    } else {
      const n = used.get(q) ?? 0;
      used.set(q, n + 1);
      values[v.name] = got[Math.min(n, got.length - 1)];
    }
    if (v.name === 'instance') instanceVariables.push([file, got]);
  }
  return values;
}

// ---- hardware-dependent targets ----------------------------------------------------------------------
function catalogueFamilies() {
  const text = readFileSync(args.catalogue, 'utf8');
  const names = new Set();
  for (const line of text.split('\n')) {
    if (!line.startsWith('|')) continue;
    for (const [, name] of line.matchAll(/`(schedlab_[a-z0-9_{},]+)`/g)) {
      const brace = /^(.*)\{([^}]*)\}(.*)$/.exec(name);
      if (brace) for (const alt of brace[2].split(',')) names.add(brace[1] + alt + brace[3]);
      else names.add(name);
    }
  }
  return names;
}

function bundleFiles(dir) {
  const out = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory() && !e.name.endsWith('.discarded')) walk(p);
      else if (e.isFile() && e.name.endsWith('.json')) out.push(p);
    }
  };
  walk(dir);
  return out;
}

// Bundle versions this check reads: /2 writes the fields every reading of a counter shares once, in
// `counter_defaults` (core/bundle_encoding.hpp), and leaves out per-operation copies.
const BUNDLE_SCHEMAS = new Set(['schedlab.result/1', 'schedlab.result/2']);

function readingsOf(bundle, rep) {
  const defaults = bundle.counter_defaults ?? {};
  return Object.fromEntries(Object.entries(rep.counters ?? {}).map(([ev, c]) => [ev, { ...(defaults[ev] ?? {}), ...c }]));
}

// Why an empty answer is acceptable, or null: every bundle read says the counters could not be counted.
let bundleCounters = null;
function hardwareUnsupported(events) {
  if (!args.bundles) return null;
  if (!bundleCounters) {
    bundleCounters = [];
    for (const f of bundleFiles(args.bundles)) {
      let b;
      try { b = JSON.parse(readFileSync(f, 'utf8')); } catch { continue; }
      if (!BUNDLE_SCHEMAS.has(b.schema)) continue;
      for (const inst of b.instances ?? [])
        for (const r of inst.repetitions ?? []) bundleCounters.push({ file: f, counters: readingsOf(b, r), status: r.status });
    }
  }
  if (!bundleCounters.length) return null;
  let evidence = null;
  for (const { counters, status } of bundleCounters) {
    if (status !== 'ok') continue;
    const named = Object.entries(counters).filter(([ev]) => events.includes(ev.split(/[:/]/)[0]) && !ev.includes('/op'));
    if (!named.length) return null;  // not even asked for: nothing says unsupported
    const unsupported = named.filter(([, c]) => c.status !== 'ok');
    if (!unsupported.length) return null;  // all counted here: an empty panel would be a bug
    evidence ??= `${unsupported[0][0]} ${unsupported[0][1].status} (errno ${unsupported[0][1].errno ?? '?'})`;
  }
  return evidence;
}

// A family the exporter's catalogue documents: listed by name, or one of the per-workload families
// `schedlab_<workload>_...` (headline gauges, latency histograms) of a workload the server knows.
let workloadNames = null;
async function documented(family, catalogue) {
  if (catalogue.has(family.replace(/_(bucket|sum|count)$/, ''))) return true;
  workloadNames ??= await api('/api/v1/label/workload/values', {}).catch(() => []);
  return workloadNames.some((w) => family.startsWith(`schedlab_${w}_`));
}

// A query's families must be documented and the server must run it; the result, or null once failed.
async function runQuery(where, expr, catalogue) {
  for (const [f] of expr.matchAll(/\bschedlab_[a-z0-9_]+/g))
    if (!(await documented(f, catalogue))) fail(where, `${f} is not in the exporter's catalogue (${args.catalogue})`);
  try {
    return await api('/api/v1/query', { query: expr });
  } catch (e) {
    fail(where, `${e.message}\n    expr: ${expr}`);
    return null;
  }
}

async function queryChecks(file, d) {
  const values = await variableValues(file, d);
  const catalogue = catalogueFamilies();
  await annotationChecks(file, d, values, catalogue);
  for (const p of allPanels(d)) {
    if (p.type === 'row') continue;
    substitute(p.title ?? '', values, `${file}: panel ${p.id} title`);
    for (const t of p.targets ?? []) {
      const where = `${file}: panel ${p.id} "${p.title}" target ${t.refId}`;
      stats.targets++;
      const expr = substitute(t.expr, values, where);
      const data = await runQuery(where, expr, catalogue);
      if (!data) continue;
      const samples = data.resultType === 'vector' || data.resultType === 'matrix' ? data.result : [data.result];
      const finite = samples.filter((s) => {
        const v = s.value ? s.value[1] : (s.values ?? []).at(-1)?.[1];
        return v !== undefined && Number.isFinite(Number(v));
      });
      if (finite.length) {
        stats.withData++;
        const legends = new Map();
        for (const s of finite) {
          const legend = legendOf(t.legendFormat ?? '', s.metric ?? {});
          legends.set(legend, (legends.get(legend) ?? 0) + 1);
        }
        for (const [legend, n] of legends)
          if (n > 1) fail(where, `${n} series share the legend "${legend}": the panel draws them as one (legendFormat ${JSON.stringify(t.legendFormat)})\n    expr: ${expr}`);
        continue;
      }
      const hw = t.schedlabHardwareCounters;
      if (Array.isArray(hw) && hw.length) {
        const families = [...expr.matchAll(/\bschedlab_[a-z0-9_]+/g)].map((x) => x[0]);
        const unknown = families.filter((f) => !catalogue.has(f));
        const evidence = hardwareUnsupported(hw);
        if (families.length && !unknown.length && evidence) {
          stats.hardwareEmpty++;
          console.log(`accepted empty (hardware counters: ${evidence}): ${where}`);
          continue;
        }
        fail(where, `no data; marked hardware-dependent but ${unknown.length ? `not in the exporter catalogue: ${unknown.join(', ')}`
          : !families.length ? 'names no schedlab family' : 'no bundle says ' + hw.join('/') + ' were unsupported'}\n    expr: ${expr}`);
        continue;
      }
      fail(where, `no data (${samples.length} series, none with a finite value)\n    expr: ${expr}`);
    }
  }
}

// An annotation query: it must run, return series, with millisecond times when its value is the time, and
// with every label its title, text and tags show (a misspelt label would render empty on every marker).
async function annotationChecks(file, d, values, catalogue) {
  for (const a of queryAnnotations(d)) {
    const where = `${file}: annotation "${a.name}"`;
    stats.annotations++;
    const expr = substitute(a.expr ?? '', values, where);
    const data = await runQuery(where, expr, catalogue);
    if (!data) continue;
    const series = (data.result ?? []).filter((s) => s.value && Number.isFinite(Number(s.value[1])));
    if (!series.length) { fail(where, `no data (the annotation marks nothing)\n    expr: ${expr}`); continue; }
    stats.annotationsWithData++;
    const shown = new Set();
    for (const text of [a.titleFormat ?? '', a.textFormat ?? ''])
      for (const [, l] of text.matchAll(/\{\{\s*(\w+)\s*\}\}/g)) shown.add(l);
    for (const l of String(a.tagKeys ?? '').split(',').map((k) => k.trim()).filter(Boolean)) shown.add(l);
    for (const s of series) {
      const missing = [...shown].filter((l) => !(l in s.metric));
      if (missing.length) fail(where, `series ${JSON.stringify(s.metric)} lacks the label(s) ${missing.join(', ')} it shows`);
      // After 2001-09-09 in milliseconds; a time in seconds is three orders of magnitude smaller.
      if (a.useValueForTime && !(Number(s.value[1]) > 1e12))
        fail(where, `value ${s.value[1]} is not a time in milliseconds (useValueForTime)\n    expr: ${expr}`);
    }
  }
}

// Grafana's {{label}} substitution (a label the series lacks renders empty).
function legendOf(format, metric) {
  return format.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, l) => metric[l] ?? '');
}

// Every instance the bundles hold, of a configuration the server has, is a series of its own, and is
// listed by every "instance" variable.
async function instanceChecks() {
  const configurations = new Set(await api('/api/v1/label/configuration/values', {}).catch(() => []));
  const seen = new Set();
  for (const f of bundleFiles(args.bundles)) {
    let b;
    try { b = JSON.parse(readFileSync(f, 'utf8')); } catch { continue; }
    if (!BUNDLE_SCHEMAS.has(b.schema)) continue;
    const configuration = b.label || b.configuration?.kernel_release;
    if (!configurations.has(configuration)) continue;
    for (const inst of b.instances ?? []) {
      if (!(inst.repetitions ?? []).length) continue;
      const key = `${configuration}\u001f${inst.workload}\u001f${inst.id}\u001f${inst.params_hash}`;
      if (seen.has(key)) continue;
      seen.add(key);
      stats.instances++;
      const where = `${f}: instance ${inst.id} (params ${inst.params_hash}) of ${inst.workload} on ${configuration}`;
      const sel = `schedlab_repetitions{configuration="${configuration}", workload="${inst.workload}", ` +
        `instance_id="${inst.id}", params_hash="${inst.params_hash}", status="ok"}`;
      let data;
      try { data = await api('/api/v1/query', { query: sel }); } catch (e) { fail(where, e.message); continue; }
      if (data.result.length !== 1)
        fail(where, `${data.result.length} series for ${sel}, expected its own one (instances merged downstream of the bundle?)`);
      for (const [file, got] of instanceVariables)
        if (!got.includes(inst.id)) fail(where, `${file}: variable instance does not list ${inst.id} (it lists ${got.join(', ')})`);
    }
  }
}

// ---- main --------------------------------------------------------------------------------------------
async function main() {
  const { schema: s, version } = schema();
  if (args.writeSchema) { console.log(`schema for @grafana/schema ${version} in node_modules/.cache/schedlab`); return 0; }
  const { default: Ajv } = await import('ajv');
  const validate = new Ajv({ allErrors: true, strict: false }).compile({ ...s, $ref: '#/definitions/Dashboard' });
  const { defaultDashboard } = await import('@grafana/schema');
  const { SCHEMA_VERSION, dashboards } = await import('../generate.mjs');
  if (SCHEMA_VERSION !== defaultDashboard.schemaVersion)
    fail('generate.mjs', `pins schemaVersion ${SCHEMA_VERSION}; @grafana/schema ${version} is at ${defaultDashboard.schemaVersion}`);

  let files = args.files;
  if (!files.length) {
    const dir = resolve(here, '../json');
    files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort().map((f) => join(dir, f));
    const want = dashboards();
    for (const f of files) {
      const name = basename(f);
      if (!(name in want)) fail(f, 'not written by generate.mjs');
      else if (readFileSync(f, 'utf8') !== JSON.stringify(want[name], null, 2) + '\n')
        fail(f, 'differs from what generate.mjs writes (run: node dashboards/generate.mjs)');
    }
    for (const name of Object.keys(want)) if (!files.some((f) => basename(f) === name)) fail(name, 'missing (run: node dashboards/generate.mjs)');
  }
  for (const f of files) {
    let d;
    try { d = JSON.parse(readFileSync(f, 'utf8')); } catch (e) { fail(f, `not JSON: ${e.message}`); continue; }
    stats.dashboards++;
    staticChecks(f, d, validate, SCHEMA_VERSION);
    if (args.prometheus) await queryChecks(f, d);
  }
  if (args.prometheus && args.bundles) await instanceChecks();
  console.log(`${stats.dashboards} dashboards, ${stats.panels} panels, ${stats.variables} variables; ` +
    (args.prometheus ? `${stats.targets} expressions run against ${args.prometheus}: ${stats.withData} returned data, ` +
      `${stats.hardwareEmpty} hardware-dependent accepted empty` : 'no --prometheus: PromQL not run') +
    (args.prometheus && args.bundles ? `; ${stats.instances} bundle instances each a series of its own` : '') +
    (args.prometheus ? `; ${stats.annotations} annotation queries, ${stats.annotationsWithData} returned data` : ''));
  for (const f of failures) console.error(`FAIL ${f}`);
  return failures.length ? 1 : 0;
}

main().then((code) => process.exit(code), (e) => { console.error(`check.mjs: ${e.stack ?? e}`); process.exit(1); });
