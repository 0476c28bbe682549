//! The Rust structs of `gpu::layout` and the WGSL structs of
//! `shaders/layout.wgsl` must agree byte for byte; every composed shader of
//! the crate must pass naga's validation, and its bindings must be the ones
//! its Rust module declares.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::mem::{offset_of, size_of};
use webgrav::gpu::kernel::{Binding, RENDER_ENTRY_POINTS};
use webgrav::gpu::layout::*;
use webgrav::gpu::shader;

fn wgsl_layout(src: &str, name: &str) -> (u32, Vec<(String, u32)>) {
    let module = naga::front::wgsl::parse_str(src).expect("layouts parse");
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).expect("layouts");
    for (handle, ty) in module.types.iter() {
        if ty.name.as_deref() == Some(name) {
            if let naga::TypeInner::Struct { members, span } = &ty.inner {
                let _ = handle;
                return (
                    *span,
                    members
                        .iter()
                        .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
                        .collect(),
                );
            }
        }
    }
    panic!("struct {name} not found in layout.wgsl");
}

fn check(name: &str, size: usize, offsets: &[(&str, usize)]) {
    check_in(&webgrav::gpu::shader::compose(&[], ""), name, size, offsets)
}

fn check_in(src: &str, name: &str, size: usize, offsets: &[(&str, usize)]) {
    let (wgsl_size, wgsl_members) = wgsl_layout(src, name);
    assert_eq!(
        wgsl_size as usize, size,
        "{name}: WGSL size {wgsl_size} vs Rust size {size}"
    );
    let rust: Vec<(String, u32)> = offsets
        .iter()
        .map(|(n, o)| (n.to_string(), *o as u32))
        .collect();
    assert_eq!(
        wgsl_members, rust,
        "{name}: member names/offsets differ between WGSL and Rust"
    );
}

