//! The tree made visible: a traced interaction list (`tree::trace`) is
//! the CPU twin's (`cpu::interaction_list`, the walk's MAC on the GPU's
//! own cells) and its counts are the walk's own; the overlay
//! (`tree::overlay`) draws the cells where their tight boxes, computed on
//! the CPU from the particles, project.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use pollster::block_on;
use webgrav::gpu::buffers::read_vec;
use webgrav::gpu::layout::PosMass;
use webgrav::gpu::GpuContext;
use webgrav::render::{
    render_offscreen_with, Camera, ColorRanges, ComponentTags, Scene, TagTotals, Tone,
};
use webgrav::state::{GpuParticles, Model, Particles};
use webgrav::tree::layout::*;
use webgrav::tree::overlay::{CellOverlay, Cells};
use webgrav::tree::trace::Trace;
use webgrav::tree::{cpu, TreeConfig, TreeSolver};

fn read<T: bytemuck::Pod>(ctx: &GpuContext, b: &wgpu::Buffer) -> Vec<T> {
    block_on(read_vec(&ctx.device, &ctx.queue, b)).unwrap()
}

/// One tree evaluation of `p` (a run's step leaves the tree so).
fn evaluate(ctx: &GpuContext, p: &Particles, config: TreeConfig) -> (GpuParticles, TreeSolver) {
    let state = GpuParticles::upload(ctx, p).unwrap();
    let tree = TreeSolver::new(ctx, &state, config).unwrap();
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    tree.encode_fresh(&ctx.device, &mut encoder, None);
    ctx.queue.submit(Some(encoder.finish()));
    (state, tree)
}

// Both MACs, several particles: the trace takes the cells and leaves the
// CPU twin takes, and as many multipoles and particles as the walk
// counted for that particle.
#[test]
fn a_traced_list_is_the_walks() {
    let ctx = common::gpu();
    let p = Model::Plummer.generate(6000, 21).unwrap();
    for alpha in [0.0, 0.005] {
        let config = TreeConfig {
            theta: 0.6,
            eps: 0.02,
            alpha,
        };
        let (state, tree) = evaluate(&ctx, &p, config);
        let trace = Trace::new(&ctx.device, &tree);
        let b = &tree.buffers;
        let cells: Vec<TreeCell> = read(&ctx, &b.cells);
        let props: Vec<CellProps> = read(&ctx, &b.props);
        let boxes: Vec<GroupBox> = read(&ctx, &b.group_boxes);
        let counts: Vec<InteractionCount> = read(&ctx, &b.interactions);
        let ids: Vec<u32> = read(&ctx, &state.id);
        let counters = block_on(tree.counters(&ctx)).unwrap();
        let cells = &cells[..counters.cell_count as usize];
        let mut compared = 0;
        for particle in [0u32, 17, 1234, 2999, 5999] {
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            trace.encode(&ctx.device, &ctx.queue, &mut encoder, particle, alpha);
            ctx.queue.submit(Some(encoder.finish()));
            let t = block_on(trace.read(&ctx))
                .unwrap()
                .expect("the particle is traced");
            assert_eq!(
                ids[t.slot as usize], particle,
                "α {alpha}: the particle's slot"
            );
            let g = boxes[t.group as usize];
            assert!(g.start <= t.slot && t.slot < g.start + g.count);
            // The walk's own counts for this particle.
            let walked = counts[t.slot as usize];
            assert_eq!(
                t.accepted.len() as u32,
                walked.pc,
                "α {alpha}, particle {particle}: multipoles"
            );
            assert_eq!(
                t.direct, walked.pp,
                "α {alpha}, particle {particle}: direct particles"
            );
            let direct: u32 = t.leaves.iter().map(|&c| cells[c as usize].count).sum();
            assert_eq!(direct, t.direct);
            let twin = cpu::interaction_list(
                cells,
                &props,
                ([g.lo[0], g.lo[1], g.lo[2]], [g.hi[0], g.hi[1], g.hi[2]]),
                (g.open_scale, g.accel_tol),
                alpha,
            );
            if !twin.marginal.is_empty() {
                continue; // f32 rounding may decide a cell either way
            }
            let sorted = |mut v: Vec<u32>| {
                v.sort_unstable();
                v
            };
            assert_eq!(
                sorted(t.accepted.clone()),
                sorted(twin.accepted),
                "α {alpha}, particle {particle}"
            );
            assert_eq!(
                sorted(t.leaves.clone()),
                sorted(twin.leaves),
                "α {alpha}, particle {particle}"
            );
            compared += 1;
        }
        assert!(
            compared >= 4,
            "α {alpha}: only {compared} lists away from the MAC's threshold"
        );
        // An index past N traces nothing.
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        trace.encode(&ctx.device, &ctx.queue, &mut encoder, 6000, alpha);
        ctx.queue.submit(Some(encoder.finish()));
        assert!(block_on(trace.read(&ctx)).unwrap().is_none());
    }
}

