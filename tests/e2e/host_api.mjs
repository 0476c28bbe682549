// End-to-end checks of the host-page API (www/host.js) through the example
// course page (www/examples/course.html), in the browser of run.mjs (which
// calls `hostApiChecks`; WEBGRAV_E2E_ONLY=host runs them alone):
//   - the course page is served from a second origin (localhost, where
//     the app is on 127.0.0.1: two origins) and embeds two simulations
//     that allow it (origin=); driven from its own buttons they send
//     ready, play, pause, step exactly K, set Δt (a bad one refused with
//     the page's warning), reset to t = 0, capture a PNG, start from a
//     Tipsy file the CLI wrote, refuse a malformed one untouched, and
//     answer get with their state;
//   - the same page on the app's own origin, with frames that allow only
//     the other origin, hears nothing and moves nothing: the frames count
//     what they ignored (read here through the same-origin frames; the
//     portable page API has no frames) and keep origin= out of the link
//     a student shares.
// Both runs are the direct sum at N = 1024: SwiftShader draws each frame
// in ~0.2-0.4 s.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { PNG } from "pngjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The replies to command `name` received so far, one list per simulation.
const replies = (page, name) => page.evaluate((name) =>
  window.course.sims.map((s) => window.course.log.filter((m) => m.sim === s.key && m.id !== undefined && (m.command === name || (name === "get" && m.webgrav === "state" && m.query !== undefined) || (name === "capture" && m.webgrav === "capture")))), name);

const states = (page) => page.evaluate(() => window.course.sims.map((s) => s.state));

const click = (page, selector) => page.evaluate((sel) => document.querySelector(sel).click(), selector);

// Clicks `selector` and waits for both simulations to answer `name`.
async function command(env, page, selector, name, what) {
  const before = (await replies(page, name)).map((r) => r.length);
  await click(page, selector);
  const ok = await env.waitFor(page, ({ name, before }) => window.course.sims.every((s, k) =>
    window.course.log.filter((m) => m.sim === s.key && m.id !== undefined &&
      (m.command === name || (name === "get" && m.query !== undefined) || (name === "capture" && m.webgrav === "capture"))).length > before[k]),
  { name, before }, 60000, what);
  const all = await replies(page, name);
  return ok ? all.map((r, k) => r.slice(before[k])) : null;
}

// Gives the course page's snapshot input a file (bytes as a plain array).
function openSnapshot(page, name, bytes) {
  return page.evaluate(({ name, bytes }) => {
    const t = new DataTransfer();
    t.items.add(new File([new Uint8Array(bytes)], name));
    const input = document.getElementById("snapshot");
    input.files = t.files;
    input.dispatchEvent(new Event("change"));
  }, { name, bytes });
}

