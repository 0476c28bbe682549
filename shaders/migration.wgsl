// The particles' part of a redraw on the GPU: after the radix sort has
// grouped them by destination rank, this rank's own first (stably, so
// each rank's run keeps the order of the last tree build), `pack` gathers
// their state in that order into the `moved` arrays, from which the host
// reads back only the particles leaving this rank; the stayers stay where
// they are, and the arrays become the new state. `order` (the sorted indices) is overwritten in place with each
// particle's upload index, which names its global id on the host.
// Driven by src/cluster/migration.rs.

@group(0) @binding(0) var<uniform> params: RedrawParams;
@group(0) @binding(1) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(2) var<storage, read> vel: array<Velocity>;
@group(0) @binding(3) var<storage, read> acc_pot: array<AccPot>;
@group(0) @binding(4) var<storage, read> id: array<u32>;
@group(0) @binding(5) var<storage, read_write> order: array<u32>;
@group(0) @binding(6) var<storage, read_write> moved_pos_mass: array<PosMass>;
@group(0) @binding(7) var<storage, read_write> moved_vel: array<Velocity>;
@group(0) @binding(8) var<storage, read_write> moved_acc_pot: array<AccPot>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn pack(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let j = flat_index(wid, nwg, lid);
    if (j >= params.n) {
        return;
    }
    // Only invocation j reads or writes order[j].
    let src = order[j];
    moved_pos_mass[j] = pos_mass[src];
    moved_vel[j] = vel[src];
    moved_acc_pot[j] = acc_pot[src];
    order[j] = id[src];
}
