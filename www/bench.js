// The benchmark panel: runs the library's benchmark set in this browser —
// the code `webgrav bench suite -n SIZE` runs natively — and prints the
// same JSON lines, to copy or download. A native file of the same size,
// opened here or dropped on the page, is compared figure by figure:
// browser / native time as a table and a bar plot (log scale).
"use strict";

const Bench = {
  lines: [],
  native: null,
  running: false,

  init(W) {
    const $ = (id) => document.getElementById(id);
    $("bench-run").addEventListener("click", () => Bench.run(W));
    $("bench-copy").addEventListener("click", () => Bench.copy(W));
    $("bench-download").addEventListener("click", () => {
      if (!Bench.lines.length) return W.message("Run the benchmark first.", "info");
      download(new Blob([Bench.text()], { type: "application/x-ndjson" }), "webgrav-bench-browser.jsonl");
    });
    const input = $("bench-native");
    input.addEventListener("change", () => {
      if (input.files.length) Bench.openNative(W, input.files[0]);
      input.value = "";
    });
  },

  text() {
    return this.lines.map((l) => `${l}\n`).join("");
  },

  // Whether a dropped file is a benchmark file (JSON lines with "bench").
  async claims(file) {
    if (!/\.(jsonl?|txt)$/i.test(file.name) || file.size > 1 << 20) return false;
    return /"bench"\s*:/.test((await file.text()).split("\n", 1)[0]);
  },

  async run(W) {
    if (this.running) return;
    const $ = (id) => document.getElementById(id);
    const size = parseInt($("bench-size").value, 10);
    const repeat = Math.max(1, Math.min(20, parseInt($("bench-repeat").value, 10) || 5));
    this.running = true;
    W.setRunning(false); // the simulation would share the GPU
    $("bench-run").disabled = true;
    $("bench-status").textContent = `running (N = ${size}, tree ${4 * size})…`;
    this.lines = [];
    $("bench-out").textContent = "";
    const started = performance.now();
    try {
      await window.wasmBindings.runBenchmark(size, repeat, navigator.userAgent, (line) => {
        Bench.lines.push(line);
        $("bench-out").textContent = Bench.text();
      });
      $("bench-status").textContent = `done in ${((performance.now() - started) / 1000).toFixed(1)} s: ` +
        `compare with \`webgrav bench suite -n ${size}\``;
      if (this.native) this.compare(W);
    } catch (e) {
      $("bench-status").textContent = "failed";
      W.message(`Benchmark: ${errorText(e)}`);
    } finally {
      this.running = false;
      $("bench-run").disabled = false;
    }
  },

  async copy(W) {
    if (!this.lines.length) return W.message("Run the benchmark first.", "info");
    try {
      await navigator.clipboard.writeText(this.text());
      W.message("Benchmark lines copied.", "info");
    } catch {
      W.message("The browser refused the clipboard: use Download.", "info");
    }
  },

  async openNative(W, file) {
    this.native = { name: file.name, text: await file.text() };
    if (!this.lines.length) {
      W.message(`${file.name} kept: run the benchmark to compare with it.`, "info");
      return;
    }
    this.compare(W);
  },

  // Browser / native per figure: a table and a bar plot.
  compare(W) {
    const $ = (id) => document.getElementById(id);
    let ratios;
    try {
      ratios = window.wasmBindings.compareBenchmarks(this.text(), this.native.text);
    } catch (e) {
      W.message(`Comparing with ${this.native.name}: ${errorText(e)}`);
      return;
    }
    this.ratios = ratios;
    const table = $("bench-ratios");
    table.replaceChildren();
    const row = (cells, tag = "td") => {
      const tr = document.createElement("tr");
      for (const c of cells) {
        const td = document.createElement(tag);
        td.textContent = c;
        tr.append(td);
      }
      table.append(tr);
    };
    row(["configuration", "figure", "browser ms", "native ms", "browser / native"], "th");
    for (const r of ratios) {
      row([r.config, r.figure, r.browser.toPrecision(3), r.native.toPrecision(3), r.ratio.toPrecision(3)]);
    }
    $("bench-compare").hidden = false;
    $("bench-against").textContent = `against ${this.native.name}`;
    Bench.plot($("plot-bench"), ratios);
  },

  // Horizontal bars of log10(ratio), one per figure; the line at 1.
  plot(canvas, ratios) {
    const dpr = window.devicePixelRatio || 1;
    const rowH = 12 * dpr;
    const w = Math.max(1, Math.round(canvas.clientWidth * dpr));
    const h = Math.round(rowH * ratios.length + 18 * dpr);
    canvas.width = w;
    canvas.height = h;
    canvas.style.height = `${h / dpr}px`;
    const g = canvas.getContext("2d");
    g.clearRect(0, 0, w, h);
    const logs = ratios.map((r) => Math.log10(r.ratio));
    const lo = Math.min(0, Math.floor(Math.min(...logs)));
    const hi = Math.max(1, Math.ceil(Math.max(...logs)));
    const padL = 110 * dpr, padR = 6 * dpr;
    const px = (v) => padL + ((v - lo) / (hi - lo)) * (w - padL - padR);
    g.font = `${9 * dpr}px ui-monospace, monospace`;
    ratios.forEach((r, k) => {
      const y = k * rowH;
      g.fillStyle = "#789";
      g.fillText(`${r.config.split(" ")[0]} ${r.figure}`.slice(0, 22), 2, y + rowH - 3 * dpr);
      g.fillStyle = PHASE_COLORS[k % PHASE_COLORS.length];
      const x0 = px(0), x1 = px(logs[k]);
      g.fillRect(Math.min(x0, x1), y + 2 * dpr, Math.max(1, Math.abs(x1 - x0)), rowH - 4 * dpr);
    });
    g.fillStyle = "#789";
    for (let e = lo; e <= hi; e++) g.fillText(`${10 ** e}×`, px(e) - 6 * dpr, h - 3 * dpr);
    g.strokeStyle = "#ccc";
    g.beginPath();
    g.moveTo(px(0), 0);
    g.lineTo(px(0), h - 14 * dpr);
    g.stroke();
  },
};
