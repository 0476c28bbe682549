//! The GRAPE-5 interface as Sapporo2's `sapporoG5lib` offers it: what
//! tree codes (Barnes–Hut with GRAPE-5, Bonsai's ancestors, Fukushige's
//! codes) call to offload forces. Positions and masses only: acceleration
//! and potential of Plummer-softened gravity, no prediction, no
//! identities. As on GRAPE-5 (and Sapporo2's G5 kernels) nothing is
//! skipped: an i-particle at the position of a j-particle gets no force
//! from it but its potential includes −m_j/ε (clients subtract it).
//!
//! - `g5_open()`, `g5_close()`; `g5_get_number_of_pipelines()` (most
//!   i-particles per `g5_set_xi`), `g5_get_jmemsize()`.
//! - `g5_set_eps_to_all(eps)` / `g5_set_eps2_to_all(eps2)`, `g5_set_n(nj)`.
//! - `g5_set_xmj(adr, nj, xj, mj)` / `g5_set_jp(adr, nj, mj, xj)`: j-particles
//!   `xj[0..nj)` go to addresses `adr..adr+nj` (GRAPE-5's convention;
//!   Sapporo2 reads `xj[adr..adr+nj)`, the same where clients pass adr = 0).
//! - `g5_calculate_force_on_x(xi, a, phi, ni)`, any `ni` (taken in blocks
//!   of the pipelines), or `g5_set_xi(ni, xi)`, `g5_run()`,
//!   `g5_get_force(ni, a, phi)` for one block.
//! - `g5_set_range`: accepted and ignored (GRAPE-5's fixed-point range).
//!
//! GRAPE-5's calls return nothing: an error (a call before `g5_open`, no
//! softening or n set, a null array) prints a message on stderr and fills
//! the outputs with NaN so that the client cannot go on with silent
//! garbage.

use super::engine::{fail, guarded, row, Engine, NPIPES};
use crate::hermite::predict::i_particle;
use crate::hermite::{Body, Force64, Order};
use std::os::raw::{c_double, c_int};
use std::sync::Mutex;

struct G5 {
    engine: Engine,
    /// j-particles of the evaluations (`g5_set_n`), unset: −1.
    n: c_int,
    /// Softening squared (`g5_set_eps_to_all`), unset: −1.
    eps2: f64,
    /// i-particles of the block started by `g5_set_xi`.
    started: c_int,
}

static G5_STATE: Mutex<Option<G5>> = Mutex::new(None);

/// Runs `f` on the open GRAPE-5 state.
fn with_g5(what: &str, f: impl FnOnce(&mut G5) -> Result<c_int, String>) -> c_int {
    guarded(&G5_STATE, what, |s| match s.as_mut() {
        Some(g) => f(g),
        None => Err("GRAPE-5 interface not open (call g5_open)".into()),
    })
}

fn open() -> c_int {
    let engine = match Engine::open(NPIPES) {
        Ok(e) => e,
        Err(e) => return fail("g5_open", e),
    };
    guarded(&G5_STATE, "g5_open", |s| {
        *s = Some(G5 {
            engine,
            n: -1,
            eps2: -1.0,
            started: 0,
        });
        Ok(0)
    })
}

/// # Safety
/// `xj` `nj` rows, `mj` `nj` values (or null: an error).
unsafe fn set_xmj(adr: c_int, nj: c_int, xj: *const [c_double; 3], mj: *const c_double) -> c_int {
    with_g5("g5_set_xmj", |g| {
        if nj < 0 || adr < 0 {
            return Err(format!("adr = {adr}, nj = {nj}"));
        }
        if nj > 0 && (xj.is_null() || mj.is_null()) {
            return Err("null xj or mj".into());
        }
        for k in 0..nj as usize {
            let body = Body {
                // SAFETY: non-null, `nj` entries by the caller's contract.
                mass: unsafe { *mj.add(k) },
                pos: unsafe { row(xj, k) },
                ..Default::default()
            };
            let address = adr + k as c_int;
            g.engine.set_j(address, body.record(address as u32))?;
        }
        Ok(0)
    })
}

