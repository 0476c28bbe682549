//! The GRAPE-6 interface, twice: the C names (`g6_open(int)`, values) and
//! the Fortran names of Sapporo2's `g6lib` (`g6_open_(int *)`, every
//! argument by pointer, what NBODY4/6, phiGRAPE and AMUSE call). Both are
//! thin shells over the private functions here, so neither calls the other
//! through the dynamic linker: a client that defines the C names itself as
//! wrappers of the Fortran ones (as Sapporo2's `g6lib.h` does) gets its own
//! wrappers, and webgrav's calls stay inside the library.

use super::engine::{arg, fail, guarded, row, vec3, Engine, NPIPES};
use crate::hermite::neighbours::NB_MAX;
use crate::hermite::predict::i_particle;
use crate::hermite::{Body, Force64, Order};
use std::os::raw::{c_double, c_int};
use std::sync::Mutex;

/// Cluster ids 0..MAX_CLUSTERS.
const MAX_CLUSTERS: usize = 4;

static CLUSTERS: Mutex<Vec<Option<Engine>>> = Mutex::new(Vec::new());

/// Runs `f` on open cluster `id`.
fn with_cluster(
    id: c_int,
    what: &str,
    f: impl FnOnce(&mut Engine) -> Result<c_int, String>,
) -> c_int {
    guarded(&CLUSTERS, what, |all| {
        match usize::try_from(id)
            .ok()
            .and_then(|k| all.get_mut(k))
            .and_then(|c| c.as_mut())
        {
            Some(c) => f(c),
            None => Err(format!("cluster {id} is not open")),
        }
    })
}

/// The cluster id behind a Fortran-style id pointer: null means cluster 0
/// (clients that have one board pass anything, or nothing).
///
/// # Safety
/// `p` null or pointing to an int.
unsafe fn cluster_id(p: *const c_int) -> c_int {
    if p.is_null() {
        0
    } else {
        // SAFETY: non-null, the caller's contract.
        unsafe { *p }
    }
}

fn open(id: c_int) -> c_int {
    let what = "g6_open";
    let Some(slot) = usize::try_from(id).ok().filter(|&k| k < MAX_CLUSTERS) else {
        return fail(
            what,
            format!("cluster id {id} out of range 0..{MAX_CLUSTERS}"),
        );
    };
    // The GPU is opened outside the lock (it takes a while).
    let engine = match Engine::open(NPIPES) {
        Ok(e) => e,
        Err(e) => return fail(what, e),
    };
    guarded(&CLUSTERS, what, |all| {
        if all.len() <= slot {
            all.resize_with(slot + 1, || None);
        }
        all[slot] = Some(engine);
        Ok(0)
    })
}

fn close(id: c_int) -> c_int {
    guarded(&CLUSTERS, "g6_close", |all| {
        match usize::try_from(id).ok().and_then(|k| all.get_mut(k)) {
            Some(c @ Some(_)) => {
                *c = None;
                Ok(0)
            }
            _ => Err(format!("cluster {id} is not open")),
        }
    })
}

fn set_ti(id: c_int, ti: f64) -> c_int {
    with_cluster(id, "g6_set_ti", |c| {
        if !ti.is_finite() {
            return Err(format!("ti = {ti}"));
        }
        c.ti = ti;
        Ok(0)
    })
}

/// The j-particle arguments of `g6_set_j_particle`.
struct JArgs {
    address: c_int,
    index: c_int,
    tj: f64,
    mass: f64,
    k18: *const c_double,
    j6: *const c_double,
    a2: *const c_double,
    v: *const c_double,
    x: *const c_double,
}

