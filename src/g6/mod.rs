//! GRAPE-6 style C API on the Hermite force kernels, a front end of its
//! own (native only; header `src/g6/g6.h`, exported by `libwebgrav.so`),
//! so NBODY4/6-style Hermite codes written for GRAPE-6, Kirin or Sapporo can run on any
//! WebGPU-capable GPU. Semantics follow Sapporo's GRAPE-6 interface:
//!
//! - `g6_set_j_particle` stores one j-particle at `address` with identity
//!   `index`, time `tj` and the GRAPE-6 Taylor coefficients a2 = a/2,
//!   j6 = jerk/6, k18 = snap/18; records are buffered on the host and sent
//!   as one upload at the next `g6calc_firsthalf`.
//! - `g6_set_ti` sets the time to which the j-particles are predicted (on
//!   the GPU, double-single positions, full Taylor series).
//! - `g6calc_firsthalf` takes up to `g6_npipes()` host-predicted
//!   i-particles and starts the evaluation against j-particles
//!   `0..nj`; `g6calc_lasthalf` waits and returns acceleration, jerk and
//!   potential (−Σ m/√(r² + ε²), the particle with the same index skipped,
//!   as Sapporo does; GRAPE-6 hardware included it). `g6calc_lasthalf2`
//!   also returns the index of each i-particle's nearest neighbour.
//! - `g6_read_neighbour_list` finds, for the i-particles of the last
//!   evaluation, all j-particles within √h2 (unsoftened); then
//!   `g6_get_neighbour_list` copies one pipe's list.
//! - Reset, unit and buffer-management calls of the hardware are no-ops.
//!
//! Environment: `WEBGRAV_G6_JMEMSIZE` (j-particle memory, default 262144),
//! `WEBGRAV_G6_PRECISION` (`ds`, the default, or `f32`). Functions return
//! 0 on success and −1 on error (with a message on stderr), where the
//! GRAPE-6 API returns anything.

use crate::gpu::layout::{ForceResult, JParticle};
use crate::gpu::GpuContext;
use crate::hermite::neighbours::NB_MAX;
use crate::hermite::predict::i_particle;
use crate::hermite::{Body, Force64, HermiteGpu, Order, Precision, Sinks};
use std::os::raw::{c_double, c_int};
use std::sync::Mutex;

/// i-particles per `g6calc_firsthalf` call.
pub const NPIPES: c_int = 2048;
/// Cluster ids 0..MAX_CLUSTERS.
const MAX_CLUSTERS: usize = 4;
const DEFAULT_JMEMSIZE: u32 = 1 << 18;

struct Cluster {
    gpu: HermiteGpu,
    precision: Precision,
    ti: f64,
    /// j-particles set since the last evaluation: (address, record).
    pending: Vec<(u32, JParticle)>,
    /// Results of the last evaluation, once read.
    results: Option<Vec<ForceResult>>,
    /// A firsthalf call succeeded and its results are the ones on the GPU
    /// (a failed firsthalf clears it, so lasthalf cannot return the
    /// previous block's forces).
    evaluated: bool,
    neighbours: Vec<(u32, Vec<u32>)>,
}

static CLUSTERS: Mutex<Vec<Option<Cluster>>> = Mutex::new(Vec::new());

fn fail(what: &str, msg: impl std::fmt::Display) -> c_int {
    eprintln!("webgrav g6: {what}: {msg}");
    -1
}

/// Runs `f` on an open cluster.
fn with_cluster(
    id: c_int,
    what: &str,
    f: impl FnOnce(&mut Cluster) -> Result<c_int, String>,
) -> c_int {
    let mut all = match CLUSTERS.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    match usize::try_from(id)
        .ok()
        .and_then(|k| all.get_mut(k))
        .and_then(|c| c.as_mut())
    {
        // A panic must not unwind into the C caller (it would abort the
        // host program): report it as a failed call instead.
        Some(c) => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(c))) {
            Ok(r) => r.unwrap_or_else(|e| fail(what, e)),
            Err(_) => fail(what, "internal error (panic); see the message above"),
        },
        None => fail(what, format!("cluster {id} is not open")),
    }
}

fn vec3(p: *const [c_double; 3], k: usize) -> [f64; 3] {
    // SAFETY: callers check p is non-null and holds at least k + 1 rows.
    unsafe { *p.add(k) }
}

