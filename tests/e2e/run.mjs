// End-to-end test of the web app in headless Chromium with WebGPU
// (SwiftShader, on the CPU), or with WEBGRAV_E2E_BROWSER=firefox in
// Firefox ESR (WebGPU on lavapipe; browser.mjs drives both). Serves the Trunk build in dist/ with a small
// static server, opens the page with URL parameters and checks, from the
// page and from files it downloads:
//   1. the simulation advances, the energy error is finite and small, the
//      canvas is not blank (pixel statistics of a screenshot);
//   2. exported Tipsy and CSV bytes parse with the crate's reader (the
//      native CLI, `webgrav convert`) and hold the right N;
//   3. importing a malformed file shows an error and the run goes on;
//   4. the tree solver runs in the page and reports interactions and
//      per-phase GPU times;
//   5. the native offscreen render (`webgrav render`) of a snapshot matches
//      the browser's rendering of the same snapshot and camera, pixel for
//      pixel: a Plummer sphere, a galaxy's disk and bulge by component,
//      and their surface-density map (whose legend the page shows);
//      hiding the halo refits the view; the disk presets open fitted to
//      the disk, face-on or inclined;
//   6. after a device loss the page explains it and the last state read
//      back can still be exported;
//   7. without WebGPU the page explains what is missing; bad URL
//      parameters are reported;
//   8. the Hermite integrator runs in the page (time advances, small
//      energy error, block-step read-outs, export), and too large an N for
//      it is refused with the limit;
//   9. files named in the URL (what Python's `webgrav.view` serves): a
//      snapshot written by the CLI and a series index open in the player,
//      embedded; without WebGPU the fallback picture is shown; URLs off the
//      page's origin are reported as bad parameters and never fetched.
//   ... (13) every preset loads, and the gallery shows a picture of each
//      and runs it on a click; (14) the benchmark panel prints the native CLI's benchmark lines
//      and compares them with a native file; the default model's frame time;
//      (15) the lessons and the tree made visible (tests/e2e/lessons.mjs);
//      (16) keyboard, screen readers (axe-core), touch and a phone's size
//      (a11y.mjs); (17) the host-page API and the example course page on
//      another origin (host_api.mjs); (18) messages kept until dismissed,
//      the embedded caption, and the page's word where WebGPU cannot read
//      back (messages.mjs); (19) HDF5 snapshots by URL and by drop, drawn
//      as `webgrav render` draws them (hdf5.mjs).
// Everything runs in both browsers but two Chrome-only checks: Chromium's
// plain headless set-up in (18), and the lesson sheet's print styles in
// (15), which need print-media emulation (CDP has it, WebDriver BiDi not). Screenshots and images land in
// artifacts/e2e/ (Firefox: artifacts/e2e-firefox/; git-ignored).
//
// Usage: node tests/e2e/run.mjs   (after `trunk build` and `cargo build`;
// WEBGRAV_E2E_ONLY=lessons|tree|a11y|host|messages|hdf5 runs one module)
import { PNG } from "pngjs";
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { lessonChecks } from "./lessons.mjs";
import { a11yChecks } from "./a11y.mjs";
import { hostApiChecks } from "./host_api.mjs";
import { messageChecks } from "./messages.mjs";
import { hdf5Checks } from "./hdf5.mjs";
import { launch, describeWebGpu, download, BROWSERS } from "./browser.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const DIST = path.join(ROOT, "dist");
// WEBGRAV_E2E_BROWSER=firefox runs the same checks in Firefox ESR
// (browser.mjs); its screenshots land in artifacts/e2e-firefox/.
const BROWSER = process.env.WEBGRAV_E2E_BROWSER || "chromium";
if (!BROWSERS.includes(BROWSER)) throw new Error(`WEBGRAV_E2E_BROWSER=${BROWSER}: one of ${BROWSERS.join(", ")}`);
const ART = path.join(ROOT, "artifacts", BROWSER === "chromium" ? "e2e" : `e2e-${BROWSER}`);
const BIN = process.env.WEBGRAV_BIN || path.join(process.env.CARGO_TARGET_DIR || path.join(ROOT, "target"), "debug", "webgrav");
const PORT = 8400 + Math.floor(Math.random() * 500);
const BASE = `http://127.0.0.1:${PORT}/`;

// Image comparison bounds (RGB, 0..255), native render vs browser canvas of
// the same snapshot and camera. Both run the same WGSL on CPU rasterisers
// (lavapipe, SwiftShader) that may differ in the last bit of a sprite's
// coverage and in additive 8-bit rounding, never in where a sprite lands:
// a misplaced camera or a wrong colour moves whole sprites (mean difference
// of several units, many pixels off by > 32).
const MAX_MEAN_ABS_DIFF = 0.5;
const MAX_FRACTION_OFF = 0.001; // pixels with a channel off by more than 32

