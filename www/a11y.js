// Accessibility of the page: which keys count as hotkeys (letters only
// on the view or on nothing, never in a field or on a button: WCAG 2.1.4),
// the view's own keys (arrows orbit, shift-arrows pan, + and - zoom: the
// keyboard's way to do what dragging does, WCAG 2.5.7), the key list
// dialog (`?`), a description for each control whose label says too
// little, the live region that says in words what the view shows, and
// the start paused where the reader asked for reduced motion.
"use strict";

const A11y = {
  // Seconds between the live region's news while a run goes on: often
  // enough to follow it, rarely enough not to drown a screen reader.
  LIVE_PERIOD_MS: 5000,
  // The view's keyboard steps: a twentieth of a turn's quarter per press,
  // and a seventh closer or farther.
  ORBIT_STEP: 0.08,
  PAN_STEP_PX: 24,
  ZOOM_STEP: 1.15,

  // Whether a key press may act as a hotkey: no modifier, no dialog open;
  // a printable key only where focus is on the view or on nothing (so a
  // screen reader's or a field's own letters are never taken); Escape
  // anywhere but in a field.
  hotkey(e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return false;
    if (document.querySelector("dialog[open]")) return false;
    const t = e.target;
    if (e.key.length === 1) {
      return t === document.body || t === document.documentElement || t === window || t === document.getElementById("view");
    }
    return !(t.closest && t.closest("input, select, textarea, [contenteditable]"));
  },

  // Whether the run starts running: the URL's `autoplay`, except that a
  // reader who asked for reduced motion starts paused unless the URL
  // itself said autoplay (an author's explicit choice wins over the
  // default, the reader's preference over the default).
  startRunning(autoplay, given, match = window.matchMedia) {
    if (!autoplay) return false;
    if (given.includes("autoplay")) return true;
    return !(match && match("(prefers-reduced-motion: reduce)").matches);
  },

  init(W) {
    A11y.describeControls();
    A11y.attachView(W);
    A11y.attachHelp();
    window.addEventListener("keydown", (e) => {
      if (e.key === "?" && A11y.hotkey(e)) {
        e.preventDefault();
        A11y.openHelp();
      }
    });
    W.liveText = () => document.getElementById("live").textContent;
    setInterval(() => {
      if (W.running && performance.now() - (A11y.saidAt || 0) >= A11y.LIVE_PERIOD_MS) A11y.say();
    }, 1000);
  },

  // Each control whose label carries an explanation (its `title`) gets
  // that text as its description too: a screen reader says the label,
  // then the hint.
  describeControls() {
    for (const label of document.querySelectorAll("#panel label[title]")) {
      const control = label.querySelector("input, select");
      if (!control) continue;
      const hint = document.createElement("span");
      hint.className = "visually-hidden";
      hint.id = `hint-${control.dataset.key || control.id}`;
      hint.textContent = label.title;
      label.after(hint);
      control.setAttribute("aria-describedby", hint.id);
    }
  },

  attachView(W) {
    const view = document.getElementById("view");
    view.addEventListener("keydown", (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const arrows = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };
      const dpr = window.devicePixelRatio || 1;
      if (arrows[e.key]) {
        const [x, y] = arrows[e.key];
        if (e.shiftKey) W.app.pan(-x * A11y.PAN_STEP_PX * dpr, -y * A11y.PAN_STEP_PX * dpr);
        else W.app.orbit(-x * A11y.ORBIT_STEP, -y * A11y.ORBIT_STEP);
      } else if (e.key === "+" || e.key === "=") {
        W.app.zoom(1 / A11y.ZOOM_STEP);
      } else if (e.key === "-" || e.key === "_") {
        W.app.zoom(A11y.ZOOM_STEP);
      } else {
        return;
      }
      e.preventDefault();
      W.viewChanged();
    });
  },

  attachHelp() {
    const dialog = document.getElementById("keys-help");
    for (const id of ["keys-open", "embed-keys"]) {
      document.getElementById(id).addEventListener("click", () => A11y.openHelp());
    }
    document.getElementById("keys-close").addEventListener("click", () => dialog.close());
    // Focus goes back where it was (not every browser does it itself).
    dialog.addEventListener("close", () => {
      const back = A11y.beforeHelp;
      A11y.beforeHelp = null;
      if (back && back.isConnected) back.focus();
    });
  },

  openHelp() {
    const dialog = document.getElementById("keys-help");
    if (dialog.open) return;
    A11y.beforeHelp = document.activeElement;
    dialog.showModal();
    document.getElementById("keys-close").focus();
  },

  // What the view shows, in words: the run (preset or lesson, model, N,
  // solver), its time and energy error, and whether it runs.
  describe() {
    const W = window.webgrav;
    if (W.error) return `Stopped: ${W.error}`;
    if (!W.app) return "Starting.";
    const v = W.app.values();
    const solvers = {
      direct: "direct sum", tree: "Barnes-Hut tree", hermite4: "4th-order Hermite",
      hermite6: "6th-order Hermite",
    };
    const preset = document.getElementById("preset");
    const named = Lessons.current
      ? `Lesson: ${Lessons.current.lesson.title}. `
      : preset.value ? `${preset.selectedOptions[0].textContent.split(":")[0]}. ` : "";
    const n = W.progress ? W.progress.n : Number(v.n);
    const parts = [
      `${named}Model ${v.model.replace(/-/g, " ")}, ${n} particles, ${solvers[v.solver] || v.solver}`,
      `t = ${W.time.toPrecision(3)}`,
    ];
    if (W.last) parts.push(`|ΔE/E₀| = ${W.last.energy_error.toExponential(0)}`);
    let line = `${parts.join("; ")}; ${W.running ? "running" : "paused"}.`;
    if (v.theme === "light") line += " Light theme.";
    return line;
  },

  // Updates the live region (the polite announcement) now.
  say() {
    A11y.saidAt = performance.now();
    document.getElementById("live").textContent = A11y.describe();
  },
};

window.A11y = A11y;
