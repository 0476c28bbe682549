// Starts the wasm app once Trunk has loaded it: settings from the URL,
// WebGPU check, the animation loop (steps + drawing), throttled
// asynchronous read-outs (energy error, Lagrangian radii, GPU phase times,
// interactions) and the device-loss path. State for tests and the console
// lives on `window.webgrav`. Files named in the URL (`snapshot=`,
// `series=`) open in the series player; `fallback=` is the picture shown
// where WebGPU is missing.
"use strict";

const W = (window.webgrav = {
  app: null,
  canvas: null,
  running: false,
  pendingSteps: 0,
  time: 0,
  last: null, // last read-out
  readouts: 0,
  history: { energy: [], energies: [[], [], []], radii: [[], [], []], marks: [], galaxy: [], curveStart: null },
  error: null,
  lastMessage: null,
  // When (performance.now()) the first model was on screen, and when its
  // run was ready: the picture comes first where the model is made on
  // the GPU (pictureAt stays null where it is made on the host).
  pictureAt: null,
  runAt: null,
});

const $ = (id) => document.getElementById(id);

// Messages stay on the page until the reader dismisses them: a later one
// is added below, never over, an earlier one (a bad URL parameter's
// warning outlives the software-adapter note that follows it). The same
// text again moves to the end instead of repeating.
W.message = (text, kind = "error") => {
  const box = $("message");
  for (const old of box.querySelectorAll(".msg")) {
    if (old.dataset.text === text) old.remove();
  }
  const item = document.createElement("div");
  item.className = `msg ${kind}`;
  item.dataset.text = text;
  // Errors interrupt a screen reader; notes wait their turn.
  item.setAttribute("role", kind === "error" ? "alert" : "status");
  const body = document.createElement("span");
  body.className = "msg-text";
  body.textContent = text;
  const close = document.createElement("button");
  close.type = "button";
  close.className = "msg-close";
  close.textContent = "×";
  close.setAttribute("aria-label", "Dismiss this message");
  close.addEventListener("click", () => {
    item.remove();
    showMessages();
  });
  item.append(body, close);
  box.insertBefore(item, $("message-clear"));
  W.lastMessage = { text, kind };
  showMessages();
  if (kind === "error") HostApi.error(text);
};

// The box shows while it holds a message; "Dismiss all" from two on.
function showMessages() {
  const box = $("message");
  const count = box.querySelectorAll(".msg").length;
  box.hidden = count === 0;
  $("message-clear").hidden = count < 2;
}

W.dismissMessages = () => {
  for (const m of $("message").querySelectorAll(".msg")) m.remove();
  showMessages();
};
$("message-clear").addEventListener("click", W.dismissMessages);

// Where the page cannot draw (no WebGPU, no adapter): the URL's fallback
// picture, if it named one, above the explanation.
function showFallback(url) {
  if (!url) return;
  const img = document.createElement("img");
  img.id = "fallback";
  img.alt = "A still picture of the state (drawn by webgrav's native renderer)";
  img.src = url;
  $("error").classList.add("with-picture");
  $("error").prepend(img);
  $("view").hidden = true;
}

function fatal(text, canExport = false) {
  $("error-text").textContent = text;
  $("error-export").hidden = !canExport;
  $("error").hidden = false;
  $("status").textContent = "stopped";
  W.error = text;
  W.running = false;
  A11y.say();
  HostApi.error(text);
}

W.shareUrl = () => `${location.origin}${location.pathname}?${W.app.shareQuery()}`;

let urlTimer = null;
W.viewChanged = () => {
  // Keep the address bar shareable, without a history entry per drag.
  clearTimeout(urlTimer);
  urlTimer = setTimeout(() => {
    if (!W.app) return;
    const embed = document.body.classList.contains("embed") ? "&embed=1" : "";
    // Files the URL opened stay in it (they are same-origin paths), and
    // so does the lesson on show (a reload keeps its sheet).
    const files = W.sourceQuery ? `&${W.sourceQuery}` : "";
    const lesson = Lessons.query();
    // So does the embedding's allow-list (never in a shared link).
    history.replaceState(null, "", `?${lesson}${W.app.shareQuery()}${embed}${files}${HostApi.query()}`);
    $("embed-open").href = W.shareUrl() + files;
  }, 400);
};

