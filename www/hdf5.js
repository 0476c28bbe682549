// HDF5 snapshots in the page, as GADGET-4 and SWIFT write them, with no
// server: h5wasm (the HDF5 library built for WebAssembly, vendored in
// vendor/h5wasm/) is imported only when a file starts with HDF5's
// signature, so the first frame never pays for its 4 MB. The datasets are
// read into typed arrays here and checked by webgrav's own code
// (`hdf5Snapshot`, the native reader's checks), which returns them as a
// Gadget-2 file's bytes; the page opens those as it opens any snapshot,
// dropped, imported or named in the URL.
"use strict";

const Hdf5 = {
  // The first bytes of every HDF5 file.
  MAGIC: [0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a],
  library: null,
  opened: 0,

  is(bytes) {
    return bytes.length >= 8 && this.MAGIC.every((b, k) => bytes[k] === b);
  },

  // h5wasm, imported once, on the first HDF5 file.
  load() {
    if (!this.library) {
      this.library = import("./vendor/h5wasm/hdf5_hl.js").then(async (h5) => {
        await h5.ready;
        return h5;
      });
    }
    return this.library;
  },

  // The bytes to open in place of `bytes`: a Gadget-2 file's where they
  // are an HDF5 file's, else the bytes themselves. Throws, naming the
  // dataset, where the file is not a snapshot webgrav reads.
  async openedBytes(name, bytes) {
    if (!this.is(bytes)) return bytes;
    const h5 = await this.load();
    // h5wasm reads files from its own in-memory file system.
    const path = `/webgrav-${++this.opened}.hdf5`;
    h5.FS.writeFile(path, bytes);
    let file = null;
    try {
      // h5wasm reports a file it cannot open with a negative id, and the
      // library's own failures as bare messages: both are named here.
      const refused = (why) => new Error(`snapshot ${name}: not an HDF5 file webgrav can open (${why})`);
      try {
        file = new h5.File(path, "r");
      } catch (e) {
        throw refused(e.message || e);
      }
      if (file.file_id < 0) {
        file = null;
        throw refused("damaged or truncated");
      }
      let a;
      try {
        a = readArrays(file, name);
      } catch (e) {
        throw String(e.message).startsWith(`snapshot ${name}:`) ? e : refused(e.message || e);
      }
      return window.wasmBindings.hdf5Snapshot(name, a.time, a.counts, a.ids, a.pos, a.vel, a.mass);
    } finally {
      if (file) file.close();
      h5.FS.unlink(path);
    }
  },
};

// The datasets webgrav reads, in type order, with the native reader's
// checks of their presence and shapes (its messages, word for word).
function readArrays(file, name) {
  const bad = (what) => new Error(`snapshot ${name}: ${what}`);
  const keys = file.keys();
  if (!keys.includes("Header")) throw bad("no Header group (not a GADGET-4 or SWIFT snapshot)");
  const header = file.get("Header");
  const attrs = header.attrs;
  const attr = (k) => {
    if (!attrs[k]) return null;
    const v = attrs[k].json_value;
    return Array.isArray(v) ? v.map(Number) : [Number(v)];
  };
  const files = attr("NumFilesPerSnapshot");
  if (files && files[0] > 1) {
    throw bad(`Header/NumFilesPerSnapshot is ${files[0]}: webgrav reads snapshots of one file`);
  }
  const time = attr("Time");
  if (!time) throw bad("Header/Time is missing");
  const listed = attr("NumPart_ThisFile");
  if (!listed) throw bad("Header/NumPart_ThisFile is missing");
  const beyond = listed.findIndex((k, t) => t >= 6 && k !== 0);
  if (beyond >= 0) throw bad(`Header/NumPart_ThisFile lists ${listed[beyond]} particles of type ${beyond}: webgrav's kinds are types 0 to 5`);
  const table = attr("MassTable") || [];
  const shape = (s) => `[${s.join(", ")}]`;
  const types = [];
  for (let t = 0; t < 6; t++) {
    const g = `PartType${t}`;
    const said = listed[t] || 0;
    if (!keys.includes(g)) {
      if (said !== 0) throw bad(`Header/NumPart_ThisFile lists ${said} particles of type ${t}, but there is no ${g} group`);
      types.push(null);
      continue;
    }
    const group = file.get(g);
    const members = group.keys();
    if (!members.includes("Coordinates")) throw bad(`${g}/Coordinates is missing`);
    const s = group.get("Coordinates").shape;
    if (s.length !== 2 || s[1] !== 3) throw bad(`${g}/Coordinates has shape ${shape(s)}, expected [N, 3]`);
    if (said !== s[0]) throw bad(`${g}/Coordinates holds ${s[0]} particles, Header/NumPart_ThisFile[${t}] says ${said}`);
    types.push({ g, group, members, k: s[0] });
  }
  const n = types.reduce((sum, x) => sum + (x ? x.k : 0), 0);
  const out = {
    time: time[0],
    counts: new Uint32Array(6),
    ids: new BigUint64Array(n),
    pos: new Float32Array(3 * n),
    vel: new Float32Array(3 * n),
    mass: new Float32Array(n),
  };
  let at = 0;
  types.forEach((x, t) => {
    if (!x) return;
    const { g, group, members, k } = x;
    const values = (d, width) => {
      if (!members.includes(d)) throw bad(`${g}/${d} is missing`);
      const ds = group.get(d);
      const want = width === 1 ? [k] : [k, width];
      if (shape(ds.shape) !== shape(want)) {
        throw bad(`${g}/${d} has shape ${shape(ds.shape)}, expected ${shape(want)} (as ${g}/Coordinates)`);
      }
      return ds.value;
    };
    out.pos.set(values("Coordinates", 3), 3 * at);
    out.vel.set(values("Velocities", 3), 3 * at);
    const ids = values("ParticleIDs", 1);
    // Signed ids (SWIFT's, h5py's default) below 0 are refused, as the
    // native reader refuses them, not reinterpreted.
    const negative = ids.findIndex((v) => v < 0);
    if (negative >= 0) throw bad(`${g}/ParticleIDs[${negative}] is ${ids[negative]}: ids must not be negative`);
    out.ids.set(
      ids instanceof BigInt64Array ? new BigUint64Array(ids.buffer, ids.byteOffset, ids.length)
        : ids instanceof BigUint64Array ? ids : BigUint64Array.from(ids, (v) => BigInt(v)),
      at,
    );
    if (members.includes("Masses")) out.mass.set(values("Masses", 1), at);
    else if ((table[t] || 0) > 0) out.mass.fill(table[t], at, at + k);
    else throw bad(`${g}/Masses is missing and Header/MassTable[${t}] is 0`);
    out.counts[t] = k;
    at += k;
  });
  return out;
}