/// # Safety
/// The vectors of `j` null or pointing to 3 doubles each.
unsafe fn set_j_particle(id: c_int, j: JArgs) -> c_int {
    with_cluster(id, "g6_set_j_particle", |c| {
        if [j.k18, j.j6, j.a2, j.v, j.x].iter().any(|p| p.is_null()) {
            return Err("null vector".into());
        }
        if j.index < 0 {
            return Err(format!("index {} < 0", j.index));
        }
        if !(j.tj.is_finite() && j.mass.is_finite()) {
            return Err(format!("tj = {}, mass = {}", j.tj, j.mass));
        }
        let s = |p, f: f64| unsafe { vec3(p) }.map(|x| x * f);
        let rec = Body {
            mass: j.mass,
            t0: j.tj,
            pos: s(j.x, 1.0),
            vel: s(j.v, 1.0),
            acc: s(j.a2, 2.0),
            jerk: s(j.j6, 6.0),
            snap: s(j.k18, 18.0),
            ..Default::default()
        }
        .record(j.index as u32);
        c.set_j(j.address, rec)?;
        Ok(0)
    })
}

/// The i-particle arguments of `g6calc_firsthalf`.
struct IArgs {
    nj: c_int,
    ni: c_int,
    index: *const c_int,
    xi: *const [c_double; 3],
    vi: *const [c_double; 3],
    eps2: f64,
    h2: *const c_double,
}

/// # Safety
/// `index`, `h2` null or holding `ni` values, `xi`, `vi` `ni` rows.
unsafe fn firsthalf(id: c_int, i: IArgs) -> c_int {
    with_cluster(id, "g6calc_firsthalf", |c| {
        if !(1..=NPIPES).contains(&i.ni) {
            return Err(format!("ni = {}, must be 1..{NPIPES}", i.ni));
        }
        if i.index.is_null() || i.xi.is_null() || i.vi.is_null() {
            return Err("null index, xi or vi".into());
        }
        let sinks: Vec<_> = (0..i.ni as usize)
            .map(|k| {
                // SAFETY: non-null, `ni` entries by the caller's contract;
                // h2 may be null (no neighbour lists wanted).
                let (idx, h) = unsafe {
                    let h = if i.h2.is_null() { 0.0 } else { *i.h2.add(k) };
                    (*i.index.add(k), h)
                };
                let (x, v) = unsafe { (row(i.xi, k), row(i.vi, k)) };
                i_particle(idx as u32, x, v, [0.0; 3], h)
            })
            .collect();
        c.start(i.nj, &sinks, i.eps2, Order::Four)?;
        Ok(0)
    })
}

/// Results of the started evaluation (`nn` may be null).
///
/// # Safety
/// `acc`, `jerk` `ni` rows, `pot` and `nn` (if non-null) `ni` values.
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
        for (k, r) in c.finish(ni)?.iter().enumerate() {
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

fn read_neighbour_list(id: c_int) -> c_int {
    with_cluster(id, "g6_read_neighbour_list", |c| {
        Ok(c.read_neighbours()? as c_int)
    })
}

/// # Safety
/// `nblen` an int, `nbl` `maxlength` ints.
unsafe fn get_neighbour_list(
    id: c_int,
    ipipe: c_int,
    maxlength: c_int,
    nblen: *mut c_int,
    nbl: *mut c_int,
) -> c_int {
    with_cluster(id, "g6_get_neighbour_list", |c| {
        let (count, list) = c.neighbours(ipipe)?;
        if nblen.is_null() || nbl.is_null() {
            return Err("null output".into());
        }
        let room = maxlength.max(0) as usize;
        // SAFETY: non-null; `maxlength` ints by the caller's contract.
        unsafe {
            // The entries written: at most the room and the NB_MAX stored.
            *nblen = (count as usize).min(room).min(list.len()) as c_int;
            for (k, &j) in list.iter().take(room).enumerate() {
                *nbl.add(k) = j as c_int;
            }
        }
        Ok((count as usize > room.min(NB_MAX as usize)) as c_int)
    })
}

// ---- C names -------------------------------------------------------------

/// Opens cluster `id` (0..3): a GPU context and the j-particle memory.
#[no_mangle]
pub extern "C" fn g6_open(id: c_int) -> c_int {
    open(id)
}

/// Closes cluster `id`, freeing its GPU memory.
#[no_mangle]
pub extern "C" fn g6_close(id: c_int) -> c_int {
    close(id)
}

/// Most i-particles per `g6calc_firsthalf`.
#[no_mangle]
pub extern "C" fn g6_npipes() -> c_int {
    NPIPES
}

/// Number of j-particles a cluster can hold.
#[no_mangle]
pub extern "C" fn g6_get_jmemsize(id: c_int) -> c_int {
    with_cluster(id, "g6_get_jmemsize", |c| Ok(c.jmem() as c_int))
}

/// Sets the time the j-particles are predicted to at the next evaluation.
#[no_mangle]
pub extern "C" fn g6_set_ti(id: c_int, ti: c_double) -> c_int {
    set_ti(id, ti)
}

/// A scalar argument as the C names take it (by value) or the Fortran
/// names (by pointer; null is an error).
trait Scalar: Copy {
    type Value;
    /// # Safety
    /// A pointer must be null or point to a value.
    unsafe fn value(self, name: &str) -> Result<Self::Value, String>;
}

macro_rules! scalar_impls {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            type Value = $t;
            unsafe fn value(self, _: &str) -> Result<$t, String> {
                Ok(self)
            }
        }
        impl Scalar for *const $t {
            type Value = $t;
            unsafe fn value(self, name: &str) -> Result<$t, String> {
                // SAFETY: the caller's contract.
                unsafe { arg(self, name) }
            }
        }
    )*};
}
scalar_impls!(c_int, c_double);

