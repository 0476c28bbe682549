//! The 6th-order interface of Sapporo2's `sapporo6thlib` (the one of
//! Nitadori & Makino's 6th-order Hermite codes, e.g. phi-GPU style
//! integrators): j-particles carry snap and crackle, forces come back with
//! jerk and snap.
//!
//! - `initialize()` / `initialize_special(ndev, list)`: opens the library
//!   once (later calls do nothing, as in Sapporo2).
//! - `set_j_particle(add, pos, vel, acc, jrk, snp, crk, mass, time, id,
//!   eps2)`: full derivatives (not GRAPE-6's a/2, j/6) at the particle's
//!   own `time`.
//! - `predict_all(time, nj)`: j-particles `0..nj` are predicted to `time`
//!   (each from its own time, 5th-order Taylor series);
//!   `no_predict_all(time, nj)`: they are used as set, unpredicted.
//! - `pick_up_predictor_2(addr, &id, &mass, &eps2, pos, vel, acc)`: the
//!   predicted j-particle (computed in f64 on the host from the record
//!   as set, the same series as the GPU's).
//! - `calc_force_on_predictors(ni, nj, ids, pos, vel, acc, mass, eps2,
//!   acc1, jrk1, snp1, crk1, phi, nnb, nnb_r2)`: forces on any number of
//!   caller-predicted i-particles against j-particles `0..nj`; the
//!   j-particle whose id equals `ids[i]` is skipped; `crk1` is zero (as in
//!   Sapporo2), `nnb` the nearest neighbour's id (−1 if none), `nnb_r2`
//!   its unsoftened distance squared. One softening for all
//!   interactions, `eps2[0]` (as Sapporo2's kernels; the j-particles'
//!   `eps2` is stored and returned, not used). Up to `SIXTH_NI` (16,384)
//!   i-particles per GPU evaluation; a larger block goes in pieces, each
//!   launched before the one before is read.
//!
//! These calls return nothing; an error prints a message on stderr and the
//! outputs of the failed call are NaN (ids −1).

use super::engine::{fail, guarded, row, vec3, Engine, SIXTH_NI};
use crate::hermite::predict::i_particle;
use crate::hermite::{Body, Force64, Order};
use std::os::raw::{c_double, c_int};
use std::sync::Mutex;

/// A j-particle as the client set it.
#[derive(Clone, Copy)]
struct HostJ {
    body: Body,
    id: c_int,
    eps2: f64,
}

struct Sixth {
    engine: Engine,
    /// The j-particles as set, by address.
    host: Vec<Option<HostJ>>,
    /// `no_predict_all`: the j-particles are used as set, and the GPU's
    /// copies carry the prediction time as their own (addresses 0..n);
    /// the next `predict_all` restores them.
    unpredicted: Option<c_int>,
}

static SIXTH: Mutex<Option<Sixth>> = Mutex::new(None);

fn with_sixth(what: &str, f: impl FnOnce(&mut Sixth) -> Result<c_int, String>) -> c_int {
    guarded(&SIXTH, what, |s| match s.as_mut() {
        Some(g) => f(g),
        None => Err("6th-order interface not open (call initialize)".into()),
    })
}

fn open() -> c_int {
    let what = "initialize";
    if guarded(&SIXTH, what, |s| Ok(s.is_some() as c_int)) == 1 {
        return 0;
    }
    let engine = match Engine::open(SIXTH_NI) {
        Ok(e) => e,
        Err(e) => return fail(what, e),
    };
    guarded(&SIXTH, what, |s| {
        let host = vec![None; engine.jmem() as usize];
        *s = Some(Sixth {
            engine,
            host,
            unpredicted: None,
        });
        Ok(0)
    })
}

impl Sixth {
    /// Sends the records of addresses `0..n` again with their time set to
    /// `t` (`Some`) or as set (`None`).
    fn restamp(&mut self, n: c_int, t: Option<f64>) -> Result<(), String> {
        for a in 0..n.max(0) as usize {
            if let Some(h) = self.host.get(a).copied().flatten() {
                let mut b = h.body;
                if let Some(t) = t {
                    b.t0 = t;
                }
                self.engine.set_j(a as c_int, b.record(h.id as u32))?;
            }
        }
        Ok(())
    }
}

