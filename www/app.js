// Starts the wasm app once Trunk has loaded it: reads settings from the URL,
// checks for WebGPU, creates the simulation on the canvas and animates it.
"use strict";

const params = new URLSearchParams(location.search);
const settings = {
  model: params.get("model") || "plummer",
  n: parseInt(params.get("n") || "2048", 10),
  seed: parseInt(params.get("seed") || "1", 10),
  eps: parseFloat(params.get("eps") || "0.01"),
  dt: parseFloat(params.get("dt") || String(1 / 128)),
  stepsPerFrame: parseInt(params.get("spf") || "1", 10),
};

function showError(message) {
  const box = document.getElementById("error");
  box.textContent = message;
  box.hidden = false;
  document.getElementById("status").textContent = "stopped";
  window.webgravState = { error: message };
}

async function main() {
  if (!navigator.gpu) {
    showError("This browser has no WebGPU, which webgrav needs to run the simulation on your GPU. " +
      "Use a current Chrome or Edge, or Firefox/Safari with WebGPU enabled.");
    return;
  }
  const canvas = document.getElementById("view");
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.max(1, Math.floor(canvas.clientWidth * dpr));
  canvas.height = Math.max(1, Math.floor(canvas.clientHeight * dpr));
  let app;
  try {
    app = await window.wasmBindings.WebApp.create(canvas, settings.model, settings.n, settings.seed, settings.eps, settings.dt);
  } catch (e) {
    showError("Could not start the simulation: " + e);
    return;
  }
  document.getElementById("status").textContent =
    `${settings.model}, N = ${settings.n}, direct summation — ${app.adapter()}`;
  window.webgravState = { app, diagnostics: null };
  window.addEventListener("resize", () => {
    canvas.width = Math.max(1, Math.floor(canvas.clientWidth * dpr));
    canvas.height = Math.max(1, Math.floor(canvas.clientHeight * dpr));
    app.resize(canvas.width, canvas.height);
  });
  let reading = false;
  let lastRead = 0;
  const readout = document.getElementById("readout");
  function frame(now) {
    try {
      app.frame(settings.stepsPerFrame, now * 1e-4);
    } catch (e) {
      showError("The simulation stopped: " + e);
      return;
    }
    // Throttled, asynchronous diagnostics: at most one read-back in flight.
    if (!reading && now - lastRead > 500) {
      reading = true;
      lastRead = now;
      app.diagnostics().then((d) => {
        window.webgravState.diagnostics = d;
        readout.textContent =
          `t = ${d.time.toFixed(3)}  steps = ${d.steps}\n` +
          `E = ${d.energy.toFixed(6)}  |dE/E0| = ${d.energy_error.toExponential(2)}`;
      }).catch((e) => console.warn("diagnostics:", e)).finally(() => { reading = false; });
    }
    requestAnimationFrame(frame);
  }
  requestAnimationFrame(frame);
}

addEventListener("TrunkApplicationStarted", main);