/// A cluster id by value, or by pointer where null means cluster 0.
trait Cluster: Copy {
    /// # Safety
    /// A pointer must be null or point to an int.
    unsafe fn cluster(self) -> c_int;
}

impl Cluster for c_int {
    unsafe fn cluster(self) -> c_int {
        self
    }
}

impl Cluster for *const c_int {
    unsafe fn cluster(self) -> c_int {
        // SAFETY: the caller's contract.
        unsafe { cluster_id(self) }
    }
}

/// Reads the scalars `$x` (each `Scalar`) into variables of the same
/// names, or returns `fail(what, …)` for a null pointer.
macro_rules! scalars {
    ($what:expr; $($x:ident),*) => {
        // SAFETY: the caller's contract (null pointers are reported).
        let ($($x,)*) = match unsafe {
            (|| Ok::<_, String>(($($x.value(stringify!($x))?,)*)))()
        } {
            Ok(v) => v,
            Err(e) => return fail($what, e),
        };
    };
}

/// The C- and Fortran-named exports of `g6_set_j_particle`.
macro_rules! set_j_particle_export {
    ($name:ident, $int:ty, $dbl:ty) => {
        /// Stores j-particle `address` with identity `index`, time `tj` and
        /// the GRAPE-6 coefficients (see the module docs). The Fortran
        /// name (trailing `_`) takes the scalars by pointer, a null cluster
        /// id meaning cluster 0.
        ///
        /// # Safety
        /// `k18`, `j6`, `a2`, `v` and `x` must each point to 3 doubles;
        /// pointers to scalars must be valid.
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name(
            id: $int,
            address: $int,
            index: $int,
            tj: $dbl,
            _dtj: $dbl,
            mass: $dbl,
            k18: *const c_double,
            j6: *const c_double,
            a2: *const c_double,
            v: *const c_double,
            x: *const c_double,
        ) -> c_int {
            scalars!(stringify!($name); address, index, tj, mass);
            let j = JArgs {
                address,
                index,
                tj,
                mass,
                k18,
                j6,
                a2,
                v,
                x,
            };
            // SAFETY: the caller's contract.
            unsafe { set_j_particle(id.cluster(), j) }
        }
    };
}

set_j_particle_export!(g6_set_j_particle, c_int, c_double);
set_j_particle_export!(g6_set_j_particle_, *const c_int, *const c_double);

