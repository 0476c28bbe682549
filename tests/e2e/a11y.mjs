// End-to-end checks of accessibility, touch and small screens (run.mjs
// calls `a11yChecks`; WEBGRAV_E2E_ONLY=a11y runs them alone):
//   - axe-core finds no serious or critical WCAG 2.x A/AA violation on
//     the full page, the embedded one (?embed=1) and the light theme; its
//     reports are ART/axe-<page>-<browser>.json;
//   - the keyboard alone: Tab from the start reaches every visible control
//     in document order; Enter and Space on Run/Pause toggle it once; a
//     select changes with the arrow keys; letter hotkeys act on the view,
//     not on a focused button; arrows orbit and + zooms on the view; `?`
//     opens the key list, Escape closes it and focus returns;
//   - the live region says model, N, solver, t and whether the run goes,
//     at once on a change and at most every ~5 s while running;
//   - reduced motion: the start-paused rule with a stubbed matchMedia, and
//     the page's start agrees with this browser's real preference;
//   - the light theme: the view's background is white (the renderer's
//     ink on paper), kept in the share link;
//   - a 390 × 844 phone: nothing wider than the screen, every control at
//     least 24 × 24 px, a two-finger pinch zooms and a one-finger drag
//     orbits (touch pointer events).
// Small runs (256 particles, direct sum, paused) keep SwiftShader's frames
// short.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { PNG } from "pngjs";

const QUERY = "?model=plummer&n=256&solver=direct&eps=0.05&dt=0.01";
const AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"];

export async function a11yChecks(env) {
  const { DIST } = env;
  // The page's CSP takes scripts from its own origin only: axe is served
  // beside it for the run of these checks.
  const axeDir = path.join(DIST, "e2e-axe");
  fs.mkdirSync(axeDir, { recursive: true });
  const axeFile = createRequire(import.meta.url).resolve("axe-core/axe.min.js");
  fs.copyFileSync(axeFile, path.join(axeDir, "axe.min.js"));
  try {
    await axeChecks(env);
    await keyboardChecks(env);
    await liveAndMotionChecks(env);
    await lightChecks(env);
    await phoneChecks(env);
  } finally {
    fs.rmSync(axeDir, { recursive: true, force: true });
  }
}

async function runAxe(page) {
  await page.evaluate(() => new Promise((ok, fail) => {
    const s = document.createElement("script");
    s.src = "e2e-axe/axe.min.js";
    s.onload = ok;
    s.onerror = () => fail(new Error("axe.min.js did not load"));
    document.head.append(s);
  }));
  return page.evaluate((tags) => window.axe.run(document, { runOnly: { type: "tag", values: tags } })
    .then((r) => ({ violations: r.violations, passes: r.passes.length, incomplete: r.incomplete.length })), AXE_TAGS);
}