/// Opens the library (once).
#[no_mangle]
pub extern "C" fn initialize() {
    open();
}

/// As `initialize` (one WebGPU adapter; the device list is not used).
#[no_mangle]
pub extern "C" fn initialize_special(_ndev: c_int, _list: *const c_int) {
    open();
}

/// Stores j-particle `add`.
///
/// # Safety
/// `pos`, `vel`, `acc`, `jrk`, `snp` 3 doubles each; `crk` 3 doubles or
/// null (zero).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn set_j_particle(
    add: c_int,
    pos: *const c_double,
    vel: *const c_double,
    acc: *const c_double,
    jrk: *const c_double,
    snp: *const c_double,
    crk: *const c_double,
    mass: c_double,
    time: c_double,
    id: c_int,
    eps2: c_double,
) {
    with_sixth("set_j_particle", |s| {
        if [pos, vel, acc, jrk, snp].iter().any(|p| p.is_null()) {
            return Err("null vector".into());
        }
        if id < 0 {
            return Err(format!("id {id} < 0"));
        }
        if !(mass.is_finite() && time.is_finite()) {
            return Err(format!("mass = {mass}, time = {time}"));
        }
        // SAFETY: non-null, 3 doubles each by the caller's contract.
        let body = unsafe {
            Body {
                mass,
                t0: time,
                pos: vec3(pos),
                vel: vec3(vel),
                acc: vec3(acc),
                jerk: vec3(jrk),
                snap: vec3(snp),
                crackle: if crk.is_null() { [0.0; 3] } else { vec3(crk) },
                ..Default::default()
            }
        };
        s.engine.set_j(add, body.record(id as u32))?;
        s.host[add as usize] = Some(HostJ { body, id, eps2 });
        Ok(0)
    });
}

/// j-particles `0..nj` are predicted to `time` at the next force.
#[no_mangle]
pub extern "C" fn predict_all(time: c_double, nj: c_int) {
    with_sixth("predict_all", |s| {
        if !time.is_finite() {
            return Err(format!("time = {time}"));
        }
        if let Some(n) = s.unpredicted.take() {
            s.restamp(n, None)?;
        }
        s.engine.ti = time;
        s.engine.gpu.set_nj(nj.max(1) as u32);
        Ok(0)
    });
}

/// j-particles `0..nj` are used as set, not predicted.
#[no_mangle]
pub extern "C" fn no_predict_all(time: c_double, nj: c_int) {
    with_sixth("no_predict_all", |s| {
        if !time.is_finite() {
            return Err(format!("time = {time}"));
        }
        let nj = nj.clamp(0, s.host.len() as c_int);
        s.restamp(nj, Some(time))?;
        s.unpredicted = Some(nj.max(s.unpredicted.unwrap_or(0)));
        s.engine.ti = time;
        Ok(0)
    });
}

/// The j-particle at `addr` as the next force sees it.
///
/// # Safety
/// `id`, `mass`, `eps2` pointing to one value, `pos`, `vel`, `acc` to 3
/// doubles.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn pick_up_predictor_2(
    addr: c_int,
    id: *mut c_int,
    mass: *mut c_double,
    eps2: *mut c_double,
    pos: *mut c_double,
    vel: *mut c_double,
    acc: *mut c_double,
) {
    with_sixth("pick_up_predictor_2", |s| {
        if [mass, eps2, pos, vel, acc].iter().any(|p| p.is_null()) || id.is_null() {
            return Err("null output".into());
        }
        let h = usize::try_from(addr)
            .ok()
            .and_then(|a| s.host.get(a).copied().flatten())
            .ok_or_else(|| format!("no j-particle at address {addr}"))?;
        let t = if s.unpredicted.is_some() {
            h.body.t0
        } else {
            s.engine.ti
        };
        let (x, v) = h.body.predict(t);
        let a = h.body.predict_acc(t);
        // SAFETY: non-null, the caller's contract.
        unsafe {
            *id = h.id;
            *mass = h.body.mass;
            *eps2 = h.eps2;
            for k in 0..3 {
                *pos.add(k) = x[k];
                *vel.add(k) = v[k];
                *acc.add(k) = a[k];
            }
        }
        Ok(0)
    });
}

