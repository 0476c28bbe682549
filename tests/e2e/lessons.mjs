// End-to-end checks of the lessons and the tree made visible, in the
// same headless browser as run.mjs (which calls `lessonChecks`):
//   - every lesson opens with its sheet; the parts a software adapter
//     runs in seconds (few bodies, the direct sum at N = 1024) run to
//     their `run_until`, and every measure with a teacher's expectation,
//     taken with the sheet's own Measure button, lands in its range;
//   - the sheet prints: the questions and the numbers, not the panel;
//   - the tree's cells are drawn over the view (pixels change with
//     `cells=3`), a picked particle shows its interaction list, and the
//     accuracy panel's numbers are those of `webgrav forces --compare
//     direct` for the same model.
// The runs take 64 steps per frame (a URL's explicit keys win over the
// lesson's; playback speed never changes a trajectory, tests/lessons.rs)
// in a small viewport: SwiftShader draws a frame in ~0.2-0.4 s.
// With WEBGRAV_E2E_SHOTS=1, screenshots of each lesson as it opens land
// in ART/lessons/NAME.png (the teachers' page pictures,
// www/figures/lessons/, are copies of them).
import fs from "node:fs";
import path from "node:path";
import { PNG } from "pngjs";

// Parts the software adapter runs to the end within the suite's budget
// (read from the lesson's own query): the others are opened paused.
function cheap(part, variant) {
  const q = new URLSearchParams(part.query + (variant !== null ? `&${part.runs[variant].set}` : ""));
  const solver = q.get("solver") || "tree";
  return ["hermite4", "hermite6"].includes(solver) || (solver === "direct" && Number(q.get("n")) <= 1024);
}

export async function lessonChecks(env) {
  if (process.env.WEBGRAV_E2E_ONLY !== "tree") await sheetChecks(env);
  await treeChecks(env);
}

async function sheetChecks({ context, openApp, waitFor, check, ART, browserName }) {
  const dir = path.join(ART, "lessons");
  fs.mkdirSync(dir, { recursive: true });
  const probe = await openApp(context, "?autoplay=0&n=64&solver=direct");
  const lessons = await probe.evaluate(() => Lessons.all);
  await probe.close();
  check("lessons listed in the page", lessons.length >= 5, lessons.map((l) => l.name).join(", "));
  for (const lesson of lessons) {
    for (const [k, part] of lesson.parts.entries()) {
      const variants = [null, ...(part.runs || []).map((_, j) => j)];
      for (const variant of variants) {
        const q = `?lesson=${lesson.name}${k ? `&part=${k}` : ""}${variant !== null ? `&variant=${variant}` : ""}`;
        const expects = part.teacher.expect.filter((e) => (e.run ?? null) === variant);
        // Variants without expectations of their own are opened once (as
        // given) only.
        if (variant !== null && !expects.length) continue;
        const runs = cheap(part, variant);
        // A heavy part's variants show the same sheet: opened once.
        if (!runs && variant !== null) continue;
        const page = await openApp(context, `${q}${runs ? "&spf=64" : "&autoplay=0"}`, { width: 560, height: 420 });
        const sheet = await page.evaluate(() => ({
          shown: !document.getElementById("lesson").hidden,
          title: document.getElementById("lesson-title")?.textContent,
          questions: document.querySelectorAll(".lesson-questions > li").length,
        }));
        check(`${q}: the sheet shows`, sheet.shown && sheet.title === lesson.title && sheet.questions === part.questions.length,
          `${sheet.questions} questions`);
        if (!runs) {
          await page.close();
          continue;
        }
        const until = part.run_until;
        const ran = await waitFor(page, (t) => window.webgrav.progress.time >= t && window.webgrav.last &&
          window.webgrav.last.time >= t, until, 120000, `${q}: runs to t = ${until}`);
        if (ran) {
          // Every measure of the part taken with the sheet's own button.
          const measured = await page.evaluate(() => {
            const out = {};
            for (const b of document.querySelectorAll("[data-measure-button]")) {
              if (b.disabled) continue;
              b.click();
              out[b.dataset.measureButton] = document.getElementById(`measure-${b.dataset.measureButton}`).value;
            }
            return out;
          });
          for (const e of expects) {
            let id = null;
            part.questions.forEach((qq, i) => qq.measures.forEach((m, j) => {
              if (m.key === e.key && m.body === e.body && (m.run ?? null) === (e.run ?? null)) id = `p${k}-q${i}-m${j}`;
            }));
            const v = Number(measured[id]);
            const ok = Number.isFinite(v) && (e.min === undefined || v >= e.min) && (e.max === undefined || v <= e.max);
            check(`${q}: ${e.key}${e.body !== undefined ? ` of body ${e.body}` : ""} as the notes expect`, ok,
              `${measured[id]} in [${e.min ?? "-inf"}, ${e.max ?? "inf"}]`);
          }
        }
        check(`${q}: clean console`, page.problems.length === 0, page.problems.join(" | "));
        await page.close();
      }
    }
  }

  // Each lesson as it opens, a few seconds in: the teachers' page's
  // pictures, made on request (WEBGRAV_E2E_SHOTS=1; heavy lessons take
  // minutes to start on a software adapter).
  for (const lesson of process.env.WEBGRAV_E2E_SHOTS ? lessons : []) {
    // Paused where a part is heavy for a software adapter (its picture is
    // the first frame).
    const still = cheap(lesson.parts[0], null) ? "" : "&autoplay=0";
    const page = await openApp(context, `?lesson=${lesson.name}${still}`);
    await new Promise((r) => setTimeout(r, 6000));
    await page.screenshot({ path: path.join(dir, `${lesson.name}.png`) });
    await page.close();
  }

  // The sheet prints: questions and numbers on white, no panel. Chrome
  // only: WebDriver BiDi has no print-media emulation for Firefox.
  if (browserName !== "chromium") {
    console.log("skip (Chrome-only: print-media emulation) a lesson prints its sheet without the panel");
    return;
  }
  const pp = await openApp(context, "?lesson=cold-collapse&autoplay=0");
  await pp.emulateMedia({ media: "print" });
  const printed = await pp.evaluate(() => ({
    lesson: getComputedStyle(document.getElementById("lesson")).display !== "none",
    panel: getComputedStyle(document.getElementById("panel")).display,
    background: getComputedStyle(document.body).backgroundColor,
  }));
  check("a lesson prints its sheet without the panel", printed.lesson && printed.panel === "none" &&
    printed.background === "rgb(255, 255, 255)", JSON.stringify(printed));
  await pp.pdf({ path: path.join(dir, "cold-collapse-sheet.pdf") }).catch(() => {});
  await pp.close();
}

