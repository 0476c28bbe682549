// The other domains' summaries as a density: how many of their particles
// a box holds (appended to shaders/summary.wgsl and shaders/spanning.wgsl,
// which bind the summaries as `others`; src/cluster/summary.rs composes
// both).

// The share of box t's volume inside b (along an axis t is flat on, all
// of it where b spans it).
fn share_inside(b: Bounds, t: DomainSummary) -> f32 {
    var share = 1.0;
    for (var x = 0u; x < 3u; x++) {
        let lo = max(b.lo[x], t.lo[x]);
        let hi = min(b.hi[x], t.hi[x]);
        if (hi < lo) {
            return 0.0;
        }
        let side = t.hi[x] - t.lo[x];
        share *= select(1.0, (hi - lo) / side, side > 0.0);
    }
    return share;
}

// The other domains' particles inside b, each of their fine boxes' spread
// evenly over it: `lane`'s part, from every `lanes`-th coarse box of the
// first `domains` summaries in `others` that b meets.
fn others_inside(b: Bounds, lane: u32, lanes: u32, domains: u32) -> f32 {
    var sum = 0.0;
    for (var d = 0u; d < domains; d++) {
        let first = d * DOMAIN_BOXES;
        for (var c = lane; c < COARSE_BOXES; c += lanes) {
            let coarse = others[first + c];
            if (coarse.groups == 0u || share_inside(b, coarse) == 0.0) {
                continue;
            }
            if (all(coarse.lo.xyz >= b.lo.xyz) && all(coarse.hi.xyz <= b.hi.xyz)) {
                // All of it inside (a top cell holds most of a domain's
                // boxes): its fine boxes need no look.
                sum += f32(coarse.particles);
                continue;
            }
            let fine = first + COARSE_BOXES + c * FINE_BOXES;
            for (var j = 0u; j < FINE_BOXES; j++) {
                let f = others[fine + j];
                if (f.groups != 0u) {
                    sum += f32(f.particles) * share_inside(b, f);
                }
            }
        }
    }
    return sum;
}
