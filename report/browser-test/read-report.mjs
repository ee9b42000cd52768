// Opens a schedlab report in Debian's headless Chromium and prints, as JSON, what the page drew: each
// chart's kind, series labels and the data its uPlot instance plots, whether its canvas has pixels, the
// verdict cells, console errors and any request the page made. tests/report_browser_test.cpp compares
// that with the bundles; this script judges nothing but whether the page could be read at all.
//   node read-report.mjs REPORT.html SCREENSHOT.png [REPORT.html SCREENSHOT.png]...
// One browser opens every page (each in its own page), and prints one JSON array, a result per page.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";

const args = process.argv.slice(2);
if (args.length === 0 || args.length % 2 !== 0) {
  console.error("usage: node read-report.mjs REPORT.html SCREENSHOT.png [REPORT.html SCREENSHOT.png]...");
  process.exit(2);
}
const executablePath = process.env.SCHEDLAB_CHROMIUM || "/usr/bin/chromium";
async function readPage(context, report, screenshot) {
  const url = pathToFileURL(resolve(report)).href;
  const page = await context.newPage();
  const consoleErrors = [];
  const requests = [];
  page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });
  page.on("pageerror", (e) => consoleErrors.push("pageerror: " + e.message));
  page.on("request", (r) => { if (r.url() !== url) requests.push(r.url()); });
  await page.goto(url, { waitUntil: "load" });
  await page.waitForFunction(() => document.body && document.body.dataset.rendered, null, { timeout: 15000 });
  const result = await page.evaluate(() => {
    // A drawn canvas has opaque pixels other than the white background.
    const inked = (canvas) => {
      if (!canvas) return 0;
      const px = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
      let n = 0;
      for (let i = 0; i < px.length; i += 4) if (px[i + 3] > 0 && (px[i] < 240 || px[i + 1] < 240 || px[i + 2] < 240)) n++;
      return n;
    };
    const charts = (window.schedlabCharts || []).map((c) => {
      const box = document.getElementById(c.id);
      const canvas = box ? box.querySelector("canvas") : null;
      return {
        id: c.id, kind: c.kind, instance: c.instance, metric: c.metric, side: c.side, labels: c.labels,
        title: box ? (box.querySelector(".u-title") || {}).textContent || "" : "",
        series: c.plot.series.map((s) => s.label),
        axes: c.plot.axes.map((a) => a.label || ""),
        log_scales: Object.entries(c.plot.scales).filter(([, s]) => s.distr === 3).map(([k]) => k),
        data: c.plot.data.map((a) => Array.from(a, (v) => (v === undefined ? null : v))),
        canvas: !!canvas, inked_pixels: inked(canvas),
      };
    });
    const verdicts = [...document.querySelectorAll("table.diff tr[data-metric]")].map((tr) => {
      const cell = tr.querySelector("td.verdict");
      return { instance: tr.closest("section").dataset.key, metric: tr.dataset.metric, side: tr.dataset.side,
               verdict: cell ? cell.dataset.verdict : null,
               interval: tr.children[6] ? tr.children[6].textContent : null };
    });
    // The verdict table the page opens on, and where each of its lines leads.
    const summary = [...document.querySelectorAll("table.summary-verdicts tbody tr")].map((tr) => {
      const link = tr.querySelector("a");
      const href = link ? link.getAttribute("href") : null;
      const target = href ? document.getElementById(href.slice(1)) : null;
      const cell = tr.querySelector("td.verdict");
      return { instance: tr.dataset.instance, metric: tr.dataset.metric || null, side: tr.dataset.side,
               verdict: cell ? cell.dataset.verdict : null, text: cell ? cell.textContent : null,
               target_key: target ? target.dataset.key || null : null };
    });
    const first = document.querySelector("main > section");
    return {
      rendered: document.body.dataset.rendered, title: document.title,
      first_section: first ? first.id : null, summary,
      heading: (document.querySelector("h1") || {}).textContent || "",
      chart_boxes: document.querySelectorAll("div.chart").length,
      diff_heads: [...document.querySelectorAll("table.diff thead th")].map((th) => th.textContent),
      differing_environment_rows: document.querySelectorAll("table.environment tr.differs").length,
      injected: window.__schedlabInjected !== undefined, charts, verdicts,
    };
  });
  await page.screenshot({ path: screenshot, fullPage: true });
  result.console_errors = consoleErrors;
  result.requests = requests;
  await page.close();
  return result;
}

// A fresh profile each time; no background traffic (this box has no network, and the report needs none).
const profile = mkdtempSync(join(tmpdir(), "schedlab-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  viewport: { width: 1280, height: 900 },
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
         "--disable-component-update", "--disable-sync"],
});
try {
  const results = [];
  for (let i = 0; i < args.length; i += 2) results.push(await readPage(context, args[i], args[i + 1]));
  process.stdout.write(JSON.stringify(results) + "\n");
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
