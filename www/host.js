// The host-page API: a course page that embeds webgrav in an iframe drives
// it with postMessage and hears what it does. Every message is a plain
// object whose `webgrav` field names the command or event.
//   commands: play, pause, step {steps}, reset, set {params}, preset {name},
//     lesson {name, part, variant}, snapshot {name, bytes}, capture, get;
//     each answered with {webgrav: "ok", id, command}, its own reply
//     (capture, state) or {webgrav: "error", id, command, message};
//   events: ready, state (at most two a second, and after every command),
//     error (whatever the page shows as an error).
// Only the origins of the URL's `origin=` may drive the page (`*`: any;
// without it only the page's own; app::embedding parses the list); a
// message from any other is ignored and its origin warned of on the
// console once. Each command goes through the path the page's own
// controls take (`W.apply`, `W.reset`, `Controls.importFile`, the preset
// menu, the PNG export), so it does what they do, warnings included.
"use strict";

const HostApi = {
  W: null,
  // `{any, list}` from `origin=`; null: the page's own origin only.
  drivers: null,
  // Messages refused for their origin, and the last warning (for tests:
  // a frame's console is not theirs to read).
  ignored: 0,
  lastIgnored: null,
  warned: new Set(),
  // The last state event sent: a tick sends only a changed state.
  sent: null,

  init(W, drivers) {
    HostApi.W = W;
    HostApi.drivers = drivers;
    W.hostApi = HostApi;
    window.addEventListener("message", (e) => HostApi.receive(e));
    setInterval(() => HostApi.tick(), 500);
  },

  allows(origin) {
    const d = HostApi.drivers;
    if (!d) return origin === location.origin;
    return d.any || d.list.includes(origin);
  },

  // The allow-list as the frame's address keeps it ("&origin=…"), or "".
  query() {
    return HostApi.drivers ? `&${HostApi.drivers.query}` : "";
  },

  // Sends an event to the embedding page, if any: to each allowed origin
  // (a targetOrigin the parent does not have drops the message), "/"
  // being the page's own.
  emit(message) {
    if (window.parent === window) return;
    const d = HostApi.drivers;
    const targets = !d ? ["/"] : d.any ? ["*"] : d.list;
    for (const t of targets) window.parent.postMessage(message, t);
  },

  ready() {
    const W = HostApi.W;
    const v = W.app.values();
    HostApi.emit({
      webgrav: "ready", version: window.wasmBindings.version(), adapter: W.app.info().adapter,
      model: v.model, n: W.app.progress().n, solver: v.solver,
    });
    HostApi.sendState();
  },

  error(message) {
    if (HostApi.W) HostApi.emit({ webgrav: "error", message });
  },

  state() {
    const W = HostApi.W;
    const p = W.app.progress();
    const v = W.app.values();
    // Until a restarted run's first read-out, W.last is the old run's.
    const energy = W.last && !W.firstRead ? W.last.energy_error : null;
    return { t: p.time, steps: p.steps, energy_error: energy, n: p.n, solver: v.solver, model: v.model, running: W.running };
  },

  sendState() {
    const s = HostApi.state();
    HostApi.sent = JSON.stringify(s);
    HostApi.emit({ webgrav: "state", ...s });
  },

  tick() {
    const W = HostApi.W;
    if (!W.ready || W.error) return;
    if (JSON.stringify(HostApi.state()) !== HostApi.sent) HostApi.sendState();
  },

  async receive(e) {
    const m = e.data;
    if (!m || typeof m !== "object" || typeof m.webgrav !== "string") return;
    if (!HostApi.allows(e.origin)) {
      HostApi.ignored++;
      const d = HostApi.drivers;
      const list = !d ? `only this page's origin, ${location.origin} (no origin= in its URL)` : d.list.join(", ");
      HostApi.lastIgnored = `webgrav: ignored a "${m.webgrav}" message from ${e.origin}: the page may be driven by ${list}`;
      if (!HostApi.warned.has(e.origin)) {
        HostApi.warned.add(e.origin);
        console.warn(`${HostApi.lastIgnored} (further messages from there are ignored silently)`);
      }
      return;
    }
    // A sandboxed page without allow-same-origin is origin "null", which
    // no targetOrigin can name: only `origin=*` lets it in.
    const target = e.origin === "null" ? "*" : e.origin;
    const reply = (message, transfer = []) => {
      if (e.source) e.source.postMessage({ ...message, id: m.id }, { targetOrigin: target, transfer });
    };
    const command = HostApi.commands[m.webgrav];
    let answer;
    try {
      if (!command) throw new Error(`unknown command (known: ${Object.keys(HostApi.commands).join(", ")})`);
      const W = HostApi.W;
      if (W.error) throw new Error(W.error);
      if (!W.ready) throw new Error("the simulation is not running yet: wait for the ready event");
      answer = (await command(W, m)) || { message: { webgrav: "ok", command: m.webgrav } };
    } catch (err) {
      answer = { message: { webgrav: "error", command: m.webgrav, message: errorText(err) } };
    }
    // The state first: a host that has the reply has the state after it.
    if (HostApi.W.ready && !HostApi.W.error) HostApi.sendState();
    reply(answer.message, answer.transfer);
  },

  // Each command resolves to nothing (an "ok" reply) or its own reply
  // `{message, transfer}`, and throws what the page could not do.
  commands: {
    play(W) {
      W.setRunning(true);
    },

    pause(W) {
      W.setRunning(false);
    },

    // K steps after those already queued, then paused: resolves once the
    // GPU has finished them.
    async step(W, m) {
      const k = m.steps === undefined ? 1 : m.steps;
      if (!Number.isInteger(k) || k < 1 || k > 100000) throw new Error(`steps=${m.steps}: a whole number from 1 to 100000`);
      W.setRunning(false);
      const target = W.app.progress().queued + k;
      W.pendingSteps += k;
      const start = performance.now();
      while (W.app.progress().steps < target) {
        if (W.error) throw new Error(W.error);
        if (performance.now() - start > 120000) throw new Error(`${k} steps did not finish within 2 minutes`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },

    async reset(W) {
      const error = await W.reset();
      if (error) throw new Error(error);
    },

    // URL parameters applied as if they were in the URL: parsed by the
    // page's own settings parser, the good ones applied, the bad ones the
    // page's warnings (shown, and the error reply).
    async set(W, m) {
      const params = m.params;
      if (!params || typeof params !== "object") throw new Error("set needs params: {key: value, …}");
      const elsewhere = { lesson: "lesson", part: "lesson", variant: "lesson", snapshot: "snapshot", series: "snapshot", fallback: "snapshot" };
      for (const k of Object.keys(params)) {
        if (k === "origin") throw new Error("origin= is the embedding's; a message cannot change it");
        if (elsewhere[k]) throw new Error(`${k}= is not a setting: use the ${elsewhere[k]} command`);
      }
      const query = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString();
      const { values, warnings } = window.wasmBindings.parseChanges(query);
      if (warnings.length) W.message(warnings.join("\n"));
      if (Object.keys(values).length) {
        const error = await W.apply(values);
        if (error) throw new Error(error);
        if (values.autoplay !== undefined) W.setRunning(values.autoplay === "1");
      }
      if (warnings.length) throw new Error(warnings.join("\n"));
    },

    async preset(W, m) {
      const error = await Controls.runPreset(W, String(m.name));
      if (error) throw new Error(error);
    },

    // A lesson is a page load (`Lessons.go`, which keeps origin=): the
    // reply goes first, then a new `ready` follows.
    lesson(W, m) {
      const lesson = Lessons.all.find((l) => l.name === m.name);
      if (!lesson) throw new Error(`unknown lesson '${m.name}' (known: ${Lessons.all.map((l) => l.name).join(", ")})`);
      const part = m.part === undefined ? 0 : m.part;
      if (!Number.isInteger(part) || part < 0 || part >= lesson.parts.length) {
        throw new Error(`part=${m.part}: lesson ${lesson.name} has parts 0 to ${lesson.parts.length - 1}`);
      }
      const runs = lesson.parts[part].runs || [];
      const variant = m.variant === undefined || m.variant === null ? null : m.variant;
      if (variant !== null && !(Number.isInteger(variant) && variant >= 0 && variant < runs.length)) {
        throw new Error(`variant=${m.variant}: part ${part} of lesson ${lesson.name} has ${runs.length} runs`);
      }
      setTimeout(() => Lessons.go({ lesson: lesson.name, part, variant }), 0);
    },

    async snapshot(W, m) {
      const b = m.bytes;
      if (!(b instanceof ArrayBuffer || ArrayBuffer.isView(b) || b instanceof Blob)) {
        throw new Error("snapshot needs bytes: an ArrayBuffer, a typed array or a Blob");
      }
      const error = await Controls.importFile(W, new File([b], String(m.name || "snapshot")));
      if (error) throw new Error(error);
    },

    // The canvas as PNG, drawn in this task (a WebGPU canvas hands its
    // image over only until the frame is presented), as the PNG export.
    async capture(W) {
      W.app.render();
      const blob = await new Promise((resolve) => W.canvas.toBlob(resolve, "image/png"));
      if (!blob) throw new Error("the canvas gave no picture");
      const png = await blob.arrayBuffer();
      return { message: { webgrav: "capture", png, width: W.canvas.width, height: W.canvas.height }, transfer: [png] };
    },

    get(W) {
      return { message: { webgrav: "state", ...HostApi.state(), query: W.app.shareQuery() } };
    },
  },
};

window.HostApi = HostApi;
