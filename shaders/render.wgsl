// Point renderer: every particle is a small screen-aligned quad (two
// triangles, six vertices) read straight from the simulation's buffers
// (positions, velocities, potentials, upload indices: no copy through the
// CPU), drawn with additive blending so dense regions glow.
//
// Sprites are size-attenuated: `viewport.z` pixels wide at clip depth
// `viewport.w` (the camera's distance), wider nearer the eye, narrower
// farther, clamped to [1, 4 viewport.z] pixels. Colour is uniform, or a
// colour map (Google's Turbo, polynomial fit) of speed or potential between
// `value_lo` and `value_hi`, or one of four colours by component tag.
// Components whose bit is set in `hidden_tags` are not drawn.
// Driven by src/render/mod.rs; the same code draws the browser canvas and
// the CLI's offscreen PNG.

@group(0) @binding(0) var<uniform> camera: CameraUniform;
@group(0) @binding(1) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(2) var<storage, read> vel: array<Velocity>;
@group(0) @binding(3) var<storage, read> acc_pot: array<AccPot>;
// Upload index of the particle in each slot (the tree code reorders).
@group(0) @binding(4) var<storage, read> id: array<u32>;
// Component tag of each particle, in upload order.
@group(0) @binding(5) var<storage, read> tags: array<u32>;

struct VertexOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) corner: vec2<f32>,
    @location(1) color: vec3<f32>,
}

// Turbo colour map (Mikhailov 2019), polynomial approximation, t in [0, 1].
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

fn mapped(value: f32) -> vec3<f32> {
    let span = camera.value_hi - camera.value_lo;
    var t = 0.5;
    if (span != 0.0) {
        t = (value - camera.value_lo) / span;
    }
    return turbo(t);
}

fn particle_color(k: u32) -> vec3<f32> {
    switch camera.color_mode {
        case 1u: {
            return mapped(length(vel[k].vel));
        }
        case 2u: {
            return mapped(acc_pot[k].pot);
        }
        case 3u: {
            let palette = array<vec3<f32>, 4>(
                vec3(0.35, 0.6, 1.0), vec3(1.0, 0.55, 0.2),
                vec3(0.4, 1.0, 0.45), vec3(1.0, 0.35, 0.75),
            );
            return palette[tags[id[k]] % 4u];
        }
        default: {
            return camera.color.rgb;
        }
    }
}

@vertex
fn vs_main(@builtin(vertex_index) vertex: u32) -> VertexOut {
    let corners = array<vec2<f32>, 6>(
        vec2(-1.0, -1.0), vec2(1.0, -1.0), vec2(1.0, 1.0),
        vec2(-1.0, -1.0), vec2(1.0, 1.0), vec2(-1.0, 1.0),
    );
    let k = vertex / 6u;
    let p = pos_mass[k];
    let corner = corners[vertex % 6u];
    var clip = camera.view_proj * vec4<f32>(p.pos, 1.0);
    let hidden = ((camera.hidden_tags >> min(tags[id[k]], 31u)) & 1u) != 0u;
    if (clip.w <= 0.0 || hidden) {
        // Behind the eye, or of a hidden component: a degenerate quad
        // outside the view.
        return VertexOut(vec4<f32>(2.0, 2.0, 2.0, 1.0), corner, vec3<f32>(0.0));
    }
    var size_px = camera.viewport.z;
    if (camera.viewport.w > 0.0) {
        size_px = clamp(size_px * camera.viewport.w / clip.w, 1.0, 4.0 * camera.viewport.z);
    }
    // Offset in clip space so the quad is size_px pixels wide.
    clip += vec4<f32>(corner * size_px / camera.viewport.xy * clip.w, 0.0, 0.0);
    return VertexOut(clip, corner, particle_color(k));
}

@fragment
fn fs_main(in: VertexOut) -> @location(0) vec4<f32> {
    // Round sprite with a soft edge.
    let r2 = dot(in.corner, in.corner);
    if (r2 > 1.0) {
        discard;
    }
    let a = camera.color.a * (1.0 - r2);
    return vec4<f32>(in.color * a, a);
}
