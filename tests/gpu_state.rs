//! The particle state's way onto the GPU and back: uploads and read-backs
//! of more than one piece return every byte in its place.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use pollster::block_on;
use webgrav::gpu::layout::{PosMass, Velocity};
use webgrav::state::{GpuParticles, Particles, StateArray};

// 1.2 M particles: 19 MB per array, two upload pieces (16 MiB each) and
// five read-back pieces (2^18 particles), the last of each partly full.
#[test]
fn state_in_several_pieces_comes_back_as_it_went() {
    let ctx = common::gpu();
    let n = 1_200_000;
    let p = Particles {
        pos_mass: (0..n)
            .map(|k| PosMass {
                pos: [k as f32, -(k as f32), 0.5 * k as f32],
                mass: 1.0 + (k % 7) as f32,
            })
            .collect(),
        vel: (0..n)
            .map(|k| Velocity::new([(k % 1000) as f32, 1.0, -(k as f32)]))
            .collect(),
        id: (0..n as u64).collect(),
    };
    let state = GpuParticles::upload(&ctx, &p).unwrap();
    let back = block_on(state.read(&ctx)).unwrap();
    assert_eq!(back.pos_mass, p.pos_mass);
    assert_eq!(back.vel, p.vel);
    assert_eq!(back.index, (0..n as u32).collect::<Vec<_>>());
    assert!(back
        .acc_pot
        .iter()
        .all(|a| a.acc == [0.0; 3] && a.pot == 0.0));

    // Pieces of one array, in order, and a stop after the first.
    let mut bytes = Vec::new();
    block_on(state.for_each_array_piece(&ctx, StateArray::Vel, |b| {
        bytes.extend_from_slice(b);
        true
    }))
    .unwrap();
    assert_eq!(bytes, bytemuck::cast_slice::<Velocity, u8>(&p.vel));
    let mut pieces = 0;
    block_on(state.for_each_array_piece(&ctx, StateArray::PosMass, |_| {
        pieces += 1;
        false
    }))
    .unwrap();
    assert_eq!(pieces, 1);

    // A restored state (a checkpoint's) goes up the same way.
    let restored = GpuParticles::restore(&ctx, &back).unwrap();
    assert_eq!(block_on(restored.read(&ctx)).unwrap(), back);
}