/// Forces with jerk and snap on `ni` i-particles (see the module docs).
///
/// # Safety
/// `ids`, `mass`, `eps2`, `phi`, `nnb`, `nnb_r2` `ni` values; `pos`, `vel`,
/// `acc`, `acc1`, `jrk1`, `snp1`, `crk1` `ni` rows of 3 doubles (`mass`,
/// `crk1`, `nnb`, `nnb_r2` may be null).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn calc_force_on_predictors(
    ni: c_int,
    nj: c_int,
    ids: *const c_int,
    pos: *const [c_double; 3],
    vel: *const [c_double; 3],
    acc: *const [c_double; 3],
    _mass: *const c_double,
    eps2: *const c_double,
    acc1: *mut [c_double; 3],
    jrk1: *mut [c_double; 3],
    snp1: *mut [c_double; 3],
    crk1: *mut [c_double; 3],
    phi: *mut c_double,
    nnb: *mut c_int,
    nnb_r2: *mut c_double,
) {
    let outs_ok = !(acc1.is_null() || jrk1.is_null() || snp1.is_null() || phi.is_null());
    let r = with_sixth("calc_force_on_predictors", |s| {
        if ni < 0 {
            return Err(format!("ni = {ni}"));
        }
        if ids.is_null() || pos.is_null() || vel.is_null() || acc.is_null() || eps2.is_null() {
            return Err("null input array".into());
        }
        if !outs_ok {
            return Err("null output array".into());
        }
        // SAFETY: non-null, the caller's contract.
        let e2 = unsafe { *eps2 };
        let cap = s.engine.ni_cap();
        // Blocks of more than `cap` go in pieces, each launched before the
        // one before is read: the GPU computes piece k + 1 while the host
        // converts piece k.
        let mut in_flight = None;
        let mut s0 = 0;
        loop {
            let next = if s0 < ni {
                let n = (ni - s0).min(cap);
                let sinks: Vec<_> = (s0 as usize..(s0 + n) as usize)
                    .map(|k| {
                        // SAFETY: `ni` entries by the caller's contract.
                        let (i, x, v, a) =
                            unsafe { (*ids.add(k), row(pos, k), row(vel, k), row(acc, k)) };
                        i_particle(i as u32, x, v, a, 0.0)
                    })
                    .collect();
                let launched = s.engine.launch(nj, &sinks, e2, Order::Six)?;
                s0 += n;
                Some((s0 - n, launched))
            } else {
                None
            };
            if let Some((first, launched)) = in_flight.take() {
                for (q, r) in s.engine.collect(launched)?.iter().enumerate() {
                    let f = Force64::from(r);
                    let k = first as usize + q;
                    // SAFETY: non-null (optional ones checked), `ni` entries.
                    unsafe {
                        *acc1.add(k) = f.acc;
                        *jrk1.add(k) = f.jerk;
                        *snp1.add(k) = f.snap;
                        *phi.add(k) = f.pot;
                        if !crk1.is_null() {
                            *crk1.add(k) = [0.0; 3];
                        }
                        let none = f.nn_id == u32::MAX;
                        if !nnb.is_null() {
                            *nnb.add(k) = if none { -1 } else { f.nn_id as c_int };
                        }
                        if !nnb_r2.is_null() {
                            *nnb_r2.add(k) = if none { f64::INFINITY } else { f.nn_d2 };
                        }
                    }
                }
            }
            match next {
                Some(l) => in_flight = Some(l),
                None => break,
            }
        }
        Ok(0)
    });
    if r != 0 && outs_ok {
        for k in 0..ni.max(0) as usize {
            // SAFETY: non-null, `ni` entries by the caller's contract.
            unsafe {
                *acc1.add(k) = [f64::NAN; 3];
                *jrk1.add(k) = [f64::NAN; 3];
                *snp1.add(k) = [f64::NAN; 3];
                *phi.add(k) = f64::NAN;
                if !nnb.is_null() {
                    *nnb.add(k) = -1;
                }
            }
        }
    }
}