#[test]
fn layouts_match_wgsl() {
    check(
        "PosMass",
        size_of::<PosMass>(),
        &[
            ("pos", offset_of!(PosMass, pos)),
            ("mass", offset_of!(PosMass, mass)),
        ],
    );
    check(
        "Velocity",
        size_of::<Velocity>(),
        &[
            ("vel", offset_of!(Velocity, vel)),
            ("last_acc", offset_of!(Velocity, last_acc)),
        ],
    );
    check(
        "AccPot",
        size_of::<AccPot>(),
        &[
            ("acc", offset_of!(AccPot, acc)),
            ("pot", offset_of!(AccPot, pot)),
        ],
    );
    check(
        "GenerateParams",
        size_of::<GenerateParams>(),
        &[
            ("key_lo", offset_of!(GenerateParams, key_lo)),
            ("key_hi", offset_of!(GenerateParams, key_hi)),
            ("first", offset_of!(GenerateParams, first)),
            ("count", offset_of!(GenerateParams, count)),
            ("mass", offset_of!(GenerateParams, mass)),
            ("at_rest", offset_of!(GenerateParams, at_rest)),
            ("mass_cut", offset_of!(GenerateParams, mass_cut)),
            ("scale_radius", offset_of!(GenerateParams, scale_radius)),
            ("nodes", offset_of!(GenerateParams, nodes)),
            ("inner_exponent", offset_of!(GenerateParams, inner_exponent)),
            ("total_mass", offset_of!(GenerateParams, total_mass)),
            ("bound_beyond", offset_of!(GenerateParams, bound_beyond)),
            ("scale_length", offset_of!(GenerateParams, scale_length)),
            ("scale_height", offset_of!(GenerateParams, scale_height)),
            ("max_radius", offset_of!(GenerateParams, max_radius)),
            ("spacing", offset_of!(GenerateParams, spacing)),
            ("dst", offset_of!(GenerateParams, dst)),
            ("tag", offset_of!(GenerateParams, tag)),
            ("_pad0", offset_of!(GenerateParams, _pad0)),
            ("_pad1", offset_of!(GenerateParams, _pad1)),
        ],
    );
    check(
        "EnergyParams",
        size_of::<EnergyParams>(),
        &[
            ("n", offset_of!(EnergyParams, n)),
            ("src_first", offset_of!(EnergyParams, src_first)),
            ("src_count", offset_of!(EnergyParams, src_count)),
            ("sink_first", offset_of!(EnergyParams, sink_first)),
            ("sinks", offset_of!(EnergyParams, sinks)),
            ("eps2_hi", offset_of!(EnergyParams, eps2_hi)),
            ("eps2_lo", offset_of!(EnergyParams, eps2_lo)),
            ("one", offset_of!(EnergyParams, one)),
        ],
    );
    check(
        "DirectParams",
        size_of::<DirectParams>(),
        &[
            ("n", offset_of!(DirectParams, n)),
            ("eps2", offset_of!(DirectParams, eps2)),
            ("first_group", offset_of!(DirectParams, first_group)),
            ("_pad1", offset_of!(DirectParams, _pad1)),
        ],
    );
    check(
        "InputOrderParams",
        size_of::<InputOrderParams>(),
        &[
            ("n", offset_of!(InputOrderParams, n)),
            ("first", offset_of!(InputOrderParams, first)),
            ("count", offset_of!(InputOrderParams, count)),
            ("_pad0", offset_of!(InputOrderParams, _pad0)),
        ],
    );
    check(
        "DiagnosticsParams",
        size_of::<DiagnosticsParams>(),
        &[
            ("n", offset_of!(DiagnosticsParams, n)),
            ("one", offset_of!(DiagnosticsParams, one)),
            ("_pad0", offset_of!(DiagnosticsParams, _pad0)),
            ("_pad1", offset_of!(DiagnosticsParams, _pad1)),
        ],
    );
    check(
        "ViewSampleParams",
        size_of::<ViewSampleParams>(),
        &[
            ("n", offset_of!(ViewSampleParams, n)),
            ("picked", offset_of!(ViewSampleParams, picked)),
            ("forces", offset_of!(ViewSampleParams, forces)),
            ("with_ids", offset_of!(ViewSampleParams, with_ids)),
            ("wanted", offset_of!(ViewSampleParams, wanted)),
            ("_pad0", offset_of!(ViewSampleParams, _pad0)),
            ("_pad1", offset_of!(ViewSampleParams, _pad1)),
            ("_pad2", offset_of!(ViewSampleParams, _pad2)),
            ("centre", offset_of!(ViewSampleParams, centre)),
            ("edges", offset_of!(ViewSampleParams, edges)),
        ],
    );
    check(
        "LeapfrogParams",
        size_of::<LeapfrogParams>(),
        &[
            ("n", offset_of!(LeapfrogParams, n)),
            ("half_dt", offset_of!(LeapfrogParams, half_dt)),
            ("dt", offset_of!(LeapfrogParams, dt)),
            ("_pad0", offset_of!(LeapfrogParams, _pad0)),
        ],
    );
    check(
        "BlockParams",
        size_of::<BlockParams>(),
        &[
            ("n", offset_of!(BlockParams, n)),
            ("levels", offset_of!(BlockParams, levels)),
            ("substep", offset_of!(BlockParams, substep)),
            ("walk_workgroups", offset_of!(BlockParams, walk_workgroups)),
            ("dt_max", offset_of!(BlockParams, dt_max)),
            ("two_eta_eps", offset_of!(BlockParams, two_eta_eps)),
            ("_pad0", offset_of!(BlockParams, _pad0)),
            ("_pad1", offset_of!(BlockParams, _pad1)),
        ],
    );
    check(
        "BlockCounters",
        size_of::<BlockCounters>(),
        &[
            ("active_groups", offset_of!(BlockCounters, active_groups)),
            ("deepest", offset_of!(BlockCounters, deepest)),
            ("busy_substeps", offset_of!(BlockCounters, busy_substeps)),
            ("idle_substeps", offset_of!(BlockCounters, idle_substeps)),
            (
                "walked_particles",
                offset_of!(BlockCounters, walked_particles),
            ),
            (
                "active_particles",
                offset_of!(BlockCounters, active_particles),
            ),
        ],
    );
    check(
        "CameraUniform",
        size_of::<CameraUniform>(),
        &[
            ("view_proj", offset_of!(CameraUniform, view_proj)),
            ("viewport", offset_of!(CameraUniform, viewport)),
            ("color", offset_of!(CameraUniform, color)),
            ("unit_scale", offset_of!(CameraUniform, unit_scale)),
            ("color_mode", offset_of!(CameraUniform, color_mode)),
            ("value_lo", offset_of!(CameraUniform, value_lo)),
            ("value_hi", offset_of!(CameraUniform, value_hi)),
            ("hidden_tags", offset_of!(CameraUniform, hidden_tags)),
            ("marked_tags", offset_of!(CameraUniform, marked_tags)),
            ("quantity", offset_of!(CameraUniform, quantity)),
            ("n", offset_of!(CameraUniform, n)),
            ("max_radius", offset_of!(CameraUniform, max_radius)),
            ("smoothing", offset_of!(CameraUniform, smoothing)),
            ("_pad0", offset_of!(CameraUniform, _pad0)),
            ("_pad1", offset_of!(CameraUniform, _pad1)),
            ("_pad2", offset_of!(CameraUniform, _pad2)),
        ],
    );
    check(
        "TagStyle",
        size_of::<TagStyle>(),
        &[
            ("color", offset_of!(TagStyle, color)),
            ("light", offset_of!(TagStyle, light)),
        ],
    );
    check(
        "ToneUniform",
        size_of::<ToneUniform>(),
        &[
            ("width", offset_of!(ToneUniform, width)),
            ("height", offset_of!(ToneUniform, height)),
            ("quantity", offset_of!(ToneUniform, quantity)),
            ("bias", offset_of!(ToneUniform, bias)),
            ("lo_quantile", offset_of!(ToneUniform, lo_quantile)),
            ("hi_quantile", offset_of!(ToneUniform, hi_quantile)),
            ("fixed_lo", offset_of!(ToneUniform, fixed_lo)),
            ("fixed_hi", offset_of!(ToneUniform, fixed_hi)),
            ("paper", offset_of!(ToneUniform, paper)),
            ("_pad0", offset_of!(ToneUniform, _pad0)),
            ("_pad1", offset_of!(ToneUniform, _pad1)),
            ("_pad2", offset_of!(ToneUniform, _pad2)),
        ],
    );
    check(
        "Exposure",
        size_of::<Exposure>(),
        &[
            ("lo", offset_of!(Exposure, lo)),
            ("hi", offset_of!(Exposure, hi)),
            ("lit", offset_of!(Exposure, lit)),
            ("top", offset_of!(Exposure, top)),
        ],
    );
    check(
        "SortParams",
        size_of::<SortParams>(),
        &[
            ("n", offset_of!(SortParams, n)),
            ("num_blocks", offset_of!(SortParams, num_blocks)),
            ("shift", offset_of!(SortParams, shift)),
            ("digit_mask", offset_of!(SortParams, digit_mask)),
        ],
    );
}