// The overlay's lines are where the cells' boxes project: every pixel the
// overlay changed lies near a projected edge of a box of the first
// levels, whose boxes are computed here from the key-ordered particles
// and the GPU's cell ranges; and the edges' midpoints are drawn.
#[test]
fn the_overlay_draws_the_cells_where_they_project() {
    let ctx = common::gpu();
    let p = Model::Plummer.generate(3000, 8).unwrap();
    let config = TreeConfig {
        theta: 0.6,
        eps: 0.02,
        alpha: 0.0,
    };
    let (state, tree) = evaluate(&ctx, &p, config);
    let (w, h) = (320u32, 240u32);
    let camera = Camera {
        distance: 5.0,
        pitch: 0.4,
        yaw: 0.7,
        brightness: 0.3,
        ..Camera::default()
    };
    let tags = ComponentTags::shells(&p.pos_mass);
    let scene = Scene::new(&ctx, &state, &tags, TagTotals::of(&p.pos_mass, &tags.tags));
    let ranges = ColorRanges::of(&p.vel, None).for_mode(camera.color_mode);
    let overlay = CellOverlay::new(&ctx.device, webgrav::render::OFFSCREEN_FORMAT);
    let max_level = 2;
    let draw = |with_cells: bool| {
        block_on(render_offscreen_with(
            &ctx,
            &scene,
            &camera,
            ranges,
            &Tone::for_map(camera.map),
            (w, h),
            false,
            |encoder: &mut wgpu::CommandEncoder, view: &wgpu::TextureView, cam: &wgpu::Buffer| {
                if with_cells {
                    overlay.draw(&ctx, encoder, view, cam, &tree, Cells::Levels(max_level));
                }
            },
        ))
        .unwrap()
        .rgba
    };
    let (plain, lined) = (draw(false), draw(true));
    // The boxes of levels 0..=2 from the particles themselves.
    let cells: Vec<TreeCell> = read(&ctx, &tree.buffers.cells);
    let pos: Vec<PosMass> = read(&ctx, &state.pos_mass);
    let counters = block_on(tree.counters(&ctx)).unwrap();
    let end = counters.level_start[max_level as usize + 1] as usize;
    let mut segments = Vec::new();
    for cell in &cells[..end] {
        let range = &pos[cell.start as usize..(cell.start + cell.count) as usize];
        let lo: [f32; 3] =
            std::array::from_fn(|a| range.iter().map(|q| q.pos[a]).fold(f32::MAX, f32::min));
        let hi: [f32; 3] =
            std::array::from_fn(|a| range.iter().map(|q| q.pos[a]).fold(f32::MIN, f32::max));
        for axis in 0..3 {
            for other in 0..4 {
                let corner = |end: usize| -> [f32; 3] {
                    let mut bits = [0; 3];
                    bits[(axis + 1) % 3] = other & 1;
                    bits[(axis + 2) % 3] = other >> 1;
                    bits[axis] = end;
                    std::array::from_fn(|a| if bits[a] == 1 { hi[a] } else { lo[a] })
                };
                let a = camera.project(corner(0), w, h);
                let b = camera.project(corner(1), w, h);
                if let (Some(a), Some(b)) = (a, b) {
                    segments.push((a, b));
                }
            }
        }
    }
    assert!(segments.len() >= 12 * 9, "{} edges", segments.len());
    let distance = |x: f32, y: f32| {
        segments
            .iter()
            .map(|&(a, b)| {
                let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
                let l2 = (dx * dx + dy * dy).max(1e-12);
                let t = (((x - a[0]) * dx + (y - a[1]) * dy) / l2).clamp(0.0, 1.0);
                ((x - a[0] - t * dx).powi(2) + (y - a[1] - t * dy).powi(2)).sqrt()
            })
            .fold(f32::MAX, f32::min)
    };
    let changed = |i: usize| (0..3).any(|c| lined[4 * i + c] != plain[4 * i + c]);
    let (mut lit, mut near) = (0, 0);
    for i in 0..(w * h) as usize {
        if changed(i) {
            lit += 1;
            let (x, y) = ((i as u32 % w) as f32 + 0.5, (i as u32 / w) as f32 + 0.5);
            if distance(x, y) <= 1.5 {
                near += 1;
            }
        }
    }
    assert!(lit > 500, "the overlay drew {lit} pixels");
    assert!(
        near as f64 >= 0.99 * lit as f64,
        "{near} of {lit} changed pixels near a projected edge"
    );
    // Midpoints of the edges inside the picture are drawn.
    let inside: Vec<_> = segments
        .iter()
        .map(|(a, b)| [(a[0] + b[0]) / 2.0, (a[1] + b[1]) / 2.0])
        .filter(|m| m[0] >= 1.0 && m[1] >= 1.0 && m[0] < w as f32 - 1.0 && m[1] < h as f32 - 1.0)
        .collect();
    let drawn = inside
        .iter()
        .filter(|m| {
            (-1..=1).any(|dy: i32| {
                (-1..=1).any(|dx: i32| {
                    let (x, y) = (m[0] as i32 + dx, m[1] as i32 + dy);
                    changed((y as u32 * w + x as u32) as usize)
                })
            })
        })
        .count();
    assert!(
        drawn as f64 >= 0.9 * inside.len() as f64,
        "{drawn} of {} edge midpoints drawn",
        inside.len()
    );
}

