//! Every composed shader of the crate with the binding contract its Rust
//! module declares: what `tests/gpu_layout.rs` validates with naga and
//! checks binding by binding. A new shader is added here (the registry
//! lives at the top, in the tests, so no crate module imports every other).

use webgrav::gpu::kernel::Slot;
use webgrav::hermite::{hermite_force, neighbours, predict, Order, Precision};
use webgrav::{cluster, direct, render, run, state, tree};

/// (name, composed WGSL, group 0's contract).
pub fn all() -> Vec<(String, String, &'static [Slot])> {
    let mut v: Vec<(String, String, &'static [Slot])> = vec![
        ("direct".into(), direct::wgsl(), direct::BINDINGS),
        (
            "energy".into(),
            state::energy::wgsl(),
            state::energy::BINDINGS,
        ),
        (
            "direct unsoftened".into(),
            direct::wgsl_for(Default::default(), false),
            direct::BINDINGS,
        ),
        (
            "leapfrog".into(),
            run::leapfrog::wgsl(),
            run::leapfrog::BINDINGS,
        ),
        ("block".into(), run::block::wgsl(), run::block::BINDINGS),
        (
            "generate".into(),
            state::generate::wgsl(),
            state::generate::BINDINGS,
        ),
        (
            "diagnostics".into(),
            state::diagnostics::wgsl(),
            state::diagnostics::BINDINGS,
        ),
        (
            "input order".into(),
            webgrav::state::input_order::wgsl(),
            webgrav::state::input_order::BINDINGS,
        ),
        (
            "upload order".into(),
            webgrav::state::particles::wgsl(),
            webgrav::state::particles::BINDINGS,
        ),
        (
            "render splat".into(),
            render::splat::wgsl(),
            render::splat::BINDINGS,
        ),
        (
            "render exposure".into(),
            render::exposure::wgsl(),
            render::exposure::BINDINGS,
        ),
        (
            "render view sample".into(),
            render::view_sample::wgsl(),
            render::view_sample::BINDINGS,
        ),
        (
            "render tonemap".into(),
            render::tonemap::wgsl(),
            render::tonemap::BINDINGS,
        ),
        ("bbox".into(), tree::bbox::wgsl(), tree::bbox::BINDINGS),
        (
            "tree overlay".into(),
            tree::overlay::wgsl(),
            tree::overlay::BINDINGS,
        ),
        ("trace".into(), tree::trace::wgsl(), tree::trace::BINDINGS),
        ("keys".into(), tree::keys::wgsl(), tree::keys::BINDINGS),
        ("sort".into(), tree::sort::wgsl(), tree::sort::BINDINGS),
        (
            "reorder".into(),
            tree::reorder::wgsl(),
            tree::reorder::BINDINGS,
        ),
        ("build".into(), tree::build::wgsl(), tree::build::BINDINGS),
        (
            "properties".into(),
            tree::properties::wgsl(),
            tree::properties::BINDINGS,
        ),
        (
            "groups".into(),
            tree::groups::wgsl(),
            tree::groups::BINDINGS,
        ),
        (
            "walk".into(),
            tree::walk::wgsl(tree::walk::WalkPath::Portable),
            tree::walk::BINDINGS,
        ),
        (
            "walk subgroups".into(),
            tree::walk::wgsl(tree::walk::WalkPath::Subgroups),
            tree::walk::BINDINGS,
        ),
        (
            "walk imported".into(),
            tree::walk::wgsl_of(
                tree::walk::WalkPath::Portable,
                tree::walk::WalkedTree::Imported,
            ),
            tree::walk::BINDINGS,
        ),
        (
            "walk imported subgroups".into(),
            tree::walk::wgsl_of(
                tree::walk::WalkPath::Subgroups,
                tree::walk::WalkedTree::Imported,
            ),
            tree::walk::BINDINGS,
        ),
        (
            "summary".into(),
            cluster::summary::wgsl(),
            cluster::summary::BINDINGS,
        ),
        (
            "spanning".into(),
            cluster::spanning::wgsl(),
            cluster::spanning::BINDINGS,
        ),
        (
            "let_tree".into(),
            cluster::let_tree::wgsl(),
            cluster::let_tree::BINDINGS,
        ),
        (
            "domain_keys".into(),
            cluster::domain_keys::wgsl(),
            cluster::domain_keys::BINDINGS,
        ),
        (
            "migration".into(),
            cluster::migration::wgsl(),
            cluster::migration::BINDINGS,
        ),
        (
            "global ids".into(),
            cluster::global_ids::wgsl(),
            cluster::global_ids::BINDINGS,
        ),
        ("predict".into(), predict::wgsl(), predict::BINDINGS),
        ("predict dp".into(), predict::wgsl_dp(), predict::BINDINGS),
        (
            "neighbours".into(),
            neighbours::wgsl(),
            neighbours::BINDINGS,
        ),
    ];
    for order in [Order::Two, Order::Four, Order::Six] {
        for precision in Precision::ALL {
            v.push((
                format!("hermite_force {order:?} {}", precision.name()),
                hermite_force::wgsl(order, *precision, false),
                hermite_force::BINDINGS,
            ));
        }
        v.push((
            format!("hermite_force {order:?} ds, f64 sums"),
            hermite_force::wgsl(order, Precision::Ds, true),
            hermite_force::BINDINGS,
        ));
    }
    v
}