/// Offsets of the named fields of a struct, for `check_in`.
macro_rules! fields {
    ($t:ty: $($f:ident),*) => {
        &[$((stringify!($f), offset_of!($t, $f))),*]
    };
}

#[test]
fn tree_layouts_match_wgsl() {
    use webgrav::tree::layout::*;
    let src = webgrav::tree::bbox::wgsl();
    check_in(&src, "Bounds", size_of::<Bounds>(), fields!(Bounds: lo, hi));
    check_in(
        &src,
        "SystemCube",
        size_of::<SystemCube>(),
        fields!(SystemCube: lo, side),
    );
    check_in(
        &src,
        "TreeBounds",
        size_of::<TreeBounds>(),
        fields!(TreeBounds: own, system),
    );
    check_in(
        &src,
        "TreeParams",
        size_of::<TreeParams>(),
        fields!(TreeParams: n, cell_capacity, eps2, inv_theta, group_capacity, walk_workgroups, alpha, walk_share_cap),
    );
    check_in(
        &src,
        "LevelParams",
        size_of::<LevelParams>(),
        fields!(LevelParams: level, deepest, max_workgroups, _pad),
    );
    check_in(
        &src,
        "TreeCell",
        size_of::<TreeCell>(),
        fields!(TreeCell: start, count, first_child, child_count),
    );
    check_in(
        &src,
        "CellProps",
        size_of::<CellProps>(),
        fields!(CellProps: com_mass, quad_diag, quad_off),
    );
    check_in(
        &src,
        "DispatchArgs",
        size_of::<DispatchArgs>(),
        fields!(DispatchArgs: x, y, z),
    );
    // LevelArgs is DispatchArgs with an atomic x (same bytes).
    check_in(
        &src,
        "LevelArgs",
        size_of::<DispatchArgs>(),
        fields!(DispatchArgs: x, y, z),
    );
    check_in(
        &src,
        "TreeCounters",
        size_of::<TreeCounters>(),
        fields!(TreeCounters: cell_count, group_count, overflow, depth, groups_built, next_group, level_start, idle, property_passes),
    );
    check_in(
        &src,
        "TreeDispatch",
        size_of::<TreeDispatch>(),
        fields!(TreeDispatch: level_args, group_args, walk_args),
    );
    check_in(
        &src,
        "Group",
        size_of::<Group>(),
        fields!(Group: start, count),
    );
    check_in(
        &src,
        "GroupBox",
        size_of::<GroupBox>(),
        fields!(GroupBox: lo, hi, start, count, open_scale, accel_tol),
    );
    check_in(
        &src,
        "OverlayParams",
        size_of::<OverlayParams>(),
        fields!(OverlayParams: max_level, from_list, alpha, _pad),
    );
    check_in(
        &src,
        "TraceParams",
        size_of::<TraceParams>(),
        fields!(TraceParams: particle, n, capacity, alpha),
    );
    check_in(
        &src,
        "TraceResult",
        size_of::<TraceResult>(),
        fields!(TraceResult: slot, found, group, truncated, accepted, leaves, direct, group_count, group_lo, group_hi),
    );
    check_in(
        &src,
        "InteractionCount",
        size_of::<InteractionCount>(),
        fields!(InteractionCount: pp, pc),
    );
    check_in(
        &src,
        "DomainSummary",
        size_of::<DomainSummary>(),
        fields!(DomainSummary: lo, hi, open_scale, accel_tol, groups, particles),
    );
    check_in(
        &src,
        "SummaryParams",
        size_of::<SummaryParams>(),
        fields!(SummaryParams: other_domains, coarse_boxes, fine_boxes, _pad),
    );
    check_in(
        &src,
        "RedrawParams",
        size_of::<RedrawParams>(),
        fields!(RedrawParams: lo, scale, n, stride, cuts, rank, _pad0, _pad1, _pad2),
    );
    check_in(
        &src,
        "CutCandidate",
        size_of::<CutCandidate>(),
        fields!(CutCandidate: key, work, _pad),
    );
    check_in(
        &src,
        "LetPass",
        size_of::<LetPass>(),
        fields!(LetPass: begin, end, domain, root, cell_capacity, particle_capacity, _pad0, _pad1),
    );
    check_in(
        &src,
        "LetCell",
        size_of::<LetCell>(),
        fields!(LetCell: cell, props),
    );
    // LetCounters ends in the runtime array `begins`, which the Rust head
    // leaves out: the head's fields and size are where `begins` starts.
    let (_, members) = wgsl_layout(&src, "LetCounters");
    let offsets: Vec<(&str, u32)> = members.iter().map(|(n, o)| (n.as_str(), *o)).collect();
    assert_eq!(
        offsets,
        vec![
            ("cells", offset_of!(LetCounters, cells) as u32),
            ("particles", offset_of!(LetCounters, particles) as u32),
            ("overflow", offset_of!(LetCounters, overflow) as u32),
            ("_pad", offset_of!(LetCounters, _pad) as u32),
            ("begins", size_of::<LetCounters>() as u32),
        ]
    );
}

