// An example course page: two webgrav simulations in iframes, driven by
// webgrav's host-page API (postMessage; www/host.js is the other side)
// from this page's own buttons, and a table filled from their `state`
// events. `?sim=URL` names the webgrav page (default ../, the page this
// example ships with); `?accept=ORIGIN` is the origin= the frames are
// given (default this page's origin; the tests give a wrong one to see
// the commands ignored). Everything received is kept in `course.log`.
"use strict";

const query = new URLSearchParams(location.search);
const SIM = new URL(query.get("sim") || "../", location.href);
const ACCEPT = query.get("accept") || location.origin;
// The same Plummer sphere twice; only the time step differs.
const RUN = "model=plummer&n=1024&seed=1&solver=direct&eps=0.02&spf=2&autoplay=0&embed=1";
const RUNS = [
  { key: "a", label: "Δt = 1/128", dt: 0.0078125 },
  { key: "b", label: "Δt = 1/32", dt: 0.03125 },
];

const course = (window.course = { sims: [], log: [], captures: {} });
const $ = (id) => document.getElementById(id);
let nextId = 1;

// Sends a command to one simulation; resolves to its reply.
function send(sim, message, transfer = []) {
  const id = nextId++;
  return new Promise((resolve) => {
    sim.pending.set(id, resolve);
    sim.frame.contentWindow.postMessage({ ...message, id }, { targetOrigin: SIM.origin, transfer });
  });
}

// Sends a command to both simulations; resolves to both replies.
function sendBoth(message) {
  return Promise.all(course.sims.map((sim) => send(sim, message)));
}

function fmt(x, digits) {
  return typeof x === "number" && Number.isFinite(x) ? x.toFixed(digits) : "–";
}

function showRow(sim) {
  const s = sim.state || {};
  const cells = sim.row.cells;
  cells[2].textContent = fmt(s.t, 3);
  cells[3].textContent = s.steps === undefined ? "–" : String(s.steps);
  cells[4].textContent = typeof s.energy_error === "number" ? s.energy_error.toExponential(2) : "–";
  cells[5].textContent = s.n === undefined ? "–" : String(s.n);
  const status = cells[6];
  status.className = sim.error ? "status error" : "status";
  status.textContent = sim.error || (!sim.ready ? "starting…" : s.running ? "running" : "paused");
}

// A received message as a line of the log (without the picture's bytes).
function logLine(sim, m) {
  const { png, ...rest } = m;
  const entry = { sim: sim.key, ...rest, ...(png ? { png_bytes: png.byteLength } : {}) };
  course.log.push(entry);
  const item = document.createElement("li");
  item.textContent = `${sim.key}: ${JSON.stringify(rest)}${png ? ` (+ ${png.byteLength} bytes of PNG)` : ""}`;
  const log = $("log");
  log.prepend(item);
  while (log.children.length > 200) log.lastChild.remove();
}

function showCapture(sim, m) {
  course.captures[sim.key] = { width: m.width, height: m.height, png: new Uint8Array(m.png) };
  let img = document.querySelector(`#captures img[data-sim="${sim.key}"]`);
  if (!img) {
    img = new Image();
    img.dataset.sim = sim.key;
    $("captures").append(img);
  }
  if (img.src) URL.revokeObjectURL(img.src);
  img.src = URL.createObjectURL(new Blob([m.png], { type: "image/png" }));
  img.alt = `${sim.label} at t = ${fmt(sim.state && sim.state.t, 3)}`;
}

window.addEventListener("message", (e) => {
  const sim = course.sims.find((s) => s.frame.contentWindow === e.source);
  if (!sim || e.origin !== SIM.origin || !e.data || typeof e.data.webgrav !== "string") return;
  const m = e.data;
  logLine(sim, m);
  if (m.webgrav === "ready") {
    sim.ready = true;
    sim.error = null;
  }
  if (m.webgrav === "state") sim.state = m;
  if (m.webgrav === "capture") showCapture(sim, m);
  if (m.webgrav === "error") sim.error = m.message;
  if (m.webgrav === "ok") sim.error = null;
  const resolve = m.id !== undefined && sim.pending.get(m.id);
  if (resolve) {
    sim.pending.delete(m.id);
    resolve(m);
  }
  showRow(sim);
});

// The frames start once this page listens, so no `ready` is missed.
for (const run of RUNS) {
  const src = new URL(SIM);
  src.search = `${RUN}&dt=${run.dt}&origin=${encodeURIComponent(ACCEPT)}`;
  const figure = document.createElement("figure");
  const caption = document.createElement("figcaption");
  caption.textContent = run.label;
  const frame = document.createElement("iframe");
  frame.title = `webgrav simulation, ${run.label}`;
  frame.src = src.href;
  figure.append(caption, frame);
  $("sims").append(figure);

  const row = document.createElement("tr");
  const name = document.createElement("th");
  name.scope = "row";
  name.textContent = run.label;
  const dtCell = document.createElement("td");
  const dt = document.createElement("input");
  dt.type = "number";
  dt.step = "any";
  dt.min = "0";
  dt.value = String(run.dt);
  dt.dataset.sim = run.key;
  dt.setAttribute("aria-label", `Δt of ${run.label}`);
  const set = document.createElement("button");
  set.type = "button";
  set.textContent = "Set";
  set.dataset.setDt = run.key;
  dtCell.append(dt, " ", set);
  row.append(name, dtCell, ...[0, 1, 2, 3, 4].map(() => document.createElement("td")));
  $("table").tBodies[0].append(row);

  const sim = { ...run, frame, row, ready: false, state: null, error: null, pending: new Map() };
  set.addEventListener("click", () => send(sim, { webgrav: "set", params: { dt: dt.value } }));
  course.sims.push(sim);
  showRow(sim);
}

$("play").addEventListener("click", () => sendBoth({ webgrav: "play" }));
$("pause").addEventListener("click", () => sendBoth({ webgrav: "pause" }));
$("step").addEventListener("click", () => sendBoth({ webgrav: "step", steps: Number($("steps").value) || 1 }));
$("reset").addEventListener("click", () => sendBoth({ webgrav: "reset" }));
$("capture").addEventListener("click", () => sendBoth({ webgrav: "capture" }));
$("get").addEventListener("click", () => sendBoth({ webgrav: "get" }));
$("snapshot").addEventListener("change", async (e) => {
  const file = e.target.files[0];
  e.target.value = "";
  if (!file) return;
  const bytes = await file.arrayBuffer();
  // Each frame gets its own copy: a transferred buffer is gone.
  await Promise.all(course.sims.map((sim) =>
    send(sim, { webgrav: "snapshot", name: file.name, bytes: bytes.slice(0) }, [])));
});
