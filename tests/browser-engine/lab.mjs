// The browser-engine lab: webgrav's web build (the page's own `app::bench`
// code, compiled to wasm) under Chrome's WebGPU engine (Dawn, the npm
// package `webgpu`, in Node, whose wasm engine is Chrome's V8), beside the
// native CLI (`webgrav bench`, wgpu on Vulkan), configuration by
// configuration, in one process on one GPU.
//
// Every line printed is a `webgrav bench` JSON line (host "native" or
// "browser"; the engine is named in host_detail), so BENCHMARKS.md and the
// page's comparison view read the two files as they read a page's file.
// At the end, the browser/native ratios of every time figure (the wasm
// build's own `compareBenchmarks`).
//
// Usage (on the GPU machine, through lab.sh; smoke.sh runs it here):
//   node lab.mjs SET [--only native|browser] [--out DIR] [--check]
// SET names a list of configurations below (`side-by-side`, `frames`,
// `first-frames`, `galaxy-starts`, `largest`, `probe`, `latency`, `startup`, or a JSON array of specs in the
// CLI's option names). --check: exit 1 if a configuration failed.
// Needs, beside this file: ../../.lab/{node,pkg/webgrav.js,index.js,dist/}
// and the native binary at ../../.lab/webgrav (prepare.sh makes them).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const LAB = path.resolve(process.env.WEBGRAV_LAB || path.join(HERE, "../../.lab"));
// LAB_NATIVE and LAB_PKG (a folder of LAB) pick another native binary or
// web build, e.g. the one before a change, in the same job.
const NATIVE = path.join(LAB, process.env.LAB_NATIVE || "webgrav");
const PKG = process.env.LAB_PKG || "pkg";

// The configurations of issue 35, in the CLI's option names (`bench` is the
// subcommand); each runs natively and in the browser engine.
const TREES = [262144, 1048576, 4194304].flatMap((n) => [
  { bench: "tree", n, theta: 0.75 },
  { bench: "tree", n, alpha: 0.1 },
]);
const SETS = {
  trees: TREES,
  "side-by-side": [
    ...TREES,
    { bench: "direct", n: 1048576 },
    ...["ds", "ds-fast"].flatMap((precision) =>
      ["hermite4", "hermite6"].flatMap((bench) =>
        [16384, 32768, 65536, 131072].map((n) => ({ bench, n, precision })),
      ),
    ),
  ],
  // The page's own suite at the size the first look used (issue 35).
  suite: [
    { bench: "direct", n: 65536, repeat: 3 },
    { bench: "tree", n: 262144, repeat: 3 },
    { bench: "hermite4", n: 65536, precision: "ds", repeat: 3 },
    { bench: "hermite6", n: 65536, precision: "ds", repeat: 3 },
  ],
  // The page's frame (a tree step and a 1920x1080 draw): the default
  // model's N (its first frame), 1M and 4M particles.
  frames: [16384, 1048576, 4194304].map((n) => ({ bench: "frame", n })),
  // The first frame at the largest N issue 47 names (its model sampled
  // on the GPU).
  "first-frames": [16777216].map((n) => ({ bench: "frame", n })),
  // The galaxies' first frames (their components sampled on the GPU).
  "galaxy-frames": [
    ...[16384, 1048576, 4194304].map((n) => ({ bench: "frame", n, model: "milky-way" })),
    { bench: "frame", n: 1048576, model: "galaxy-crash" },
    { bench: "frame", n: 1048576, model: "minor-mergers" },
  ],
  // The galaxies' first frames at the sizes of issue 47's page targets
  // (placed on the GPU since 2026-12-01).
  "galaxy-starts": [
    ...[1048576, 16777216].flatMap((n) =>
      ["milky-way", "galaxy-crash"].map((model) => ({ bench: "frame", n, model })),
    ),
    { bench: "frame", n: 1048576, model: "minor-mergers" },
  ],
  // Native only: indirect dispatches against the default strided ones, and
  // the portable walk against the subgroup walk.
  "native-variants": [262144, 1048576, 4194304].flatMap((n) => [
    { bench: "tree", n, flags: ["--indirect"] },
    { bench: "tree", n, flags: ["--portable"] },
    { bench: "tree", n, alpha: 0.1, flags: ["--portable"] },
  ]),
  // The largest tree the browser engine holds (2 GiB bindings on Dawn).
  largest: [
    { bench: "tree", n: 16777216, repeat: 3 },
    { bench: "tree", n: 16777216, alpha: 0.1, repeat: 3 },
    { bench: "tree", n: 33554432, repeat: 3 },
  ],
  // The direct kernel's shape at 2^20 (sinks per invocation, sources per
  // loop trip) under both compilers.
  "direct-shapes": [
    [256, 8, 4], [256, 4, 4], [256, 8, 2], [256, 4, 2], [128, 8, 4], [256, 2, 4],
  ].map(([threads, ipt, unroll]) => ({ bench: "direct", n: 1048576, threads, ipt, unroll })),
  // Native only (LAB_ARGS="--only native"): `ds` with the two-sums a
  // browser must use (no f64 in WebGPU), the bound for the browser's `ds`.
  "ds-two-sums": ["hermite4", "hermite6"].flatMap((bench) =>
    [16384, 32768, 65536, 131072].map((n) => ({ bench, n, precision: "ds", flags: ["--no-f64"] })),
  ),
  // The browser's walk paths at the sizes where they differ natively.
  walks: [262144, 1048576].flatMap((n) => [
    { bench: "tree", n, walk: "portable" },
    { bench: "tree", n, walk: "subgroups" },
  ]),
  probe: [
    { bench: "tree", n: 262144 },
    { bench: "frame", n: 16384 },
  ],
};

