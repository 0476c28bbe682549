// Dawn in Node: the page's 35 first-frame pipelines (cut modules), created
// one by one with createComputePipeline against all at once with
// createComputePipelineAsync, each on a fresh device, three rounds.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
const LAB = path.dirname(fileURLToPath(import.meta.url));
const { create, globals } = await import(path.join(LAB, "index.js"));
Object.assign(globalThis, globals);
const gpu = create([]);
const first = {generate:["spheroid","disk","chunk_sums","place"],render_view_sample:["gather","find","shells"],upload_order:["in_upload_order"],
sort:["count_digits","scan_digit_rows_serial","scatter"],bbox:["partial_bounds","final_bounds"],keys:["morton_keys"],reorder:["gather","settle"],
build:["init_tree","reset_level_args","split_cells","finish_groups"],properties:["cell_properties"],groups:["group_boxes_of","walk_dispatch","restart_groups","remember_forces"],
walk_subgroups:["walk"],leapfrog:["kick_drift","kick"],render_splat:["count","splat"],render_exposure:["histogram","expose"],input_order:["check","gather"],diagnostics:["chunk_sums"]};
const items = [];
for (const [m, es] of Object.entries(first)) for (const e of es) {
  let code = fs.readFileSync(path.join(LAB, "wgsl-cut", `${m}.${e}.wgsl`), "utf8");
  if (code.includes("subgroup") && !code.includes("enable subgroups")) code = "enable subgroups;\ndiagnostic(off, subgroup_uniformity);\n" + code;
  items.push({ m, e, code });
}
async function device() {
  const adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
  const features = [...adapter.features].filter((f) => f === "subgroups");
  return adapter.requestDevice({ requiredFeatures: features, requiredLimits: {
    maxStorageBuffersPerShaderStage: adapter.limits.maxStorageBuffersPerShaderStage,
    maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize,
    maxComputeInvocationsPerWorkgroup: adapter.limits.maxComputeInvocationsPerWorkgroup,
  } });
}
for (const round of [1, 2, 3]) {
  for (const how of ["sync", "async"]) {
    const d = await device();
    d.pushErrorScope("validation");
    const t0 = performance.now();
    const modules = items.map((it) => d.createShaderModule({ code: it.code }));
    const t1 = performance.now();
    let t2;
    if (how === "sync") {
      items.forEach((it, k) => d.createComputePipeline({ layout: "auto", compute: { module: modules[k], entryPoint: it.e } }));
      t2 = performance.now();
    } else {
      const ps = items.map((it, k) => d.createComputePipelineAsync({ layout: "auto", compute: { module: modules[k], entryPoint: it.e } }));
      t2 = performance.now();
      await Promise.all(ps);
    }
    const t3 = performance.now();
    const err = await d.popErrorScope();
    console.log(JSON.stringify({ round, how, pipelines: items.length, modules_ms: t1 - t0, calls_ms: t2 - t1, all_ready_ms: t3 - t0, error: err ? err.message.slice(0, 200) : null }));
    d.destroy();
  }
}
