// The control panel, the embed bar, import/export and camera input
// (mouse, wheel, touch), wired to the wasm app held in `webgrav.app`.
// Everything the panel shows is a URL-style setting of the app
// (`data-key` attributes name them, as in the page's URL). What a setting
// accepts and which solvers it applies to come from the app's settings
// table (`catalog().params`); nothing is re-decided here.
"use strict";

function download(blob, name) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

// The text of an error from the app (an Error with a `kind`) or anything
// else thrown.
function errorText(e) {
  return e && e.message ? e.message : `${e}`;
}

// Shows `text` selected in the field `id` and copies it to the clipboard,
// or asks for the selection to be copied where the page may not.
async function showAndCopy(W, id, text, what) {
  const field = document.getElementById(id);
  field.value = text;
  field.hidden = false;
  field.select();
  try {
    await navigator.clipboard.writeText(text);
    W.message(`${what[0].toUpperCase()}${what.slice(1)} copied to the clipboard.`, "info");
  } catch {
    W.message(`Copy the selected ${what}.`, "info");
  }
}

function fileStem(time) {
  return `webgrav-t${time.toFixed(4)}`;
}

// Fewer disk particles than this draw no recognisable disk.
const SPARSE_DISK_PARTICLES = 1000;

const Controls = {
  // Fills the selects from the wasm catalogue and wires every control.
  init(W) {
    const cat = window.wasmBindings.catalog();
    Controls.params = new Map(cat.params.map((p) => [p.key, p]));
    for (const el of document.querySelectorAll("[data-key]")) {
      const p = Controls.params.get(el.dataset.key);
      if (!p) continue;
      if (p.kind === "choice" && el.tagName === "SELECT") {
        const titles = { ds: "double-single" };
        el.replaceChildren(...p.choices.map((n) => new Option(titles[n] || n, n)));
      } else if (el.type === "number") {
        // Number fields accept the table's range (sliders keep theirs).
        el.min = p.min;
        el.max = p.max;
      }
    }
    const preset = document.getElementById("preset");
    for (const p of cat.presets) preset.appendChild(new Option(p.title, p.name));
    // The gallery: one picture per preset (`www/figures/gallery/NAME.jpg`),
    // each a button that runs its preset as the menu does.
    const gallery = document.getElementById("gallery");
    for (const p of cat.presets) {
      const item = document.createElement("button");
      item.type = "button";
      item.className = "gallery-item";
      item.dataset.preset = p.name;
      item.title = `${p.title}. ${p.caption}`;
      const img = new Image(160, 120);
      img.src = `gallery/${p.name}.jpg`;
      img.alt = p.title;
      img.loading = "lazy";
      const label = document.createElement("span");
      label.textContent = p.title.split(":")[0];
      item.append(img, label);
      item.addEventListener("click", () => {
        preset.value = p.name;
        preset.dispatchEvent(new Event("change"));
      });
      gallery.appendChild(item);
    }
    preset.addEventListener("change", () => {
      if (preset.value) Controls.runPreset(W, preset.value);
    });

    for (const el of document.querySelectorAll("[data-key]")) {
      const key = el.dataset.key;
      const event = el.type === "range" ? "input" : "change";
      el.addEventListener(event, () => {
        const value = el.type === "checkbox" ? (el.checked ? "1" : "0") : el.value;
        W.apply({ [key]: value });
      });
    }

    document.getElementById("run").addEventListener("click", () => W.setRunning(!W.running));
    // Embedded, the one button plays the series when one is open.
    document.getElementById("embed-run").addEventListener("click", () => {
      if (!Player.active()) W.setRunning(!W.running);
      else if (Player.timer) Player.pause();
      else Player.play(W);
    });
    document.getElementById("step").addEventListener("click", () => W.singleStep());
    document.getElementById("reset").addEventListener("click", () => W.reset());
    document.getElementById("fit").addEventListener("click", () => W.app.fit());

    document.getElementById("export-tipsy").addEventListener("click", () => Controls.exportState(W, "tipsy"));
    document.getElementById("export-csv").addEventListener("click", () => Controls.exportState(W, "csv"));
    document.getElementById("lost-tipsy").addEventListener("click", () => Controls.exportState(W, "tipsy"));
    document.getElementById("lost-csv").addEventListener("click", () => Controls.exportState(W, "csv"));
    document.getElementById("export-log").addEventListener("click", () => {
      const text = W.log.map((l) => JSON.stringify(l)).join("\n") + "\n";
      download(new Blob([text], { type: "application/x-ndjson" }), `${fileStem(W.time)}.log.jsonl`);
    });
    document.getElementById("export-png").addEventListener("click", () => {
      // toBlob must run in the task that drew the frame (WebGPU canvases
      // hand their image to the page only until the frame is presented).
      W.app.render();
      W.canvas.toBlob((blob) => download(blob, `${fileStem(W.time)}.png`), "image/png");
    });
    document.getElementById("share").addEventListener("click", () => showAndCopy(W, "share-url", W.shareUrl(), "link"));

    document.getElementById("cmd-make").addEventListener("click", async () => {
      const tEnd = Number(document.getElementById("cmd-t-end").value);
      const ranks = Number(document.getElementById("cmd-ranks").value);
      const field = document.getElementById("cmd-text");
      let text;
      try {
        text = W.app.runCommand(tEnd, ranks);
      } catch (e) {
        field.hidden = true;
        W.message(errorText(e), "error");
        return;
      }
      await showAndCopy(W, "cmd-text", text, "command");
    });

    const input = document.getElementById("import");
    input.addEventListener("change", () => {
      if (input.files.length) Controls.importFile(W, input.files[0]);
      input.value = "";
    });
    const drop = document.getElementById("drop");
    let depth = 0;
    window.addEventListener("dragenter", (e) => { e.preventDefault(); depth++; drop.hidden = false; });
    window.addEventListener("dragleave", () => { if (--depth <= 0) { depth = 0; drop.hidden = true; } });
    window.addEventListener("dragover", (e) => e.preventDefault());
    window.addEventListener("drop", (e) => {
      e.preventDefault();
      depth = 0;
      drop.hidden = true;
      const files = e.dataTransfer ? [...e.dataTransfer.files] : [];
      if (files.length > 1) Player.open(W, files);
      else if (files.length === 1) {
        // A benchmark file (JSON lines of `webgrav bench`) is compared,
        // anything else opened as a snapshot.
        Bench.claims(files[0]).then((bench) =>
          bench ? Bench.openNative(W, files[0]) : Controls.importFile(W, files[0]));
      }
    });

    document.getElementById("panel-toggle").addEventListener("click", () => {
      const collapsed = document.getElementById("panel").classList.toggle("collapsed");
      document.body.classList.toggle("panel-open", !collapsed);
      document.getElementById("panel-toggle").setAttribute("aria-expanded", String(!collapsed));
    });
    window.addEventListener("keydown", (e) => {
      if (!A11y.hotkey(e)) return;
      if (e.key === " ") { e.preventDefault(); W.setRunning(!W.running); }
      else if (e.key === "s") W.singleStep();
      else if (e.key === "r") W.reset();
      else if (e.key === "f") W.app.fit();
      else if (e.key === "h") {
        const halo = document.querySelector('[data-key="halo"]');
        halo.checked = !halo.checked;
        halo.dispatchEvent(new Event("change"));
      }
    });
  },

  // Shows the app's current settings in the controls, each only where it
  // applies to the current solver and model (the table's `solvers` and
  // `models`, empty: all).
  show(values) {
    // The light theme (URL theme=light): the page's colours follow the view's.
    document.body.classList.toggle("light", values.theme === "light");
    const applies = (list, v) => list.length === 0 || list.includes(v);
    for (const el of document.querySelectorAll("[data-key]")) {
      const p = Controls.params && Controls.params.get(el.dataset.key);
      const label = el.closest("label");
      if (p && label) label.hidden = !applies(p.solvers, values.solver) || !applies(p.models, values.model);
      const v = values[el.dataset.key];
      if (v === undefined) continue;
      if (el.type === "checkbox") el.checked = v === "1";
      else if (document.activeElement !== el) el.value = v;
    }
  },

  // Runs preset `name` (the menu, the gallery, the host page's `preset`);
  // resolves to why it could not (an unknown name, a refused change), or
  // null.
  async runPreset(W, name) {
    const { values, given, warnings, preset: chosen } = window.wasmBindings.parseSettings(`preset=${encodeURIComponent(name)}`);
    if (!chosen) return warnings.join("\n");
    // A preset sets the run, and the camera numbers it gives (a disk's
    // angles); the view is then fitted to what is drawn.
    for (const k of ["yaw", "pitch", "dist", "tx", "ty", "tz", "fov"]) if (!given.includes(k)) delete values[k];
    document.getElementById("preset").value = chosen.name;
    Controls.caption(chosen);
    const error = await W.apply(values);
    W.setRunning(true);
    return error;
  },

  async exportState(W, format) {
    try {
      const r = await W.app.export(format);
      download(new Blob([r.bytes], { type: "application/octet-stream" }), `${fileStem(r.time)}.${format}`);
      if (r.note) W.message(`Exported: ${r.note}`);
    } catch (e) {
      W.message(`Export failed: ${errorText(e)}`);
    }
  },

  // Shows a preset's one-line explanation under the menu (and in the
  // embedded page's caption).
  caption(p) {
    const note = document.getElementById("preset-caption");
    note.textContent = p ? p.caption : "";
    note.hidden = !p;
    document.getElementById("embed-caption-text").textContent = p ? `${p.title}. ${p.caption}` : "";
    document.getElementById("embed-caption").hidden = !p || !document.body.classList.contains("embed");
  },

  // A disk of a few hundred particles shows no arms or bar (a software
  // adapter's small start makes one of the Milky Way): the captions say so
  // rather than let the picture mislead.
  sparseDiskNote(W) {
    const disk = W.app.diskParticles();
    const n = W.app.progress().n;
    const sparse = disk > 0 && disk < SPARSE_DISK_PARTICLES;
    const text = sparse
      ? `Only ${disk} of these ${n} particles are disk stars: too few to show a disk's spiral arms or bar` +
        (W.software ? " (this browser runs WebGPU on the CPU, so the page starts small)" : "") +
        ". A larger N shows them: the panel's N, or n= in the link."
      : "";
    for (const id of ["preset-note", "embed-caption-note"]) {
      document.getElementById(id).textContent = text;
      document.getElementById(id).hidden = !sparse;
    }
  },

  // Starts from a snapshot file; resolves to why it could not (also
  // shown), or null.
  async importFile(W, file) {
    let bytes;
    try {
      bytes = new Uint8Array(await file.arrayBuffer());
    } catch (e) {
      const error = `Could not read ${file.name}: ${errorText(e)}`;
      W.message(error);
      return error;
    }
    try {
      // An HDF5 file comes back as a Gadget-2 file's bytes (hdf5.js).
      bytes = await Hdf5.openedBytes(file.name, bytes);
      const r = await W.app.loadSnapshot(file.name, bytes);
      W.restarted();
      W.message(`Started from ${file.name}: N = ${r.n}, t = ${r.time}`, "info");
      return null;
    } catch (e) {
      // The running simulation is untouched.
      const error = `Could not open ${file.name}: ${errorText(e)}`;
      W.message(error);
      return error;
    }
  },
};