/// Opens cluster `id` (0..3): a GPU context and the j-particle memory.
#[no_mangle]
pub extern "C" fn g6_open(id: c_int) -> c_int {
    let Some(slot) = usize::try_from(id).ok().filter(|&k| k < MAX_CLUSTERS) else {
        return fail(
            "g6_open",
            format!("cluster id {id} out of range 0..{MAX_CLUSTERS}"),
        );
    };
    let jmem = std::env::var("WEBGRAV_G6_JMEMSIZE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_JMEMSIZE);
    let precision = match std::env::var("WEBGRAV_G6_PRECISION").as_deref() {
        Ok("f32") => Precision::F32,
        _ => Precision::Ds,
    };
    let ctx = match pollster::block_on(GpuContext::headless()) {
        Ok(c) => c,
        Err(e) => return fail("g6_open", e),
    };
    // The context is dropped on a panic, so no broken state is observed.
    let open = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        HermiteGpu::new(&ctx, jmem, NPIPES as u32, 0.0)
    }));
    let gpu = match open {
        Ok(Ok(g)) => g,
        Ok(Err(e)) => return fail("g6_open", e),
        // E.g. the device could not allocate the j-memory.
        Err(_) => return fail("g6_open", "internal error (panic); see the message above"),
    };
    let mut all = match CLUSTERS.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    if all.len() <= slot {
        all.resize_with(slot + 1, || None);
    }
    all[slot] = Some(Cluster {
        gpu,
        precision,
        ti: 0.0,
        pending: Vec::new(),
        results: None,
        evaluated: false,
        neighbours: Vec::new(),
    });
    0
}

/// Closes cluster `id`, freeing its GPU memory.
#[no_mangle]
pub extern "C" fn g6_close(id: c_int) -> c_int {
    let mut all = match CLUSTERS.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    match usize::try_from(id).ok().and_then(|k| all.get_mut(k)) {
        Some(c @ Some(_)) => {
            *c = None;
            0
        }
        _ => fail("g6_close", format!("cluster {id} is not open")),
    }
}

/// Most i-particles per `g6calc_firsthalf`.
#[no_mangle]
pub extern "C" fn g6_npipes() -> c_int {
    NPIPES
}

/// Number of j-particles a cluster can hold.
#[no_mangle]
pub extern "C" fn g6_get_jmemsize(id: c_int) -> c_int {
    with_cluster(id, "g6_get_jmemsize", |c| Ok(c.gpu.nj() as c_int))
}

/// Sets the time the j-particles are predicted to at the next evaluation.
#[no_mangle]
pub extern "C" fn g6_set_ti(id: c_int, ti: c_double) -> c_int {
    with_cluster(id, "g6_set_ti", |c| {
        c.ti = ti;
        Ok(0)
    })
}

/// Stores j-particle `address` (see the module docs for the coefficients).
///
/// # Safety
/// `k18`, `j6`, `a2`, `v` and `x` must each point to 3 doubles.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn g6_set_j_particle(
    id: c_int,
    address: c_int,
    index: c_int,
    tj: c_double,
    _dtj: c_double,
    mass: c_double,
    k18: *const c_double,
    j6: *const c_double,
    a2: *const c_double,
    v: *const c_double,
    x: *const c_double,
) -> c_int {
    with_cluster(id, "g6_set_j_particle", |c| {
        if [k18, j6, a2, v, x].iter().any(|p| p.is_null()) {
            return Err("null vector".into());
        }
        let nj = c.gpu.nj() as c_int;
        if !(0..nj).contains(&address) {
            return Err(format!("address {address} outside the j-memory 0..{nj}"));
        }
        // SAFETY: checked non-null; the caller guarantees 3 doubles each.
        let r = |p: *const c_double, s: f64| unsafe { [*p * s, *p.add(1) * s, *p.add(2) * s] };
        let rec = Body {
            mass,
            t0: tj,
            pos: r(x, 1.0),
            vel: r(v, 1.0),
            acc: r(a2, 2.0),
            jerk: r(j6, 6.0),
            snap: r(k18, 18.0),
            ..Default::default()
        }
        .record(index as u32);
        c.pending.push((address as u32, rec));
        Ok(0)
    })
}

