// Exposure from the frame itself, on the GPU (no read-back): two passes.
//
// `histogram`: each invocation takes PIXELS_PER_INVOCATION pixels, a
// workgroup's pixels consecutive; each lit pixel's value (render.wgsl's
// value_of: light's intensity or mass, in accumulation units, at least 1
// when anything landed) goes into bin floor(BINS_PER_OCTAVE × log2 value)
// of a log histogram of HIST_BINS bins (2^0 to 2^(HIST_BINS /
// BINS_PER_OCTAVE) units), counted in workgroup memory first and then
// added to `hist`. Several pixels per invocation keep the workgroups (and
// their two barriers, which cost a software adapter about a millisecond
// each) few.
//
// `expose`: one invocation walks the histogram and finds the value at quantile hi_quantile of the lit pixels (the white
// point of a picture, the top of a map's colour range) and at quantile
// lo_quantile: of the pixels for maps, of the light for pictures (each
// bin's pixels weighing their value at the bin's middle), so a picture's
// faint end sits where the light is, not among the many pixels a few
// faint particles light. Values are log-linear inside the bin a quantile
// falls in; a given range (fixed_hi > 0) replaces both. CPU twin:
// render::exposure::expose.
// Driven by src/render/exposure.rs.

@group(0) @binding(0) var<uniform> tone: ToneUniform;
@group(0) @binding(1) var<storage, read> accum: array<u32>;
@group(0) @binding(2) var<storage, read_write> hist: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> exposure: Exposure;

var<workgroup> local_hist: array<atomic<u32>, HIST_BINS>;

@compute @workgroup_size(HIST_BINS)
fn histogram(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    atomicStore(&local_hist[lid], 0u);
    workgroupBarrier();
    let first = (wid.y * nwg.x + wid.x) * HIST_BINS * PIXELS_PER_INVOCATION;
    for (var s = 0u; s < PIXELS_PER_INVOCATION; s++) {
        let p = first + s * HIST_BINS + lid;
        if (p < tone.width * tone.height) {
            let w = vec4<u32>(accum[4u * p], accum[4u * p + 1u], accum[4u * p + 2u], accum[4u * p + 3u]);
            let v = value_of(w, tone.quantity);
            if (v >= 1.0) {
                let bin = min(u32(floor(f32(BINS_PER_OCTAVE) * log2(v))), HIST_BINS - 1u);
                atomicAdd(&local_hist[bin], 1u);
            }
        }
    }
    workgroupBarrier();
    let c = atomicLoad(&local_hist[lid]);
    if (c != 0u) {
        atomicAdd(&hist[lid], c);
    }
}

// Value at the bin edge position x (in bins).
fn at_bin(x: f32) -> f32 {
    return exp2(x / f32(BINS_PER_OCTAVE));
}

// What bin b's `count` pixels weigh in the lo quantile: their number
// (maps) or their light at the bin's middle (pictures).
fn weight_of(b: u32, count: u32) -> f32 {
    if (tone.quantity == LIGHT) {
        return f32(count) * at_bin(f32(b) + 0.5);
    }
    return f32(count);
}

@compute @workgroup_size(1)
fn expose() {
    // One invocation walks the bins in order: HIST_BINS steps, no barriers
    // (each costs a software adapter about a millisecond).
    var total = 0u;
    var total_light = 0.0;
    for (var b = 0u; b < HIST_BINS; b++) {
        let count = atomicLoad(&hist[b]);
        total += count;
        total_light += weight_of(b, count);
    }
    exposure.lit = total;
    exposure.lo = 1.0;
    exposure.hi = 1.0;
    exposure.top = 1.0;
    let lo_rank = tone.lo_quantile * total_light;
    let hi_rank = tone.hi_quantile * f32(total);
    var before = 0u;
    var before_light = 0.0;
    for (var b = 0u; b < HIST_BINS; b++) {
        let count = atomicLoad(&hist[b]);
        if (count == 0u) {
            continue;
        }
        // A quantile q falls in this bin when before < q × total <= after.
        let weight = weight_of(b, count);
        if (lo_rank > before_light && lo_rank <= before_light + weight) {
            exposure.lo = at_bin(f32(b) + clamp((lo_rank - before_light) / weight, 0.0, 1.0));
        }
        if (hi_rank > f32(before) && hi_rank <= f32(before + count)) {
            exposure.hi = at_bin(f32(b) + clamp((hi_rank - f32(before)) / f32(count), 0.0, 1.0));
        }
        before += count;
        before_light += weight;
        if (before == total) {
            // The highest occupied bin.
            exposure.top = at_bin(f32(b + 1u));
            break;
        }
    }
    if (tone.fixed_hi > 0.0) {
        exposure.lo = tone.fixed_lo;
        exposure.hi = tone.fixed_hi;
    }
}
