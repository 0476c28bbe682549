// Reads a V8 CPU profile (`LAB_NODE_FLAGS="--cpu-prof …" lab.sh …`):
//   node profile.mjs FILE.cpuprofile             self and total ms by function
//   node profile.mjs FILE.cpuprofile NAME [DEPTH] the call tree (ms) under
//                                                 every function whose name holds NAME
import fs from "node:fs";

const [file, pattern, depthArg] = process.argv.slice(2);
const p = JSON.parse(fs.readFileSync(file));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
// Each sample's time is the delta to the next one.
const selfMs = new Map();
for (let i = 0; i < p.samples.length; i++) {
  const dt = (p.timeDeltas[i + 1] ?? 0) / 1000;
  selfMs.set(p.samples[i], (selfMs.get(p.samples[i]) || 0) + dt);
}
const name = (n) => n.callFrame.functionName || "(anonymous)";
const totalMs = (n) => (selfMs.get(n.id) || 0) + (n.children || []).reduce((s, c) => s + totalMs(byId.get(c)), 0);

if (pattern) {
  const depth = Number(depthArg || 6);
  const show = (n, d) => {
    const t = totalMs(n);
    if (t < 5 || d > depth) return;
    console.log(`${" ".repeat(2 * d)}${t.toFixed(0)} ${name(n).slice(0, 120)}`);
    for (const c of n.children || []) show(byId.get(c), d + 1);
  };
  for (const n of p.nodes) if (name(n).includes(pattern)) show(n, 0);
} else {
  // By function: self time, and total time counted once per sample
  // however often the function recurs on its stack.
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children || []) parent.set(c, n.id);
  const self = new Map();
  const total = new Map();
  const add = (m, k, t) => m.set(k, (m.get(k) || 0) + t);
  for (const [id, t] of selfMs) {
    add(self, name(byId.get(id)), t);
    const seen = new Set();
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const k = name(byId.get(at));
      if (!seen.has(k)) add(total, k, t), seen.add(k);
    }
  }
  const top = (m, k) => [...m].sort((a, b) => b[1] - a[1]).slice(0, k);
  console.log("== self ms");
  for (const [k, t] of top(self, 25)) console.log(t.toFixed(0).padStart(7), k);
  console.log("== total ms");
  for (const [k, t] of top(total, 45)) console.log(t.toFixed(0).padStart(7), k);
}
