// Models generated on the GPU, particle by particle from the same random
// streams as the CPU's generators (src/state/rng.rs): each particle's
// PCG-128 (MCG, XSL-RR output) is seeded from the model's key and the
// particle's index through SplitMix64's finaliser, as `Rng::for_particle`
// does, so the GPU draws the CPU's numbers and only the arithmetic on
// them is f32 instead of f64.
// Driven by src/state/generate.rs.

@group(0) @binding(0) var<uniform> params: GenerateParams;
@group(0) @binding(1) var<storage, read_write> pos_mass: array<PosMass>;
@group(0) @binding(2) var<storage, read_write> vel: array<Velocity>;
// A galaxy component's tables (src/state/generate.rs: SpheroidTable,
// DiskTable): columns of params.nodes values each. For the Plummer
// sphere's frame: 1.0 (ds.wgsl's guard), then the frame (`centre`).
@group(0) @binding(3) var<storage, read> tables: array<f32>;
// Σ x and Σ v of each chunk of SUM_CHUNK particles (`chunk_sums`).
@group(0) @binding(4) var<storage, read_write> sums: array<f32>;
// Each particle's component (`place`).
@group(0) @binding(5) var<storage, read_write> tags: array<u32>;

// --- 64- and 128-bit integers as 32-bit words (WGSL has no u64) ---
// A u64 is vec2(low word, high word); a u128 is four words, low first.

// The full 64-bit product of two words, from 16-bit halves.
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return vec2<u32>((p00 & 0xffffu) | (mid << 16u), p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}

// a · b mod 2^64.
fn mul64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let p = mul_wide(a.x, b.x);
    return vec2<u32>(p.x, p.y + a.x * b.y + a.y * b.x);
}

// a + b mod 2^64.
fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

// z >> s for 0 < s < 32.
fn shr64(z: vec2<u32>, s: u32) -> vec2<u32> {
    return vec2<u32>((z.x >> s) | (z.y << (32u - s)), z.y >> s);
}

// z rotated right by r < 64.
fn rotr64(z: vec2<u32>, r: u32) -> vec2<u32> {
    var v = z;
    if r >= 32u {
        v = z.yx;
    }
    let s = r & 31u;
    if s == 0u {
        return v;
    }
    return vec2<u32>((v.x >> s) | (v.y << (32u - s)), (v.y >> s) | (v.x << (32u - s)));
}

// 2^64 over the golden ratio, and SplitMix64's finaliser (rng.rs: GOLDEN, mix).
const GOLDEN = vec2<u32>(0x7f4a7c15u, 0x9e3779b9u);

fn mix(z0: vec2<u32>) -> vec2<u32> {
    var z = mul64(z0 ^ shr64(z0, 30u), vec2<u32>(0x1ce4e5b9u, 0xbf58476du));
    z = mul64(z ^ shr64(z, 27u), vec2<u32>(0x133111ebu, 0x94d049bbu));
    return z ^ shr64(z, 31u);
}

// --- one particle's stream: rand_pcg's Mcg128Xsl64 ---

struct Stream {
    s: array<u32, 4>,
}

// Rng::for_particle(seed, stream, index) from the key of (seed, stream).
fn particle_stream(key: vec2<u32>, index: u32) -> Stream {
    let lo = mix(add64(key, mul64(vec2<u32>(index + 1u, 0u), GOLDEN)));
    let hi = mix(lo ^ key.yx);
    // Mcg128Xsl64::new forces the low bit to one.
    return Stream(array<u32, 4>(lo.x | 1u, lo.y, hi.x, hi.y));
}