/// The C- and Fortran-named exports of `g6calc_firsthalf`.
macro_rules! firsthalf_export {
    ($name:ident, $int:ty, $dbl:ty) => {
        /// Starts the force on `ni` i-particles (predicted by the caller)
        /// against j-particles `0..nj`. The Fortran name (trailing `_`)
        /// takes the scalars by pointer, a null cluster id meaning
        /// cluster 0.
        ///
        /// # Safety
        /// `index` and `h2` (null: no neighbour radius) must hold `ni`
        /// values and `xi`, `vi` `ni` rows of 3 doubles; `aold`, `j6old`,
        /// `phiold` are not read (GRAPE-6 used them for its exponent
        /// ranges); pointers to scalars must be valid.
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name(
            id: $int,
            nj: $int,
            ni: $int,
            index: *const c_int,
            xi: *const [c_double; 3],
            vi: *const [c_double; 3],
            _aold: *const [c_double; 3],
            _j6old: *const [c_double; 3],
            _phiold: *const c_double,
            eps2: $dbl,
            h2: *const c_double,
        ) -> c_int {
            scalars!(stringify!($name); nj, ni, eps2);
            let i = IArgs {
                nj,
                ni,
                index,
                xi,
                vi,
                eps2,
                h2,
            };
            // SAFETY: the caller's contract.
            unsafe { firsthalf(id.cluster(), i) }
        }
    };
}

firsthalf_export!(g6calc_firsthalf, c_int, c_double);
firsthalf_export!(g6calc_firsthalf_, *const c_int, *const c_double);

/// The C- and Fortran-named exports of `g6calc_lasthalf` (and, with a
/// nearest-neighbour output, `g6calc_lasthalf2`): one definition for the
/// four, with the scalars by value (`c_int`, `c_double`) or by pointer.
macro_rules! lasthalf_export {
    ($name:ident, $int:ty, $dbl:ty $(, $nn:ident)?) => {
        /// Waits for the evaluation started by `g6calc_firsthalf` and
        /// returns acceleration, jerk and potential (and, for
        /// `g6calc_lasthalf2`, the index of each i-particle's nearest
        /// neighbour, −1 if there is no other particle). The Fortran names
        /// (trailing `_`) take the scalars by pointer, a null cluster id
        /// meaning cluster 0.
        ///
        /// # Safety
        /// `acc`, `jerk` must hold `ni` rows of 3 doubles, `pot` (and
        /// `nnbindex`) `ni` values; pointers to scalars must be valid.
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name(
            id: $int,
            _nj: $int,
            ni: $int,
            _index: *const c_int,
            _xi: *const [c_double; 3],
            _vi: *const [c_double; 3],
            _eps2: $dbl,
            _h2: *const c_double,
            acc: *mut [c_double; 3],
            jerk: *mut [c_double; 3],
            pot: *mut c_double,
            $($nn: *mut c_int,)?
        ) -> c_int {
            let what = stringify!($name);
            let nn: Option<*mut c_int> = None $(.or(Some($nn)))?;
            if nn.is_some_and(|p| p.is_null()) {
                return fail(what, "null nnbindex");
            }
            let nn = nn.unwrap_or(std::ptr::null_mut());
            scalars!(what; ni);
            // SAFETY: the caller's contract.
            unsafe { lasthalf(what, id.cluster(), ni, acc, jerk, pot, nn) }
        }
    };
}

lasthalf_export!(g6calc_lasthalf, c_int, c_double);
lasthalf_export!(g6calc_lasthalf2, c_int, c_double, nnbindex);
lasthalf_export!(g6calc_lasthalf_, *const c_int, *const c_double);
lasthalf_export!(g6calc_lasthalf2_, *const c_int, *const c_double, nnbindex);