// The tree made visible.
async function treeChecks({ context, openApp, waitFor, check, ART, webgrav }) {
  const dir = path.join(ART, "lessons");
  fs.mkdirSync(dir, { recursive: true });
  const base = "?model=plummer&n=2048&seed=5&solver=tree&theta=0.6&alpha=0&eps=0.05&rebuild=1&autoplay=0&yaw=0.4&pitch=0.3";
  const shot = async (q, file) => {
    const page = await openApp(context, q);
    await waitFor(page, () => window.webgrav.readouts >= 1, null, 60000, `${q}: read out`);
    await new Promise((r) => setTimeout(r, 1500));
    await page.screenshot({ path: file });
    return page;
  };
  const plainFile = path.join(dir, "tree-plain.png"), cellsFile = path.join(dir, "tree-cells.png");
  (await shot(base, plainFile)).close();
  const tp = await shot(`${base}&cells=3`, cellsFile);
  const a = PNG.sync.read(fs.readFileSync(plainFile)), b = PNG.sync.read(fs.readFileSync(cellsFile));
  let changed = 0;
  for (let i = 0; i < a.data.length; i += 4) if (Math.abs(a.data[i] - b.data[i]) + Math.abs(a.data[i + 1] - b.data[i + 1]) > 30) changed++;
  check("cells=3 draws the tree's cells over the view", changed > 2000, `${changed} pixels changed`);
  await tp.keyboard.press("p");
  if (await waitFor(tp, () => window.TreeView && window.TreeView.picked, null, 60000, "a particle is picked (key p)")) {
    const r = await tp.evaluate(() => window.TreeView.picked);
    check("the picked particle's list and force error", r.accepted > 0 && r.direct > 0 && r.force_error < 0.05 &&
      r.group_size >= 1, `${r.accepted} multipoles, ${r.leaves} leaves (${r.direct} particles), error ${r.force_error.toExponential(2)}`);
    await tp.screenshot({ path: path.join(dir, "tree-picked.png") });
  }
  await tp.click("#tree-accuracy");
  if (await waitFor(tp, () => window.webgrav.accuracy, null, 120000, "the accuracy panel measures")) {
    const acc = await tp.evaluate(() => window.webgrav.accuracy);
    // The CLI measures the page's own particles: a model sampled on two
    // adapters (SwiftShader here, lavapipe there) differs in its last
    // bits, and that moves the tree's cells.
    const state = path.join(dir, "tree-state.tipsy");
    const bytes = await tp.evaluate(async () => Array.from((await window.webgrav.app.export("tipsy")).bytes));
    fs.writeFileSync(state, Buffer.from(bytes));
    const cli = JSON.parse(webgrav("forces", "--in", state, "--solver", "tree",
      "--theta", "0.6", "--alpha", "0", "--eps", "0.05", "--compare", "direct").trim().split("\n").pop());
    const close = (x, y) => Math.abs(x - y) <= 1e-3 * Math.abs(y);
    check("the accuracy panel equals forces --compare direct", close(acc.median, cli.acc_error.median) &&
      close(acc.p99, cli.acc_error.p99) && acc.compared === cli.compared,
      `page ${acc.median.toExponential(3)} / ${acc.p99.toExponential(3)}, CLI ${JSON.stringify(cli)}`);
  }
  check("tree view: clean console", tp.problems.length === 0, tp.problems.join(" | "));
  await tp.close();
}
