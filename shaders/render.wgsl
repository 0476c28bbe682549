// Point renderer: every particle is a small screen-aligned quad (two
// triangles, six vertices) read straight from the simulation's pos_mass
// buffer, drawn with additive blending so dense regions glow.
// Driven by src/render/mod.rs.

@group(0) @binding(0) var<uniform> camera: CameraUniform;
@group(0) @binding(1) var<storage, read> pos_mass: array<PosMass>;

struct VertexOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) corner: vec2<f32>,
}

@vertex
fn vs_main(@builtin(vertex_index) vertex: u32) -> VertexOut {
    let corners = array<vec2<f32>, 6>(
        vec2(-1.0, -1.0), vec2(1.0, -1.0), vec2(1.0, 1.0),
        vec2(-1.0, -1.0), vec2(1.0, 1.0), vec2(-1.0, 1.0),
    );
    let p = pos_mass[vertex / 6u];
    let corner = corners[vertex % 6u];
    var clip = camera.view_proj * vec4<f32>(p.pos, 1.0);
    // Offset in clip space so the quad is point_size pixels wide at any depth.
    let half_px = 0.5 * camera.viewport.z;
    clip += vec4<f32>(corner * half_px * 2.0 / camera.viewport.xy * clip.w, 0.0, 0.0);
    return VertexOut(clip, corner);
}

@fragment
fn fs_main(in: VertexOut) -> @location(0) vec4<f32> {
    // Round sprite with a soft edge.
    let r2 = dot(in.corner, in.corner);
    if (r2 > 1.0) {
        discard;
    }
    let a = camera.color.a * (1.0 - r2);
    return vec4<f32>(camera.color.rgb * a, a);
}