export async function hostApiChecks(env) {
  const { context, waitFor, check, ART, webgrav, BASE, DIST } = env;
  const port2 = new URL(BASE).port * 1 + 1000 + Math.floor(Math.random() * 500);
  const HOST = `http://localhost:${port2}`;
  const server = spawn("python3", ["-m", "http.server", String(port2), "--bind", "127.0.0.1", "--directory", DIST], { stdio: "ignore" });
  try {
    for (let i = 0; i < 50; i++) {
      try { await fetch(`http://127.0.0.1:${port2}/`); break; } catch { await sleep(100); }
    }
    await drive(env, HOST);
    await refuse(env, HOST);
  } finally {
    server.kill();
  }

  async function drive(env, HOST) {
    const page = await context.newPage();
    await page.setViewportSize({ width: 1000, height: 900 });
    await page.goto(`${HOST}/examples/course.html?sim=${encodeURIComponent(BASE)}`);
    if (!await waitFor(page, () => window.course && window.course.sims.length === 2 && window.course.sims.every((s) => s.ready && s.state), null, 90000, "host API: both simulations send ready")) {
      await page.close();
      return;
    }
    const ready = await page.evaluate(() => window.course.log.filter((m) => m.webgrav === "ready"));
    check("host API: both simulations send ready (version, adapter, model, N, solver)",
      ready.length === 2 && ready.every((r) => r.version && r.adapter && r.model === "plummer" && r.n === 1024 && r.solver === "direct"),
      JSON.stringify(ready[0]));

    // Play: the table fills with growing t and steps, a small |ΔE/E₀|.
    await command(env, page, "#play", "play", "host API: play answered");
    if (await waitFor(page, () => window.course.sims.every((s) => s.state.steps >= 20 && typeof s.state.energy_error === "number"), null, 60000, "host API: play advances both")) {
      const a = await states(page);
      await sleep(1500);
      const b = await states(page);
      const table = await page.evaluate(() => [...document.querySelectorAll("#table tbody tr")].map((r) => [...r.cells].slice(2, 5).map((c) => c.textContent)));
      const small = b.every((s) => Number.isFinite(s.energy_error) && s.energy_error < 1e-2);
      check("host API: play fills the table with t, steps and |ΔE/E₀| that grow, finite and small",
        b.every((s, k) => s.running && s.t > a[k].t && s.steps > a[k].steps) && small &&
        table.every((row) => row.every((c) => c !== "–")),
        `${table.map((r) => r.join(" / ")).join("; ")}`);
    }

    // Pause: the steps stop.
    await command(env, page, "#pause", "pause", "host API: pause answered");
    await sleep(1000);
    const paused = await states(page);
    await sleep(1500);
    const still = await page.evaluate(() => window.course.sims.map((s) => s.state));
    const fresh = await command(env, page, "#get", "get", "host API: get answered");
    check("host API: pause stops the steps", fresh && paused.every((s, k) => !s.running && fresh[k][0].steps === s.steps && still[k].steps === s.steps),
      `steps ${paused.map((s) => s.steps).join(", ")} → ${fresh ? fresh.map((r) => r[0].steps).join(", ") : "?"}`);

    // Step K: exactly K more, still paused.
    const K = 7;
    await page.evaluate((k) => { document.getElementById("steps").value = String(k); }, K);
    const stepped = await command(env, page, "#step", "step", "host API: step answered");
    const afterStep = await states(page);
    check(`host API: step ${K} advances exactly ${K} steps`,
      stepped && stepped.every((r) => r[0].webgrav === "ok") && afterStep.every((s, k) => s.steps === paused[k].steps + K && !s.running),
      `steps ${paused.map((s) => s.steps).join(", ")} → ${afterStep.map((s) => s.steps).join(", ")}`);

    // Set Δt of the second run; a bad one is refused with the page's warning.
    await page.evaluate(() => { document.querySelector('input[data-sim="b"]').value = "0.015625"; });
    const beforeSet = (await replies(page, "set")).map((r) => r.length);
    await click(page, 'button[data-set-dt="b"]');
    await waitFor(page, (n) => window.course.log.filter((m) => m.sim === "b" && m.command === "set").length > n, beforeSet[1], 30000, "host API: set answered");
    await page.evaluate(() => { document.querySelector('input[data-sim="b"]').value = "-1"; });
    await click(page, 'button[data-set-dt="b"]');
    await waitFor(page, (n) => window.course.log.filter((m) => m.sim === "b" && m.command === "set").length > n + 1, beforeSet[1], 30000, "host API: bad set answered");
    const sets = (await replies(page, "set"))[1].slice(beforeSet[1]);
    const got = await command(env, page, "#get", "get", "host API: get after set answered");
    const query = got ? got.map((r) => new URLSearchParams(r[0].query)) : null;
    check("host API: set dt changes the run's settings; get replies with the state",
      sets[0].webgrav === "ok" && query && query[1].get("dt") === "0.015625" && query[0].get("dt") === "0.0078125" &&
      got.every((r) => r[0].webgrav === "state" && Number.isFinite(r[0].t) && r[0].n === 1024),
      query ? `dt ${query.map((q) => q.get("dt")).join(", ")}` : "no reply");
    check("host API: a bad value is an error reply with the page's warning, nothing changed",
      sets[1] && sets[1].webgrav === "error" && /^dt=-1: /.test(sets[1].message) && query && query[1].get("dt") === "0.015625",
      sets[1] ? sets[1].message : "no reply");

    // Reset: back to t = 0.
    const reset = await command(env, page, "#reset", "reset", "host API: reset answered");
    const afterReset = await states(page);
    check("host API: reset restarts from t = 0", reset && reset.every((r) => r[0].webgrav === "ok") &&
      afterReset.every((s) => s.t === 0 && s.steps === 0), afterReset.map((s) => `t = ${s.t}`).join(", "));

    // Capture: a PNG of the canvas, of the size it says, not blank.
    const captured = await command(env, page, "#capture", "capture", "host API: capture answered");
    if (captured) {
      const shots = await page.evaluate(() => window.course.sims.map((s) => {
        const c = window.course.captures[s.key];
        let text = "";
        for (const b of c.png) text += String.fromCharCode(b);
        return { width: c.width, height: c.height, png: btoa(text) };
      }));
      const info = shots.map((s, k) => {
        const bytes = Buffer.from(s.png, "base64");
        const file = path.join(ART, `host-capture-${k}.png`);
        fs.writeFileSync(file, bytes);
        const signature = bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
        const png = PNG.sync.read(bytes);
        let lit = 0;
        for (let i = 0; i < png.width * png.height; i++) {
          if (Math.max(png.data[4 * i], png.data[4 * i + 1], png.data[4 * i + 2]) > 40) lit++;
        }
        return { signature, size: png.width === s.width && png.height === s.height && s.width > 100, lit, w: png.width, h: png.height };
      });
      check("host API: capture replies with a PNG of the canvas (signature, size, not blank)",
        info.every((i) => i.signature && i.size && i.lit > 50), info.map((i) => `${i.w}x${i.h}, ${i.lit} lit`).join("; "));
    }

    // Snapshot: a Tipsy file the CLI wrote starts both runs; a malformed
    // file is an error reply and the runs go on untouched.
    const NS = 300;
    const tipsy = path.join(ART, "host-snapshot.tipsy");
    webgrav("run", "--model", "plummer", "-n", String(NS), "--seed", "9", "--t-end", "0", "--out", tipsy);
    const beforeSnap = (await replies(page, "snapshot")).map((r) => r.length);
    await openSnapshot(page, "course.tipsy", [...fs.readFileSync(tipsy)]);
    await waitFor(page, (n) => window.course.sims.every((s, k) => window.course.log.filter((m) => m.sim === s.key && m.command === "snapshot").length > n[k]), beforeSnap, 60000, "host API: snapshot answered");
    await waitFor(page, (n) => window.course.sims.every((s) => s.state.n === n), NS, 20000, "host API: snapshot state");
    const snap = (await replies(page, "snapshot")).map((r, k) => r[beforeSnap[k]]);
    const opened = await states(page);
    check(`host API: snapshot starts both runs from the file (N = ${NS})`,
      snap.every((r) => r && r.webgrav === "ok") && opened.every((s) => s.n === NS), opened.map((s) => `N = ${s.n}`).join(", "));
    await command(env, page, "#step", "step", "host API: step after snapshot answered");
    const good = await states(page);
    await openSnapshot(page, "broken.tipsy", [...Buffer.from("not a snapshot at all, just some text")]);
    await waitFor(page, (n) => window.course.sims.every((s, k) => window.course.log.filter((m) => m.sim === s.key && m.command === "snapshot").length > n[k] + 1), beforeSnap, 30000, "host API: bad snapshot answered");
    const bad = (await replies(page, "snapshot")).map((r, k) => r[beforeSnap[k] + 1]);
    const untouched = await states(page);
    check("host API: a malformed snapshot is an error reply, the run untouched",
      bad.every((r) => r && r.webgrav === "error" && /broken\.tipsy/.test(r.message)) &&
      untouched.every((s, k) => s.n === NS && s.steps === good[k].steps && s.t === good[k].t),
      bad[0] ? bad[0].message : "no reply");
    const csp = await page.evaluate(() => window.__csp || []);
    check("host API: the course page keeps its CSP (no violations)", csp.length === 0, JSON.stringify(csp));
    await page.screenshot({ path: path.join(ART, "host-course.png") });
    await page.close();
  }

  // The course page on the app's own origin, its frames allowing only the
  // second origin: the host's commands are ignored, and events to it too.
  async function refuse(env, HOST) {
    const page = await context.newPage();
    await page.setViewportSize({ width: 1000, height: 900 });
    await page.goto(`${BASE}examples/course.html?sim=../&accept=${encodeURIComponent(HOST)}`);
    const frames = () => page.evaluate(() => [...document.querySelectorAll("iframe")].map((f) => {
      const W = f.contentWindow.webgrav;
      return W && W.ready ? {
        steps: W.app.progress().steps, ignored: W.hostApi.ignored, warning: W.hostApi.lastIgnored,
        address: f.contentWindow.location.search, share: W.shareUrl(),
      } : null;
    }));
    if (!await waitFor(page, () => [...document.querySelectorAll("iframe")].every((f) => f.contentWindow.webgrav && f.contentWindow.webgrav.ready), null, 90000, "host API: frames start (wrong origin)")) {
      await page.close();
      return;
    }
    await click(page, "#play");
    await click(page, "#step");
    await sleep(3000);
    const f = await frames();
    const log = await page.evaluate(() => window.course.log.length);
    const own = new URL(BASE).origin;
    check("host API: commands from an origin not allowed are ignored (no reply, no steps) and warned of",
      log === 0 && f.every((x) => x.steps === 0 && x.ignored === 2 && x.warning.includes(own) && x.warning.includes(HOST)),
      `${log} messages received; frame: ${f[0].steps} steps, ${f[0].ignored} ignored: ${f[0].warning}`);
    check("host API: origin= stays in the frame's address, not in the shared link",
      f.every((x) => new URLSearchParams(x.address).get("origin") === HOST && !x.share.includes("origin")),
      `${f[0].address.slice(0, 60)}… | ${f[0].share.slice(0, 60)}…`);
    await page.close();
  }
}
