// Tone mapping: one full-screen triangle turns the accumulation into the
// picture, with the exposure the frame measured (exposure.wgsl).
//
// Light: Lupton et al. (2004)'s asinh stretch of the intensity I (here the
// brightest of r, g, b), f(I) = asinh(I / β) / asinh(W / β), with β the
// faint end and W the white point (divided by the brightness bias), and
// the colour scaled by f(I) / I so hues survive the stretch; past the
// white point a pixel keeps its hue at the brightest and whitens by how
// far it passed (overexposed cores glow white rather than clip to flat
// colour).
// Mass: log Σ between the measured (or given) ends through the density
// colour map; empty pixels take its first colour.
// Marked particles (black holes, from the splat pass) get a ring.
// On paper (tone.paper = 1, the light theme) light becomes ink: a pixel's
// intensity sets how much of a darkened version of its hue covers the
// white, so faint light stays near white and a bright core is near black
// (a projector's white is its brightest, its black a grey); a map runs from
// white (empty) through its colours reversed, dense dark.
// Driven by src/render/tonemap.rs.

@group(0) @binding(0) var<uniform> tone: ToneUniform;
@group(0) @binding(1) var<storage, read> accum: array<u32>;
@group(0) @binding(2) var<storage, read> exposure: Exposure;
// Word 0 of element 0: the marked particles seen; element s + 1: slot s
// (x, y as f32 bits, tag, 0).
@group(0) @binding(3) var<storage, read> markers: array<vec4<u32>>;

@vertex
fn vs_main(@builtin(vertex_index) v: u32) -> @builtin(position) vec4<f32> {
    let corners = array<vec2<f32>, 3>(vec2(-1.0, -1.0), vec2(3.0, -1.0), vec2(-1.0, 3.0));
    return vec4<f32>(corners[v], 0.0, 1.0);
}

fn stretch(c: vec3<f32>) -> vec3<f32> {
    let i = intensity(c);
    if (!(i > 0.0)) {
        return vec3<f32>(0.0);
    }
    let beta = max(exposure.lo, 1e-6);
    let white = max(exposure.hi / max(tone.bias, 1e-6), beta * 1.0001);
    // f passes 1 past the white point: the pixel whitens, fully where f
    // reaches 1.25 (about 3 W where W/β is 100).
    let f = max(asinh(i / beta) / asinh(white / beta), 0.0);
    let hue = c / i;
    if (f <= 1.0) {
        return hue * f;
    }
    return mix(hue, vec3<f32>(1.0), clamp(4.0 * (f - 1.0), 0.0, 1.0));
}

fn density(v: f32) -> vec3<f32> {
    if (v < 1.0) {
        return density_color(0.0);
    }
    let lo = max(exposure.lo, 1.0);
    let hi = max(exposure.hi, lo * 1.0001);
    return density_color(log(v / lo) / log(hi / lo));
}

// Light on black turned into ink on white, hue kept: the ink of a hue is
// the hue darkened (saturated cores darker still), laid on as thickly as
// the light was bright.
fn ink(c: vec3<f32>) -> vec3<f32> {
    let i = intensity(c);
    if (!(i > 0.0)) {
        return vec3<f32>(1.0);
    }
    let hue = c / i;
    let whiteness = min(hue.r, min(hue.g, hue.b));
    let dark = 0.5 * hue * (1.0 - 0.8 * whiteness);
    // Thicker than the light was bright (a gamma of 0.6): a projector's
    // washed-out greys need the sprites' wings darker to show.
    return mix(vec3<f32>(1.0), dark, pow(min(i, 1.0), 0.6));
}

fn density_on_paper(v: f32) -> vec3<f32> {
    if (v < 1.0) {
        return vec3<f32>(1.0);
    }
    let lo = max(exposure.lo, 1.0);
    let hi = max(exposure.hi, lo * 1.0001);
    return density_color(1.0 - clamp(log(v / lo) / log(hi / lo), 0.0, 1.0));
}

@fragment
fn fs_main(@builtin(position) at: vec4<f32>) -> @location(0) vec4<f32> {
    let px = min(u32(at.x), tone.width - 1u);
    let py = min(u32(at.y), tone.height - 1u);
    let p = py * tone.width + px;
    let w = vec4<u32>(accum[4u * p], accum[4u * p + 1u], accum[4u * p + 2u], accum[4u * p + 3u]);
    var color: vec3<f32>;
    let paper = tone.paper == 1u;
    if (tone.quantity == MASS) {
        if (paper) {
            color = density_on_paper(mass_of(w));
        } else {
            color = density(mass_of(w));
        }
    } else if (paper) {
        color = ink(stretch(light_of(w)));
    } else {
        color = stretch(light_of(w));
    }
    let count = min(markers[0].x, MAX_MARKERS);
    for (var s = 0u; s < count; s++) {
        let m = markers[s + 1u];
        let d = distance(at.xy, vec2<f32>(bitcast<f32>(m.x), bitcast<f32>(m.y)));
        let ring = 1.0 - clamp(abs(d - MARKER_RADIUS) - 0.75, 0.0, 1.0);
        color = mix(color, MARKER_COLOR, ring);
    }
    return vec4<f32>(color, 1.0);
}