/// Finds the neighbour lists (radius √h2 of `g6calc_firsthalf`) of the
/// i-particles of the last evaluation. Returns 1 if a list has more than
/// the `NB_MAX` (256) entries kept.
#[no_mangle]
pub extern "C" fn g6_read_neighbour_list(id: c_int) -> c_int {
    read_neighbour_list(id)
}

/// Copies the neighbour list of i-particle `ipipe` (indices, ascending)
/// into `nbl` (at most `maxlength`), its length into `*nblen`. Returns 1
/// if the list did not fit.
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
    // SAFETY: forwarded caller contract.
    unsafe { get_neighbour_list(id, ipipe, maxlength, nblen, nbl) }
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

// ---- Fortran names (Sapporo2's g6lib: every argument by pointer) --------

/// `g6_open(id)`; a null `id` opens cluster 0.
///
/// # Safety
/// `id` null or pointing to an int; likewise every pointer below points
/// to what the C-named function of the same name takes by value.
#[no_mangle]
pub unsafe extern "C" fn g6_open_(id: *const c_int) -> c_int {
    // SAFETY: the caller's contract.
    open(unsafe { cluster_id(id) })
}

/// # Safety
/// As `g6_open_`.
#[no_mangle]
pub unsafe extern "C" fn g6_close_(id: *const c_int) -> c_int {
    // SAFETY: the caller's contract.
    close(unsafe { cluster_id(id) })
}

#[no_mangle]
pub extern "C" fn g6_npipes_() -> c_int {
    NPIPES
}

/// # Safety
/// As `g6_open_`.
#[no_mangle]
pub unsafe extern "C" fn g6_get_jmemsize_(id: *const c_int) -> c_int {
    // SAFETY: the caller's contract.
    let id = unsafe { cluster_id(id) };
    with_cluster(id, "g6_get_jmemsize_", |c| Ok(c.jmem() as c_int))
}

/// # Safety
/// As `g6_open_`; `ti` pointing to a double.
#[no_mangle]
pub unsafe extern "C" fn g6_set_ti_(id: *const c_int, ti: *const c_double) -> c_int {
    scalars!("g6_set_ti_"; ti);
    // SAFETY: the caller's contract.
    set_ti(unsafe { cluster_id(id) }, ti)
}

/// # Safety
/// As `g6_open_`.
#[no_mangle]
pub unsafe extern "C" fn g6_read_neighbour_list_(id: *const c_int) -> c_int {
    // SAFETY: the caller's contract.
    read_neighbour_list(unsafe { cluster_id(id) })
}

/// # Safety
/// As `g6_get_neighbour_list`, scalars by pointer.
#[no_mangle]
pub unsafe extern "C" fn g6_get_neighbour_list_(
    id: *const c_int,
    ipipe: *const c_int,
    maxlength: *const c_int,
    nblen: *mut c_int,
    nbl: *mut c_int,
) -> c_int {
    scalars!("g6_get_neighbour_list_"; ipipe, maxlength);
    // SAFETY: the caller's contract.
    unsafe { get_neighbour_list(cluster_id(id), ipipe, maxlength, nblen, nbl) }
}

/// Hardware housekeeping, Fortran names: accepted and ignored (Sapporo2's
/// unit calls take a double by pointer).
#[no_mangle]
pub extern "C" fn g6_reset_(_id: *const c_int) -> c_int {
    0
}

#[no_mangle]
pub extern "C" fn g6_reset_fofpga_(_id: *const c_int) -> c_int {
    0
}

#[no_mangle]
pub extern "C" fn g6_set_tunit_(_unit: *const c_double) -> c_int {
    0
}

#[no_mangle]
pub extern "C" fn g6_set_xunit_(_unit: *const c_double) -> c_int {
    0
}

#[no_mangle]
pub extern "C" fn g6_initialize_jp_buffer_(_id: *const c_int, _size: *const c_int) -> c_int {
    0
}

#[no_mangle]
pub extern "C" fn g6_flush_jp_buffer_(_id: *const c_int) -> c_int {
    0
}
