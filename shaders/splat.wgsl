// Splat passes: one invocation per particle, read straight from the
// simulation's buffers (positions, velocities, potentials, upload indices:
// no copy through the CPU). `count` counts the particles drawn in each
// CELL_PX × CELL_PX cell of the view; `splat` adds each particle's light (a
// picture) or its mass (a surface-density map) to the pixels its sprite
// covers.
//
// A sprite is a Gaussian about the particle's sub-pixel position, cut at h
// (`gauss`), h its radius in pixels: half the sprite diameter (scaled by
// the reference depth over the particle's depth where sizes attenuate),
// or, if larger, `smoothing` times the mean spacing of the particles drawn
// about it, CELL_PX / sqrt(count) with the cells' counts interpolated
// between their centres (adaptive smoothing in the image, as
// SPH smooths by the distance to neighbours: sparse outskirts become a
// smooth glow, dense cores keep their detail, and the work per cell stays
// about the cell's area whatever N); clamped to [1, max_radius]. Its
// weights are normalised over the pixels it covers (the product of a
// row's and a column's sums: one pass over the pixels), so a particle
// adds the same total whatever its size and wherever it lands: the
// picture's light and the map's mass are conserved. Weight: mass times the component's light per unit mass
// (pictures), mass (maps); times unit_scale it is a count of fixed-point
// units, added with integer atomics (render.wgsl: exact sums in any
// order). A map's particle adds exactly round(mass × unit_scale) units:
// every covered pixel takes the floor of its share and the pixel of the
// largest weight the rest.
// Pictures are perspective views (particles behind the eye or outside the
// depth range are skipped); maps are orthographic and take every particle.
// Particles of a marked tag (black holes) reserve a slot in `markers`
// (count in word 0, then x, y (f32 bits), tag, 0 per slot), which the
// tone-mapping pass rings; they add no light.
// Driven by src/render/splat.rs.

@group(0) @binding(0) var<uniform> camera: CameraUniform;
@group(0) @binding(1) var<uniform> styles: array<TagStyle, MAX_TAGS>;
@group(0) @binding(2) var<storage, read> pos_mass: array<PosMass>;
@group(0) @binding(3) var<storage, read> vel: array<Velocity>;
@group(0) @binding(4) var<storage, read> acc_pot: array<AccPot>;
// Upload index of the particle in each slot (the tree code reorders).
@group(0) @binding(5) var<storage, read> id: array<u32>;
// Component tag of each particle, in upload order.
@group(0) @binding(6) var<storage, read> tags: array<u32>;
@group(0) @binding(7) var<storage, read_write> accum: array<atomic<u32>>;
@group(0) @binding(8) var<storage, read_write> markers: array<atomic<u32>>;
// Particles drawn per CELL_PX × CELL_PX cell, rows top to bottom.
@group(0) @binding(9) var<storage, read_write> cells: array<atomic<u32>>;

fn mapped(value: f32) -> vec3<f32> {
    let span = camera.value_hi - camera.value_lo;
    var t = 0.5;
    if (span != 0.0) {
        t = (value - camera.value_lo) / span;
    }
    return turbo(t);
}

fn particle_color(k: u32, style: TagStyle) -> vec3<f32> {
    switch camera.color_mode {
        case 1u: {
            return mapped(length(vel[k].vel));
        }
        case 2u: {
            return mapped(acc_pot[k].pot);
        }
        case 3u: {
            return style.color;
        }
        default: {
            return camera.color;
        }
    }
}

// Adds `lo` + 2^32 `hi` units to channel c of pixel p; a low word that
// wraps carries into the fourth word.
fn add(p: u32, c: u32, lo: u32, hi: u32) {
    var carry = hi;
    if (lo != 0u) {
        let old = atomicAdd(&accum[4u * p + c], lo);
        if (old > 0xffffffffu - lo) {
            carry += 1u;
        }
    }
    if (carry != 0u) {
        var unit = 1u;
        if (camera.quantity == LIGHT) {
            unit = 1u << (CARRY_BITS * c);
        }
        atomicAdd(&accum[4u * p + 3u], carry * unit);
    }
}