/// Starts the force on `ni` i-particles against j-particles `0..nj`.
///
/// # Safety
/// `index`, `h2` and `phiold` must hold `ni` values and `xi`, `vi`,
/// `aold`, `j6old` `ni` rows of 3 doubles (`aold` may be null: the
/// 6th-order snap is not part of this API).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn g6calc_firsthalf(
    id: c_int,
    nj: c_int,
    ni: c_int,
    index: *const c_int,
    xi: *const [c_double; 3],
    vi: *const [c_double; 3],
    aold: *const [c_double; 3],
    _j6old: *const [c_double; 3],
    _phiold: *const c_double,
    eps2: c_double,
    h2: *const c_double,
) -> c_int {
    with_cluster(id, "g6calc_firsthalf", |c| {
        c.evaluated = false;
        c.results = None;
        c.neighbours.clear();
        if !(1..=NPIPES).contains(&ni) {
            return Err(format!("ni = {ni}, must be 1..{NPIPES}"));
        }
        if index.is_null() || xi.is_null() || vi.is_null() || h2.is_null() {
            return Err("null array".into());
        }
        let cap = c.gpu.nj() as c_int;
        if !(1..=cap).contains(&nj) {
            return Err(format!("nj = {nj}, must be 1..{cap}"));
        }
        // Latest record per address wins.
        let mut seen = std::collections::HashSet::new();
        let mut addr = Vec::new();
        let mut recs = Vec::new();
        for (a, r) in c.pending.drain(..).rev() {
            if seen.insert(a) {
                addr.push(a);
                recs.push(r);
            }
        }
        if !addr.is_empty() {
            c.gpu.set_j(&addr, &recs);
        }
        let sinks: Vec<_> = (0..ni as usize)
            .map(|k| {
                // SAFETY: non-null, `ni` entries by the caller's contract.
                let (idx, h) = unsafe { (*index.add(k), *h2.add(k)) };
                let acc = if aold.is_null() {
                    [0.0; 3]
                } else {
                    vec3(aold, k)
                };
                i_particle(idx as u32, vec3(xi, k), vec3(vi, k), acc, h)
            })
            .collect();
        c.gpu.set_eps2(eps2 as f32);
        c.gpu.set_nj(nj as u32);
        let ctx = c.gpu.context().clone();
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("g6 evaluation"),
            });
        c.gpu
            .encode(
                &mut encoder,
                c.ti,
                Sinks::Particles(&sinks),
                Order::Four,
                c.precision,
                None,
            )
            .map_err(|e| e.to_string())?;
        ctx.queue.submit(Some(encoder.finish()));
        c.evaluated = true;
        Ok(0)
    })
}

/// Shared body of the two lasthalf calls.
#[allow(clippy::too_many_arguments)]
unsafe fn lasthalf(
    what: &str,
    id: c_int,
    ni: c_int,
    acc: *mut [c_double; 3],
    jerk: *mut [c_double; 3],
    pot: *mut c_double,
    nn: *mut c_int,
) -> c_int {
    with_cluster(id, what, |c| {
        if acc.is_null() || jerk.is_null() || pot.is_null() {
            return Err("null output array".into());
        }
        if !c.evaluated {
            return Err("no successful g6calc_firsthalf to finish".into());
        }
        if c.results.is_none() {
            c.results = Some(pollster::block_on(c.gpu.read_results()).map_err(|e| e.to_string())?);
        }
        let res = c.results.as_ref().expect("just read");
        if ni as usize != res.len() {
            return Err(format!("ni = {ni}, but firsthalf had {}", res.len()));
        }
        for (k, r) in res.iter().enumerate() {
            let f = Force64::from(r);
            // SAFETY: non-null, `ni` rows by the caller's contract.
            unsafe {
                *acc.add(k) = f.acc;
                *jerk.add(k) = f.jerk;
                *pot.add(k) = f.pot;
                if !nn.is_null() {
                    *nn.add(k) = if f.nn_id == u32::MAX {
                        -1
                    } else {
                        f.nn_id as c_int
                    };
                }
            }
        }
        Ok(0)
    })
}

