// A few-body run's bodies over the view (Hermite runs of up to 64 bodies,
// `web/bodies.rs`): their trails (URL `trails=1`), a labelled dot per body
// (a planet's light is nothing beside its star's), and a picked body's r,
// v and orbital energy. Pick with a click or tap near a body, or cycle
// with the key b; Escape drops it.
"use strict";

const Bodies = {
  picked: null,
  names: [],

  attach(canvas, W) {
    // A tap picks the nearest body within 24 px.
    CameraInput.onTap(canvas, (x, y) => {
      const at = Bodies.nearest(W, x, y, 24 * (window.devicePixelRatio || 1));
      if (at !== null) Bodies.pick(W, at);
    });
    window.addEventListener("keydown", (e) => {
      if (!A11y.hotkey(e)) return;
      const b = W.app && W.app.bodies();
      if (!b) return;
      if (e.key === "b") Bodies.pick(W, Bodies.picked === null ? 0 : (Bodies.picked + 1) % b.bodies.length);
      else if (e.key === "Escape" && Bodies.picked !== null) Bodies.pick(W, null);
    });
  },

  pick(W, k) {
    Bodies.picked = k;
    Bodies.show(W);
  },

  // The current projected position of every body: [[x, y], ...].
  current(W) {
    const xy = W.app.trails();
    const m = W.app.trailSamples();
    if (!m) return [];
    const n = xy.length / (2 * m);
    const out = [];
    for (let k = 0; k < n; k++) out.push([xy[2 * (k * m + m - 1)], xy[2 * (k * m + m - 1) + 1]]);
    return out;
  },

  nearest(W, x, y, within) {
    let best = null, bestD = within;
    Bodies.current(W).forEach(([bx, by], k) => {
      const d = Math.hypot(bx - x, by - y);
      if (d < bestD) { best = k; bestD = d; }
    });
    return best;
  },

  name(b, k) {
    return b.name || `body ${k + 1}`;
  },

  // The picked body's numbers, in the lesson's units.
  show(W) {
    const box = document.getElementById("picked");
    const all = W.app && W.app.bodies();
    const b = all && Bodies.picked !== null ? all.bodies[Bodies.picked] : null;
    box.hidden = !b;
    if (!b) return;
    const L = all.length_unit ? ` ${all.length_unit}` : "";
    const T = all.time_unit ? ` ${all.time_unit}` : "";
    const V = all.length_unit ? ` ${all.length_unit}/(time unit)` : "";
    const about = all.central >= 0 ? `about ${Bodies.name(all.bodies[all.central], all.central)}` : "about the centre of mass";
    const lines = [
      `${Bodies.name(b, Bodies.picked)} (${about})`,
      `r = ${b.r.toPrecision(4)}${L}   v = ${b.v.toPrecision(4)}${V}`,
      `E per unit mass = ${b.energy.toPrecision(4)}`,
    ];
    if (b.period !== null) {
      lines.push(`T = ${b.period.toPrecision(5)}${T}   a = ${b.semi_major_axis.toPrecision(5)}${L}   e = ${b.eccentricity.toFixed(3)}`);
      lines.push(`T²/a³ = ${b.kepler_ratio.toPrecision(5)}   (${b.orbits} orbits)`);
    } else if (Bodies.picked !== all.central) {
      lines.push("T, a: after a full orbit");
    }
    box.textContent = lines.join("\n");
  },

  // Draws trails and bodies over the view (every frame of a few-body run).
  draw(W) {
    const canvas = document.getElementById("trails");
    const m = W.app.trailSamples();
    canvas.hidden = !m || Player.active();
    if (canvas.hidden) return;
    const dpr = window.devicePixelRatio || 1;
    const w = Math.round(canvas.clientWidth * dpr), h = Math.round(canvas.clientHeight * dpr);
    if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
    const g = canvas.getContext("2d");
    g.clearRect(0, 0, w, h);
    const xy = W.app.trails();
    const n = xy.length / (2 * m);
    const colors = ["#ffd36b", "#9ad0ff", "#ffa0c8", "#a6f0a0", "#ff9b6b", "#d0b0ff", "#7ff0e8", "#f0f07f", "#c0c0c0"];
    const all = W.app.bodies();
    const trails = W.app.values().trails === "1";
    for (let k = 0; k < n; k++) {
      const color = colors[k % colors.length];
      if (trails) {
        g.strokeStyle = color;
        g.lineWidth = dpr;
        g.beginPath();
        let on = false;
        // At most ~500 points a trail (~100 on a software adapter, where
        // the canvas is rasterised on the CPU at ~0.1 s for 500): a phone
        // draws thousands per body per frame slowly too.
        const every = Math.max(1, Math.ceil(m / (W.software ? 100 : 500)));
        for (let s = (m - 1) % every; s < m; s += every) {
          const x = xy[2 * (k * m + s)], y = xy[2 * (k * m + s) + 1];
          if (!Number.isFinite(x)) { on = false; continue; }
          if (on) g.lineTo(x, y); else g.moveTo(x, y);
          on = true;
        }
        g.stroke();
      }
      const x = xy[2 * (k * m + m - 1)], y = xy[2 * (k * m + m - 1) + 1];
      if (!Number.isFinite(x)) continue;
      const central = all && all.central === k;
      g.fillStyle = color;
      g.beginPath();
      g.arc(x, y, (central ? 6 : 4) * dpr, 0, 2 * Math.PI);
      g.fill();
      if (Bodies.picked === k) {
        g.strokeStyle = "#fff";
        g.lineWidth = 2 * dpr;
        g.beginPath();
        g.arc(x, y, 10 * dpr, 0, 2 * Math.PI);
        g.stroke();
      }
      if (all) {
        g.font = `${11 * dpr}px system-ui, sans-serif`;
        g.fillStyle = "#dde";
        g.fillText(Bodies.name(all.bodies[k], k), x + 7 * dpr, y - 7 * dpr);
      }
    }
  },
};

window.Bodies = Bodies;