fn validate(name: &str, src: &str) -> naga::Module {
    validate_with_info(name, src).0
}

fn validate_with_info(name: &str, src: &str) -> (naga::Module, naga::valid::ModuleInfo) {
    let module = naga::front::wgsl::parse_str(src)
        .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(src)));
    // The `dp` and f64-sum kernels need f64 and the `subgroups` ones
    // subgroup operations, which the crate requests only where the adapter
    // has them (wgpu's SHADER_F64 is naga's FLOAT64, its SUBGROUP naga's
    // SUBGROUP).
    let caps = if name.ends_with(" dp") || name.ends_with(" f64 sums") {
        naga::valid::Capabilities::FLOAT64
    } else if name.ends_with(" subgroups") {
        naga::valid::Capabilities::SUBGROUP
    } else {
        naga::valid::Capabilities::empty()
    };
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .validate(&module)
        .unwrap_or_else(|e| panic!("{name}: {e:?}"));
    (module, info)
}

#[test]
fn every_shader_validates() {
    for (name, src, _) in common::shaders::all() {
        validate(&name, &src);
    }
}

// Each pipeline is compiled from what its entry point reaches
// (`shader::reachable`): that cut must validate, keep its entry point,
// and use exactly the globals (bindings, workgroup memory) the entry
// point uses in the whole module, and it must leave out what the entry
// point does not reach (what a browser would otherwise compile again for
// every pipeline). A cut must hold exactly the entry points it was cut
// for.
//
// With WEBGRAV_WRITE_WGSL=DIR it also writes every whole module to
// DIR/wgsl/ and every compute entry point's cut to DIR/wgsl-cut/, for
// `tests/browser-engine/compile.mjs` to time in the browser engine.
#[test]
fn every_entry_point_compiles_from_what_it_reaches() {
    let write_to = std::env::var_os("WEBGRAV_WRITE_WGSL").map(std::path::PathBuf::from);
    if let Some(dir) = &write_to {
        for sub in ["wgsl", "wgsl-cut"] {
            let _ = std::fs::remove_dir_all(dir.join(sub));
            std::fs::create_dir_all(dir.join(sub)).expect("a directory for the WGSL");
        }
    }
    let (mut whole_bytes, mut cut_bytes) = (0, 0);
    for (name, src, _) in common::shaders::all() {
        let file = name.replace([' ', ','], "_");
        if let Some(dir) = &write_to {
            std::fs::write(dir.join("wgsl").join(format!("{file}.wgsl")), &src).expect("written");
        }
        let (module, info) = validate_with_info(&name, &src);
        // The cuts the crate compiles: one per compute entry point, one
        // for a render pipeline's two stages.
        let mut cuts: Vec<Vec<&str>> = module
            .entry_points
            .iter()
            .filter(|ep| ep.stage == naga::ShaderStage::Compute)
            .map(|ep| vec![ep.name.as_str()])
            .collect();
        if module
            .entry_points
            .iter()
            .any(|ep| ep.stage != naga::ShaderStage::Compute)
        {
            cuts.push(RENDER_ENTRY_POINTS.to_vec());
        }
        for roots in cuts {
            let cut = shader::reachable(&src, &roots);
            let label = format!("{name} {roots:?}");
            // (Validated under the module's name: its suffix picks the
            // capabilities.)
            let (cut_module, cut_info) = validate_with_info(&name, &cut);
            let mut kept: Vec<&str> = cut_module
                .entry_points
                .iter()
                .map(|e| e.name.as_str())
                .collect();
            kept.sort();
            let mut wanted = roots.clone();
            wanted.sort();
            // Exactly the roots: a cut that fell back to the whole source
            // (a root not found, braces not balanced) fails here.
            assert_eq!(kept, wanted, "{label}: entry points kept");
            for root in &roots {
                let whole_k = entry_index(&module, root);
                let cut_k = entry_index(&cut_module, root);
                assert_eq!(
                    used_globals(&cut_module, &cut_info, cut_k),
                    used_globals(&module, &info, whole_k),
                    "{label}: globals {root} uses"
                );
            }
            assert!(cut.len() < src.len(), "{label}");
            if let (Some(dir), [entry]) = (&write_to, roots.as_slice()) {
                let path = dir.join("wgsl-cut").join(format!("{file}.{entry}.wgsl"));
                std::fs::write(path, &cut).expect("written");
            }
            whole_bytes += src.len();
            cut_bytes += cut.len();
        }
    }
    // Every module carries the shared layouts and most hold several entry
    // points: the cuts are a small part of the whole (a sixth today).
    assert!(
        cut_bytes * 4 < whole_bytes,
        "cut {cut_bytes} of {whole_bytes} bytes"
    );
}