// The state times the MCG's multiplier mod 2^128 (schoolbook over words),
// then the XSL-RR output of the new state.
fn next_u64(st: ptr<function, Stream>) -> vec2<u32> {
    var m = array<u32, 4>(0x9fccf645u, 0x4385df64u, 0x1fc65da4u, 0x2360ed05u);
    let a = (*st).s;
    var r = array<u32, 4>(0u, 0u, 0u, 0u);
    for (var i = 0u; i < 4u; i++) {
        var carry = 0u;
        for (var j = 0u; i + j < 4u; j++) {
            let p = mul_wide(a[i], m[j]);
            let t = r[i + j] + p.x;
            let t2 = t + carry;
            r[i + j] = t2;
            // r + a·m + carry < 2^64: the high word cannot overflow.
            carry = p.y + select(0u, 1u, t < p.x) + select(0u, 1u, t2 < t);
        }
    }
    (*st).s = r;
    let xsl = vec2<u32>(r[0] ^ r[2], r[1] ^ r[3]);
    return rotr64(xsl, r[3] >> 26u);
}

// The stream of this dispatch's particle i (particle first + i of the
// model's component).
fn stream_of(i: u32) -> Stream {
    return particle_stream(vec2<u32>(params.key_lo, params.key_hi), params.first + i);
}

// Uniform in [0, 1): the top 24 of the 53 bits the CPU uses.
fn uniform01(st: ptr<function, Stream>) -> f32 {
    return f32(next_u64(st).y >> 8u) * (1.0 / 16777216.0);
}

// Uniform in (0, 1): the top 23 bits and a half, exact in f32.
fn uniform_open(st: ptr<function, Stream>) -> f32 {
    return (f32(next_u64(st).y >> 9u) + 0.5) * (1.0 / 8388608.0);
}

const TWO_PI: f32 = 6.283185307179586;

// Isotropic unit vector (Rng::unit_vector: z, then the azimuth).
fn unit_vector(st: ptr<function, Stream>) -> vec3<f32> {
    let z = 2.0 * uniform01(st) - 1.0;
    let phi = TWO_PI * uniform01(st);
    let s = sqrt(max(1.0 - z * z, 0.0));
    return vec3<f32>(s * cos(phi), s * sin(phi), z);
}

// --- models ---

// Most rejections the speed's sampling makes before giving up: each
// accepts with probability 0.43, so 4096 in a row never happen.
const MAX_TRIES: u32 = 4096u;

// Particle first + i of the Plummer sphere (state/plummer.rs:
// plummer_particle), before the move to its centre-of-mass frame.
@compute @workgroup_size(WORKGROUP_SIZE)
fn plummer(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = flat_index(wid, nwg, lid);
    if i >= params.count { return; }
    var st = stream_of(i);
    // Radius from the inverted cumulative mass m(r) = r³/(1+r²)^(3/2).
    let m = uniform_open(&st) * params.mass_cut;
    let r = inverseSqrt(pow(m, -2.0 / 3.0) - 1.0);
    // Speed over escape speed by von Neumann rejection on
    // g(q) = q²(1-q²)^(7/2) < 0.1.
    var q = 0.0;
    for (var k = 0u; k < MAX_TRIES; k++) {
        let trial = uniform01(&st);
        let w = 1.0 - trial * trial;
        let g = trial * trial * w * w * w * sqrt(w);
        if 0.1 * uniform01(&st) < g {
            q = trial;
            break;
        }
    }
    let v = q * sqrt(2.0) * inverseSqrt(sqrt(1.0 + r * r));
    let a = params.scale_radius;
    let x = unit_vector(&st) * (r * a);
    let u = unit_vector(&st) * (v * inverseSqrt(a));
    pos_mass[params.dst + i] = PosMass(x, params.mass);
    vel[params.dst + i] = Velocity(select(u, vec3<f32>(0.0), params.at_rest != 0u), 0.0);
}

// --- the Plummer sphere's centre-of-mass frame, on the GPU (src/state/
// generate.rs: SampledPart) ---