W.restarted = () => {
  W.accuracy = null;
  // No step before the first read-out: it is E₀ of |ΔE/E₀|, the state at
  // the start however many steps a frame takes.
  W.firstRead = true;
  // The new run's first read-out is whole; it says whether later ones
  // may be light.
  W.canSample = false;
  W.units = W.app.units();
  Bodies.picked = null;
  TreeView.show(W);
  W.history = { energy: [], energies: [[], [], []], radii: [[], [], []], marks: [], galaxy: [], curveStart: null };
  W.log = [];
  W.startedAt = performance.now();
  W.pendingSteps = 0;
  W.dirty = true;
  W.sps = [];
  const file = W.app.sourceFile();
  $("source").hidden = !file;
  $("source").textContent = file ? `Started from ${file} (not part of shared links).` : "";
  Controls.show(W.app.values());
  Controls.sparseDiskNote(W);
  W.viewChanged();
  A11y.say();
};

// Resolves to the reason a change was refused (also shown), or null.
W.apply = async (values) => {
  let error = null;
  try {
    const what = await W.app.apply(values);
    W.spf = parseInt(W.app.values().spf, 10) || 1;
    if (what === "restart") W.restarted();
    if (what === "reconfigure") { W.dirty = true; W.firstRead = true; W.canSample = false; TreeView.show(W); }
    W.viewChanged();
  } catch (e) {
    error = errorText(e);
    W.message(error);
  }
  Controls.show(W.app.values());
  return error;
};

W.setRunning = (on) => {
  W.running = on && !W.error;
  $("run").textContent = W.running ? "Pause" : "Run";
  $("embed-run").textContent = W.running ? "❚❚" : "▶";
  $("embed-run").setAttribute("aria-label", W.running ? "Pause" : "Run");
  A11y.say();
};

W.singleStep = () => {
  W.setRunning(false);
  W.pendingSteps++;
};

// Resolves to the reason the reset failed (also shown), or null.
W.reset = async () => {
  try {
    await W.app.reset();
    W.restarted();
    return null;
  } catch (e) {
    W.message(errorText(e));
    return errorText(e);
  }
};

function sizeCanvas() {
  const dpr = window.devicePixelRatio || 1;
  W.canvas.width = Math.max(1, Math.floor(W.canvas.clientWidth * dpr));
  W.canvas.height = Math.max(1, Math.floor(W.canvas.clientHeight * dpr));
}

function fmt(x, digits = 3) {
  return Number.isFinite(x) ? x.toFixed(digits) : "–";
}

function showReadout(r, sps) {
  const u = W.units || { time: 1, time_unit: "" };
  const inUnits = u.time_unit ? ` (${(W.time * u.time).toPrecision(4)} ${u.time_unit})` : "";
  const lines = [
    `t = ${fmt(W.time)}${inUnits}   ${W.progress.steps} ${r && r.hermite ? "block " : ""}steps   ${sps === null ? "–" : sps.toFixed(1)} steps/s`,
  ];
  if (r) {
    lines.push(`|ΔE/E₀| = ${r.energy_error.toExponential(2)} (${r.potential_sum})   Q = ${fmt(r.virial)}`);
    lines.push(`r10/50/90 = ${r.lagrangian.map((x) => fmt(x)).join(" / ")}`);
    if (r.pp !== undefined) {
      lines.push(`interactions/particle: ${r.pp.toFixed(0)} p-p + ${r.pc.toFixed(0)} p-c`);
    }
    if (r.hermite) {
      lines.push(`${r.block_steps} block steps, ${r.force_evaluations} force evaluations`);
      // Particles per time-step level: dt = dt_max / 2^k.
      const lv = r.levels.map((c, k) => (c ? `${k}:${c}` : null)).filter((x) => x);
      lines.push(`dt levels (dt_max/2^k, k:count): ${lv.join(" ")}`);
      lines.push("GPU phase times: n/a (Hermite)");
    }
    if (r.block_levels) {
      // Tree block steps: particles per level, dt / 2^k.
      const lv = r.block_levels.map((c, k) => (c ? `${k}:${c}` : null)).filter((x) => x);
      lines.push(`block steps (dt/2^k, k:count): ${lv.join(" ")}`);
    }
    if (r.timing === "unavailable") lines.push("GPU phase times: unavailable (no timestamp-query)");
  }
  $("readout").textContent = lines.join("\n");
  $("embed-time").textContent = `t = ${fmt(W.time, 2)}`;
}