/// Starts a block of at most `NPIPES` i-particles.
///
/// # Safety
/// `xi` `ni` rows.
unsafe fn start(g: &mut G5, ni: c_int, xi: *const [c_double; 3]) -> Result<(), String> {
    if g.eps2 < 0.0 {
        return Err("softening not set (call g5_set_eps_to_all)".into());
    }
    if g.n <= 0 {
        return Err("number of j-particles not set (call g5_set_n)".into());
    }
    if xi.is_null() {
        return Err("null xi".into());
    }
    if !(1..=NPIPES).contains(&ni) {
        return Err(format!("ni = {ni}, must be 1..{NPIPES}"));
    }
    // No identity: nothing is skipped (u32::MAX is no j-particle's id as
    // long as the j-memory is smaller).
    let sinks: Vec<_> = (0..ni as usize)
        .map(|k| i_particle(u32::MAX, unsafe { row(xi, k) }, [0.0; 3], [0.0; 3], 0.0))
        .collect();
    g.engine.start(g.n, &sinks, g.eps2, Order::Two)?;
    g.started = ni;
    Ok(())
}

/// Results of the started block into `a`, `phi`.
///
/// # Safety
/// `a` `ni` rows, `phi` `ni` values.
unsafe fn get(
    g: &mut G5,
    ni: c_int,
    a: *mut [c_double; 3],
    phi: *mut c_double,
) -> Result<(), String> {
    if a.is_null() || phi.is_null() {
        return Err("null a or phi".into());
    }
    for (k, r) in g.engine.finish(ni)?.iter().enumerate() {
        let f = Force64::from(r);
        // SAFETY: non-null, `ni` entries by the caller's contract.
        unsafe {
            *a.add(k) = f.acc;
            *phi.add(k) = f.pot;
        }
    }
    Ok(())
}

/// Fills the outputs of a failed call with NaN.
///
/// # Safety
/// As `get`.
unsafe fn poison(ni: c_int, a: *mut [c_double; 3], phi: *mut c_double) {
    if a.is_null() || phi.is_null() {
        return;
    }
    for k in 0..ni.max(0) as usize {
        // SAFETY: non-null, `ni` entries by the caller's contract.
        unsafe {
            *a.add(k) = [f64::NAN; 3];
            *phi.add(k) = f64::NAN;
        }
    }
}

/// Opens the GRAPE-5 interface (a GPU context and the j-memory).
#[no_mangle]
pub extern "C" fn g5_open() {
    open();
}

/// As `g5_open` (Sapporo2's device list is not used: one WebGPU adapter);
/// returns 0, or −1 on failure.
#[no_mangle]
pub extern "C" fn g5_open_special(_ndev: c_int, _list: *const c_int) -> c_int {
    open()
}

#[no_mangle]
pub extern "C" fn g5_close() {
    if let Ok(mut s) = G5_STATE.lock() {
        *s = None;
    }
}

/// Most i-particles per `g5_set_xi`.
#[no_mangle]
pub extern "C" fn g5_get_number_of_pipelines() -> c_int {
    NPIPES
}

#[no_mangle]
pub extern "C" fn g5_get_number_of_real_pipelines() -> c_int {
    NPIPES
}

/// j-particles the open interface holds (`WEBGRAV_G6_JMEMSIZE`), −1 if
/// not open.
#[no_mangle]
pub extern "C" fn g5_get_jmemsize() -> c_int {
    with_g5("g5_get_jmemsize", |g| Ok(g.engine.jmem() as c_int))
}

#[no_mangle]
pub extern "C" fn g5_get_pcibus_freq() -> c_int {
    1
}

/// The forces use j-particles `0..nj`.
#[no_mangle]
pub extern "C" fn g5_set_n(nj: c_int) {
    with_g5("g5_set_n", |g| {
        let cap = g.engine.jmem() as c_int;
        if !(1..=cap).contains(&nj) {
            g.n = -1;
            return Err(format!("nj = {nj}, must be 1..{cap}"));
        }
        g.n = nj;
        Ok(0)
    });
}