fn entry_index(module: &naga::Module, name: &str) -> usize {
    module
        .entry_points
        .iter()
        .position(|e| e.name == name)
        .unwrap_or_else(|| panic!("no entry point {name}"))
}

/// The names of the globals entry point `k` uses.
fn used_globals(module: &naga::Module, info: &naga::valid::ModuleInfo, k: usize) -> Vec<String> {
    let mut used: Vec<String> = module
        .global_variables
        .iter()
        .filter(|(h, _)| !info.get_entry_point(k)[*h].is_empty())
        .map(|(_, g)| g.name.clone().unwrap_or_default())
        .collect();
    used.sort();
    used
}

/// The access a WGSL global of group 0 asks for, as the Rust contract
/// spells it.
fn wgsl_access(space: naga::AddressSpace) -> Option<Binding> {
    match space {
        naga::AddressSpace::Uniform => Some(Binding::Uniform),
        naga::AddressSpace::Storage { access } => {
            Some(if access.contains(naga::StorageAccess::STORE) {
                Binding::StorageReadWrite
            } else {
                Binding::StorageRead
            })
        }
        _ => None,
    }
}

// Each module's `BINDINGS` (the one place the Rust side states a shader's
// bindings; kernels, layouts and bind groups are built from it) must name
// the WGSL's group-0 globals in binding order with the same access, and
// cover all of them: a mismatch would otherwise only show as a validation
// error in a browser tab.
#[test]
fn binding_contracts_match_the_wgsl() {
    for (name, src, contract) in common::shaders::all() {
        let module = validate(&name, &src);
        let mut wgsl: Vec<(u32, String, Binding)> = module
            .global_variables
            .iter()
            .filter_map(|(_, g)| {
                let b = g.binding.as_ref()?;
                assert_eq!(b.group, 0, "{name}: {:?} outside group 0", g.name);
                Some((
                    b.binding,
                    g.name.clone().unwrap_or_default(),
                    wgsl_access(g.space)?,
                ))
            })
            .collect();
        wgsl.sort_by_key(|w| w.0);
        assert_eq!(
            wgsl.len(),
            contract.len(),
            "{name}: WGSL binds {:?}, Rust declares {:?}",
            wgsl.iter().map(|w| &w.1).collect::<Vec<_>>(),
            contract.iter().map(|c| c.0).collect::<Vec<_>>()
        );
        for (k, ((index, var, access), (rust_name, rust_access))) in
            wgsl.iter().zip(contract).enumerate()
        {
            assert_eq!(*index as usize, k, "{name}: bindings not numbered 0..n");
            assert_eq!(var, rust_name, "{name}: binding {k}");
            // A dynamic-offset uniform is a uniform to the WGSL.
            let rust_access = match rust_access {
                Binding::UniformDynamic => Binding::Uniform,
                a => *a,
            };
            assert_eq!(*access, rust_access, "{name}: binding {k} ({var})");
        }
    }
}