function plot() {
  const h = W.history;
  plotGalaxy(h);
  Plots.line($("plot-energy"), [{ points: h.energy, color: "#f9a" }], { logY: true, marks: h.marks });
  // K, W and E: what the orbit lessons compare (URL energy=1).
  $("energies").hidden = W.app.values().energy !== "1";
  if (!$("energies").hidden) {
    Plots.line($("plot-energies"), [
      { points: h.energies[0], color: "#7cf" },
      { points: h.energies[1], color: "#f86" },
      { points: h.energies[2], color: "#fd6" },
    ]);
  }
  Plots.line($("plot-radii"), [
    { points: h.radii[0], color: "#7cf" },
    { points: h.radii[1], color: "#fd6" },
    { points: h.radii[2], color: "#f86" },
  ]);
}

// Galaxy read-outs: the rotation curve now against the one at the start,
// and over time the disk's bar strength A2 (or, without a disk, the
// separation of the two black holes).
function plotGalaxy(h) {
  const last = h.galaxy[h.galaxy.length - 1];
  $("galaxy").hidden = !last;
  if (!last) return;
  Plots.line($("plot-rotation"), [
    { points: h.curveStart || [], color: "#678" },
    { points: last.rotation_curve, color: "#7cf" },
    // What the stars alone would hold up: the halo's share of v_c.
    { points: last.without_halo || [], color: "#f86" },
  ], { xLabel: "r" });
  const useBar = last.bar_a2 !== null;
  const key = useBar ? "bar_a2" : "bh_separation";
  $("galaxy-time-title").textContent = useBar
    ? "Bar strength A₂ of the disk"
    : "Black-hole separation";
  const points = h.galaxy.filter((g) => g[key] !== null).map((g) => [g.time, g[key]]);
  Plots.line($("plot-galaxy-time"), [{ points, color: "#fd6" }]);
  // Neither a disk nor two black holes: nothing to follow over time.
  const none = !useBar && last.bh_separation === null;
  $("plot-galaxy-time").hidden = none;
  $("galaxy-time-title").hidden = none;
}

// One read-out at a time, every 0.5 s, and while paused only when
// something changed. A whole read-out reads the state back, so at large N
// they come less often (N/500 ms); between them, where the run can be
// measured on the GPU (`can_sample`), light ones (a view sample) keep the
// plots live.
let reading = false;
let lastRead = -Infinity;
let lastWhole = -Infinity;
function maybeReadout(now) {
  if (Player.active()) return; // the player plots its frames' read-outs
  const n = W.progress.n;
  const wholeEvery = Math.max(500, n / 500);
  // A new run's first read-out (its energy reference: it takes no step
  // before) comes at once.
  const interval = W.firstRead ? 0 : W.canSample ? 500 : wholeEvery;
  if (reading || now - lastRead < interval) return;
  if (!W.running && !W.dirty && W.progress.steps === W.readSteps) return;
  reading = true;
  lastRead = now;
  W.dirty = false;
  const light = W.canSample && now - lastWhole < wholeEvery;
  W.app.readout(light).then((r) => {
    if (!r.sampled) {
      lastWhole = now;
      // What an export after a device loss holds.
      W.lastWholeTime = r.time;
    }
    W.canSample = r.can_sample;
    W.firstRead = false;
    W.last = r;
    W.readouts++;
    // The run log, with the keys of the CLI's (`webgrav run --log`).
    const line = {
      t: r.time, steps: r.steps, energy: r.energy, kinetic: r.kinetic, potential: r.potential,
      rel_energy_error: r.energy_error, rel_energy_error_max: r.energy_error_max,
      virial_ratio: r.virial, momentum: r.momentum, angular_momentum: r.angular_momentum,
      potential_sum: r.potential_sum, wall_s: (performance.now() - W.startedAt) / 1000,
    };
    if (r.phases) line.phase_ms = Object.fromEntries(r.phases);
    if (r.pp !== undefined) Object.assign(line, { pp_per_particle: r.pp, pc_per_particle: r.pc });
    if (r.hermite) Object.assign(line, { block_steps: r.block_steps, force_evaluations: r.force_evaluations, particles_per_level: r.levels });
    if (r.block_levels) line.particles_per_level = r.block_levels;
    W.log.push(line);
    if (W.log.length > 100000) W.log.splice(0, W.log.length - 100000);
    W.readSteps = r.steps;
    const h = W.history;
    if (r.e0_reset && h.energy.length) h.marks.push(r.time);
    h.energy.push([r.time, r.energy_error]);
    [r.kinetic, r.potential, r.energy].forEach((x, k) => h.energies[k].push([r.time, x]));
    r.lagrangian.forEach((x, k) => h.radii[k].push([r.time, x]));
    if (r.galaxy) {
      if (!h.curveStart) h.curveStart = r.galaxy.rotation_curve;
      h.galaxy.push({ time: r.time, ...r.galaxy });
      if (h.galaxy.length > 2000) h.galaxy.splice(0, h.galaxy.length - 2000);
    }
    for (const s of [h.energy, ...h.energies, ...h.radii]) if (s.length > 2000) s.splice(0, s.length - 2000);
    $("phases").hidden = !r.phases;
    if (r.phases) Plots.phaseBar($("phase-bar"), $("phase-legend"), r.phases);
    plot();
  }, (e) => {
    // Only the read-back's own failure lands here (a slip in the handler
    // above is an uncaught error on the console, not a GPU failure). A
    // run replaced meanwhile has nothing to show; anything else is news,
    // on the page (a lost device explains itself in checkLost).
    // (Its run's successor still waits for its own first read-out.)
    if (e.kind === "superseded") return;
    W.firstRead = false;
    W.readbackError = errorText(e);
    console.warn("read-out:", W.readbackError);
    if (!W.app.lostReason()) W.message(`Reading the state back from the GPU failed: ${W.readbackError}`);
  }).finally(() => { reading = false; });
}

