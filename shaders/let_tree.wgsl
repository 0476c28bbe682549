// Local essential trees (Bonsai's LETs; Bédorf et al. 2014, §2.3): for
// each other rank's domain, the part of this rank's tree that the domain's
// groups walk. One pass per (domain, level), top-down: each cell the
// domain reaches (the root, or a child of a node it opened) is tested with
// the walk's MAC against each of the domain's boxes with their loosest
// tolerances (tree_common.wgsl `mac_accepts`, with a safety margin the
// host adds):
//   taken      -> kept as a multipole (every box, so every group of the
//                 domain, takes it),
//   opened leaf -> kept with a copy of its particles,
//   opened node -> kept, and its children reach the next level's pass.
// Cells and particles are appended to the output with atomics; siblings
// stay together (one reservation per node), and each cell's children and
// particles are numbered from its own tree's beginning, so the receiver
// walks it as it walks its own tree (src/cluster/imports.rs). Which cells
// land where varies from run to run; what the receiver's walk sums, and
// in which order, does not (it follows the children, never the indices).
// Driven by src/cluster/let_tree.rs.

@group(0) @binding(0) var<uniform> pass_: LetPass;
@group(0) @binding(1) var<uniform> params: TreeParams;
@group(0) @binding(2) var<storage, read> cells: array<TreeCell>;
@group(0) @binding(3) var<storage, read> props: array<CellProps>;
@group(0) @binding(4) var<storage, read> pos_mass: array<PosMass>;
// Each local cell's slot + 1 in the current domain's tree (0: not in it);
// cleared before each domain.
@group(0) @binding(5) var<storage, read_write> slot_of: array<u32>;
@group(0) @binding(6) var<storage, read_write> out: LetCounters;
@group(0) @binding(7) var<storage, read_write> let_cells: array<LetCell>;
@group(0) @binding(8) var<storage, read_write> let_particles: array<PosMass>;
// DOMAIN_BOXES boxes per domain (src/cluster/summary.rs: COARSE_BOXES
// coarse boxes, then FINE_BOXES fine boxes of each), in domain order.
@group(0) @binding(9) var<storage, read> targets: array<DomainSummary>;

// first_child of a cell taken as a multipole (it has neither children nor
// particles in the tree; src/cluster/let_tree.rs TAKEN).
const TAKEN: u32 = 0xffffffffu;

// Whether every box of the pass's domain takes the cell (moments `pr`):
// its fine boxes are looked at only within coarse boxes that open it (a
// coarse box holds its fine ones, with their loosest tolerances).
fn domain_takes(pr: CellProps) -> bool {
    let first = pass_.domain * DOMAIN_BOXES;
    for (var k = 0u; k < COARSE_BOXES; k++) {
        if (!box_takes(targets[first + k], pr)) {
            let fine = first + COARSE_BOXES + k * FINE_BOXES;
            for (var j = 0u; j < FINE_BOXES; j++) {
                if (!box_takes(targets[fine + j], pr)) {
                    return false;
                }
            }
        }
    }
    return true;
}

fn box_takes(t: DomainSummary, pr: CellProps) -> bool {
    if (t.groups == 0u) {
        return true;
    }
    let d2 = box_distance2(pr.com_mass.xyz, t.lo.xyz, t.hi.xyz);
    return mac_accepts(pr.quad_diag.w, pr.quad_off.w, d2, t.open_scale, t.accel_tol, params.alpha);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn cut(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let c = pass_.begin + flat_index(wid, nwg, lid);
    if (c >= pass_.end) {
        return;
    }
    var slot: u32;
    if (pass_.root != 0u) {
        // The root level holds the root alone; its pass starts the tree.
        slot = atomicAdd(&out.cells, 1u);
        out.begins[pass_.domain] = vec2<u32>(slot, atomicLoad(&out.particles));
    } else {
        let s = slot_of[c];
        if (s == 0u) {
            return;
        }
        slot = s - 1u;
    }
    let base = out.begins[pass_.domain];
    let cell = cells[c];
    let pr = props[c];
    var kept = TreeCell(0u, cell.count, 0u, 0u);
    if (cell.count > 0u) {
        if (domain_takes(pr)) {
            // a multipole for every group of the domain
            kept.first_child = TAKEN;
        } else if (cell.child_count == 0u) {
            let first = atomicAdd(&out.particles, cell.count);
            if (first + cell.count <= pass_.particle_capacity) {
                for (var k = 0u; k < cell.count; k++) {
                    let_particles[first + k] = pos_mass[cell.start + k];
                }
            } else {
                atomicOr(&out.overflow, 1u);
            }
            kept.start = first - base.y;
        } else {
            let first = atomicAdd(&out.cells, cell.child_count);
            if (first + cell.child_count <= pass_.cell_capacity) {
                for (var k = 0u; k < cell.child_count; k++) {
                    slot_of[cell.first_child + k] = first + k + 1u;
                }
            } else {
                atomicOr(&out.overflow, 1u);
            }
            kept.first_child = first - base.x;
            kept.child_count = cell.child_count;
        }
    }
    if (slot < pass_.cell_capacity) {
        let_cells[slot] = LetCell(kept, pr);
    } else {
        atomicOr(&out.overflow, 1u);
    }
}
