// Morton (Z-order) keys of 63 bits: the bounding box is made a cube, each
// coordinate quantised to 21 bits, and the bits interleaved x,y,z from the
// most significant end, so the octant of a particle at tree level L is key
// bits 63-3L .. 65-3L. Keys are vec2<u32>(high word, low word); the value of
// each pair is the particle's index. Driven by src/tree/keys.rs.

@group(0) @binding(0) var<uniform> params: TreeParams;
@group(0) @binding(1) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(2) var<storage, read> bounds: TreeBounds;
@group(0) @binding(3) var<storage, read_write> keys: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read_write> values: array<u32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn morton_keys(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = flat_index(wid, nwg, lid);
    if (i >= params.n) {
        return;
    }
    let q = quantise(pos_mass[i].pos, bounds.own);
    keys[i] = morton(q);
    values[i] = i;
}