function args() {
  const a = process.argv.slice(2);
  const out = { set: a[0] || "probe", only: null, out: null, check: false };
  for (let k = 1; k < a.length; k++) {
    if (a[k] === "--only") out.only = a[++k];
    else if (a[k] === "--check") out.check = true;
    else if (a[k] === "--out") out.out = a[++k];
    else throw new Error(`unknown argument ${a[k]}`);
  }
  return out;
}

// A spec as `webgrav bench` flags.
function cliArgs(spec) {
  const flags = { n: "-n", repeat: "--repeat", eps: "--eps", seed: "--seed", theta: "--theta",
    alpha: "--alpha", dt: "--dt", rebuild: "--rebuild", precision: "--precision", model: "--model",
    threads: "--threads", ipt: "--ipt", unroll: "--unroll" };
  const out = ["bench", spec.bench, ...(spec.flags || [])];
  for (const [k, v] of Object.entries(spec)) {
    if (k === "bench" || k === "flags") continue;
    if (k === "active") for (const m of v) out.push("--active", String(m));
    else if (k === "walk") out.push(v === "portable" ? "--portable" : "--subgroups");
    else if (flags[k]) out.push(flags[k], String(v));
    else throw new Error(`no CLI flag for ${k}`);
  }
  return out;
}

function runNative(spec) {
  const text = execFileSync(NATIVE, cliArgs(spec), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  return text.split("\n").filter((l) => l.trim().startsWith("{"));
}

let wg = null;
async function browserEngine() {
  if (wg) return wg;
  const { create, globals } = await import(path.join(LAB, "index.js"));
  Object.assign(globalThis, globals);
  // wgpu's WebGPU backend finds `navigator.gpu` through the global's Window.
  globalThis.Window = class Window {};
  // Dawn's options (e.g. DAWN_FLAGS=enable-dawn-features=skip_validation),
  // for experiments only: a page gets Chrome's defaults.
  const gpu = create((process.env.DAWN_FLAGS || "").split(" ").filter(Boolean));
  Object.defineProperty(globalThis, "navigator", {
    value: { gpu, userAgent: ENGINE }, configurable: true, writable: true,
  });
  wg = await import(path.join(LAB, PKG, "webgrav.js"));
  return wg;
}

const pkg = JSON.parse(fs.readFileSync(path.join(LAB, "package.json"), "utf8"));
const ENGINE = `node ${process.version} (V8 ${process.versions.v8}) + dawn.node (npm webgpu ${pkg.version})`;

async function runBrowser(spec) {
  const w = await browserEngine();
  const lines = [];
  const { flags, ...browserSpec } = spec;
  await w.runBench(JSON.stringify(browserSpec), ENGINE, (line) => lines.push(line));
  return lines;
}

// How long Dawn in Node takes to tell JavaScript that work is done, apart
// from any webgrav code: an empty queue's onSubmittedWorkDone, a tiny
// dispatch's, and a 4-byte read-back, each awaited 200 times.
async function eventLatency() {
  await browserEngine();
  const adapter = await navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
  const device = await adapter.requestDevice();
  const module = device.createShaderModule({ code: `@group(0) @binding(0) var<storage, read_write> a: array<u32>;
    @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) { a[g.x] += 1u; }` });
  const pipeline = device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: "main" } });
  const buf = device.createBuffer({ size: 256, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const rb = device.createBuffer({ size: 256, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const bind = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: buf } }] });
  const dispatch = (copy) => {
    const e = device.createCommandEncoder();
    const p = e.beginComputePass(); p.setPipeline(pipeline); p.setBindGroup(0, bind); p.dispatchWorkgroups(1); p.end();
    if (copy) e.copyBufferToBuffer(buf, 0, rb, 0, 256);
    device.queue.submit([e.finish()]);
  };
  const time = async (what, body) => {
    const ms = [];
    for (let k = 0; k < 200; k++) { const t = performance.now(); await body(); ms.push(performance.now() - t); }
    ms.sort((x, y) => x - y);
    console.log(JSON.stringify({ probe: "event-latency", what, median_ms: ms[100], p10_ms: ms[20], p90_ms: ms[180], host: "browser", host_detail: ENGINE }));
  };
  await time("empty onSubmittedWorkDone", () => device.queue.onSubmittedWorkDone());
  await time("dispatch + onSubmittedWorkDone", () => { dispatch(false); return device.queue.onSubmittedWorkDone(); });
  await time("dispatch + copy + mapAsync", async () => { dispatch(true); await rb.mapAsync(GPUMapMode.READ); rb.unmap(); });
  // What one dispatch costs the host, recorded 500 times in one pass, and
  // submitted: direct and indirect, all in one pass or a pass each.
  const args = device.createBuffer({ size: 16, usage: GPUBufferUsage.INDIRECT | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(args, 0, new Uint32Array([1, 1, 1, 0]));
  for (const [what, indirect, passEach] of [["direct", false, false], ["indirect", true, false], ["direct, a pass each", false, true], ["indirect, a pass each", true, true]]) {
    const rec = [], sub = [], done = [];
    for (let r = 0; r < 7; r++) {
      const t0 = performance.now();
      const e = device.createCommandEncoder();
      let p = e.beginComputePass();
      for (let k = 0; k < 500; k++) {
        if (passEach && k > 0) { p.end(); p = e.beginComputePass(); }
        p.setPipeline(pipeline); p.setBindGroup(0, bind);
        if (indirect) p.dispatchWorkgroupsIndirect(args, 0); else p.dispatchWorkgroups(1);
      }
      p.end();
      const cb = e.finish();
      const t1 = performance.now();
      device.queue.submit([cb]);
      const t2 = performance.now();
      await device.queue.onSubmittedWorkDone();
      const t3 = performance.now();
      if (r > 1) { rec.push((t1 - t0) / 500 * 1e3); sub.push((t2 - t1) / 500 * 1e3); done.push((t3 - t2) / 500 * 1e3); }
    }
    const med = (v) => v.sort((x, y) => x - y)[v.length >> 1];
    console.log(JSON.stringify({ probe: "dispatch-cost", what, record_us: med(rec), submit_us: med(sub), gpu_wait_us: med(done), host: "browser", host_detail: ENGINE, dawn_flags: process.env.DAWN_FLAGS || "" }));
  }
  await time("setTimeout 0", () => new Promise((r) => setTimeout(r, 0)));
  await time("setImmediate", () => new Promise((r) => setImmediate(r)));
  device.destroy();
}

// The page's first frame, from the module's start: the wasm module loaded
// and instantiated, a GPU device, then the default model (Plummer, N =
// 16384, tree) generated, set up, stepped once and drawn (the frame
// benchmark's first_frame_ms). In a fresh process, as a page load is.
async function startup() {
  const t0 = performance.now();
  await browserEngine();
  const t1 = performance.now();
  const adapter = await navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
  const device = await adapter.requestDevice();
  const t2 = performance.now();
  device.destroy();
  let first = null;
  await wg.runBench(JSON.stringify({ bench: "frame", n: 16384, repeat: 1 }), ENGINE, (line) => {
    first = JSON.parse(line).first_frame_ms;
  });
  const line = { probe: "startup", module_ms: t1 - t0, device_ms: t2 - t1, first_frame_ms: first,
    total_ms: t1 - t0 + (t2 - t1) + first, host: "browser", host_detail: ENGINE };
  console.log(JSON.stringify(line));
}

async function main() {
  const a = args();
  if (a.set === "latency") return eventLatency();
  if (a.set === "startup") return startup();
  const set = SETS[a.set] || JSON.parse(a.set);
  const outDir = a.out;
  const native = [], browser = [];
  let failures = 0;
  const emit = (where, line) => {
    console.log(line);
    where.push(line);
  };
  for (const spec of set) {
    // Native first, then the browser engine, one configuration at a time:
    // both see the GPU in the same state.
    try {
      if (a.only !== "browser") for (const l of runNative(spec)) emit(native, l);
    } catch (e) {
      failures++;
      console.log(JSON.stringify({ error: String(e.message || e).slice(0, 400), host: "native", spec }));
    }
    try {
      if (a.only !== "native" && !spec.flags) for (const l of await runBrowser(spec)) emit(browser, l);
    } catch (e) {
      failures++;
      console.log(JSON.stringify({ error: String(e.message || e).slice(0, 400), host: "browser", spec }));
    }
  }
  if (outDir && SETS[a.set]) {
    // A file per set and build, as `webgrav bench` and the page write
    // them: the page's comparison view takes the native one.
    fs.mkdirSync(outDir, { recursive: true });
    for (const [host, lines] of [["native", native], ["browser", browser]]) {
      if (lines.length) fs.writeFileSync(path.join(outDir, `${a.set}.${host}.jsonl`), lines.join("\n") + "\n");
    }
  }
  if (a.check && (failures > 0 || !native.length || !browser.length)) {
    throw new Error(`${failures} configurations failed; ${native.length} native and ${browser.length} browser lines`);
  }
  if (native.length && browser.length) {
    const w = await browserEngine();
    console.log("# browser engine / native, same call, same GPU");
    // (compareBenchmarks throws when the two have nothing in common.)
    for (const r of w.compareBenchmarks(browser.join("\n"), native.join("\n"))) {
      console.log(`# ${r.config.padEnd(36)} ${r.figure.padEnd(22)} ${r.browser.toFixed(3).padStart(10)} ${r.native.toFixed(3).padStart(10)}  ${r.ratio.toFixed(3)}`);
    }
  }
}

main().then(() => process.exit(0), (e) => {
  console.error("lab failed:", e && (e.stack || e.message || e));
  process.exit(1);
});