#[test]
fn hermite_layouts_match_wgsl() {
    let src = webgrav::hermite::predict::wgsl();
    check_in(
        &src,
        "JParticle",
        size_of::<JParticle>(),
        fields!(JParticle: pos_hi, mass, pos_lo, id, vel, t0_hi, acc, t0_lo, jerk, vel_lo_x, snap, vel_lo_y, crackle, vel_lo_z, acc_lo, mass_lo, jerk_lo, _pad1, snap_lo, _pad2),
    );
    check_in(
        &src,
        "PredJ",
        size_of::<PredJ>(),
        fields!(PredJ: pos_hi, mass, pos_lo, id, vel, mass_lo, acc, _pad1, vel_lo, _pad2),
    );
    check_in(
        &src,
        "IParticle",
        size_of::<IParticle>(),
        fields!(IParticle: pos_hi, id, pos_lo, h2, vel, _pad0, acc, _pad1, vel_lo, _pad2),
    );
    check_in(
        &src,
        "ForceResult",
        size_of::<ForceResult>(),
        fields!(ForceResult: acc_hi, pot_hi, acc_lo, pot_lo, jerk_hi, nn_d2, jerk_lo, nn_id, snap, _pad0, snap_lo, _pad1),
    );
    check_in(
        &src,
        "HermiteParams",
        size_of::<HermiteParams>(),
        fields!(HermiteParams: ni, nj, chunk, nsplit, ni_stride, n_update, eps2, one, t_hi, t_lo, eps2_lo, reduce_lanes, sink_lanes),
    );
}