// Adds a non-negative whole number of units held in an f32 (up to 2^64).
fn add_units(p: u32, c: u32, units: f32) {
    let hi = floor(units / 4294967296.0);
    add(p, c, u32(units - hi * 4294967296.0), u32(hi));
}

// One axis of the sprite: exp(-4 d² / h²) less its value at h, zero
// beyond, so the sprite, a product of two, is a Gaussian of sigma about
// h / sqrt(8) that falls smoothly to zero at h along the axes (round to 2 %
// of its peak; no edge for the stretch to find in faint outskirts), and
// its sum over the pixels is the product of a row's and a column's sums.
fn gauss(d: f32, h: f32) -> f32 {
    return max(exp(-4.0 * d * d / (h * h)) - 0.018315639, 0.0);
}

// Where particle k lands: (x, y) in pixels and clip w, if it is drawn
// (not hidden, in front of the eye for pictures, near enough the view to
// touch it).
struct Landing {
    drawn: bool,
    x: f32,
    y: f32,
    w: f32,
    tag: u32,
}

fn land(k: u32) -> Landing {
    var out = Landing(false, 0.0, 0.0, 1.0, 0u);
    let p = pos_mass[k];
    let tag = tags[id[k]];
    out.tag = tag;
    if (tag < 32u && ((camera.hidden_tags >> tag) & 1u) != 0u) {
        return out;
    }
    let clip = camera.view_proj * vec4<f32>(p.pos, 1.0);
    if (camera.quantity == LIGHT && !(clip.w > 0.0 && clip.z >= 0.0 && clip.z <= clip.w)) {
        return out;
    }
    let size = camera.viewport.xy;
    out.x = (0.5 + 0.5 * clip.x / clip.w) * size.x;
    out.y = (0.5 - 0.5 * clip.y / clip.w) * size.y;
    out.w = clip.w;
    let r = camera.max_radius;
    // Nothing of it on screen (NaN positions fail too); this also bounds
    // the loops of `splat`.
    out.drawn = out.x > -r && out.x < size.x + r && out.y > -r && out.y < size.y + r;
    return out;
}

fn cells_across() -> u32 {
    return u32(ceil(camera.viewport.x / f32(CELL_PX)));
}

// The cell of a point on or off the view, clamped onto it.
fn cell_of(x: f32, y: f32) -> u32 {
    let cx = u32(clamp(x / f32(CELL_PX), 0.0, f32(cells_across() - 1u)));
    let rows = u32(ceil(camera.viewport.y / f32(CELL_PX)));
    let cy = u32(clamp(y / f32(CELL_PX), 0.0, f32(rows - 1u)));
    return cy * cells_across() + cx;
}

fn cell_count(cx: i32, cy: i32) -> f32 {
    let across = i32(cells_across());
    let rows = i32(ceil(camera.viewport.y / f32(CELL_PX)));
    let c = vec2<i32>(clamp(cx, 0, across - 1), clamp(cy, 0, rows - 1));
    return f32(atomicLoad(&cells[u32(c.y * across + c.x)]));
}