// The density map's legend over the view: Σ at the ends of the colour bar
// and a scale bar, from the exposure the renderer measured (read back
// every half second). The labels stay off the WebGPU canvas, so it shows
// what `webgrav render --legend off` writes.
let legendBusy = false;
let legendAt = -Infinity;
function maybeLegend(now) {
  if (legendBusy || now - legendAt < 500) return;
  legendAt = now;
  const canvas = $("legend");
  // A lesson's picture has a scale bar in its units (AU, kpc) too.
  const density = W.app.values().map === "density";
  if (!density && !Lessons.current) {
    canvas.hidden = true;
    return;
  }
  legendBusy = true;
  W.app.legend().then((l) => {
    if (l) drawLegend(canvas, l);
    W.legend = l;
  }).catch((e) => console.warn("legend:", errorText(e))).finally(() => { legendBusy = false; });
}

// Ticks of log10 Σ from a to b: every 1, 0.5, 0.2 or 0.1, whichever gives
// two or more (as the CLI's colour bar, render::legend::ticks).
function legendTicks(a, b) {
  for (const [step, digits] of [[1, 0], [0.5, 1], [0.2, 1], [0.1, 1]]) {
    const first = Math.ceil(a / step), last = Math.floor(b / step);
    if (last - first >= 1 || step === 0.1) {
      const t = [];
      for (let k = first; k <= last; k++) t.push([k * step, digits]);
      return t;
    }
  }
  return [];
}

