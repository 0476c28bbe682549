//! Space-filling-curve keys (drives `shaders/keys.wgsl`, with the key
//! functions of `shaders/tree_common.wgsl`).
//!
//! Morton (Z-order) rather than Peano-Hilbert: the tree build needs only
//! that every octree cell is one contiguous key range, which both curves
//! give; Morton's octant at each level is three key bits (no rotation
//! tables), which keeps the build's boundary search trivial. Hilbert's
//! advantage, more compact domains for splitting work between GPUs, does
//! not apply to one device. Keys have 63 bits (21 per axis, two u32), so a
//! Plummer core at N = 4M (cells ~1e-5 of the box) is not truncated.

use super::layout::{Bounds, MAX_DEPTH};
use super::TreeBuffers;
use crate::gpu::context::dispatch_size;
use crate::gpu::kernel::{Binding, Kernel, Slot};
use crate::gpu::layout::WORKGROUP_SIZE;
use crate::gpu::timing::{timed_pass, PhaseTimer};

const KEYS_WGSL: &str = include_str!("../../shaders/keys.wgsl");

/// Integer cells per axis: 2^21.
pub const KEY_CELLS: u32 = 1 << MAX_DEPTH;

pub fn wgsl() -> String {
    super::compose(KEYS_WGSL)
}

/// The binding contract of `shaders/keys.wgsl`.
pub const BINDINGS: &[Slot] = &[
    ("params", Binding::Uniform),
    ("pos_mass", Binding::StorageRead),
    ("bounds", Binding::StorageRead),
    ("keys", Binding::StorageReadWrite),
    ("values", Binding::StorageReadWrite),
];

pub struct KeyGen {
    kernel: Kernel,
    bind: wgpu::BindGroup,
    n: u32,
}

impl KeyGen {
    pub fn new(device: &wgpu::Device, b: &TreeBuffers) -> Self {
        let kernel = Kernel::new(device, "morton keys", &wgsl(), "morton_keys", BINDINGS);
        let bind = kernel.bind(
            device,
            &[&b.params, &b.state.pos_mass, &b.bounds, &b.keys, &b.values],
        );
        Self {
            kernel,
            bind,
            n: b.state.n,
        }
    }

    pub fn encode(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        timer: Option<&mut PhaseTimer>,
    ) {
        let mut pass = timed_pass(encoder, "keys", timer);
        self.kernel.dispatch(
            &mut pass,
            &self.bind,
            dispatch_size(device, self.n, WORKGROUP_SIZE),
        );
    }
}

/// CPU twin of `quantise` + `morton` in WGSL: the 63-bit key of `p`.
pub fn morton_key(p: [f32; 3], b: &Bounds) -> u64 {
    let ext = [b.hi[0] - b.lo[0], b.hi[1] - b.lo[1], b.hi[2] - b.lo[2]];
    let side = ext[0].max(ext[1]).max(ext[2].max(1.0e-30)) * 1.0001;
    let scale = KEY_CELLS as f32 / side;
    let q: Vec<u64> = (0..3)
        .map(|a| {
            let f = ((p[a] - b.lo[a]) * scale).clamp(0.0, (KEY_CELLS - 1) as f32);
            (f as u32).min(KEY_CELLS - 1) as u64
        })
        .collect();
    let mut key = 0u64;
    for bit in (0..MAX_DEPTH).rev() {
        let triple = (((q[0] >> bit) & 1) << 2) | (((q[1] >> bit) & 1) << 1) | ((q[2] >> bit) & 1);
        key |= triple << (3 * bit);
    }
    key
}

/// Octant (0..7) of `key` at tree level `level` (1..=MAX_DEPTH).
pub fn key_octant(key: u64, level: u32) -> u32 {
    ((key >> (3 * (MAX_DEPTH - level))) & 7) as u32
}
