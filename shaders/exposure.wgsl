// Exposure from the frame itself, on the GPU (no read-back): two passes.
//
// `histogram`: one invocation per pixel; each lit pixel's value
// (render.wgsl's value_of: light's intensity or mass, in accumulation
// units, at least 1 when anything landed) goes into bin
// floor(BINS_PER_OCTAVE × log2 value) of a log histogram of HIST_BINS bins
// (2^0 to 2^(HIST_BINS / BINS_PER_OCTAVE) units), counted in workgroup
// memory first and then added to `hist`.
//
// `expose`: one workgroup of HIST_BINS invocations scans the histogram
// and finds the value at quantile hi_quantile of the lit pixels (the white
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
var<workgroup> cum: array<u32, HIST_BINS>;
var<workgroup> cum_light: array<f32, HIST_BINS>;

@compute @workgroup_size(HIST_BINS)
fn histogram(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    atomicStore(&local_hist[lid], 0u);
    workgroupBarrier();
    let p = (wid.y * nwg.x + wid.x) * HIST_BINS + lid;
    if (p < tone.width * tone.height) {
        let w = vec4<u32>(accum[4u * p], accum[4u * p + 1u], accum[4u * p + 2u], accum[4u * p + 3u]);
        let v = value_of(w, tone.quantity);
        if (v >= 1.0) {
            let bin = min(u32(floor(f32(BINS_PER_OCTAVE) * log2(v))), HIST_BINS - 1u);
            atomicAdd(&local_hist[bin], 1u);
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

@compute @workgroup_size(HIST_BINS)
fn expose(@builtin(local_invocation_index) lid: u32) {
    let count = atomicLoad(&hist[lid]);
    // What the lo quantile ranks: pixels (maps) or light (pictures).
    var weight = f32(count);
    if (tone.quantity == LIGHT) {
        weight *= at_bin(f32(lid) + 0.5);
    }
    cum[lid] = count;
    cum_light[lid] = weight;
    workgroupBarrier();
    // Inclusive prefix sums (Hillis & Steele).
    for (var o = 1u; o < HIST_BINS; o <<= 1u) {
        var add = 0u;
        var add_light = 0.0;
        if (lid >= o) {
            add = cum[lid - o];
            add_light = cum_light[lid - o];
        }
        workgroupBarrier();
        cum[lid] += add;
        cum_light[lid] += add_light;
        workgroupBarrier();
    }
    let total = cum[HIST_BINS - 1u];
    let total_light = cum_light[HIST_BINS - 1u];
    let before = cum[lid] - count;
    let before_light = cum_light[lid] - weight;
    let fixed = tone.fixed_hi > 0.0;
    if (lid == 0u) {
        exposure.lit = total;
        if (total == 0u) {
            exposure.lo = 1.0;
            exposure.hi = 1.0;
            exposure.top = 1.0;
        }
        if (fixed) {
            exposure.lo = tone.fixed_lo;
            exposure.hi = tone.fixed_hi;
        }
    }
    if (count == 0u) {
        return;
    }
    // A quantile q falls in this bin when before < q × total <= after.
    let lo_rank = tone.lo_quantile * total_light;
    if (lo_rank > before_light && lo_rank <= cum_light[lid] && !fixed) {
        let frac = clamp((lo_rank - before_light) / weight, 0.0, 1.0);
        exposure.lo = at_bin(f32(lid) + frac);
    }
    let hi_rank = tone.hi_quantile * f32(total);
    if (hi_rank > f32(before) && hi_rank <= f32(cum[lid]) && !fixed) {
        let frac = clamp((hi_rank - f32(before)) / f32(count), 0.0, 1.0);
        exposure.hi = at_bin(f32(lid) + frac);
    }
    if (cum[lid] == total) {
        // The highest occupied bin: every bin above is empty.
        exposure.top = at_bin(f32(lid + 1u));
    }
}