fn set_eps2(what: &str, eps2: f64) {
    with_g5(what, |g| {
        if !(eps2.is_finite() && eps2 >= 0.0) {
            g.eps2 = -1.0;
            return Err(format!("softening squared {eps2}"));
        }
        g.eps2 = eps2;
        Ok(0)
    });
}

/// Plummer softening length of every interaction.
#[no_mangle]
pub extern "C" fn g5_set_eps_to_all(eps: c_double) {
    set_eps2("g5_set_eps_to_all", eps * eps);
}

/// Softening squared of every interaction.
#[no_mangle]
pub extern "C" fn g5_set_eps2_to_all(eps2: c_double) {
    set_eps2("g5_set_eps2_to_all", eps2);
}

/// GRAPE-5's fixed-point range: not needed here.
#[no_mangle]
pub extern "C" fn g5_set_range(_xmin: c_double, _xmax: c_double, _mmin: c_double) {}

/// j-particles `xj[k]`, `mj[k]` to addresses `adr + k`, k < nj.
///
/// # Safety
/// `xj` `nj` rows of 3 doubles, `mj` `nj` doubles.
#[no_mangle]
pub unsafe extern "C" fn g5_set_xmj(
    adr: c_int,
    nj: c_int,
    xj: *const [c_double; 3],
    mj: *const c_double,
) {
    // SAFETY: forwarded caller contract.
    unsafe { set_xmj(adr, nj, xj, mj) };
}

/// As `g5_set_xmj`, the arrays the other way round.
///
/// # Safety
/// As `g5_set_xmj`.
#[no_mangle]
pub unsafe extern "C" fn g5_set_jp(
    adr: c_int,
    nj: c_int,
    mj: *const c_double,
    xj: *const [c_double; 3],
) {
    // SAFETY: forwarded caller contract.
    unsafe { set_xmj(adr, nj, xj, mj) };
}

/// Sends `ni` (at most the pipelines) i-particles and starts their forces.
///
/// # Safety
/// `xi` `ni` rows of 3 doubles.
#[no_mangle]
pub unsafe extern "C" fn g5_set_xi(ni: c_int, xi: *const [c_double; 3]) {
    with_g5("g5_set_xi", |g| {
        g.started = 0;
        // SAFETY: forwarded caller contract.
        unsafe { start(g, ni, xi) }?;
        Ok(0)
    });
}

/// The forces already started by `g5_set_xi`.
#[no_mangle]
pub extern "C" fn g5_run() {}

/// Acceleration and potential of the `ni` i-particles of `g5_set_xi`.
///
/// # Safety
/// `a` `ni` rows of 3 doubles, `phi` `ni` doubles.
#[no_mangle]
pub unsafe extern "C" fn g5_get_force(ni: c_int, a: *mut [c_double; 3], phi: *mut c_double) {
    // SAFETY: forwarded caller contract.
    let r = with_g5("g5_get_force", |g| unsafe { get(g, ni, a, phi) }.map(|_| 0));
    if r != 0 {
        unsafe { poison(ni, a, phi) };
    }
}

/// Acceleration and potential of any number of i-particles.
///
/// # Safety
/// `xi`, `a` `ni` rows of 3 doubles, `phi` `ni` doubles.
#[no_mangle]
pub unsafe extern "C" fn g5_calculate_force_on_x(
    xi: *const [c_double; 3],
    a: *mut [c_double; 3],
    phi: *mut c_double,
    ni: c_int,
) {
    let r = with_g5("g5_calculate_force_on_x", |g| {
        if ni < 0 {
            return Err(format!("ni = {ni}"));
        }
        if xi.is_null() || a.is_null() || phi.is_null() {
            return Err("null xi, a or phi".into());
        }
        for s in (0..ni).step_by(NPIPES as usize) {
            let n = (ni - s).min(NPIPES);
            let k = s as usize;
            // SAFETY: `ni` rows by the caller's contract; block s..s+n.
            unsafe {
                start(g, n, xi.add(k))?;
                get(g, n, a.add(k), phi.add(k))?;
            }
        }
        Ok(0)
    });
    if r != 0 {
        // SAFETY: as above.
        unsafe { poison(ni, a, phi) };
    }
}