// Camera input: drag to orbit; shift-, ctrl- or right-drag (or two fingers)
// to pan; wheel or pinch to zoom; double-click to fit.
const CameraInput = {
  attach(canvas, W) {
    const pointers = new Map();
    let pinch = null;
    const mid = () => {
      const p = [...pointers.values()];
      return {
        x: (p[0].x + p[1].x) / 2, y: (p[0].y + p[1].y) / 2,
        d: Math.hypot(p[0].x - p[1].x, p[0].y - p[1].y),
      };
    };
    canvas.addEventListener("contextmenu", (e) => e.preventDefault());
    canvas.addEventListener("pointerdown", (e) => {
      // A pointer already lifted (or one the browser never tracked) cannot
      // be captured; the drag goes on without the capture.
      try { canvas.setPointerCapture(e.pointerId); } catch { /* not capturable */ }
      pointers.set(e.pointerId, { x: e.clientX, y: e.clientY, pan: e.button === 2 || e.shiftKey || e.ctrlKey });
      if (pointers.size === 2) pinch = mid();
    });
    canvas.addEventListener("pointermove", (e) => {
      const p = pointers.get(e.pointerId);
      if (!p) return;
      const dpr = window.devicePixelRatio || 1;
      const dx = e.clientX - p.x, dy = e.clientY - p.y;
      p.x = e.clientX; p.y = e.clientY;
      if (pointers.size === 1) {
        if (p.pan) W.app.pan(dx * dpr, dy * dpr);
        else W.app.orbit(-dx * 0.008, dy * 0.008);
      } else if (pointers.size === 2 && pinch) {
        const m = mid();
        W.app.pan((m.x - pinch.x) * dpr, (m.y - pinch.y) * dpr);
        if (m.d > 0 && pinch.d > 0) W.app.zoom(pinch.d / m.d);
        pinch = m;
      }
    });
    const up = (e) => {
      pointers.delete(e.pointerId);
      pinch = pointers.size === 2 ? mid() : null;
      W.viewChanged();
    };
    canvas.addEventListener("pointerup", up);
    canvas.addEventListener("pointercancel", up);
    canvas.addEventListener("wheel", (e) => {
      e.preventDefault();
      const lines = e.deltaMode === 1 ? 40 : e.deltaMode === 2 ? 800 : 1;
      W.app.zoom(Math.exp(e.deltaY * lines * 0.0015));
      W.viewChanged();
    }, { passive: false });
    canvas.addEventListener("dblclick", () => { W.app.fit(); W.viewChanged(); });
  },

  // Calls `handler(x, y)` (canvas pixels) for a click or tap that did not
  // drag the view: what picks a body or a particle.
  onTap(canvas, handler) {
    let down = null;
    canvas.addEventListener("pointerdown", (e) => { down = { x: e.clientX, y: e.clientY }; });
    canvas.addEventListener("pointerup", (e) => {
      if (!down || Math.hypot(e.clientX - down.x, e.clientY - down.y) > 4) return;
      const rect = canvas.getBoundingClientRect();
      const dpr = window.devicePixelRatio || 1;
      handler((e.clientX - rect.left) * dpr, (e.clientY - rect.top) * dpr);
    });
  },
};

window.Controls = Controls;
window.CameraInput = CameraInput;