// Σ x and Σ v of chunk c of particles dst..dst + count (SUM_CHUNK each)
// in double-single, into sums[16 c ..]: the hi parts of (Σx, Σvx) and
// (Σvy, Σvz, 0, 0), then their lo parts. One
// workgroup a chunk, each invocation summing every WORKGROUP_SIZE-th
// particle in index order, so a chunk's sums are the same bits however
// the run is cut into shares (shares start on chunks).
@compute @workgroup_size(WORKGROUP_SIZE)
fn chunk_sums(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let c = wid.y * nwg.x + wid.x;
    if c >= div_ceil(params.count, SUM_CHUNK) { return; }
    let one = tables[0];
    var s0 = Ds4(vec4<f32>(0.0), vec4<f32>(0.0));
    var s1 = s0;
    for (var k = 0u; k < SUM_CHUNK / WORKGROUP_SIZE; k++) {
        let i = c * SUM_CHUNK + k * WORKGROUP_SIZE + lid;
        if i < params.count {
            let x = pos_mass[params.dst + i].pos;
            let u = vel[params.dst + i].vel;
            s0 = ds4_add_f(s0, vec4<f32>(x, u.x), one);
            s1 = ds4_add_f(s1, vec4<f32>(u.y, u.z, 0.0, 0.0), one);
        }
    }
    let t0 = ds4_workgroup_total(lid, s0, one);
    let t1 = ds4_workgroup_total(lid, s1, one);
    if lid == 0u {
        let lanes = array<vec4<f32>, 4>(t0.hi, t1.hi, t0.lo, t1.lo);
        for (var j = 0u; j < 4u; j++) {
            for (var a = 0u; a < 4u; a++) {
                sums[16u * c + 4u * j + a] = lanes[j][a];
            }
        }
    }
}

// x - (hi + lo): the difference from hi exact (a two-sum), less lo,
// rounded once.
fn shifted(x: vec3<f32>, hi: vec3<f32>, lo: vec3<f32>, one: f32) -> vec3<f32> {
    let t = ds3_add_f(Ds3(x, vec3<f32>(0.0)), -hi, one);
    return fma(t.hi, vec3<f32>(one), t.lo - lo);
}

fn frame_vector(at: u32) -> vec3<f32> {
    return vec3<f32>(tables[at], tables[at + 1u], tables[at + 2u]);
}

// Moves particles 0..params.count to the frame in tables[1..13] (centre
// of mass hi, lo; its velocity hi, lo).
@compute @workgroup_size(WORKGROUP_SIZE)
fn centre(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = flat_index(wid, nwg, lid);
    if i >= params.count { return; }
    let one = tables[0];
    let x = pos_mass[i];
    let u = vel[i];
    pos_mass[i] = PosMass(shifted(x.pos, frame_vector(1u), frame_vector(4u), one), x.mass);
    vel[i] = Velocity(shifted(u.vel, frame_vector(7u), frame_vector(10u), one), u.last_acc);
}

// Places particles dst..dst + count of a galaxy's component, sampled in
// its own frame, in the model (src/state/galaxy/realization.rs:
// Placement): x ↦ A x + b and v ↦ A v + c, with A in tables[1..10] (rows
// first) and b, c as hi, lo pairs in tables[10..22]; each with mass
// params.mass and tag params.tag.
@compute @workgroup_size(WORKGROUP_SIZE)
fn place(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = flat_index(wid, nwg, lid);
    if i >= params.count { return; }
    let one = tables[0];
    let j = params.dst + i;
    let x = pos_mass[j].pos;
    let u = vel[j];
    pos_mass[j] = PosMass(placed(x, frame_vector(10u), frame_vector(13u), one), params.mass);
    vel[j] = Velocity(placed(u.vel, frame_vector(16u), frame_vector(19u), one), u.last_acc);
    tags[j] = params.tag;
}

