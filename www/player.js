// Snapshot-series player: many files (Tipsy, Bonsai's own series, CSV,
// Gadget-2, HDF5, a run's index.json) opened at once, played in time order with
// a slider and a speed, drawn with the live view's camera and colours,
// the read-out plots per frame, and a WebM recording of the view. Files
// may also come from the URL (`?snapshot=…&series=…`): fetched from the
// page's own origin.
"use strict";

const Player = {
  frames: [],
  shown: -1,
  readouts: new Map(),
  timer: null,
  recorder: null,
  // While recording: draws the view and hands it to the video as a frame.
  capture: null,

  init(W) {
    const $ = (id) => document.getElementById(id);
    const input = $("series-files");
    input.addEventListener("change", () => {
      if (input.files.length) Player.open(W, [...input.files]);
      input.value = "";
    });
    $("series-slider").addEventListener("input", (e) => Player.show(W, Number(e.target.value)));
    $("series-play").addEventListener("click", () => (Player.timer ? Player.pause() : Player.play(W)));
    $("series-fps").addEventListener("change", () => { if (Player.timer) { Player.pause(); Player.play(W); } });
    $("series-video").addEventListener("click", () => Player.record(W));
    $("series-close").addEventListener("click", () => Player.close(W));
  },

  active() {
    return this.frames.length > 0;
  },

  // Opens the files as one series (every file checked first: a bad one is
  // named and the view keeps what it showed) and shows its first frame.
  async open(W, files) {
    let bytes;
    try {
      bytes = await Promise.all(files.map(async (f) => new Uint8Array(await f.arrayBuffer())));
    } catch (e) {
      W.message(`Could not read the files: ${errorText(e)}`);
      return;
    }
    let info;
    try {
      // HDF5 files come back as Gadget-2 files' bytes (hdf5.js).
      bytes = await Promise.all(bytes.map((b, k) => Hdf5.openedBytes(files[k].name, b)));
      info = W.app.openSeries(files.map((f) => f.name), bytes);
    } catch (e) {
      W.message(`Could not open the series: ${errorText(e)}`);
      return;
    }
    this.pause();
    W.setRunning(false);
    this.frames = info.frames;
    this.readouts = new Map();
    this.shown = -1;
    const slider = document.getElementById("series-slider");
    slider.max = String(this.frames.length - 1);
    slider.value = "0";
    document.getElementById("player").hidden = false;
    this.show(W, 0);
    // Fit the view to the series unless the URL placed the camera.
    const query = new URLSearchParams(location.search);
    if (!["yaw", "pitch", "dist", "tx", "ty", "tz"].some((k) => query.has(k))) W.app.fit();
    const n = this.frames.length;
    W.message(`Opened a series of ${n} snapshot${n === 1 ? "" : "s"}, t = ${this.frames[0].time} … ${this.frames[n - 1].time}`, "info");
  },

  // Fetches snapshot files and series indexes (with the files each lists,
  // beside it) from the page's origin and opens them all as one series.
  // `app::settings::Sources` admits only same-origin paths; this check also holds
  // for the file names an index lists.
  async openUrls(W, snapshots, indexes) {
    const fetchFile = async (url, base, name) => {
      const u = new URL(url, base);
      if (u.origin !== location.origin) throw new Error(`${url} is not on this page's origin`);
      const r = await fetch(u);
      if (!r.ok) throw new Error(`${url}: HTTP ${r.status} ${r.statusText}`);
      const file = name || decodeURIComponent(u.pathname.split("/").pop());
      return new File([await r.arrayBuffer()], file);
    };
    let files;
    try {
      files = await Promise.all(snapshots.map((url) => fetchFile(url, location.href)));
      for (const url of indexes) {
        const index = await fetchFile(url, location.href, "index.json");
        const listed = window.wasmBindings.seriesIndexFiles(await index.text(), url);
        const base = new URL(url, location.href).href;
        files.push(index, ...await Promise.all(listed.map((f) => fetchFile(f, base, f))));
      }
    } catch (e) {
      W.message(`Could not load the files the URL names: ${errorText(e)}`);
      return;
    }
    await this.open(W, files);
  },

  // Shows frame k and plots the read-outs of every frame shown so far.
  show(W, k) {
    let r;
    try {
      r = W.app.showFrame(k);
    } catch (e) {
      this.pause();
      W.message(`Could not show ${this.frames[k] ? this.frames[k].name : `frame ${k}`}: ${errorText(e)}`);
      return;
    }
    this.shown = k;
    this.readouts.set(k, r);
    document.getElementById("series-slider").value = String(k);
    document.getElementById("series-label").textContent =
      `frame ${k + 1} / ${this.frames.length}: ${r.name}, t = ${r.time}, N = ${r.n}`;
    W.time = r.time;
    const seen = [...this.readouts.values()].sort((a, b) => a.time - b.time);
    const h = { energy: [], energies: [[], [], []], radii: [[], [], []], marks: [], galaxy: [], curveStart: null };
    for (const x of seen) {
      x.lagrangian.forEach((v, j) => h.radii[j].push([x.time, v]));
      if (x.galaxy) {
        if (!h.curveStart) h.curveStart = x.galaxy.rotation_curve;
        h.galaxy.push({ time: x.time, ...x.galaxy });
      }
    }
    // The rotation curve "now" is the frame's, not the latest in time.
    if (r.galaxy) h.galaxy.push({ time: r.time, ...r.galaxy });
    W.history = h;
    plot();
    if (this.capture) this.capture();
  },

  play(W) {
    if (!this.active()) return;
    const fps = Math.min(60, Math.max(0.5, Number(document.getElementById("series-fps").value) || 4));
    document.getElementById("series-play").textContent = "Pause";
    document.getElementById("embed-run").textContent = "❚❚";
    this.timer = setInterval(() => {
      const next = this.shown + 1;
      if (next >= this.frames.length) {
        if (this.recorder) { this.stopRecording(); return; }
        this.show(W, 0);
      } else {
        this.show(W, next);
      }
    }, 1000 / fps);
  },

  pause() {
    clearInterval(this.timer);
    this.timer = null;
    document.getElementById("series-play").textContent = "Play";
    document.getElementById("embed-run").textContent = "▶";
  },

  // Records the view while the series plays once from its first frame,
  // then downloads it as WebM (the browser's MediaRecorder).
  record(W) {
    if (!this.active() || this.recorder) return;
    if (typeof MediaRecorder === "undefined" || !W.canvas.captureStream) {
      W.message("This browser cannot record the canvas (no MediaRecorder).");
      return;
    }
    const type = ["video/webm;codecs=vp9", "video/webm;codecs=vp8", "video/webm"]
      .find((t) => MediaRecorder.isTypeSupported(t));
    if (!type) {
      W.message("This browser cannot record WebM video.");
      return;
    }
    this.pause();
    // The WebGPU canvas is copied into a 2D canvas in the task that draws
    // it (as the PNG export reads it), and each copy is one video frame:
    // every series frame is in the video, whatever the page's frame rate.
    const mirror = document.createElement("canvas");
    mirror.width = W.canvas.width;
    mirror.height = W.canvas.height;
    const g = mirror.getContext("2d");
    const stream = mirror.captureStream(0);
    const track = stream.getVideoTracks()[0];
    this.capture = () => {
      W.app.render();
      g.drawImage(W.canvas, 0, 0);
      // Chromium asks the track for a frame, Firefox the stream.
      if (track.requestFrame) track.requestFrame();
      else stream.requestFrame();
    };
    const chunks = [];
    this.chunks = chunks;
    const recorder = new MediaRecorder(stream, { mimeType: type });
    recorder.ondataavailable = (e) => { if (e.data.size) chunks.push(e.data); };
    recorder.onstop = () => {
      const blob = new Blob(chunks, { type: "video/webm" });
      Player.lastVideo = blob;
      const a = document.createElement("a");
      a.href = URL.createObjectURL(blob);
      a.download = "webgrav-series.webm";
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 60000);
      document.getElementById("series-video").textContent = "Record WebM";
    };
    this.recorder = recorder;
    document.getElementById("series-video").textContent = "Recording…";
    this.show(W, 0);
    recorder.start(250);
    this.play(W);
  },

  stopRecording() {
    this.pause();
    const r = this.recorder;
    this.recorder = null;
    // Hold the last frame a moment so it is in the video, then stop once
    // the encoder has given something: Firefox's encodes behind the
    // frames (more so on a busy CPU), and a recorder stopped before its
    // first output writes an empty file. At most 5 s.
    const since = performance.now();
    const flush = () => {
      const chunks = this.chunks;
      if (chunks.length || performance.now() - since > 5000) {
        if (this.capture) this.capture();
        this.capture = null;
        r.requestData();
        r.stop();
        return;
      }
      r.requestData();
      setTimeout(flush, 250);
    };
    setTimeout(flush, 500);
  },

  // Back to the run (paused where it was).
  close(W) {
    this.pause();
    if (this.recorder) this.stopRecording();
    W.app.closeSeries();
    this.frames = [];
    this.readouts = new Map();
    this.shown = -1;
    document.getElementById("player").hidden = true;
    W.restarted();
  },
};
