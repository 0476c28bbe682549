// Small plots for the read-outs: line plots over simulated time on 2D
// canvases (energy error, Lagrangian radii) and the stacked bar of per-phase
// GPU times. No library: a few dozen lines of canvas drawing.
"use strict";

const PHASE_COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
  "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];

// The line colours of the dark page, and their ink on the light one
// (theme=light: projectors and print), dark enough for 4.5:1 on white.
const LIGHT_INK = { "#f9a": "#b0204c", "#7cf": "#1f5fa8", "#f86": "#b0401a", "#fd6": "#7a5c00", "#678": "#4a5563" };
const plotTheme = () => document.body.classList.contains("light")
  ? { text: "#333", frame: "#99a", mark: "#a33", ink: (c) => LIGHT_INK[c] || c }
  : { text: "#789", frame: "#234", mark: "#a66", ink: (c) => c };

const Plots = {
  // series: [{points: [[t, y], ...], color, label}]; marks: times of
  // vertical markers (energy reference resets); logY plots log10(y);
  // xLabel names the x axis (simulated time unless told).
  line(canvas, series, { logY = false, marks = [], xLabel = "t" } = {}) {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(canvas.clientWidth * dpr));
    const h = Math.max(1, Math.round(canvas.clientHeight * dpr));
    if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
    const g = canvas.getContext("2d");
    g.clearRect(0, 0, w, h);
    const tf = (y) => (logY ? Math.log10(Math.max(y, 1e-16)) : y);
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (const s of series) {
      for (const [x, y] of s.points) {
        if (!Number.isFinite(y) || (logY && y <= 0)) continue;
        x0 = Math.min(x0, x); x1 = Math.max(x1, x);
        y0 = Math.min(y0, tf(y)); y1 = Math.max(y1, tf(y));
      }
    }
    const theme = plotTheme();
    g.font = `${10 * dpr}px ui-monospace, monospace`;
    g.fillStyle = theme.text;
    if (!(x1 >= x0)) { g.fillText("waiting for data…", 6 * dpr, 14 * dpr); return; }
    if (x1 === x0) x1 = x0 + 1;
    if (logY) { y0 = Math.floor(y0); y1 = Math.ceil(y1); if (y1 === y0) y1 = y0 + 1; }
    else { y0 = Math.min(0, y0); if (y1 === y0) y1 = y0 + 1; y1 *= 1.05; }
    const pad = { l: 38 * dpr, r: 6 * dpr, t: 6 * dpr, b: 14 * dpr };
    const px = (x) => pad.l + ((x - x0) / (x1 - x0)) * (w - pad.l - pad.r);
    const py = (y) => h - pad.b - ((tf(y) - y0) / (y1 - y0)) * (h - pad.t - pad.b);
    g.strokeStyle = theme.frame; g.lineWidth = 1;
    g.strokeRect(pad.l, pad.t, w - pad.l - pad.r, h - pad.t - pad.b);
    g.fillText(logY ? `1e${y1}` : y1.toPrecision(3), 2, pad.t + 8 * dpr);
    g.fillText(logY ? `1e${y0}` : y0.toPrecision(3), 2, h - pad.b);
    g.fillText(`${xLabel} ${x0.toFixed(2)}…${x1.toFixed(2)}`, pad.l + 4 * dpr, h - 2 * dpr);
    g.strokeStyle = theme.mark;
    for (const m of marks) {
      if (m < x0 || m > x1) continue;
      g.beginPath(); g.moveTo(px(m), pad.t); g.lineTo(px(m), h - pad.b); g.stroke();
    }
    g.lineWidth = 1.5 * dpr;
    for (const s of series) {
      g.strokeStyle = theme.ink(s.color);
      g.beginPath();
      let started = false;
      for (const [x, y] of s.points) {
        if (!Number.isFinite(y) || (logY && y <= 0)) { started = false; continue; }
        if (started) g.lineTo(px(x), py(y)); else g.moveTo(px(x), py(y));
        started = true;
      }
      g.stroke();
    }
  },

  // phases: [[name, ms], ...] of one step; draws a stacked bar and a legend.
  phaseBar(bar, legend, phases) {
    const total = phases.reduce((a, [, ms]) => a + ms, 0);
    bar.replaceChildren();
    const lines = [`GPU time per step ${total.toFixed(2)} ms`];
    phases.forEach(([name, ms], k) => {
      const span = document.createElement("span");
      span.style.width = `${total > 0 ? (100 * ms) / total : 0}%`;
      span.style.background = PHASE_COLORS[k % PHASE_COLORS.length];
      span.title = `${name}: ${ms.toFixed(3)} ms`;
      bar.appendChild(span);
      lines.push(`■ ${name} ${ms.toFixed(2)}`);
    });
    legend.replaceChildren();
    lines.forEach((text, k) => {
      const item = document.createElement("span");
      item.textContent = (k > 1 ? "  " : k === 1 ? "\n" : "") + text;
      if (k > 0) item.style.color = PHASE_COLORS[(k - 1) % PHASE_COLORS.length];
      legend.appendChild(item);
    });
  },
};
window.Plots = Plots;