// A x + (hi + lo): the product in f32, the sum with hi exact (a
// two-sum), plus lo, rounded once.
fn placed(x: vec3<f32>, hi: vec3<f32>, lo: vec3<f32>, one: f32) -> vec3<f32> {
    let a = vec3<f32>(
        dot(frame_vector(1u), x),
        dot(frame_vector(4u), x),
        dot(frame_vector(7u), x),
    );
    let t = ds3_add_f(Ds3(hi, vec3<f32>(0.0)), a, one);
    return fma(t.hi, vec3<f32>(one), t.lo + lo);
}

// --- galaxy components from their tables (state/galaxy: Equilibrium::draw,
// DiskEquilibrium::draw) ---

// Value i of table column c.
fn column(c: u32, i: u32) -> f32 {
    return tables[c * params.nodes + i];
}

// The first node of column c (ascending) whose value is at least x, or
// params.nodes if none: Rust's partition_point(|v| v < x).
fn first_at_least(c: u32, x: f32) -> u32 {
    var lo = 0u;
    var hi = params.nodes;
    while lo < hi {
        let mid = (lo + hi) / 2u;
        if column(c, mid) < x {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// The columns of a spheroid component's table (SpheroidTable).
const RADIUS: u32 = 0u;
const ENCLOSED: u32 = 1u;
const PSI: u32 = 2u;
const ENERGY: u32 = 3u;
const DF: u32 = 4u;
const BOUND: u32 = 5u;
const PEAK_Q: u32 = 6u;

// Tabulated::radius_of_fraction: inverse of the enclosed mass, linear in
// ln r between nodes, a power law inside the first.
fn radius_of_fraction(u: f32) -> f32 {
    let last = params.nodes - 1u;
    let m = u * column(ENCLOSED, last);
    let e0 = column(ENCLOSED, 0u);
    if m <= e0 {
        return column(RADIUS, 0u) * pow(m / e0, params.inner_exponent);
    }
    // e[k - 1] < m <= e[k], so the segment has a length.
    let k = min(first_at_least(ENCLOSED, m), last);
    let t = (m - column(ENCLOSED, k - 1u)) / (column(ENCLOSED, k) - column(ENCLOSED, k - 1u));
    return column(RADIUS, k - 1u) * pow(column(RADIUS, k) / column(RADIUS, k - 1u), t);
}

// Potential::psi_at: a power law between nodes (extrapolated inside the
// grid), M/r outside it.
fn psi_at(r: f32) -> f32 {
    let last = params.nodes - 1u;
    if r >= column(RADIUS, last) {
        return params.total_mass / r;
    }
    // The node above r (partition_point(|x| x <= r), kept in 1..=last).
    var lo = 0u;
    var hi = params.nodes;
    while lo < hi {
        let mid = (lo + hi) / 2u;
        if column(RADIUS, mid) <= r {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    let k = clamp(lo, 1u, last);
    let t = log(r / column(RADIUS, k - 1u)) / log(column(RADIUS, k) / column(RADIUS, k - 1u));
    let a = column(PSI, k - 1u);
    return a * pow(column(PSI, k) / a, t);
}

// DistributionFunction::at: linear in ln E between nodes, falling linearly
// to zero below the first. Energies a cored centre's nodes share in f32
// take the lower node's value.
fn df_at(e: f32) -> f32 {
    if e <= 0.0 {
        return 0.0;
    }
    let e0 = column(ENERGY, 0u);
    if e <= e0 {
        return column(DF, 0u) * e / e0;
    }
    let k = first_at_least(ENERGY, e);
    if k >= params.nodes {
        return column(DF, params.nodes - 1u);
    }
    let below = column(ENERGY, k - 1u);
    let span = log(column(ENERGY, k) / below);
    let t = select(0.0, clamp(log(e / below) / span, 0.0, 1.0), span > 0.0);
    let f0 = column(DF, k - 1u);
    return f0 + t * (column(DF, k) - f0);
}

// DistributionFunction::sample_speed: von Neumann rejection of
// f(Psi - v^2/2) v^2 under the tabulated bound at or above psi.
fn sample_speed(psi: f32, st: ptr<function, Stream>) -> f32 {
    let v_esc = sqrt(2.0 * psi);
    let k = first_at_least(ENERGY, psi);
    var bound = params.bound_beyond;
    var peak_q = column(PEAK_Q, params.nodes - 1u);
    if k < params.nodes {
        bound = column(BOUND, k);
        peak_q = column(PEAK_Q, k);
    }
    if bound <= 0.0 {
        // No bound orbits here (f = 0): the particle starts at rest.
        return 0.0;
    }
    for (var i = 0u; i < SPEED_TRIES; i++) {
        let q = uniform01(st);
        if bound * uniform01(st) < df_at(psi * (1.0 - q * q)) * q * q {
            return q * v_esc;
        }
    }
    return peak_q * v_esc;
}

// Particle first + i of a spheroid component (Equilibrium::draw).
@compute @workgroup_size(WORKGROUP_SIZE)
fn spheroid(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = flat_index(wid, nwg, lid);
    if i >= params.count { return; }
    var st = stream_of(i);
    let r = radius_of_fraction(uniform_open(&st));
    let v = sample_speed(psi_at(r), &st);
    let x = unit_vector(&st) * r;
    let u = unit_vector(&st) * v;
    pos_mass[params.dst + i] = PosMass(x, params.mass);
    vel[params.dst + i] = Velocity(u, 0.0);
}

// The columns of a disk's moment table (DiskTable), at R = (i + 1/2) spacing.
const MEAN_VPHI: u32 = 0u;
const SIGMA_R: u32 = 1u;
const SIGMA_PHI: u32 = 2u;
const SIGMA_Z: u32 = 3u;

// Column c of the disk's table at radius r, linear between nodes, the
// end nodes' values beyond them.
fn moment_at(c: u32, r: f32) -> f32 {
    let x = r / params.spacing - 0.5;
    let k = u32(clamp(floor(x), 0.0, f32(params.nodes - 2u)));
    let t = clamp(x - f32(k), 0.0, 1.0);
    let a = column(c, k);
    return a + t * (column(c, k + 1u) - a);
}

// Rng::gaussian: Box-Muller, one of the pair.
fn gaussian(st: ptr<function, Stream>) -> f32 {
    let r = sqrt(-2.0 * log(uniform_open(st)));
    return r * cos(TWO_PI * uniform01(st));
}

// Particle first + i of a disk (DiskEquilibrium::draw).
@compute @workgroup_size(WORKGROUP_SIZE)
fn disk(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = flat_index(wid, nwg, lid);
    if i >= params.count { return; }
    var st = stream_of(i);
    // R e^(-R/R_d) is the sum of two exponential deviates; beyond the
    // edge (5e-4 of the draws) it is drawn again.
    var r = params.max_radius;
    for (var k = 0u; k < MAX_TRIES; k++) {
        let trial = -params.scale_length * log(uniform_open(&st) * uniform_open(&st));
        if trial <= params.max_radius {
            r = trial;
            break;
        }
    }
    // z0 atanh(2u - 1), as z0/2 ln(u/(1 - u)): exact in f32 near u = 1.
    let w = uniform_open(&st);
    let z = 0.5 * params.scale_height * log(w / (1.0 - w));
    let phi = TWO_PI * uniform01(&st);
    let v_r = moment_at(SIGMA_R, r) * gaussian(&st);
    let v_phi = moment_at(MEAN_VPHI, r) + moment_at(SIGMA_PHI, r) * gaussian(&st);
    let v_z = moment_at(SIGMA_Z, r) * gaussian(&st);
    let c = cos(phi);
    let s = sin(phi);
    pos_mass[params.dst + i] = PosMass(vec3<f32>(r * c, r * s, z), params.mass);
    vel[params.dst + i] = Velocity(vec3<f32>(v_r * c - v_phi * s, v_r * s + v_phi * c, v_z), 0.0);
}
