// Lessons (`www/lessons/*.json`, compiled into the app): the student
// sheet of `?lesson=NAME&part=K&variant=J` beside the run (over it when
// embedded), its measures filled from the page's own read-outs, the
// teacher notes folded below, and a clean print. Answers are kept in the
// browser's session storage per lesson, so moving between parts and
// variants (each a page load with its URL) keeps them.
"use strict";

const Lessons = {
  all: [],
  current: null, // { lesson, part, variant }

  init(W) {
    Lessons.all = JSON.parse(window.wasmBindings.lessonsJson());
    const q = new URLSearchParams(location.search);
    const select = document.getElementById("lesson-select");
    for (const l of Lessons.all) select.appendChild(new Option(l.title, l.name));
    select.addEventListener("change", () => {
      if (select.value) Lessons.go({ lesson: select.value });
    });
    const name = q.get("lesson");
    const lesson = Lessons.all.find((l) => l.name === name);
    if (!lesson) return;
    const part = Math.min(parseInt(q.get("part") || "0", 10) || 0, lesson.parts.length - 1);
    const v = q.get("variant");
    const variant = v === null || !lesson.parts[part].runs ? null : parseInt(v, 10);
    Lessons.current = { lesson, part, variant: Number.isInteger(variant) ? variant : null };
    select.value = lesson.name;
    Lessons.render(W);
  },

  // Opens another lesson, part or variant: a page load with its URL, the
  // embedding's own parameters kept.
  go({ lesson, part = 0, variant = null }) {
    const keep = new URLSearchParams(location.search);
    const q = new URLSearchParams();
    q.set("lesson", lesson);
    if (part) q.set("part", part);
    if (variant !== null) q.set("variant", variant);
    for (const k of ["embed", "origin", "autoplay"]) if (keep.has(k)) q.set(k, keep.get(k));
    location.search = q.toString();
  },

  // The lesson on show as the start of a query ("lesson=…&part=…&"), or
  // "" without one.
  query() {
    const c = Lessons.current;
    if (!c) return "";
    const part = c.part ? `&part=${c.part}` : "";
    const variant = c.variant !== null ? `&variant=${c.variant}` : "";
    return `lesson=${c.lesson.name}${part}${variant}&`;
  },

  storageKey() {
    return `webgrav-lesson-${Lessons.current.lesson.name}`;
  },

  answers() {
    try {
      return JSON.parse(sessionStorage.getItem(Lessons.storageKey()) || "{}");
    } catch (e) {
      return {};
    }
  },

  save(id, value) {
    const a = Lessons.answers();
    a[id] = value;
    try {
      sessionStorage.setItem(Lessons.storageKey(), JSON.stringify(a));
    } catch (e) {
      // Storage refused (private mode, a sandboxed frame): answers stay on the page.
    }
  },

  // The value of measure `m` now, or null when the page has none yet.
  value(W, m) {
    const r = W.last;
    const bodies = W.app ? W.app.bodies() : null;
    const units = W.app ? W.app.units() : { time: 1 };
    switch (m.key) {
      case "time": return W.time * units.time;
      case "energy_error": return r ? r.energy_error : null;
      case "kinetic": return r ? r.kinetic : null;
      case "potential": return r ? r.potential : null;
      case "energy": return r ? r.energy : null;
      case "virial": return r ? r.virial : null;
      case "r10": return r ? r.lagrangian[0] : null;
      case "r50": return r ? r.lagrangian[1] : null;
      case "r90": return r ? r.lagrangian[2] : null;
      case "pp": return r && r.pp !== undefined ? r.pp : null;
      case "pc": return r && r.pc !== undefined ? r.pc : null;
      case "steps_per_second": return Number.isFinite(W.stepsPerSecond) ? W.stepsPerSecond : null;
      case "bar_a2": return r && r.galaxy ? r.galaxy.bar_a2 : null;
      case "return_time": return bodies ? bodies.return_time : null;
      case "return_distance": return bodies ? bodies.return_distance : null;
      case "force_median": return W.accuracy ? W.accuracy.median : null;
      case "force_p99": return W.accuracy ? W.accuracy.p99 : null;
      case "picked_multipoles": return TreeView.picked ? TreeView.picked.accepted : null;
      case "picked_direct": return TreeView.picked ? TreeView.picked.direct : null;
      case "picked_error": return TreeView.picked ? TreeView.picked.force_error : null;
      default: {
        const b = bodies && bodies.bodies[m.body];
        return b ? b[m.key] : null;
      }
    }
  },

  // The id of a measure in the answers: part, question, measure.
  id(k, i, j) {
    return `p${Lessons.current.part}-q${i}-m${j}`;
  },

  render(W) {
    const { lesson, part: k, variant } = Lessons.current;
    const part = lesson.parts[k];
    const box = document.getElementById("lesson");
    box.hidden = false;
    document.body.classList.add("with-lesson");
    const el = (tag, props = {}, ...children) => {
      const e = document.createElement(tag);
      Object.assign(e, props);
      e.append(...children.filter((c) => c !== null && c !== undefined));
      return e;
    };
    const list = (tag, items) => el(tag, {}, ...items.map((t) => el("li", { textContent: t })));
    const answers = Lessons.answers();
    const body = document.getElementById("lesson-body");
    body.replaceChildren();
    body.append(
      el("h2", { id: "lesson-title", textContent: lesson.title }),
      el("p", { className: "lesson-summary", textContent: `${lesson.summary} (${lesson.minutes} min; units: ${lesson.units})` }),
    );
    if (lesson.parts.length > 1) {
      const nav = el("div", { className: "buttons lesson-parts", role: "group", ariaLabel: "Parts of the lesson" });
      lesson.parts.forEach((p, i) => {
        const b = el("button", { type: "button", textContent: `${i + 1}. ${p.title}` });
        if (i === k) b.setAttribute("aria-current", "step");
        b.addEventListener("click", () => Lessons.go({ lesson: lesson.name, part: i }));
        nav.append(b);
      });
      body.append(nav);
    }
    body.append(el("h3", { textContent: `Part ${k + 1}: ${part.title}` }));
    if (part.runs && part.runs.length) {
      const nav = el("div", { className: "buttons lesson-runs", role: "group", ariaLabel: "Runs to compare" });
      const base = el("button", { type: "button", textContent: "as given" });
      if (variant === null) base.setAttribute("aria-current", "true");
      base.addEventListener("click", () => Lessons.go({ lesson: lesson.name, part: k }));
      nav.append(el("span", { className: "note", textContent: "Run: " }), base);
      part.runs.forEach((r, j) => {
        const b = el("button", { type: "button", textContent: r.label });
        if (variant === j) b.setAttribute("aria-current", "true");
        b.addEventListener("click", () => Lessons.go({ lesson: lesson.name, part: k, variant: j }));
        nav.append(b);
      });
      body.append(nav);
    }
    body.append(el("h4", { textContent: "Do" }), list("ol", part.do));
    body.append(el("h4", { textContent: "Watch" }), list("ul", part.watch));
    const questions = el("ol", { className: "lesson-questions" });
    part.questions.forEach((q, i) => {
      const item = el("li", {}, el("p", { textContent: q.text }));
      if (q.measures.length) {
        const table = el("table", { className: "lesson-measures" });
        q.measures.forEach((m, j) => {
          const id = Lessons.id(k, i, j);
          const input = el("input", { type: "text", id: `measure-${id}`, value: answers[id] || "", inputMode: "decimal" });
          input.dataset.measure = id;
          input.setAttribute("aria-label", `${m.label}${m.unit ? ` (${m.unit})` : ""}`);
          input.addEventListener("change", () => Lessons.save(id, input.value));
          const here = m.run === undefined || m.run === variant;
          const button = el("button", { type: "button", textContent: "Measure" });
          button.dataset.measureButton = id;
          button.disabled = !here;
          button.title = here
            ? "Copy the page's value now"
            : `Measured in the run "${part.runs[m.run].label}"`;
          button.addEventListener("click", () => {
            const v = Lessons.value(W, m);
            if (v === null || v === undefined || !Number.isFinite(v)) {
              W.message(`${m.label}: not measured yet — let the run go on.`, "info");
              return;
            }
            input.value = Lessons.format(v);
            Lessons.save(id, input.value);
          });
          const label = m.label + (m.run !== undefined ? ` [${part.runs[m.run].label}]` : "");
          table.append(el("tr", {},
            el("th", { scope: "row" }, el("label", { htmlFor: input.id, textContent: label })),
            el("td", {}, input),
            el("td", { className: "unit", textContent: m.unit || "" }),
            el("td", { className: "no-print" }, button)));
        });
        item.append(table);
      }
      const id = `p${k}-q${i}-answer`;
      const answer = el("textarea", { rows: 2, value: answers[id] || "", placeholder: "Your answer" });
      answer.setAttribute("aria-label", `Answer to question ${i + 1}`);
      answer.addEventListener("change", () => Lessons.save(id, answer.value));
      item.append(answer);
      questions.append(item);
    });
    body.append(el("h4", { textContent: "Questions" }), questions);
    const t = part.teacher;
    const expect = el("ul", {}, ...t.expect.map((e) => {
      const range = [e.min !== undefined ? `≥ ${e.min}` : null, e.max !== undefined ? `≤ ${e.max}` : null].filter((x) => x).join(" and ");
      const what = part.questions.flatMap((q) => q.measures)
        .find((m) => m.key === e.key && m.body === e.body && m.run === e.run);
      return el("li", { textContent: `${what ? what.label : e.key}: ${range}. ${e.why}` });
    }));
    body.append(el("details", { id: "teacher-notes" },
      el("summary", { textContent: "Teacher notes" }),
      el("h4", { textContent: "What the numbers should be" }), expect,
      el("h4", { textContent: "Notes" }), list("ul", t.notes),
      el("h4", { textContent: "Usual misconceptions" }), list("ul", t.misconceptions)));
    const print = el("button", { type: "button", textContent: "Print sheet", className: "no-print" });
    print.addEventListener("click", () => {
      document.getElementById("teacher-notes").open = false;
      window.print();
    });
    body.append(el("div", { className: "buttons no-print" }, print));
  },

  format(v) {
    const a = Math.abs(v);
    return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(3) : v.toPrecision(5);
  },
};