/// Waits for the evaluation and returns acceleration, jerk and potential.
///
/// # Safety
/// `acc`, `jerk` must hold `ni` rows of 3 doubles, `pot` `ni` doubles.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn g6calc_lasthalf(
    id: c_int,
    _nj: c_int,
    ni: c_int,
    _index: *const c_int,
    _xi: *const [c_double; 3],
    _vi: *const [c_double; 3],
    _eps2: c_double,
    _h2: *const c_double,
    acc: *mut [c_double; 3],
    jerk: *mut [c_double; 3],
    pot: *mut c_double,
) -> c_int {
    // SAFETY: forwarded caller contract.
    unsafe {
        lasthalf(
            "g6calc_lasthalf",
            id,
            ni,
            acc,
            jerk,
            pot,
            std::ptr::null_mut(),
        )
    }
}

/// As `g6calc_lasthalf`, and the index of each i-particle's nearest
/// neighbour in `nnbindex` (−1 if there is no other particle).
///
/// # Safety
/// As `g6calc_lasthalf`; `nnbindex` must hold `ni` ints.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn g6calc_lasthalf2(
    id: c_int,
    _nj: c_int,
    ni: c_int,
    _index: *const c_int,
    _xi: *const [c_double; 3],
    _vi: *const [c_double; 3],
    _eps2: c_double,
    _h2: *const c_double,
    acc: *mut [c_double; 3],
    jerk: *mut [c_double; 3],
    pot: *mut c_double,
    nnbindex: *mut c_int,
) -> c_int {
    if nnbindex.is_null() {
        return fail("g6calc_lasthalf2", "null nnbindex");
    }
    // SAFETY: forwarded caller contract.
    unsafe { lasthalf("g6calc_lasthalf2", id, ni, acc, jerk, pot, nnbindex) }
}

/// Finds the neighbour lists (radius √h2 of `g6calc_firsthalf`) of the
/// i-particles of the last evaluation. Returns 1 if a list has more than
/// the `NB_MAX` (256) entries kept.
#[no_mangle]
pub extern "C" fn g6_read_neighbour_list(id: c_int) -> c_int {
    with_cluster(id, "g6_read_neighbour_list", |c| {
        c.neighbours = pollster::block_on(c.gpu.neighbour_lists()).map_err(|e| e.to_string())?;
        Ok(c.neighbours.iter().any(|(n, _)| *n > NB_MAX) as c_int)
    })
}

/// Copies the neighbour list of i-particle `ipipe` (indices, ascending)
/// into `nbl` (at most `maxlength`), its full length into `*nblen`.
/// Returns 1 if the list did not fit.
///
/// # Safety
/// `nblen` must point to an int and `nbl` hold `maxlength` ints.
#[no_mangle]
pub unsafe extern "C" fn g6_get_neighbour_list(
    id: c_int,
    ipipe: c_int,
    maxlength: c_int,
    nblen: *mut c_int,
    nbl: *mut c_int,
) -> c_int {
    with_cluster(id, "g6_get_neighbour_list", |c| {
        let Some((count, list)) = usize::try_from(ipipe)
            .ok()
            .and_then(|k| c.neighbours.get(k))
        else {
            return Err(format!(
                "no neighbour list for pipe {ipipe} (call g6_read_neighbour_list)"
            ));
        };
        if nblen.is_null() || nbl.is_null() {
            return Err("null output".into());
        }
        let room = maxlength.max(0) as usize;
        // SAFETY: non-null; `maxlength` ints by the caller's contract.
        unsafe {
            // The entries written: at most the room and the NB_MAX stored.
            *nblen = (*count as usize).min(room).min(list.len()) as c_int;
            for (k, &j) in list.iter().take(room).enumerate() {
                *nbl.add(k) = j as c_int;
            }
        }
        Ok((*count as usize > room.min(NB_MAX as usize)) as c_int)
    })
}

/// GRAPE-6 calls without an equivalent here (board resets, units, the
/// j-particle transfer buffer): accepted and ignored.
#[no_mangle]
pub extern "C" fn g6_reset(_id: c_int) -> c_int {
    0
}

#[no_mangle]
pub extern "C" fn g6_reset_fofpga(_id: c_int) -> c_int {
    0
}

#[no_mangle]
pub extern "C" fn g6_set_tunit(_unit: c_int) -> c_int {
    0
}

#[no_mangle]
pub extern "C" fn g6_set_xunit(_unit: c_int) -> c_int {
    0
}

#[no_mangle]
pub extern "C" fn g6_initialize_jp_buffer(_id: c_int, _size: c_int) -> c_int {
    0
}

#[no_mangle]
pub extern "C" fn g6_flush_jp_buffer(_id: c_int) -> c_int {
    0
}
