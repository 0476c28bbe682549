// End-to-end checks that the page says what went wrong, and keeps saying
// it (run.mjs calls `messageChecks`; WEBGRAV_E2E_ONLY=messages alone):
//   - every message stays until it is dismissed: a bad URL parameter's
//     warning and the software-adapter note that follows it are both on
//     the page seconds later; each closes on its own button, and "Dismiss
//     all" closes the rest;
//   - the embedded preset's caption is clear of the title, the status line
//     and the bottom bar, and says when the disk is too sparse to read;
//   - (Chromium only) in Chromium's plain headless set-up, whose WebGPU
//     read-backs fail and whose device then goes, the page says why on the
//     page, not only on the console.
import { chromium } from "playwright-core";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

export async function messageChecks(env) {
  await keptMessages(env);
  await embeddedCaption(env);
  if (env.browserName === "chromium") await plainHeadless(env);
  else console.log("skip (Chrome-only: Chromium's own flags) plain headless Chromium: the page says why it cannot run");
}

async function keptMessages({ context, openApp, waitFor, check, ART }) {
  // No solver or N in the URL: a software adapter starts small and says so,
  // after the warning about the unknown key.
  const page = await openApp(context, "?colour=red&autoplay=0");
  await new Promise((r) => setTimeout(r, 2500));
  const texts = () => page.evaluate(() => [...document.querySelectorAll("#message .msg .msg-text")].map((e) => e.textContent));
  const shown = await texts();
  const software = await page.evaluate(() => window.webgrav.software);
  const warning = shown.some((t) => /colour/.test(t));
  check("a bad parameter's warning stays with the notes after it", warning && (!software || shown.some((t) => /software adapter/.test(t))),
    shown.join(" | "));
  await page.screenshot({ path: path.join(ART, "messages.png") });
  // Each message closes on its own button; the rest stay.
  await page.evaluate(() => document.querySelector("#message .msg .msg-close").click());
  const after = await texts();
  check("a message closes on its own button, the others stay", after.length === shown.length - 1 && after.every((t) => shown.includes(t)),
    `${shown.length} → ${after.length}`);
  await page.evaluate(() => { window.webgrav.message("first", "info"); window.webgrav.message("second"); window.webgrav.message("first", "info"); });
  const repeated = await texts();
  check("the same text again moves to the end, once", repeated.filter((t) => t === "first").length === 1 && repeated[repeated.length - 1] === "first",
    repeated.join(" | "));
  const clear = await page.evaluate(() => !document.getElementById("message-clear").hidden);
  await page.evaluate(() => document.getElementById("message-clear").click());
  const empty = await page.evaluate(() => document.getElementById("message").hidden && !document.querySelector("#message .msg"));
  check("Dismiss all closes every message", clear && empty, "");
  await page.close();
}

// Rectangles overlap when they share area.
const overlap = (a, b) => a && b && a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;

async function embeddedCaption({ context, openApp, waitFor, check, ART }) {
  const page = await openApp(context, "?preset=milky-way&embed=1&n=2048&solver=direct&autoplay=0");
  await waitFor(page, () => !document.getElementById("embed-caption").hidden, null, 20000, "embedded caption shown");
  const r = await page.evaluate(() => {
    const box = (id) => {
      const e = document.getElementById(id);
      if (!e || e.hidden) return null;
      const b = e.getBoundingClientRect();
      return { left: b.left, right: b.right, top: b.top, bottom: b.bottom };
    };
    return {
      caption: box("embed-caption"), title: box("title"), status: box("status"), bar: box("embed-bar"),
      note: document.getElementById("embed-caption-note").hidden ? "" : document.getElementById("embed-caption-note").textContent,
      disk: window.webgrav.app.diskParticles(),
    };
  });
  await page.screenshot({ path: path.join(ART, "embed-milky-way.png") });
  check("embedded caption clear of the title, the status and the bar",
    r.caption && !overlap(r.caption, r.title) && !overlap(r.caption, r.status) && !overlap(r.caption, r.bar),
    JSON.stringify({ caption: r.caption, title: r.title, status: r.status, bar: r.bar }));
  check("a sparse disk is said to be one", r.disk > 0 && r.disk < 1000 && /disk stars/.test(r.note) && r.note.includes(String(r.disk)),
    `${r.disk} disk particles: ${r.note}`);
  await page.close();
  // At its own N the preset's disk reads, and no note is shown. (The
  // tree: a direct sum's first forces at this N took over a minute in
  // Firefox's software WebGPU beside the rest of the suite.)
  const full = await openApp(context, "?preset=milky-way&embed=1&n=65536&solver=tree&autoplay=0");
  const f = await full.evaluate(() => ({ disk: window.webgrav.app.diskParticles(), note: !document.getElementById("embed-caption-note").hidden }));
  check("a disk of thousands has no such note", f.disk >= 1000 && !f.note, `${f.disk} disk particles`);
  await full.close();
}

async function plainHeadless({ check, BASE, ART }) {
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), "webgrav-plain-"));
  const context = await chromium.launchPersistentContext(userDir, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true,
    args: ["--headless=new", "--no-sandbox", "--enable-unsafe-webgpu"], viewport: { width: 1100, height: 700 },
  });
  try {
    const page = await context.newPage();
    await page.goto(BASE);
    let text = null;
    try {
      await page.waitForFunction(() => window.webgrav && window.webgrav.error, null, { timeout: 60000, polling: 250 });
      text = await page.evaluate(() => document.getElementById("error").hidden ? null : document.getElementById("error-text").textContent);
    } catch {
      text = null;
    }
    await page.screenshot({ path: path.join(ART, "plain-headless.png") });
    check("plain headless Chromium: the page says why it cannot run", text !== null && /before a single result/.test(text) && /Vulkan/.test(text),
      text ? text.split("\n")[0] : "no explanation on the page within 60 s");
  } finally {
    await context.close();
    fs.rmSync(userDir, { recursive: true, force: true });
  }
}
