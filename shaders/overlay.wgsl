// The tree's cells drawn over a picture (src/tree/overlay.rs): each cell's
// tight box as 12 lines, coloured by its level, read straight from the
// build's buffers (no read-back), so it shows the tree the walk used. An
// instance is a cell; with `from_list` the instances are the entries of a
// traced interaction list (src/tree/trace.rs) instead, coloured by what
// the walk did with them. Counters are read as words (the build's struct
// has atomics, which a vertex stage cannot bind): their offsets come from
// the Rust layout (COUNTER_* constants).

@group(0) @binding(0) var<uniform> camera: CameraUniform;
@group(0) @binding(1) var<uniform> overlay: OverlayParams;
@group(0) @binding(2) var<storage, read> cell_boxes: array<Bounds>;
@group(0) @binding(3) var<storage, read> counter_words: array<u32>;
@group(0) @binding(4) var<storage, read> list: array<u32>;

struct Line {
    @builtin(position) position: vec4<f32>,
    @location(0) color: vec4<f32>,
}

// Level colours: hues that stay apart on a dark picture.
fn level_color(level: u32) -> vec3<f32> {
    var palette = array<vec3<f32>, 8>(
        vec3<f32>(1.0, 1.0, 1.0),
        vec3<f32>(1.0, 0.35, 0.3),
        vec3<f32>(1.0, 0.7, 0.2),
        vec3<f32>(0.95, 1.0, 0.3),
        vec3<f32>(0.35, 1.0, 0.45),
        vec3<f32>(0.3, 0.9, 1.0),
        vec3<f32>(0.45, 0.5, 1.0),
        vec3<f32>(0.9, 0.45, 1.0),
    );
    return palette[level % 8u];
}

// The level of cell c: the last l with level_start[l] <= c.
fn level_of(c: u32, depth: u32) -> u32 {
    var l = 0u;
    for (var k = 1u; k <= depth; k++) {
        if (counter_words[COUNTER_LEVEL_START + k] <= c) {
            l = k;
        }
    }
    return l;
}

// Outside the clip volume: the vertex's line is not drawn.
const CULLED = vec4<f32>(0.0, 0.0, 2.0, 1.0);

@vertex
fn vs_main(@builtin(vertex_index) v: u32, @builtin(instance_index) i: u32) -> Line {
    var out: Line;
    out.position = CULLED;
    out.color = vec4<f32>(0.0);
    let cell_count = counter_words[COUNTER_CELL_COUNT];
    let depth = min(counter_words[COUNTER_DEPTH], MAX_DEPTH);
    if (counter_words[COUNTER_OVERFLOW] != 0u) {
        return out;
    }
    var c = i;
    var color: vec3<f32>;
    var alpha = overlay.alpha;
    if (overlay.from_list != 0u) {
        if (i >= list[0]) {
            return out;
        }
        let entry = list[1u + i];
        c = entry & TRACE_CELL_MASK;
        let kind = entry >> TRACE_KIND_SHIFT;
        // Accepted cells (multipoles) green, opened leaves (particles
        // summed directly) orange, the picked particle's group white.
        color = select(select(vec3<f32>(1.0), vec3<f32>(1.0, 0.55, 0.15), kind == TRACE_LEAF),
                       vec3<f32>(0.3, 1.0, 0.4), kind == TRACE_ACCEPTED);
    } else {
        let level = level_of(c, depth);
        if (level > overlay.max_level) {
            return out;
        }
        color = level_color(level);
        alpha = overlay.alpha * pow(0.8, f32(level));
    }
    if (c >= cell_count) {
        return out;
    }
    let b = cell_boxes[c];
    // Edge e of 12: along axis e / 4, at corner bits e % 4 on the other two.
    let e = v / 2u;
    let axis = e / 4u;
    let other = e % 4u;
    var bits = vec3<u32>(0u);
    bits[(axis + 1u) % 3u] = other & 1u;
    bits[(axis + 2u) % 3u] = other >> 1u;
    bits[axis] = v & 1u;
    let p = select(b.lo.xyz, b.hi.xyz, bits == vec3<u32>(1u));
    out.position = camera.view_proj * vec4<f32>(p, 1.0);
    out.color = vec4<f32>(color * alpha, alpha);
    return out;
}

@fragment
fn fs_main(line: Line) -> @location(0) vec4<f32> {
    return line.color;
}