// The cell counts at (x, y), interpolated bilinearly between the cells'
// centres, so sprite sizes change smoothly from cell to cell.
fn count_at(x: f32, y: f32) -> f32 {
    let u = x / f32(CELL_PX) - 0.5;
    let v = y / f32(CELL_PX) - 0.5;
    let cx = i32(floor(u));
    let cy = i32(floor(v));
    let f = vec2<f32>(u - floor(u), v - floor(v));
    let top = mix(cell_count(cx, cy), cell_count(cx + 1, cy), f.x);
    let bottom = mix(cell_count(cx, cy + 1), cell_count(cx + 1, cy + 1), f.x);
    return mix(top, bottom, f.y);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn count(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = flat_index(wid, nwg, lid);
    if (k >= camera.n || camera.smoothing <= 0.0) {
        return;
    }
    let l = land(k);
    // Particles on the view only: those in the margin beyond it would
    // crowd the edge cells (their sprites take the edge cells' counts).
    let on = l.x >= 0.0 && l.x < camera.viewport.x && l.y >= 0.0 && l.y < camera.viewport.y;
    if (l.drawn && on) {
        atomicAdd(&cells[cell_of(l.x, l.y)], 1u);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn splat(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let k = flat_index(wid, nwg, lid);
    if (k >= camera.n) {
        return;
    }
    let l = land(k);
    if (!l.drawn) {
        return;
    }
    let x = l.x;
    let y = l.y;
    let tag = l.tag;
    let size = camera.viewport.xy;
    let style = styles[min(tag, MAX_TAGS - 1u)];
    let marked = tag < 32u && ((camera.marked_tags >> tag) & 1u) != 0u;
    if (marked) {
        let slot = atomicAdd(&markers[0], 1u);
        if (slot < MAX_MARKERS) {
            let at = 4u * (slot + 1u);
            atomicStore(&markers[at], bitcast<u32>(x));
            atomicStore(&markers[at + 1u], bitcast<u32>(y));
            atomicStore(&markers[at + 2u], tag);
        }
        if (camera.quantity == LIGHT) {
            return;
        }
    }
    var weight = pos_mass[k].mass;
    if (camera.quantity == LIGHT) {
        weight *= style.light;
    }
    let q = weight * camera.unit_scale;
    if (!(q > 0.0)) {
        return;
    }
    var h = 0.5 * camera.viewport.z;
    if (camera.quantity == LIGHT && camera.viewport.w > 0.0) {
        h *= camera.viewport.w / l.w;
    }
    if (camera.smoothing > 0.0) {
        h = max(h, camera.smoothing * f32(CELL_PX) / sqrt(max(count_at(x, y), 1.0)));
    }
    h = clamp(h, 1.0, camera.max_radius);
    let h2 = h * h;
    // Pixels whose centres (i + 0.5, j + 0.5) may lie within h.
    let i0 = i32(floor(x - h));
    let i1 = i32(floor(x + h));
    let j0 = i32(floor(y - h));
    let j1 = i32(floor(y + h));
    // The weights' sums along each axis, on screen or not, and the pixel
    // of the largest weight.
    var sx = 0.0;
    var sy = 0.0;
    var best = vec2<f32>(-1.0);
    var best_pixel = vec2<i32>(i0, j0);
    for (var i = i0; i <= i1; i++) {
        let g = gauss(f32(i) + 0.5 - x, h);
        sx += g;
        if (g > best.x) {
            best.x = g;
            best_pixel.x = i;
        }
    }
    for (var j = j0; j <= j1; j++) {
        let g = gauss(f32(j) + 0.5 - y, h);
        sy += g;
        if (g > best.y) {
            best.y = g;
            best_pixel.y = j;
        }
    }
    if (!(sx > 0.0 && sy > 0.0)) {
        return;
    }
    let norm = 1.0 / (sx * sy);
    let width = i32(size.x);
    let height = i32(size.y);
    if (camera.quantity == LIGHT) {
        let c = particle_color(k, style) * (q * norm);
        for (var j = max(j0, 0); j <= min(j1, height - 1); j++) {
            let gy = gauss(f32(j) + 0.5 - y, h);
            for (var i = max(i0, 0); i <= min(i1, width - 1); i++) {
                let w = gauss(f32(i) + 0.5 - x, h) * gy;
                if (w > 0.0) {
                    let pixel = u32(j * width + i);
                    let v = round(c * w);
                    add_units(pixel, 0u, v.r);
                    add_units(pixel, 1u, v.g);
                    add_units(pixel, 2u, v.b);
                }
            }
        }
        return;
    }
    // Mass: floors everywhere (on screen or not), the rest to the centre.
    let units = round(q);
    var given = 0.0;
    for (var j = j0; j <= j1; j++) {
        let gy = gauss(f32(j) + 0.5 - y, h);
        for (var i = i0; i <= i1; i++) {
            let w = gauss(f32(i) + 0.5 - x, h) * gy;
            let on = i >= 0 && i < width && j >= 0 && j < height;
            if (w > 0.0 && any(vec2<i32>(i, j) != best_pixel)) {
                let share = floor(units * (w * norm));
                given += share;
                if (on) {
                    add_units(u32(j * width + i), 0u, share);
                }
            }
        }
    }
    let b = best_pixel;
    if (b.x >= 0 && b.x < width && b.y >= 0 && b.y < height) {
        add_units(u32(b.y * width + b.x), 0u, max(units - given, 0.0));
    }
}