// `webgrav render --cells K` draws a snapshot's tree over its picture;
// more levels than the tree has are refused by the option's range.
#[test]
fn render_draws_a_snapshots_cells() {
    let dir = common::fresh_dir("render-cells");
    let snap = dir.join("s.csv");
    let snap_s = snap.to_str().unwrap();
    let (ok, _, err) = common::webgrav(&["run", "-n", "1500", "--t-end", "0", "--out", snap_s]);
    assert!(ok, "{err}");
    let picture = |cells: &str| -> Vec<u8> {
        let png = dir.join(format!("cells-{cells}.png"));
        let png_s = png.to_str().unwrap();
        let (ok, _, err) = common::webgrav(&[
            "render", snap_s, "-o", png_s, "--width", "160", "--height", "120", "--cells", cells,
        ]);
        assert!(ok, "{err}");
        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        buf.truncate(info.buffer_size());
        buf
    };
    let (plain, cells) = (picture("0"), picture("3"));
    let changed = plain
        .chunks(4)
        .zip(cells.chunks(4))
        .filter(|(a, b)| a[..3] != b[..3])
        .count();
    assert!(changed > 300, "{changed} pixels changed by --cells 3");
    let (ok, _, err) = common::webgrav(&["render", snap_s, "-o", "x.png", "--cells", "23"]);
    assert!(!ok && err.contains("23"), "{err}");
}
