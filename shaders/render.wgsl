// What the renderer's passes share (composed before splat.wgsl,
// exposure.wgsl and tonemap.wgsl by src/render/mod.rs): the encoding of the
// accumulation and the colour maps.
//
// A pixel of the accumulation is four u32 words: three low words (r, g, b
// of light; mass in the first) and the low words' carries in the fourth:
// CARRY_BITS bits per channel for light, the whole high word for mass. The
// splat pass adds integers with atomics, so a pixel's sum is exact and the
// same whatever order the particles arrive in (the page and `webgrav render`
// draw the same numbers); light holds up to 32 + CARRY_BITS bits per
// channel, mass 64.
// The constants before this file (CARRY_BITS, CARRY_MASK, HIST_BINS,
// BINS_PER_OCTAVE, MAX_MARKERS, MAX_TAGS, DENSITY_STOPS, ...) come from
// src/render/mod.rs.

const LIGHT: u32 = 0u;
const MASS: u32 = 1u;

// The light of a pixel (r, g, b), in accumulation units.
fn light_of(w: vec4<u32>) -> vec3<f32> {
    let c = vec3<u32>(w.w, w.w >> CARRY_BITS, w.w >> (2u * CARRY_BITS)) & vec3<u32>(CARRY_MASK);
    return vec3<f32>(w.xyz) + vec3<f32>(c) * 4294967296.0;
}

// The mass of a pixel, in accumulation units.
fn mass_of(w: vec4<u32>) -> f32 {
    return f32(w.x) + f32(w.w) * 4294967296.0;
}

// The value the exposure measures and the stretch maps: the brightest of
// r, g, b for light (Lupton et al. 2004 stretch the mean; the brightest
// channel keeps a saturated colour from reaching 1 before its pixel
// reaches the white point), the mass for maps.
fn value_of(w: vec4<u32>, quantity: u32) -> f32 {
    if (quantity == MASS) {
        return mass_of(w);
    }
    return intensity(light_of(w));
}

fn intensity(c: vec3<f32>) -> f32 {
    return max(c.r, max(c.g, c.b));
}

// Turbo colour map (Mikhailov 2019), polynomial approximation, t in [0, 1]:
// speed and potential.
fn turbo(t: f32) -> vec3<f32> {
    let x = clamp(t, 0.0, 1.0);
    let v4 = vec4<f32>(1.0, x, x * x, x * x * x);
    let v2 = v4.zw * v4.z;
    return clamp(vec3<f32>(
        dot(v4, vec4<f32>(0.13572138, 4.61539260, -42.66032258, 132.13108234)) + dot(v2, vec2<f32>(-152.94239396, 59.28637943)),
        dot(v4, vec4<f32>(0.09140261, 2.19418839, 4.84296658, -14.18503333)) + dot(v2, vec2<f32>(4.27729857, 2.82956604)),
        dot(v4, vec4<f32>(0.10667330, 12.64194608, -60.58204836, 110.36276771)) + dot(v2, vec2<f32>(-89.90310912, 27.34824973)),
    ), vec3<f32>(0.0), vec3<f32>(1.0));
}

// The surface-density colour map, t in [0, 1]: DENSITY_STOPS evenly
// spaced, linear in between (render::DENSITY_STOPS; the CLI's colour bar and
// the page's use the same stops).
fn density_color(t: f32) -> vec3<f32> {
    let x = clamp(t, 0.0, 1.0) * f32(DENSITY_STOP_COUNT - 1u);
    let k = min(u32(floor(x)), DENSITY_STOP_COUNT - 2u);
    var stops = DENSITY_STOPS;
    return mix(stops[k], stops[k + 1u], x - f32(k));
}
