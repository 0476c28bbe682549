// The tree code made visible (tree runs with shared time steps): the
// cells of the first levels over the picture (URL `cells=K`, drawn by the
// app from the GPU's own buffers), a picked particle's interaction list
// — the cells its group took as multipoles (green) and the leaves it
// summed directly (orange) — with its counts and force error, and the
// accuracy panel: the tree's error percentiles against the f64 direct
// sum on the sample `webgrav forces --compare direct` takes. Pick with a
// click or tap, or the key p (the particle nearest the view's centre);
// Escape drops the pick.
"use strict";

const TreeView = {
  picked: null,

  applies(W) {
    const v = W.app.values();
    return v.solver === "tree" && v.timesteps === "shared";
  },

  attach(canvas, W) {
    CameraInput.onTap(canvas, (x, y) => {
      if (!TreeView.applies(W) || W.app.trailSamples()) return;
      TreeView.pick(W, x, y, 16 * (window.devicePixelRatio || 1));
    });
    window.addEventListener("keydown", (e) => {
      if (!A11y.hotkey(e)) return;
      if (e.key === "p" && TreeView.applies(W)) {
        TreeView.pick(W, W.canvas.width / 2, W.canvas.height / 2, Math.max(W.canvas.width, W.canvas.height));
      } else if (e.key === "Escape" && TreeView.picked) {
        TreeView.unpick(W);
      }
    });
    document.getElementById("tree-accuracy").addEventListener("click", () => TreeView.measure(W));
    document.getElementById("tree-unpick").addEventListener("click", () => TreeView.unpick(W));
  },

  // Picks the particle nearest (x, y) in canvas pixels; the run pauses so
  // the list and the forces compared belong to one state.
  async pick(W, x, y, radius) {
    W.setRunning(false);
    const box = document.getElementById("tree-picked");
    try {
      const r = await W.app.pick(x, y, radius);
      if (!r) {
        W.message("No particle there: click on one (or press p for the one nearest the centre).", "info");
        return;
      }
      TreeView.picked = r;
      box.hidden = false;
      document.getElementById("tree-picked-text").textContent = [
        `Particle ${r.particle} (its group: ${r.group_size} particles)`,
        `${r.accepted} cells taken as multipoles (green)`,
        `${r.leaves} leaves opened: ${r.direct} particles summed directly (orange)`,
        `force error against the direct sum: ${(100 * r.force_error).toPrecision(3)} %`,
      ].join("\n");
      W.dirty = true;
    } catch (e) {
      W.message(errorText(e));
    }
  },

  unpick(W) {
    W.app.unpick();
    TreeView.picked = null;
    document.getElementById("tree-picked").hidden = true;
  },

  // The accuracy panel: what `webgrav forces --compare direct` prints for
  // the same state.
  async measure(W) {
    const out = document.getElementById("tree-accuracy-out");
    out.textContent = "measuring…";
    try {
      const a = await W.app.accuracy();
      W.accuracy = a;
      const pct = (x) => `${(100 * x).toPrecision(3)} %`;
      const lines = [
        `force error (${a.compared} particles): median ${pct(a.median)}, 99th percentile ${pct(a.p99)}`,
      ];
      if (a.pp !== undefined) lines.push(`interactions per particle: ${a.pp.toFixed(0)} p-p + ${a.pc.toFixed(0)} p-c`);
      if (a.step_ms !== undefined) lines.push(`GPU time per step: ${a.step_ms.toFixed(2)} ms`);
      out.textContent = lines.join("\n");
    } catch (e) {
      out.textContent = "";
      W.message(errorText(e));
    }
  },

  // Shows the section where it applies; a new run drops the pick.
  show(W) {
    document.getElementById("tree-view").hidden = !TreeView.applies(W);
    if (TreeView.picked) TreeView.unpick(W);
  },
};

window.TreeView = TreeView;