const results = [];
function check(name, ok, detail = "") {
  results.push({ name, ok, detail });
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${detail ? ` — ${detail}` : ""}`);
}

function webgrav(...args) {
  return execFileSync(BIN, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

// Rows of a CSV snapshot written by `webgrav convert` (comment + header + N).
function csvParticles(file) {
  const lines = fs.readFileSync(file, "utf8").trim().split("\n");
  return lines.filter((l) => !l.startsWith("#") && !l.startsWith("id,")).length;
}

function pngStats(file) {
  const png = PNG.sync.read(fs.readFileSync(file));
  let lit = 0, sum = 0, max = 0;
  const n = png.width * png.height;
  for (let i = 0; i < n; i++) {
    const m = Math.max(png.data[4 * i], png.data[4 * i + 1], png.data[4 * i + 2]);
    if (m > 40) lit++;
    sum += m;
    max = Math.max(max, m);
  }
  return { width: png.width, height: png.height, litFraction: lit / n, mean: sum / n, max };
}

// `diffName`: the file under ART the difference picture goes to.
function compareImages(a, b, diffName = "render-diff.png") {
  const A = PNG.sync.read(fs.readFileSync(a));
  const B = PNG.sync.read(fs.readFileSync(b));
  if (A.width !== B.width || A.height !== B.height) {
    return { error: `sizes differ: ${A.width}x${A.height} vs ${B.width}x${B.height}` };
  }
  const n = A.width * A.height;
  let sum = 0, off = 0, maxDiff = 0;
  const diff = new PNG({ width: A.width, height: A.height });
  for (let i = 0; i < n; i++) {
    let m = 0;
    for (let c = 0; c < 3; c++) {
      const d = Math.abs(A.data[4 * i + c] - B.data[4 * i + c]);
      sum += d;
      m = Math.max(m, d);
    }
    if (m > 32) off++;
    maxDiff = Math.max(maxDiff, m);
    const v = Math.min(255, m * 4);
    diff.data.set([v, v, v, 255], 4 * i);
  }
  fs.writeFileSync(path.join(ART, diffName), PNG.sync.write(diff));
  return { meanAbs: sum / (3 * n), fractionOff: off / n, maxDiff };
}

async function waitFor(page, fn, arg, timeout, what) {
  try {
    await page.waitForFunction(fn, arg, { timeout, polling: 250 });
    return true;
  } catch {
    check(what, false, `timed out after ${timeout / 1000} s`);
    return false;
  }
}

async function openApp(context, query, viewport) {
  const page = await context.newPage();
  if (viewport) await page.setViewportSize(viewport);
  page.on("pageerror", (e) => console.log(`  [page error] ${e.message}`));
  // Console errors and failed requests, for the clean-console check.
  page.problems = [];
  page.on("console", (m) => {
    if (m.type() === "error") { page.problems.push(`console: ${m.text()}`); console.log(`  [console] ${m.text()}`); }
  });
  page.on("requestfailed", (r) => page.problems.push(`failed: ${r.url()}`));
  page.on("response", (r) => { if (r.status() >= 400) page.problems.push(`${r.status()}: ${r.url()}`); });
  // Loading may wait minutes' share of a busy software adapter (a heavy
  // lesson's page just closed once took Chromium past the default 30 s
  // in the suite); the start itself is bounded below.
  await page.goto(BASE + query, { timeout: 90000 });
  await waitFor(page, () => window.webgrav && (window.webgrav.ready || window.webgrav.error), null, 60000, `page ${query} starts`);
  const error = await page.evaluate(() => window.webgrav.error);
  if (error) check(`page ${query} starts`, false, error);
  return page;
}

// When the page's first model was on screen, and when its run was ready.
const startTimes = (page) => page.evaluate(() => ({ picture: window.webgrav.pictureAt, run: window.webgrav.runAt }));

const state = (page) => page.evaluate(() => ({
  steps: window.webgrav.progress.steps,
  time: window.webgrav.progress.time,
  n: window.webgrav.progress.n,
  readouts: window.webgrav.readouts,
  last: window.webgrav.last,
  error: window.webgrav.error,
}));

async function main() {
  fs.mkdirSync(ART, { recursive: true });
  if (!fs.existsSync(path.join(DIST, "index.html"))) throw new Error("dist/index.html missing: run `trunk build` first");
  if (!fs.existsSync(BIN)) throw new Error(`${BIN} missing: run \`cargo build\` first`);
  const server = spawn("python3", ["-m", "http.server", String(PORT), "--bind", "127.0.0.1", "--directory", DIST], { stdio: "ignore" });
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), "webgrav-e2e-"));
  let context;
  try {
    for (let i = 0; i < 50; i++) {
      try { await fetch(BASE); break; } catch { await new Promise((r) => setTimeout(r, 100)); }
    }
    context = await launch(BROWSER, { userDir, viewport: { width: 1100, height: 700 } });
    {
      const probe = await context.newPage();
      await probe.goto(BASE + "favicon.svg");
      console.log(`== ${BROWSER}: ${JSON.stringify(await describeWebGpu(probe))}`);
      await probe.close();
    }
    // Every Content-Security-Policy violation of every page is recorded.
    await context.addInitScript(() => {
      window.__csp = [];
      document.addEventListener("securitypolicyviolation", (e) =>
        window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
    });

    // WEBGRAV_E2E_ONLY=lessons runs the lesson checks (15) alone; =tree
    // only their tree view.
    // eslint-disable-next-line no-labels
    everything: {
    if (process.env.WEBGRAV_E2E_ONLY) break everything;
    // 1. A run advances with a small energy error and draws something.
    const N = 1024, DT = 0.0078125;
    const page = await openApp(context, `?model=plummer&n=${N}&seed=3&solver=direct&eps=0.02&dt=${DT}&spf=2&autoplay=1`);
    // A model made on the GPU is on screen before its run is built.
    const starts = await startTimes(page);
    check("first model shown before its run is built", starts.picture !== null && starts.picture <= starts.run,
      JSON.stringify(starts));
    if (await waitFor(page, () => window.webgrav.progress.steps >= 30 && window.webgrav.readouts >= 3, null, 90000, "simulation advances 30 steps")) {
      const s = await state(page);
      check("simulation advanced", s.steps >= 30 && s.time > 0, `${s.steps} steps, t = ${s.time}`);
      check("simulated time = steps × dt", Math.abs(s.time - s.steps * DT) < 1e-9, `t = ${s.time}`);
      // Leapfrog, dt = 1/128, eps = 0.02, N = 1024 over t < 1: the
      // native tests see |dE/E| ~ 1e-5 here; 1e-3 flags a broken
      // integrator or solver (errors then grow to O(1)).
      const e = s.last.energy_error;
      check("energy error finite and small", Number.isFinite(e) && e < 1e-3, `|dE/E0| = ${e.toExponential(2)} at t = ${s.last.time}`);
      check("Lagrangian radii ordered", s.last.lagrangian[0] < s.last.lagrangian[1] && s.last.lagrangian[1] < s.last.lagrangian[2], s.last.lagrangian.map((r) => r.toFixed(3)).join(" / "));
      check("GPU phase times reported", s.last.timing === "unavailable" || Array.isArray(s.last.phases), JSON.stringify(s.last.phases));
      await page.screenshot({ path: path.join(ART, "run.png") });
      await page.locator("#view").screenshot({ path: path.join(ART, "run-canvas.png") });
      const px = pngStats(path.join(ART, "run-canvas.png"));
      // A Plummer sphere of 1024 sprites lights a few percent of the view.
      check("canvas not blank", px.litFraction > 0.002 && px.litFraction < 0.6 && px.max > 100,
        `${(100 * px.litFraction).toFixed(2)} % of pixels lit, max ${px.max}, mean ${px.mean.toFixed(2)}`);
      check("clean console: no errors, no failed requests", page.problems.length === 0, page.problems.join(" | "));
      const url = await page.evaluate(() => window.webgrav.shareUrl());
      check("share URL holds the settings", /n=1024/.test(url) && /solver=direct/.test(url) && /eps=0.02/.test(url), url);
    }

    // 2. Exports parse with the crate's reader and hold N particles.
    const tipsy = path.join(ART, "export.tipsy");
    const name = await download(page, "#export-tipsy", tipsy);
    webgrav("convert", tipsy, path.join(ART, "export-from-tipsy.csv"));
    const nt = csvParticles(path.join(ART, "export-from-tipsy.csv"));
    check("Tipsy export parses with N particles", nt === N, `${name}: ${nt} particles`);
    const csv = path.join(ART, "export.csv");
    await download(page, "#export-csv", csv);
    webgrav("convert", csv, path.join(ART, "export-from-csv.tipsy"));
    check("CSV export parses with N particles", csvParticles(csv) === N, `${csvParticles(csv)} particles`);

    // A PNG of the view downloads and is not blank.
    const viewPng = path.join(ART, "view-export.png");
    await download(page, "#export-png", viewPng);
    const vp = pngStats(viewPng);
    check("PNG export of the view", vp.litFraction > 0.002, `${vp.width}x${vp.height}, ${(100 * vp.litFraction).toFixed(2)} % lit`);

    // An N beyond the device's limit is refused with the limit; the run
    // is untouched.
    await page.evaluate(() => window.webgrav.apply({ n: "1000000000" }));
    const refusal = await page.textContent("#message");
    const kept = await state(page);
    check("too large N refused with the limit", /exceeds this device's limit of \d+/.test(refusal) && kept.n === N, refusal);

    // 3. A malformed import shows an error and the run goes on.
    const before = await state(page);
    await page.setInputFiles("#import", { name: "bad.tipsy", mimeType: "application/octet-stream", buffer: Buffer.from("this is not a Tipsy file at all") });
    if (await waitFor(page, () => !document.getElementById("message").hidden && /bad\.tipsy/.test(document.getElementById("message").textContent), null, 10000, "import error shown")) {
      const msg = await page.textContent("#message");
      check("malformed import shows an error", /bad\.tipsy/.test(msg) && /Could not open/.test(msg), msg);
      await page.screenshot({ path: path.join(ART, "import-error.png") });
    }
    if (await waitFor(page, (s) => window.webgrav.progress.steps >= s + 6, before.steps, 60000, "run continues after bad import")) {
      const after = await state(page);
      const source = await page.evaluate(() => window.webgrav.app.sourceFile());
      check("run continues after bad import", after.n === N && source == null && !after.error, `${before.steps} → ${after.steps} steps, N = ${after.n}`);
    }

    // 6. Device loss: explained, and the last read-back still exports.
    await page.evaluate(() => window.webgrav.app.loseDeviceForTesting());
    if (await waitFor(page, () => !document.getElementById("error").hidden, null, 10000, "device loss explained")) {
      const text = await page.textContent("#error-text");
      check("device loss explained", /device was lost/i.test(text), text.split("\n")[0]);
      await page.screenshot({ path: path.join(ART, "device-lost.png") });
      const lost = path.join(ART, "after-loss.tipsy");
      await download(page, "#lost-tipsy", lost);
      webgrav("convert", lost, path.join(ART, "after-loss.csv"));
      const nl = csvParticles(path.join(ART, "after-loss.csv"));
      check("last state exports after device loss", nl === N, `${nl} particles`);
    }
    await page.close();

    // 4b. Light read-outs: a tree run above the host's precise sum is
    // measured on the GPU and its radii taken from a view sample (every
    // particle here), as the page does between whole read-outs at large N.
    {
      const lp = await openApp(context, "?embed=1&autoplay=0&model=plummer&n=8192&seed=5&solver=tree", { width: 320, height: 240 });
      if (await waitFor(lp, () => window.webgrav.readouts >= 1, null, 60000, "first read-out of a tree run")) {
        const r = await lp.evaluate(async () => {
          const light = await window.webgrav.app.readout(true);
          const whole = await window.webgrav.app.readout(false);
          const pick = (o) => ({ sampled: o.sampled, can: o.can_sample, radii: o.lagrangian, energy: o.energy, n: o.n });
          return { light: pick(light), whole: pick(whole) };
        });
        const same = r.light.radii.every((x, k) => Math.abs(x - r.whole.radii[k]) <= 1e-9 * r.whole.radii[k]);
        check("light read-out: sampled, the whole read-out's radii and energy",
          r.light.sampled && !r.whole.sampled && r.light.can && r.whole.can && r.light.n === 8192 && same &&
          Math.abs(r.light.energy - r.whole.energy) <= 1e-6 * Math.abs(r.whole.energy), JSON.stringify(r));
      }
      await lp.close();
    }

    // 5. Native offscreen render vs the browser canvas, same snapshot and
    // camera (embed mode, a 480×360 view, paused).
    const W = 480, H = 360;
    const cam = { yaw: 0.6, pitch: 0.25, dist: 4.5 };
    webgrav("render", tipsy, "-o", path.join(ART, "render-native.png"), "--width", String(W), "--height", String(H),
      "--yaw", String(cam.yaw), "--pitch", String(cam.pitch), "--distance", String(cam.dist), "--target", "0", "0", "0",
      "--color", "speed");
    const embed = await openApp(context, `?embed=1&autoplay=0&n=64&solver=direct&eps=0.02&color=speed&yaw=${cam.yaw}&pitch=${cam.pitch}&dist=${cam.dist}&tx=0&ty=0&tz=0`, { width: W, height: H });
    const readouts = await embed.evaluate(() => window.webgrav.readouts);
    await embed.setInputFiles("#import", tipsy);
    if (await waitFor(embed, (r) => window.webgrav.readouts > r && window.webgrav.last.n === 1024, readouts, 60000, "browser loads the snapshot")) {
      const dataUrl = await embed.evaluate(() => { window.webgrav.app.render(); return window.webgrav.canvas.toDataURL("image/png"); });
      fs.writeFileSync(path.join(ART, "render-browser.png"), Buffer.from(dataUrl.split(",")[1], "base64"));
      await embed.screenshot({ path: path.join(ART, "embed.png") });
      const c = compareImages(path.join(ART, "render-native.png"), path.join(ART, "render-browser.png"));
      const px = pngStats(path.join(ART, "render-browser.png"));
      check("browser render not blank", px.litFraction > 0.002, `${(100 * px.litFraction).toFixed(2)} % lit`);
      check("native render matches browser render", !c.error && c.meanAbs < MAX_MEAN_ABS_DIFF && c.fractionOff < MAX_FRACTION_OFF,
        c.error || `mean |diff| ${c.meanAbs.toFixed(3)} (bound ${MAX_MEAN_ABS_DIFF}), ${(100 * c.fractionOff).toFixed(3)} % pixels off by > 32 (bound ${100 * MAX_FRACTION_OFF} %), max ${c.maxDiff}`);
      const overlay = await embed.evaluate(() => ({ panel: document.getElementById("panel").hidden, bar: !document.getElementById("embed-bar").hidden }));
      check("embed mode: minimal overlay", overlay.panel && overlay.bar, JSON.stringify(overlay));
    }
    await embed.close();

    // 5b. A galaxy scene, page and CLI alike: the disk and bulge by
    // component with the halo hidden, then their surface-density map.
    {
      const gfile = path.join(ART, "galaxy.bonsai");
      webgrav("run", "--model", "disk-galaxy", "-n", "3000", "--seed", "4", "--t-end", "0", "--out", gfile);
      const gcam = { yaw: 0.3, pitch: 0.5, dist: 10 };
      const common = ["--width", String(W), "--height", String(H), "--yaw", String(gcam.yaw), "--pitch", String(gcam.pitch),
        "--distance", String(gcam.dist), "--target", "0", "0", "0", "--color", "component", "--hide", "halo"];
      webgrav("render", gfile, "-o", path.join(ART, "galaxy-native.png"), ...common);
      webgrav("render", gfile, "-o", path.join(ART, "galaxy-map-native.png"), ...common, "--map", "density", "--legend", "off");
      const gp = await openApp(context, `?embed=1&autoplay=0&n=64&solver=direct&color=component&halo=0&yaw=${gcam.yaw}&pitch=${gcam.pitch}&dist=${gcam.dist}&tx=0&ty=0&tz=0`, { width: W, height: H });
      const r0 = await gp.evaluate(() => window.webgrav.readouts);
      await gp.setInputFiles("#import", gfile);
      if (await waitFor(gp, (r) => window.webgrav.readouts > r && window.webgrav.last.n === 3000, r0, 60000, "browser loads the galaxy")) {
        const shot = async (file) => {
          const url = await gp.evaluate(() => { window.webgrav.app.render(); return window.webgrav.canvas.toDataURL("image/png"); });
          fs.writeFileSync(path.join(ART, file), Buffer.from(url.split(",")[1], "base64"));
        };
        await shot("galaxy-browser.png");
        const c = compareImages(path.join(ART, "galaxy-native.png"), path.join(ART, "galaxy-browser.png"));
        const px = pngStats(path.join(ART, "galaxy-browser.png"));
        check("galaxy picture: browser matches webgrav render", !c.error && c.meanAbs < MAX_MEAN_ABS_DIFF && c.fractionOff < MAX_FRACTION_OFF && px.litFraction > 0.1,
          c.error || `mean |diff| ${c.meanAbs.toFixed(3)}, ${(100 * c.fractionOff).toFixed(3)} % off, max ${c.maxDiff}; ${(100 * px.litFraction).toFixed(1)} % lit`);
        await gp.evaluate(() => window.webgrav.apply({ map: "density" }));
        await shot("galaxy-map-browser.png");
        const m = compareImages(path.join(ART, "galaxy-map-native.png"), path.join(ART, "galaxy-map-browser.png"));
        check("galaxy surface-density map: browser matches webgrav render", !m.error && m.meanAbs < MAX_MEAN_ABS_DIFF && m.fractionOff < MAX_FRACTION_OFF,
          m.error || `mean |diff| ${m.meanAbs.toFixed(3)}, ${(100 * m.fractionOff).toFixed(3)} % off, max ${m.maxDiff}`);
        // The legend over it: Σ at the colour bar's ends (N-body units) and
        // a scale bar, read from the renderer's exposure.
        if (await waitFor(gp, () => window.webgrav.legend && window.webgrav.legend.hi > 0 && !document.getElementById("legend").hidden, null, 10000, "map legend shown")) {
          const l = await gp.evaluate(() => window.webgrav.legend);
          check("map legend: colour bar and scale bar", l.lo > 0 && l.hi > 10 * l.lo && l.scale_px > 0 && /Σ/.test(l.label), JSON.stringify({ ...l, stops: undefined }));
          await gp.screenshot({ path: path.join(ART, "galaxy-map-page.png") });
        }
      }
      await gp.close();
    }

    // 6. The snapshot-series player: three files of three formats (CSV,
    // Bonsai's .bonsai with its id ranges, standard Tipsy) opened out of
    // order play in time order, each frame drawn as `webgrav render` draws
    // the same file, and the view records to a WebM video.
    const SN = 600;
    const series = [["series-c.tipsy", "0.5"], ["series-a.csv", "0"], ["series-b.bonsai", "0.25"]].map(([name, t]) => {
      const file = path.join(ART, name);
      webgrav("run", "--model", "disk-galaxy", "-n", String(SN), "--seed", "2", "--solver", "direct", "--eps", "0.05",
        "--dt", "0.0625", "--t-end", t, "--out", file);
      return file;
    });
    const player = await openApp(context, `?embed=1&autoplay=0&n=64&solver=direct&eps=0.02&color=speed&yaw=${cam.yaw}&pitch=${cam.pitch}&dist=40&tx=0&ty=0&tz=0`, { width: W, height: H });
    await player.setInputFiles("#series-files", series);
    if (await waitFor(player, () => Player.frames.length === 3 && Player.shown === 0, null, 60000, "series opens")) {
      const frames = await player.evaluate(() => Player.frames);
      check("series plays in time order", frames.map((f) => f.name).join(",") === "series-a.csv,series-b.bonsai,series-c.tipsy" &&
        frames.map((f) => f.time).join(",") === "0,0.25,0.5" && frames.every((f) => f.n === SN), JSON.stringify(frames));
      let worst = null;
      for (let k = 0; k < 3; k++) {
        const native = path.join(ART, `series-native-${k}.png`), browser = path.join(ART, `series-browser-${k}.png`);
        webgrav("render", series[[1, 2, 0][k]], "-o", native, "--width", String(W), "--height", String(H), "--yaw", String(cam.yaw),
          "--pitch", String(cam.pitch), "--distance", "40", "--target", "0", "0", "0", "--color", "speed");
        const r = await player.evaluate((k) => { Player.show(window.webgrav, k); window.webgrav.app.render();
          return { url: window.webgrav.canvas.toDataURL("image/png"), n: Player.readouts.get(k).n, time: Player.readouts.get(k).time, galaxy: !!Player.readouts.get(k).galaxy }; }, k);
        fs.writeFileSync(browser, Buffer.from(r.url.split(",")[1], "base64"));
        const c = compareImages(native, browser);
        if (!worst || c.error || c.meanAbs > worst.meanAbs) worst = { k, ...c, n: r.n, time: r.time, galaxy: r.galaxy };
      }
      check("series frames match webgrav render of the same files", !worst.error && worst.meanAbs < MAX_MEAN_ABS_DIFF && worst.fractionOff < MAX_FRACTION_OFF,
        worst.error || `worst frame ${worst.k}: mean |diff| ${worst.meanAbs.toFixed(3)}, ${(100 * worst.fractionOff).toFixed(3)} % off, max ${worst.maxDiff}`);
      const plotted = await player.evaluate(() => window.webgrav.history.radii[0].length === 3 && !document.getElementById("galaxy").hidden);
      check("series read-outs plotted per frame", plotted, "");
      await player.evaluate(() => { document.getElementById("series-fps").value = "10"; Player.record(window.webgrav); });
      if (await waitFor(player, () => Player.lastVideo, null, 30000, "series video recorded")) {
        const video = await player.evaluate(async () => {
          const bytes = new Uint8Array(await Player.lastVideo.arrayBuffer());
          const v = document.createElement("video");
          v.muted = true;
          v.src = URL.createObjectURL(Player.lastVideo);
          const meta = await new Promise((res) => { v.onloadedmetadata = () => res(v.videoWidth); v.onerror = () => res(-1); setTimeout(() => res(-2), 10000); });
          return { size: bytes.length, ebml: [...bytes.slice(0, 4)].map((b) => b.toString(16)).join(""), width: meta };
        });
        check("series video is a decodable WebM", video.size > 1000 && video.ebml === "1a45dfa3" && video.width === W, JSON.stringify(video));
      }
      await player.evaluate(() => Player.close(window.webgrav));
      check("series closes back to the run", await player.evaluate(() => window.webgrav.app.shownFrame() === undefined && !Player.active()), "");
    }

    // 6b. From the page to the CLI and back: the page's command (its
    // settings, 16 steps of 1/128) runs natively, and its series plays in
    // the page; on two GPUs the direct solver is refused with the reason.
    // (This page is embedded, its panel hidden: the button is pressed
    // from the page's script.)
    const ask = (tEnd, ranks) => player.evaluate(([t, r]) => {
      document.getElementById("cmd-t-end").value = t;
      document.getElementById("cmd-ranks").value = r;
      document.getElementById("cmd-make").click();
      const field = document.getElementById("cmd-text");
      return { text: field.value, shown: !field.hidden, message: document.getElementById("message").textContent };
    }, [tEnd, ranks]);
    const refused = await ask("0.125", "2");
    check("page's command on two GPUs: the direct solver refused", !refused.shown && /direct solver/.test(refused.message), refused.message);
    const made = await ask("0.125", "1");
    const words = made.text.split(" ");
    check("page's command runs its settings", made.shown && words[0] === "webgrav" && /--n 64 /.test(made.text) &&
      /--solver direct /.test(made.text) && /--eps 0.02 /.test(made.text) && /--t-end 0.125 /.test(made.text), made.text);
    const away = path.join(ART, "elsewhere");
    fs.rmSync(away, { recursive: true, force: true });
    fs.mkdirSync(away, { recursive: true });
    execFileSync(BIN, words.slice(1), { cwd: away, stdio: ["ignore", "pipe", "pipe"] });
    const back = fs.readdirSync(path.join(away, "run")).map((f) => path.join(away, "run", f));
    await player.setInputFiles("#series-files", back);
    if (await waitFor(player, () => Player.frames.length === 17, null, 60000, "the command's series opens")) {
      const frames = await player.evaluate(() => Player.frames.map((f) => [f.time, f.n]));
      check("the command's series plays in the page", frames[16][0] === 0.125 && frames.every(([, n]) => n === 64), JSON.stringify(frames.slice(-2)));
      await player.evaluate(() => Player.close(window.webgrav));
    }
    await player.close();

    // 4. The tree solver in the page (slow on SwiftShader: a few steps).
    const tree = await openApp(context, "?n=512&solver=tree&theta=0.5&autoplay=1&color=potential");
    if (await waitFor(tree, () => window.webgrav.last && window.webgrav.last.steps >= 1 && window.webgrav.last.pp > 0, null, 120000, "tree solver steps")) {
      const s = await state(tree);
      const phases = (s.last.phases || []).map(([p]) => p);
      check("tree solver steps with interaction counts", s.last.pp > 0 && s.last.pc >= 0 && Number.isFinite(s.last.energy_error),
        `${s.steps} steps, ${s.last.pp.toFixed(0)} p-p + ${s.last.pc.toFixed(0)} p-c per particle`);
      check("tree phase times", s.last.timing === "unavailable" || phases.includes("walk"), phases.join(", "));
      await tree.screenshot({ path: path.join(ART, "tree.png") });
    }
    await tree.close();

    // 5. A galaxy in the page: its read-outs (rotation curve, bar strength)
    // and the switch that hides the dark halo (paused: one state).
    const gal = await openApp(context, "?model=disk-galaxy&n=4096&seed=4&solver=direct&eps=0.05&dt=0.03125&color=component&autoplay=0");
    if (await waitFor(gal, () => window.webgrav.last && window.webgrav.last.galaxy, null, 60000, "galaxy read-out")) {
      const g = (await state(gal)).last.galaxy;
      const v = g.rotation_curve.map(([, vc]) => vc);
      // The default disk galaxy: v_c rises from the bulge to ~0.7-0.8
      // (N-body units) in the disk and halo (state/galaxy/catalog.rs).
      check("galaxy rotation curve", v.length >= 10 && v.every((x) => Number.isFinite(x) && x > 0) && Math.max(...v) > 0.5 && Math.max(...v) < 1.2,
        v.map((x) => x.toFixed(2)).join(" "));
      // An axisymmetric disk of ~1,300 particles: A2 ~ 1/sqrt(N) noise.
      check("galaxy bar strength of a fresh disk is noise", g.bar_a2 !== null && g.bar_a2 >= 0 && g.bar_a2 < 0.15, `A2 = ${g.bar_a2}`);
      const plots = await gal.evaluate(() => !document.getElementById("galaxy").hidden);
      check("galaxy plots shown", plots, "");
      await gal.locator("#view").screenshot({ path: path.join(ART, "galaxy-halo.png") });
      // Zoomed out by hand, then the halo hidden: the view is fitted again.
      const before = await gal.evaluate(() => parseFloat(window.webgrav.app.values().dist));
      await gal.evaluate(() => window.webgrav.app.zoom(4));
      await gal.evaluate(() => window.webgrav.apply({ halo: "0" }));
      await gal.waitForTimeout(500);
      await gal.locator("#view").screenshot({ path: path.join(ART, "galaxy-no-halo.png") });
      const withHalo = pngStats(path.join(ART, "galaxy-halo.png"));
      const noHalo = pngStats(path.join(ART, "galaxy-no-halo.png"));
      const after = await gal.evaluate(() => parseFloat(window.webgrav.app.values().dist));
      const url = await gal.evaluate(() => window.webgrav.shareUrl());
      // Hiding the halo refits the view to the stars (the fit follows the
      // light, which the faint halo barely holds, so it is where the page
      // opened) and the disk fills a good part of the view, exposed by
      // itself (its brightest channels reach white).
      check("halo switch hides the halo and refits the view to the disk",
        after <= before * 1.01 && noHalo.litFraction > 0.15 && noHalo.max > 240 && /halo=0/.test(url),
        `distance ${before.toFixed(2)} → ${after.toFixed(2)}; lit ${(100 * withHalo.litFraction).toFixed(1)} % → ${(100 * noHalo.litFraction).toFixed(1)} %, max ${noHalo.max}; ${url.split("?")[1]}`);
    }
    await gal.close();

    // 8. Hermite (4th order, double-single) in the page: a few frames of
    // block steps, each with a read-back, so slow on SwiftShader.
    const HN = 256;
    const herm = await openApp(context, `?n=${HN}&seed=2&solver=hermite4&eta=0.02&precision=ds&eps=0.02&dt=0.0078125&autoplay=1`);
    // A Hermite model is made on the host, and shown with its run.
    const hermStart = await startTimes(herm);
    check("a Hermite model is shown with its run", hermStart.picture === null && hermStart.run !== null, JSON.stringify(hermStart));
    if (await waitFor(herm, () => window.webgrav.last && window.webgrav.last.hermite && window.webgrav.last.time >= 0.03 && window.webgrav.readouts >= 2, null, 60000, "Hermite advances")) {
      const s = await state(herm);
      const e = s.last.energy_error;
      check("Hermite advances", s.time > 0 && s.last.block_steps > 0 && s.last.force_evaluations > HN && s.last.n === HN,
        `t = ${s.time}, ${s.last.block_steps} block steps, ${s.last.force_evaluations} force evaluations`);
      // 4th-order Hermite, eta = 0.02, eps = 0.02, N = 256 over t < 0.1:
      // |dE/E| ~ 1e-8; 1e-4 flags a broken corrector or prediction.
      check("Hermite energy error finite and small", Number.isFinite(e) && e < 1e-4, `|dE/E0| = ${e.toExponential(2)} at t = ${s.last.time}`);
      check("Hermite time-step levels", s.last.levels.reduce((a, b) => a + b, 0) === HN, JSON.stringify(s.last.levels));
      const controls = await herm.evaluate(() => ({
        eta: !document.querySelector('[data-key="eta"]').closest("label").hidden,
        theta: !document.querySelector('[data-key="theta"]').closest("label").hidden,
      }));
      check("Hermite controls shown (η, not θ)", controls.eta && !controls.theta, JSON.stringify(controls));
      const ht = path.join(ART, "hermite.tipsy");
      await download(herm, "#export-tipsy", ht);
      webgrav("convert", ht, path.join(ART, "hermite.csv"));
      const nh = csvParticles(path.join(ART, "hermite.csv"));
      check("Hermite export parses with N particles", nh === HN, `${nh} particles`);
      await herm.evaluate(() => window.webgrav.apply({ n: "100000" }));
      const refusal = await herm.textContent("#message");
      check("Hermite N cap refused with the limit", /16384/.test(refusal) && (await state(herm)).n === HN, refusal);
      await herm.screenshot({ path: path.join(ART, "hermite.png") });
      // Switching solver carries on from the current state, both ways.
      const t1 = (await state(herm)).time;
      await herm.evaluate(() => window.webgrav.apply({ solver: "direct" }));
      if (await waitFor(herm, (t) => window.webgrav.last && !window.webgrav.last.hermite && window.webgrav.last.steps >= 2 && window.webgrav.last.time > t, t1, 30000, "Hermite → direct carries on")) {
        const d = await state(herm);
        check("Hermite → direct carries on", d.last.time > t1 && d.n === HN && !d.error && d.last.energy_error < 1e-3,
          `t ${t1} → ${d.last.time}, ${d.last.steps} leapfrog steps`);
      }
      const t2 = (await state(herm)).time;
      await herm.evaluate(() => window.webgrav.apply({ solver: "hermite6" }));
      if (await waitFor(herm, (t) => window.webgrav.last && window.webgrav.last.hermite && window.webgrav.last.time > t && window.webgrav.last.block_steps > 0, t2, 30000, "direct → Hermite 6 carries on")) {
        const h = await state(herm);
        check("direct → Hermite 6 carries on", h.last.time > t2 && Number.isFinite(h.last.energy_error) && h.last.energy_error < 1e-4,
          `t ${t2} → ${h.last.time}, |dE/E0| = ${h.last.energy_error.toExponential(2)}`);
      }
    }
    await herm.close();

    // 7. No WebGPU, and bad URL parameters.
    const nogpu = await context.newPage();
    await nogpu.addInitScript(() => Object.defineProperty(Navigator.prototype, "gpu", { get: () => undefined }));
    await nogpu.goto(BASE + "?n=abc&colour=red");
    if (await waitFor(nogpu, () => window.webgrav && window.webgrav.error, null, 30000, "no-WebGPU explanation")) {
      const text = await nogpu.textContent("#error-text");
      check("no WebGPU explained", /no WebGPU/.test(text), text.split("\n")[0]);
      const msg = await nogpu.textContent("#message");
      check("bad URL parameters reported", /n=abc/.test(msg) && /colour/.test(msg), msg.replace(/\n/g, " | "));
      await nogpu.screenshot({ path: path.join(ART, "no-webgpu.png") });
    }
    await nogpu.close();

    // 9. Files named in the URL, as Python's webgrav.view names them:
    // paths on the page's own origin (here: a folder in dist/).
    const VIEW = path.join(DIST, "e2e-view");
    fs.mkdirSync(VIEW, { recursive: true });
    try {
      const VN = 700;
      const snap = (t, file) => webgrav("run", "--model", "plummer", "-n", String(VN), "--seed", "5", "--solver", "direct",
        "--eps", "0.05", "--dt", "0.0625", "--t-end", t, "--out", path.join(VIEW, file));
      snap("0.25", "state.tipsy");
      snap("0.5", "later.bonsai");
      fs.writeFileSync(path.join(VIEW, "index.json"), JSON.stringify({ snapshots: [{ file: "state.tipsy", time: 0.25 }, { file: "later.bonsai", time: 0.5 }] }));
      webgrav("render", path.join(VIEW, "state.tipsy"), "-o", path.join(VIEW, "state.png"), "--width", "320", "--height", "200");
      const viewer = await openApp(context, "?embed=1&autoplay=0&n=64&solver=direct&snapshot=e2e-view%2Fstate.tipsy", { width: 640, height: 400 });
      if (await waitFor(viewer, () => Player.frames.length === 1 && Player.shown === 0, null, 60000, "URL snapshot opens in the player")) {
        await viewer.waitForTimeout(500);
        const r = await viewer.evaluate(() => ({
          frame: Player.frames[0], label: document.getElementById("series-label").textContent,
          time: document.getElementById("embed-time").textContent, embed: document.body.classList.contains("embed"),
          panel: document.getElementById("panel").hidden, query: location.search, csp: window.__csp,
        }));
        check("URL snapshot shown with its N and time", r.frame.n === VN && r.frame.time === 0.25 && /N = 700/.test(r.label) &&
          /t = 0\.25/.test(r.label) && r.time === "t = 0.25", `${r.label}; ${r.time}`);
        check("URL snapshot embedded, kept in the address bar", r.embed && r.panel && /snapshot=e2e-view%2Fstate\.tipsy/.test(r.query), r.query);
        await viewer.locator("#view").screenshot({ path: path.join(ART, "url-snapshot.png") });
        const px = pngStats(path.join(ART, "url-snapshot.png"));
        check("URL snapshot drawn", px.litFraction > 0.002 && px.max > 100, `${(100 * px.litFraction).toFixed(2)} % of pixels lit`);
        check("URL snapshot: clean console, no CSP violations", viewer.problems.length === 0 && r.csp.length === 0, [...viewer.problems, ...r.csp].join(" | "));
      }
      await viewer.close();

      const seriesPage = await openApp(context, "?embed=1&autoplay=0&n=64&solver=direct&series=e2e-view%2Findex.json");
      if (await waitFor(seriesPage, () => Player.frames.length === 2 && Player.shown === 0, null, 60000, "URL series opens in the player")) {
        const frames = await seriesPage.evaluate(() => Player.frames);
        check("URL series: the index's files in time order", frames.map((f) => `${f.name}@${f.time}`).join(",") === "state.tipsy@0.25,later.bonsai@0.5" &&
          frames.every((f) => f.n === VN), JSON.stringify(frames));
        await seriesPage.click("#embed-run");
        const played = await waitFor(seriesPage, () => Player.shown === 1, null, 10000, "embedded play button plays the series");
        if (played) check("embedded play button plays the series", true);
        await seriesPage.evaluate(() => Player.pause());
        check("URL series: clean console", seriesPage.problems.length === 0, seriesPage.problems.join(" | "));
      }
      await seriesPage.close();

      const still = await context.newPage();
      still.problems = [];
      still.on("console", (m) => { if (m.type() === "error") still.problems.push(m.text()); });
      await still.addInitScript(() => Object.defineProperty(Navigator.prototype, "gpu", { get: () => undefined }));
      await still.goto(BASE + "?embed=1&snapshot=e2e-view%2Fstate.tipsy&fallback=e2e-view%2Fstate.png");
      if (await waitFor(still, () => window.webgrav && window.webgrav.error && document.getElementById("fallback") &&
          document.getElementById("fallback").complete, null, 30000, "fallback picture without WebGPU")) {
        const r = await still.evaluate(() => {
          const img = document.getElementById("fallback");
          const box = img.getBoundingClientRect();
          return { w: img.naturalWidth, h: img.naturalHeight, shown: box.width > 100 && box.height > 50,
            text: document.getElementById("error-text").textContent, csp: window.__csp };
        });
        check("fallback picture shown without WebGPU", r.w === 320 && r.h === 200 && r.shown && /no WebGPU/.test(r.text) &&
          r.csp.length === 0 && still.problems.length === 0, `${r.w}x${r.h}, ${r.text.split("\n")[0]} ${still.problems.join(" | ")}`);
        await still.screenshot({ path: path.join(ART, "no-webgpu-fallback.png") });
      }
      await still.close();

      const evil = await openApp(context, "?embed=1&autoplay=0&n=64&solver=direct&snapshot=https%3A%2F%2Fevil%2Fx" +
        "&series=%2F%2Fevil%2Findex.json&fallback=javascript%3Aalert(1)&snapshot=%2F%5Cevil%2Fx");
      const offOrigin = [];
      evil.on("request", (q) => { if (!q.url().startsWith(BASE)) offOrigin.push(q.url()); });
      await evil.waitForTimeout(1000);
      const e = await evil.evaluate(() => ({
        msg: document.getElementById("message").textContent, frames: Player.frames.length, csp: window.__csp,
        // The fallback picture would be an img; the gallery's are the page's own.
        imgs: document.querySelectorAll("img:not(#gallery img)").length,
      }));
      check("off-origin URLs reported as bad parameters", /snapshot=https:\/\/evil\/x: not a same-origin/.test(e.msg) &&
        /series=\/\/evil/.test(e.msg) && /fallback=javascript/.test(e.msg) && /snapshot=\/\\evil/.test(e.msg), e.msg.replace(/\n/g, " | "));
      check("off-origin URLs never fetched", e.frames === 0 && e.imgs === 0 && e.csp.length === 0 && offOrigin.length === 0 && evil.problems.length === 0,
        JSON.stringify({ ...e, msg: undefined, offOrigin, problems: evil.problems }));
      await evil.close();
      // An index on the origin that lists a file elsewhere: refused by name.
      fs.writeFileSync(path.join(VIEW, "evil.json"), JSON.stringify({ snapshots: [{ file: "https://evil/x.tipsy", time: 0 }] }));
      const listed = await openApp(context, "?embed=1&autoplay=0&n=64&solver=direct&series=e2e-view%2Fevil.json");
      const listedOff = [];
      listed.on("request", (q) => { if (!q.url().startsWith(BASE)) listedOff.push(q.url()); });
      // (Refused as a file outside the series' directory, which an
      // entry with a path is, before its origin is looked at.)
      if (await waitFor(listed, () => /not on this page's origin|not a file of the series' directory/.test(document.getElementById("message").textContent), null, 10000, "off-origin index entry refused")) {
        const e = await listed.evaluate(() => ({ msg: document.getElementById("message").textContent, frames: Player.frames.length, csp: window.__csp }));
        check("off-origin index entry refused, never fetched", /https:\/\/evil\/x\.tipsy/.test(e.msg) && e.frames === 0 && e.csp.length === 0 &&
          listedOff.length === 0 && listed.problems.length === 0, e.msg);
      }
      await listed.close();
    } finally {
      fs.rmSync(VIEW, { recursive: true, force: true });
    }

    // 7b. The page's run log has the CLI log's keys.
    {
      const logPage = await openApp(context, "?n=512&solver=direct&autoplay=1");
      if (await waitFor(logPage, () => window.webgrav.log && window.webgrav.log.length >= 2, null, 60000, "page run log")) {
        const keys = await logPage.evaluate(() => Object.keys(window.webgrav.log[window.webgrav.log.length - 1]));
        const want = ["t", "steps", "energy", "kinetic", "potential", "rel_energy_error", "rel_energy_error_max", "virial_ratio", "momentum", "angular_momentum", "wall_s"];
        check("page run log has the CLI's keys", want.every((k) => keys.includes(k)), keys.join(","));
      }
      await logPage.close();
    }

    // 8. Under the strict Content-Security-Policy, hostile URL parameters
    // stay text (no markup reaches the DOM, nothing is allocated for them)
    // and the page runs with the defaults; embedded in a sandboxed iframe
    // it runs too.
    const hostile = await openApp(context,
      "?model=%3Cimg%20src%3Dx%20onerror%3D%22window.__pwned%3D1%22%3E&n=1e12&theta=NaN&seed=%3Cscript%3Ealert(1)%3C%2Fscript%3E&solver=direct&autoplay=1");
    if (await waitFor(hostile, () => window.webgrav.progress && window.webgrav.progress.steps > 2, null, 60000, "page runs despite hostile parameters")) {
      const h = await hostile.evaluate(() => ({
        // The gallery's pictures are the page's own; any other img came from a parameter.
        pwned: window.__pwned,
        imgs: document.querySelectorAll("img:not(#gallery img), script:not([src]):not([type])").length,
        csp: window.__csp, meta: !!document.querySelector('meta[http-equiv="Content-Security-Policy"]'),
        msg: document.getElementById("message").textContent, n: window.webgrav.progress.n,
      }));
      check("strict CSP in the page, no violations", h.meta && h.csp.length === 0, JSON.stringify(h.csp));
      check("hostile parameters stay text", !h.pwned && h.imgs === 0 && /<img/.test(h.msg) && /n=1e12/.test(h.msg) && /theta=NaN/.test(h.msg),
        h.msg.replace(/\n/g, " | ").slice(0, 200));
      // The adapter's default N: the software one on SwiftShader and
      // lavapipe (a refused n chose nothing).
      const software = await hostile.evaluate(() => window.webgrav.software);
      check("defaults used instead", h.n === (software ? 2048 : 16384), `n = ${h.n}`);
    }
    await hostile.close();
    fs.writeFileSync(path.join(DIST, "sandboxed-embed.html"),
      '<!doctype html><title>embed</title><iframe sandbox="allow-scripts allow-same-origin" ' +
      'src="/?embed=1&n=512&solver=direct&autoplay=1" width="640" height="400"></iframe>');
    const host = await context.newPage();
    await host.goto(BASE + "sandboxed-embed.html");
    const frame = await (await host.waitForSelector("iframe")).contentFrame();
    try {
      await frame.waitForFunction(() => window.webgrav && window.webgrav.progress && window.webgrav.progress.steps > 5, null, { timeout: 60000, polling: 250 });
      const f = await frame.evaluate(() => ({ steps: window.webgrav.progress.steps, csp: window.__csp }));
      check("runs in a sandboxed iframe", f.steps > 5 && f.csp.length === 0, `${f.steps} steps`);
    } catch (e) {
      check("runs in a sandboxed iframe", false, `${e}`.slice(0, 200));
    }
    await host.close();
    fs.rmSync(path.join(DIST, "sandboxed-embed.html"), { force: true });

    // 13. Every preset loads (small N for SwiftShader) without warnings,
    // console errors or failed requests; embedded, it shows its caption.
    const presets = await (async () => {
      const p = await openApp(context, "?autoplay=0&n=256");
      const list = await p.evaluate(() => window.wasmBindings.catalog().presets);
      await p.close();
      return list;
    })();
    const bad = [];
    const disks = [];
    for (const p of presets) {
      const pg = await openApp(context, `?preset=${p.name}&n=2048&solver=direct&autoplay=0&embed=1`);
      const r = await pg.evaluate(() => ({
        ready: !!window.webgrav.ready, n: window.webgrav.progress && window.webgrav.progress.n,
        message: document.getElementById("message").hidden ? "" : document.getElementById("message").textContent,
        caption: document.getElementById("embed-caption").hidden ? "" : document.getElementById("embed-caption").textContent,
        view: window.webgrav.app.values(),
      }));
      if (!r.ready || r.message || !r.caption.includes(p.caption) || pg.problems.length) bad.push(`${p.name}: ${JSON.stringify(r)} ${pg.problems.join(" | ")}`);
      if (p.name === "milky-way" || p.name === "disk-galaxy") {
        // A paused view redraws about once a second, so the shot may hold
        // a frame composed before the preset's view was applied (seen once
        // in Firefox on a busy machine): look again, a few redraws later.
        const shot = path.join(ART, `preset-${p.name}.png`);
        let lit = 0;
        for (let attempt = 0; attempt < 4 && lit <= 0.04; attempt++) {
          if (attempt > 0) await pg.waitForTimeout(1200);
          await pg.locator("#view").screenshot({ path: shot });
          lit = pngStats(shot).litFraction;
        }
        disks.push({ name: p.name, pitch: parseFloat(r.view.pitch), dist: parseFloat(r.view.dist), lit });
      }
      await pg.close();
    }
    // The disk presets open fitted to their disks (the Milky Way's 90 %
    // light radius is ~12 kpc, the old fixed camera stood 45 kpc away, the
    // disk galaxy's ~4 against 14) and turned face-on or inclined; at
    // N = 2048 a disk is a few hundred particles, which light a few per
    // cent of the view.
    const mw = disks.find((d) => d.name === "milky-way"), dg = disks.find((d) => d.name === "disk-galaxy");
    check("disk presets open fitted to the disk, face-on or inclined", mw && dg && mw.pitch === 0 && mw.dist < 45 &&
      dg.pitch > 0.3 && dg.dist < 14 && mw.lit > 0.04 && dg.lit > 0.04, JSON.stringify(disks));
    check("presets load cleanly with their captions", presets.length >= 6 && bad.length === 0, bad.join(" || ") || `${presets.length} presets`);

    // The gallery: one loaded picture per preset, and a click runs that
    // preset (menu, caption and model follow).
    {
      const pg = await openApp(context, "?autoplay=0&n=512&solver=direct");
      try {
        await pg.locator("#gallery .gallery-item img").first().scrollIntoViewIfNeeded();
        const pictures = await pg.evaluate(async () => {
          const imgs = [...document.querySelectorAll("#gallery .gallery-item img")];
          for (const img of imgs) img.loading = "eager";
          await Promise.all(imgs.map((img) => img.decode().catch(() => null)));
          return imgs.map((img) => ({ preset: img.parentElement.dataset.preset, w: img.naturalWidth, h: img.naturalHeight }));
        });
        const names = presets.map((p) => p.name).sort().join(",");
        const ok = pictures.length === presets.length && pictures.map((p) => p.preset).sort().join(",") === names &&
          pictures.every((p) => p.w === 320 && p.h === 240);
        check("gallery: a 320x240 picture per preset", ok, JSON.stringify(pictures));
        await pg.locator('#gallery .gallery-item[data-preset="disk-galaxy"]').click();
        await pg.waitForFunction(() => window.webgrav.app.values().model === "disk-galaxy", null, { timeout: 60000, polling: 250 });
        const after = await pg.evaluate(() => ({ menu: document.getElementById("preset").value, caption: document.getElementById("preset-caption").textContent }));
        const disk = presets.find((p) => p.name === "disk-galaxy");
        check("gallery: a click runs its preset", after.menu === "disk-galaxy" && after.caption === disk.caption && pg.problems.length === 0,
          `${JSON.stringify(after)} ${pg.problems.join(" | ")}`);
      } catch (e) {
        check("gallery: a click runs its preset", false, `${e}`.slice(0, 200));
      }
      await pg.close();
    }

    // 14. The benchmark panel runs the library's benchmark set (the code
    // of `webgrav bench suite`) and prints lines with the native CLI's
    // keys; a native file dropped on it gives sane browser/native ratios.
    // And the default model's frame time on this (software) GPU.
    {
      const SIZE = 1024;
      const nativeText = webgrav("bench", "suite", "-n", String(SIZE), "--repeat", "1");
      const nativeFile = path.join(ART, "bench-native.jsonl");
      fs.writeFileSync(nativeFile, nativeText);
      const native = nativeText.trim().split("\n").map((l) => JSON.parse(l));
      const bp = await openApp(context, "?n=256&solver=direct&autoplay=0");
      await bp.selectOption("#bench-size", String(SIZE));
      await bp.fill("#bench-repeat", "1");
      await bp.click("#bench-run");
      // The whole suite (direct, tree, Hermite 4th and 6th order) on
      // SwiftShader took 380-400 s on a 2-core machine while the tree ran
      // 64 steady steps of ~5 s each; it now runs those that fit in ~5 s
      // (at least 4). The check is that it finishes with the CLI's lines.
      if (await waitFor(bp, () => /done/.test(document.getElementById("bench-status").textContent) || document.getElementById("bench-status").textContent === "failed", null, 600000, "benchmark page finishes")) {
        const text = await bp.evaluate(() => Bench.text());
        const lines = text.trim().split("\n").map((l) => JSON.parse(l));
        const keys = (v) => Object.keys(v).sort().join(",");
        const sameKeys = lines.length === native.length && lines.every((l, k) => l.bench === native[k].bench &&
          keys(l) === keys(native[k]) && keys(l.phase_ms || {}) === keys(native[k].phase_ms || {}));
        check("benchmark page prints the CLI's lines (same keys)", sameKeys,
          lines.map((l) => `${l.bench} n=${l.n}`).join(", "));
        // SwiftShader is a software adapter: the page's context must know
        // it (wgpu alone says "Other") and size its dispatches for a CPU.
        const sane = lines.every((l) => l.host === "browser" && (BROWSER === "firefox" ? /Firefox/ : /Chrom/).test(l.host_detail) && typeof l.adapter === "string" &&
          l.device_type === "Cpu" &&
          Number.isFinite(l.interactions_per_s) && l.interactions_per_s > 0 && (l.ms === undefined || l.ms > 0));
        const bt = lines.find((l) => l.bench === "tree"), nt = native.find((l) => l.bench === "tree");
        const samePP = bt && nt && Math.abs(bt.pp_per_particle - nt.pp_per_particle) <= 0.02 * nt.pp_per_particle;
        check("benchmark page figures sane (same tree as native)", sane && samePP,
          bt ? `tree: ${bt.pp_per_particle.toFixed(1)} vs ${nt.pp_per_particle.toFixed(1)} p-p per particle, timing ${bt.timing}` : "no tree line");
        const dlFile = path.join(ART, "bench-browser.jsonl");
        await download(bp, "#bench-download", dlFile);
        check("benchmark lines download", fs.readFileSync(dlFile, "utf8") === text, `${fs.statSync(dlFile).size} bytes`);
        await bp.setInputFiles("#bench-native", nativeFile);
        await waitFor(bp, () => !document.getElementById("bench-compare").hidden, null, 10000, "native file compared");
        const cmp = await bp.evaluate(() => ({
          rows: document.querySelectorAll("#bench-ratios tr").length - 1,
          ratios: (Bench.ratios || []).map((r) => r.ratio),
          configs: [...new Set((Bench.ratios || []).map((r) => r.config.split(" ")[0]))],
        }));
        check("native file gives browser/native ratios per phase", cmp.rows === cmp.ratios.length && cmp.rows >= 8 &&
          cmp.ratios.every((r) => Number.isFinite(r) && r > 0) && cmp.configs.length === 4,
          `${cmp.rows} ratios over ${cmp.configs.join(", ")}`);
        await bp.screenshot({ path: path.join(ART, "bench.png") });
        for (const l of lines) console.log(`  [bench] ${JSON.stringify(l)}`);
      }
      check("benchmark page: clean console", bp.problems.length === 0, bp.problems.join(" | "));
      await bp.close();

      // The default model (no parameters) as a visitor opens it.
      const dp = await openApp(context, "");
      await dp.evaluate(() => { window.__frames = []; const f = (t) => { window.__frames.push(t); requestAnimationFrame(f); }; requestAnimationFrame(f); });
      await new Promise((r) => setTimeout(r, 8000));
      const fr = await dp.evaluate(() => {
        const t = window.__frames.slice(2), d = t.slice(1).map((x, k) => x - t[k]).sort((a, b) => a - b);
        return { frames: t.length, median: d[Math.floor(d.length / 2)], p90: d[Math.floor(0.9 * d.length)],
          n: window.webgrav.progress.n, solver: window.webgrav.app.values().solver, steps: window.webgrav.progress.steps };
      });
      console.log(`  [frame time] default model (${fr.solver}, N = ${fr.n}): median ${fr.median?.toFixed(1)} ms, 90th ${fr.p90?.toFixed(1)} ms, ${fr.steps} steps in 8 s`);
      // SwiftShader is a software adapter: the page must have started from
      // its software defaults (direct, N = 2048), and kept drawing.
      check("default model on a software adapter: small start, keeps drawing", fr.solver === "direct" && fr.n === 2048 &&
        fr.frames >= 8 && fr.steps > 0, `${fr.solver}, N = ${fr.n}, median frame ${fr.median?.toFixed(0)} ms, ${fr.steps} steps`);
      await dp.close();
    }
    }

    // (15) Lessons and the tree made visible (tests/e2e/lessons.mjs).
    const only = process.env.WEBGRAV_E2E_ONLY;
    if (!only || only === "lessons" || only === "tree") await lessonChecks({ context, openApp, waitFor, check, ART, webgrav, browserName: BROWSER });
    // (16) Accessibility, touch and small screens (tests/e2e/a11y.mjs).
    if (!only || only === "a11y") await a11yChecks({ context, openApp, waitFor, check, ART, BASE, DIST, browserName: BROWSER });
    // (17) The host-page API and the example course page (tests/e2e/host_api.mjs).
    if (!only || only === "host") await hostApiChecks({ context, openApp, waitFor, check, ART, webgrav, BASE, DIST, browserName: BROWSER });
    // (18) Messages kept until dismissed, the embedded caption, and why a
    // WebGPU that cannot read back cannot run (tests/e2e/messages.mjs).
    if (!only || only === "messages") await messageChecks({ context, openApp, waitFor, check, ART, BASE, browserName: BROWSER });
    // (19) HDF5 snapshots by URL and by drop (tests/e2e/hdf5.mjs).
    if (!only || only === "hdf5") await hdf5Checks({ context, openApp, waitFor, check, ART, webgrav, BASE, DIST, browserName: BROWSER,
      pictures: { compareImages, pngStats, MAX_MEAN_ABS_DIFF, MAX_FRACTION_OFF } });
  } finally {
    if (context) await context.close();
    server.kill();
    fs.rmSync(userDir, { recursive: true, force: true });
  }
  const failed = results.filter((r) => !r.ok);
  console.log(`\n${results.length - failed.length} passed, ${failed.length} failed; screenshots in ${path.relative(ROOT, ART)}/`);
  process.exit(failed.length ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