function drawLegend(canvas, l) {
  canvas.hidden = false;
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, h = canvas.clientHeight;
  canvas.width = Math.round(w * dpr);
  canvas.height = Math.round(h * dpr);
  const g = canvas.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  g.font = "12px system-ui, sans-serif";
  g.lineWidth = 3;
  g.strokeStyle = "#000";
  const text = (s, x, y, align) => {
    g.textAlign = align;
    g.strokeText(s, x, y);
    g.fillStyle = "#fff";
    g.fillText(s, x, y);
  };
  if (l.map === "density" && l.lo > 0 && l.hi > l.lo) {
    const bw = 14, x0 = w - 16 - bw, y0 = Math.round(0.2 * h), bh = Math.round(0.6 * h);
    const grad = g.createLinearGradient(0, y0 + bh, 0, y0);
    l.stops.forEach((c, k) => grad.addColorStop(k / (l.stops.length - 1), `rgb(${c.map((v) => Math.round(255 * v)).join(",")})`));
    g.fillStyle = grad;
    g.fillRect(x0, y0, bw, bh);
    g.lineWidth = 1;
    g.strokeStyle = "#fff";
    g.strokeRect(x0 - 0.5, y0 - 0.5, bw + 1, bh + 1);
    g.lineWidth = 3;
    g.strokeStyle = "#000";
    const a = Math.log10(l.lo), b = Math.log10(l.hi);
    for (const [v, digits] of legendTicks(a, b)) {
      const y = y0 + (1 - (v - a) / (b - a)) * bh;
      g.fillStyle = "#fff";
      g.fillRect(x0 - 5, Math.round(y), 5, 1);
      text(v.toFixed(digits), x0 - 8, y + 4, "right");
    }
    text(l.label, w - 16, y0 - 10, "right");
  }
  if (l.scale_px > 0) {
    const len = l.scale_px / dpr, x = 14, y = h - 44;
    g.fillStyle = "#fff";
    g.fillRect(x, y, len, 3);
    text(l.scale_label, x + len / 2, y - 6, "center");
  }
}

function checkLost(e) {
  const reason = W.app.lostReason();
  if (!reason && !e) return false;
  const canExport = W.app.hasReadback();
  if (W.readouts === 0 && !canExport) {
    // Lost before anything came back: not a driver reset but a WebGPU that
    // cannot run here (e.g. headless Chromium without a Vulkan device,
    // whose read-backs fail and whose device then goes).
    fatal(
      `This browser's WebGPU lost its GPU device (${reason || errorText(e)}) before a single result ` +
      `came back from the GPU, so webgrav cannot run in it` +
      (W.readbackError ? ` (the first read-back failed: ${W.readbackError})` : "") + ".\n\n" +
      "Update the browser or the graphics driver, turn on hardware acceleration in the browser's " +
      "settings, or try another WebGPU browser. Headless Chromium needs a Vulkan device: " +
      "--enable-features=Vulkan --use-vulkan=swiftshader --use-angle=swiftshader --enable-unsafe-swiftshader.");
    return true;
  }
  fatal(
    "The GPU device was lost" + (reason ? ` (${reason})` : "") + ", so the simulation stopped. " +
    "This happens when the GPU driver resets, the GPU is needed elsewhere, or the tab was in the " +
    "background too long. Reload the page to start again." +
    (canExport
      ? `\n\nThe last state read back (t = ${fmt(W.lastWholeTime ?? NaN)}) can still be exported:`
      : "\n\nNo state had been read back, so there is nothing to export."),
    canExport);
  return true;
}

function loop(now) {
  if (W.error) return;
  // The benchmark has the GPU to itself: the paused view would still
  // redraw once a second beside it (~350 ms of a core on a software
  // adapter).
  if (Bench.running) {
    requestAnimationFrame(loop);
    return;
  }
  const app = W.app;
  let issued = 0;
  try {
    const want = W.firstRead ? 0 : W.running ? W.spf : Math.min(W.pendingSteps, 1);
    issued = app.frame(want);
  } catch (e) {
    checkLost(e);
    return;
  }
  if (!W.running) W.pendingSteps = Math.max(0, W.pendingSteps - issued);
  for (const e of app.takeErrors()) console.error("GPU error:", e), W.message(`GPU error: ${e}`);
  if (checkLost(null)) return;
  W.progress = app.progress();
  // The player's frame sets the time while a series is on show.
  if (!Player.active()) W.time = W.progress.time;
  // Steps per second over the last two seconds of finished steps.
  W.sps.push([now, W.progress.steps]);
  while (W.sps.length > 2 && now - W.sps[0][0] > 2000) W.sps.shift();
  const [t0, s0] = W.sps[0];
  const sps = now - t0 > 200 ? ((W.progress.steps - s0) * 1000) / (now - t0) : null;
  W.stepsPerSecond = sps;
  maybeReadout(now);
  Bodies.draw(W);
  maybeLegend(now);
  if (now - (W.hudAt || 0) > 250) {
    W.hudAt = now;
    showReadout(W.last, sps);
    if (Bodies.picked !== null) Bodies.show(W);
  }
  requestAnimationFrame(loop);
}

