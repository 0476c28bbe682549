// On the GPU machine, from the repository root, after lab.sh has unpacked
// Node and dawn.node into .lab/:
//   .lab/node tests/browser-engine/compile.mjs [DIR] [--no-probe]
// times Dawn's shader modules and compute pipelines, one by one, for every
// composed WGSL module in .lab/DIR/ (default wgsl; a fresh device each
// round): what a page's first frame waits for. Prints JSON lines. Fill
// the directory with `WEBGRAV_WRITE_WGSL=.lab cargo test --test
// gpu_layout every_entry_point` (DIR wgsl: whole modules; wgsl-cut: one
// per compute entry point, as the crate compiles them). "--no-probe"
// leaves out the dead-code probe at the end.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
const LAB = path.join(path.dirname(fileURLToPath(import.meta.url)), "../../.lab");
const { create, globals } = await import(path.join(LAB, "index.js"));
Object.assign(globalThis, globals);
const gpu = create([]);
const dir = path.join(LAB, process.argv[2] && !process.argv[2].startsWith("--") ? process.argv[2] : "wgsl");
const files = fs.readdirSync(dir).filter((f) => f.endsWith(".wgsl")).sort();
for (const round of [1, 2]) {
  const adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
  const features = [...adapter.features].filter((f) => f === "subgroups" || f === "shader-f16" || f === "timestamp-query");
  const device = await adapter.requestDevice({ requiredFeatures: features, requiredLimits: {
    maxStorageBuffersPerShaderStage: adapter.limits.maxStorageBuffersPerShaderStage,
    maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize,
    maxComputeInvocationsPerWorkgroup: adapter.limits.maxComputeInvocationsPerWorkgroup,
    maxComputeWorkgroupSizeX: adapter.limits.maxComputeWorkgroupSizeX,
    maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
  } });
  let errors = 0;
  device.addEventListener?.("uncapturederror", () => errors++);
  for (const f of files) {
    let code = fs.readFileSync(path.join(dir, f), "utf8");
    // As TreeWalk::new does in a browser: Tint needs the directive.
    if (code.includes("subgroup") && !code.includes("enable subgroups")) {
      code = "enable subgroups;\ndiagnostic(off, subgroup_uniformity);\n" + code;
    }
    const entries = [...code.matchAll(/@compute[^{]*?fn\s+(\w+)/g)].map((m) => m[1]);
    if (!entries.length) continue;
    let t = performance.now();
    device.pushErrorScope("validation");
    const module = device.createShaderModule({ code });
    const moduleMs = performance.now() - t;
    for (const entryPoint of entries) {
      t = performance.now();
      device.createComputePipeline({ layout: "auto", compute: { module, entryPoint } });
      const ms = performance.now() - t;
      console.log(JSON.stringify({ round, module: f, bytes: code.length, entries: entries.length, entry: entryPoint, module_ms: moduleMs, pipeline_ms: ms }));
    }
    const err = await device.popErrorScope();
    if (err) console.log(JSON.stringify({ round, module: f, error: err.message.slice(0, 300) }));
  }
  device.destroy();
}

// Does code no entry point reaches cost each pipeline? One module, its
// entry points compiled with and without 40 dead functions appended.
if (!process.argv.includes("--no-probe")) {
  const adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
  const device = await adapter.requestDevice();
  const body = Array.from({ length: 40 }, (_, i) => `a = a * ${i + 1}.5 + sin(a) * b; b = b + cos(a * ${i}.25) / (1.0 + a * a);`).join("\n    ");
  const dead = Array.from({ length: 40 }, (_, k) => `fn dead_${k}(x: f32) -> f32 {\n    var a = x; var b = x * 2.0;\n    for (var i = 0u; i < 8u; i++) {\n    ${body}\n    }\n    return a + b;\n}`).join("\n");
  const base = `@group(0) @binding(0) var<storage, read_write> data: array<f32>;
fn work(x: f32) -> f32 { var a = x; for (var i = 0u; i < 16u; i++) { a = a * 1.5 + sin(a); } return a; }
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u) { data[g.x] = work(data[g.x]); }`;
  for (const [what, code] of [["alone", base], ["with 40 dead functions", base + "\n" + dead], ["alone again", base + "\n// again"], ["dead again", base + "\n" + dead + "\n// again"]]) {
    const t0 = performance.now();
    const module = device.createShaderModule({ code });
    const t1 = performance.now();
    device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: "main" } });
    const t2 = performance.now();
    console.log(JSON.stringify({ probe: "dead-code", what, bytes: code.length, module_ms: t1 - t0, pipeline_ms: t2 - t1 }));
  }
  device.destroy();
}