async function axeChecks({ context, openApp, check, ART, browserName }) {
  for (const [name, query] of [["full", `${QUERY}&autoplay=0`], ["embed", `${QUERY}&autoplay=0&embed=1`],
    ["light", `${QUERY}&autoplay=0&theme=light`]]) {
    const page = await openApp(context, query);
    const r = await runAxe(page);
    fs.writeFileSync(path.join(ART, `axe-${name}-${browserName}.json`), JSON.stringify(r, null, 1));
    const bad = r.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
    const minor = r.violations.filter((v) => !bad.includes(v)).map((v) => `${v.id} (${v.impact})`);
    check(`axe on the ${name} page: no serious or critical violation`, bad.length === 0,
      bad.length ? bad.map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`).join("; ")
        : `${r.passes} rules pass${minor.length ? `; minor: ${minor.join(", ")}` : ""}`);
    await page.close();
  }
}

// Names of the focusable controls a sighted keyboard user can reach, in
// document order: what Tab must visit.
function visibleControls() {
  const name = (el) => el.id || el.dataset.key || el.dataset.preset || el.getAttribute("aria-label") || el.textContent.trim().slice(0, 24);
  const all = [...document.querySelectorAll("button, input, select, textarea, a[href], [tabindex='0']")];
  return all.filter((el) => !el.disabled && el.getClientRects().length > 0 && !el.closest("dialog:not([open])"))
    .map(name);
}

async function keyboardChecks({ context, openApp, waitFor, check }) {
  const page = await openApp(context, `${QUERY}&autoplay=0`);
  const expected = await page.evaluate(visibleControls);
  await page.evaluate(() => { document.activeElement.blur(); window.scrollTo(0, 0); });
  const seen = [];
  // No further: past the last control focus leaves the document for the
  // browser's own UI (in Firefox keys then no longer press buttons).
  for (let k = 0; k < expected.length; k++) {
    await page.keyboard.press("Tab");
    seen.push(await page.evaluate(() => {
      const el = document.activeElement;
      if (!el || el === document.body) return "(body)";
      return el.id || el.dataset.key || el.dataset.preset || el.getAttribute("aria-label") || el.textContent.trim().slice(0, 24);
    }));
  }
  const walk = seen.slice(0, expected.length);
  const same = walk.length === expected.length && walk.every((n, k) => n === expected[k]);
  check("Tab reaches every visible control in document order", same,
    same ? `${expected.length} stops: ${walk.slice(0, 8).join(", ")}, …` : `expected ${expected.join(",")} — got ${walk.join(",")}`);

  // Run/Pause with Enter, then with Space (the button's own press: the
  // page's Space hotkey must not toggle it a second time).
  await page.evaluate(() => document.getElementById("run").focus());
  // Firefox's key actions return before the page has handled the click.
  const settle = () => new Promise((r) => setTimeout(r, 300));
  await page.keyboard.press("Enter");
  await settle();
  const afterEnter = await page.evaluate(() => window.webgrav.running);
  await page.keyboard.press(" ");
  await settle();
  const afterSpace = await page.evaluate(() => window.webgrav.running);
  check("Enter and Space on Run/Pause toggle the run once each", afterEnter === true && afterSpace === false,
    `after Enter: ${afterEnter}, after Space: ${afterSpace}`);

  // A letter on a focused button is not a hotkey; on the view it is.
  const steps = () => page.evaluate(() => window.webgrav.progress.steps);
  await page.evaluate(() => document.getElementById("fit").focus());
  // The run toggled just above may still finish a step it had queued (seen
  // once: 0 → 1 with no key): count from when the steps stand still.
  let s0 = await steps();
  for (let k = 0; k < 20; k++) {
    await new Promise((r) => setTimeout(r, 500));
    const again = await steps();
    if (again === s0) break;
    s0 = again;
  }
  await page.keyboard.press("s");
  await new Promise((r) => setTimeout(r, 1500));
  const s1 = await steps();
  await page.evaluate(() => document.getElementById("view").focus());
  await page.keyboard.press("s");
  const stepped = await waitFor(page, (n) => window.webgrav.progress.steps > n, s1, 20000, "s on the view takes a step");
  check("letter hotkeys act on the view only (s: a step)", s1 === s0 && stepped, `steps ${s0} → ${s1} on a button, then > ${s1} on the view`);

  // A select with the arrow keys.
  await page.evaluate(() => document.querySelector('[data-key="color"]').focus());
  const c0 = await page.evaluate(() => window.webgrav.app.values().color);
  await page.keyboard.press("ArrowDown");
  const changed = await waitFor(page, (c) => window.webgrav.app.values().color !== c, c0, 5000, "a select changes with the arrow keys");
  if (changed) check("a select changes with the keyboard", true, `colour ${c0} → ${await page.evaluate(() => window.webgrav.app.values().color)}`);

  // The view's keys: orbit and zoom.
  await page.evaluate(() => document.getElementById("view").focus());
  const cam = () => page.evaluate(() => ({ yaw: Number(window.webgrav.app.values().yaw), dist: Number(window.webgrav.app.values().dist) }));
  const v0 = await cam();
  await page.keyboard.press("ArrowLeft");
  await page.keyboard.press("+");
  const v1 = await cam();
  check("arrow keys orbit and + zooms the focused view", v1.yaw !== v0.yaw && v1.dist < v0.dist,
    `yaw ${v0.yaw} → ${v1.yaw}, distance ${v0.dist} → ${v1.dist}`);

  // The key list: ? opens it, Escape closes it, focus comes back.
  await page.keyboard.press("?");
  const open = await page.evaluate(() => ({ open: document.getElementById("keys-help").open, focus: document.activeElement.id,
    rows: document.querySelectorAll("#keys-help tr").length }));
  await page.keyboard.press("Escape");
  const closed = await page.evaluate(() => ({ open: document.getElementById("keys-help").open, focus: document.activeElement.id }));
  check("? opens the key list, Escape closes it and focus returns", open.open && open.focus === "keys-close" && open.rows >= 10 &&
    !closed.open && closed.focus === "view", `open: ${JSON.stringify(open)}, closed: ${JSON.stringify(closed)}`);
  await page.close();
}

async function liveAndMotionChecks({ context, openApp, waitFor, check }) {
  // The page's start without autoplay in the URL follows this browser's
  // real preference; the rule itself with a stubbed preference.
  const page = await openApp(context, QUERY);
  const start = await page.evaluate(() => ({
    running: window.webgrav.running, reduce: matchMedia("(prefers-reduced-motion: reduce)").matches,
  }));
  const rule = await page.evaluate(() => {
    const pref = (reduce) => (q) => ({ matches: reduce && q === "(prefers-reduced-motion: reduce)" });
    return [
      A11y.startRunning(true, [], pref(true)), A11y.startRunning(true, ["autoplay"], pref(true)),
      A11y.startRunning(true, [], pref(false)), A11y.startRunning(false, ["autoplay"], pref(false)),
    ];
  });
  check("reduced motion starts paused unless the URL says autoplay", start.running === !start.reduce &&
    JSON.stringify(rule) === "[false,true,true,false]", `start running: ${start.running} (reduce: ${start.reduce}); rule: ${rule}`);

  // The live region: at once on a change, then calmly.
  await page.evaluate(() => {
    window.webgrav.setRunning(false);
    window.__live = [];
    new MutationObserver(() => window.__live.push([performance.now(), window.webgrav.liveText()]))
      .observe(document.getElementById("live"), { childList: true, characterData: true, subtree: true });
  });
  const paused = await page.evaluate(() => window.webgrav.liveText());
  await page.evaluate(() => window.webgrav.setRunning(true));
  const running = await page.evaluate(() => window.webgrav.liveText());
  await new Promise((r) => setTimeout(r, 12000));
  const log = await page.evaluate(() => { window.webgrav.setRunning(false); return window.__live; });
  const gaps = log.slice(1).map(([t], k) => t - log[k][0]);
  const says = /Model plummer, 256 particles, direct sum; t = [0-9.e+-]+/.test(paused) && /paused\.$/.test(paused) && /running\.$/.test(running);
  const calm = log.length >= 2 && log.length <= 4 && gaps.slice(1).every((g) => g >= 4500);
  check("the live region says the run in words, at once on a change, calmly while running", says && calm,
    `"${running}"; ${log.length} updates in 12 s, gaps ${gaps.map((g) => (g / 1000).toFixed(1)).join(", ")} s; last "${log.at(-1)?.[1]}"`);
  await page.close();
}

// The mean and the corner of a screenshot's pixels.
function shotStats(file) {
  const png = PNG.sync.read(fs.readFileSync(file));
  let sum = 0;
  for (let i = 0; i < png.width * png.height; i++) sum += (png.data[4 * i] + png.data[4 * i + 1] + png.data[4 * i + 2]) / 3;
  return { mean: sum / (png.width * png.height), corner: png.data[0] };
}

async function lightChecks({ context, openApp, waitFor, check, ART, browserName }) {
  const page = await openApp(context, `${QUERY}&autoplay=0&theme=light`);
  await waitFor(page, () => window.webgrav.readouts >= 1, null, 30000, "light page reads out");
  await new Promise((r) => setTimeout(r, 1000));
  const file = path.join(ART, `a11y-light-${browserName}.png`);
  await page.screenshot({ path: file });
  const s = shotStats(file);
  const share = await page.evaluate(() => ({ url: window.webgrav.shareUrl(), light: document.body.classList.contains("light") }));
  check("the light theme: white view and page, kept in the share link", s.corner > 240 && s.mean > 200 && share.light &&
    share.url.includes("theme=light"), `corner ${s.corner}, mean ${s.mean.toFixed(0)}, ${share.url.split("?")[1]}`);
  await page.close();
}

async function touch(page, events) {
  await page.evaluate((evs) => {
    const canvas = document.getElementById("view");
    for (const [type, id, x, y] of evs) {
      canvas.dispatchEvent(new PointerEvent(type, {
        pointerId: id, pointerType: "touch", isPrimary: id === 11, clientX: x, clientY: y,
        bubbles: true, cancelable: true, buttons: type === "pointerup" ? 0 : 1,
      }));
    }
  }, events);
}

async function phoneChecks({ context, openApp, check, ART, browserName }) {
  const page = await openApp(context, `${QUERY}&autoplay=0`, { width: 390, height: 844 });
  await page.setViewportSize({ width: 390, height: 844 });
  await new Promise((r) => setTimeout(r, 500));
  await page.screenshot({ path: path.join(ART, `a11y-phone-${browserName}.png`) });
  const layout = await page.evaluate(() => {
    const small = [];
    const controls = document.querySelectorAll("button, input, select, textarea, a[href], [tabindex='0']");
    for (const el of controls) {
      if (el.disabled || el.getClientRects().length === 0 || el.closest("dialog:not([open])")) continue;
      // Links inside a sentence are exempt (WCAG 2.5.8, inline).
      if (el.tagName === "A" && el.closest(".note, p")) continue;
      const r = el.getBoundingClientRect();
      if (r.width < 24 || r.height < 24) small.push(`${el.id || el.dataset.key || el.tagName} ${r.width.toFixed(0)}×${r.height.toFixed(0)}`);
    }
    const wide = [...document.querySelectorAll("body *")].filter((el) => el.getBoundingClientRect().right > 391 && el.getClientRects().length)
      .map((el) => el.id || el.tagName).slice(0, 5);
    return { scrollWidth: document.documentElement.scrollWidth, bodyWidth: document.body.scrollWidth, small, wide, count: controls.length };
  });
  check("390×844: nothing wider than the screen", layout.scrollWidth <= 390 && layout.bodyWidth <= 390 && layout.wide.length === 0,
    `scrollWidth ${layout.scrollWidth}, body ${layout.bodyWidth}${layout.wide.length ? `; past the edge: ${layout.wide.join(", ")}` : ""}`);
  check("390×844: every control at least 24×24 px", layout.small.length === 0,
    layout.small.length ? layout.small.slice(0, 10).join(", ") : `${layout.count} controls`);

  const cam = () => page.evaluate(() => ({ yaw: Number(window.webgrav.app.values().yaw), dist: Number(window.webgrav.app.values().dist) }));
  const c0 = await cam();
  // Two fingers 90 px apart move to 240 px apart: a pinch out zooms in.
  await touch(page, [["pointerdown", 11, 150, 200], ["pointerdown", 12, 240, 200],
    ["pointermove", 11, 120, 200], ["pointermove", 12, 270, 200], ["pointermove", 11, 75, 200], ["pointermove", 12, 315, 200],
    ["pointerup", 11, 75, 200], ["pointerup", 12, 315, 200]]);
  const c1 = await cam();
  await touch(page, [["pointerdown", 11, 100, 200], ["pointermove", 11, 140, 200], ["pointermove", 11, 200, 210], ["pointerup", 11, 200, 210]]);
  const c2 = await cam();
  check("touch: a pinch zooms, one finger orbits", c1.dist < 0.6 * c0.dist && c2.yaw !== c1.yaw,
    `distance ${c0.dist} → ${c1.dist}, yaw ${c1.yaw} → ${c2.yaw}`);
  await page.close();
}