// Whether WebGPU runs on the CPU here (SwiftShader, llvmpipe/lavapipe):
// there every workgroup barrier costs about a millisecond.
async function softwareAdapter() {
  try {
    const adapter = await navigator.gpu.requestAdapter();
    return window.wasmBindings.isSoftwareAdapter(adapter);
  } catch (e) {
    return false;
  }
}

async function main() {
  let { values, given, warnings, embed, autoplay, preset, sources, origin } = window.wasmBindings.parseSettings(location.search);
  HostApi.init(W, origin);
  W.sourceQuery = sources.query;
  if (embed) document.body.classList.add("embed");
  $("panel").hidden = embed;
  document.body.classList.toggle("panel-open", !embed);
  $("embed-bar").hidden = !embed;
  if (warnings.length) W.message(warnings.join("\n"));
  if (!navigator.gpu) {
    fatal("This browser has no WebGPU, which webgrav needs to run the simulation on your GPU.\n\n" +
      "Use a current Chrome or Edge, Safari 26 or later, or Firefox with WebGPU enabled " +
      "(about:config → dom.webgpu.enabled). On Linux, Chrome may need " +
      "chrome://flags/#enable-unsafe-webgpu.");
    showFallback(sources.fallback);
    return;
  }
  // A software adapter starts small unless the URL chose solver or N.
  let software = [];
  W.software = await softwareAdapter();
  if (W.software) {
    const r = window.wasmBindings.softwareStart(values, given);
    values = r.values;
    software = r.changed;
  }
  W.canvas = $("view");
  sizeCanvas();
  try {
    // The model is drawn before its solver's kernels are built (on a new
    // device, about half of the wait for the first frame).
    W.app = await window.wasmBindings.WebApp.create(W.canvas, values, () => {
      W.pictureAt = performance.now();
      $("status").textContent = "building the solver…";
    });
    W.runAt = performance.now();
  } catch (e) {
    const text = errorText(e);
    fatal(/adapter|WebGPU/i.test(text)
      ? `WebGPU is there but no usable GPU was found: ${text}\n\nCheck that hardware acceleration is on, or try another browser.`
      : `Could not start the simulation: ${text}`);
    showFallback(sources.fallback);
    return;
  }
  if (software.length) {
    W.message(`WebGPU runs on the CPU in this browser (a software adapter), so the page starts small: ` +
      `${software.join(", ")}. Choose the solver and N in the panel, or set solver= and n= in the URL.`, "info");
  }
  const info = W.app.info();
  W.spf = parseInt(values.spf, 10) || 1;
  $("status").textContent = info.adapter;
  $("status").title = `largest N: tree ${info.max_tree}, direct ${info.max_direct}, Hermite ${info.max_hermite4}`;
  Controls.init(W);
  Player.init(W);
  Bench.init(W);
  if (preset) {
    $("preset").value = preset.name;
    Controls.caption(preset);
  }
  CameraInput.attach(W.canvas, W);
  Bodies.attach(W.canvas, W);
  TreeView.attach(W.canvas, W);
  Lessons.init(W);
  $("lesson-toggle").addEventListener("click", () => {
    const folded = $("lesson").classList.toggle("folded");
    $("lesson-toggle").setAttribute("aria-expanded", String(!folded));
  });
  A11y.init(W);
  W.restarted();
  W.setRunning(A11y.startRunning(autoplay, given));
  // The canvas changes size with the window and the panel.
  new ResizeObserver(() => {
    sizeCanvas();
    W.app.resize(W.canvas.width, W.canvas.height);
  }).observe(W.canvas);
  W.progress = W.app.progress();
  W.sps = [];
  W.ready = true;
  HostApi.ready();
  requestAnimationFrame(loop);
  // A lost device is also looked for off the frame loop: Firefox stops
  // calling animation frames once its device is gone, before it reports
  // the loss.
  const lostPoll = setInterval(() => {
    if (W.error || checkLost(null)) clearInterval(lostPoll);
  }, 500);
  if (sources.snapshots.length || sources.series.length) {
    await Player.openUrls(W, sources.snapshots, sources.series);
  }
}

// Trunk's loader announces the wasm with an event that may fire before or
// after this deferred script runs.
if (window.wasmBindings) main();
else addEventListener("TrunkApplicationStarted", main, { once: true });
