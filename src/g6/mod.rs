//! The direct-summation library for legacy clients, a front end of its
//! own (native only; header `src/g6/g6.h`, exported by `libwebgrav.so`),
//! so codes written for GRAPE-6, GRAPE-5, Kirin or Sapporo2 run on any
//! WebGPU-capable GPU unchanged: the GRAPE-6 interface with its C and its
//! Fortran names (`grape6.rs`), the GRAPE-5 interface (`grape5.rs`) and
//! Sapporo2's 6th-order interface (`sixth.rs`), each over one force engine
//! (`engine.rs`). No exported function calls another: what they share are
//! private Rust functions, so a client that defines some of these names
//! itself (Sapporo2's `g6lib.h` defines the C names as wrappers of the
//! Fortran ones) never gets its own code called back by the library.
//! Semantics of the GRAPE-6 interface follow Sapporo2's:
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
//!   potential (−Σ m/√(r² + ε²), the j-particle whose index equals the
//!   i-particle's skipped, and only that one, as Sapporo2 does; GRAPE-6
//!   hardware included it). `g6calc_lasthalf2` also returns the index of
//!   each i-particle's nearest neighbour.
//! - The Fortran names (`g6_open_`, `g6calc_firsthalf_`, …) take every
//!   argument by pointer; a null cluster-id pointer means cluster 0, a
//!   null scalar otherwise is an error.
//! - `g6_read_neighbour_list` finds, for the i-particles of the last
//!   evaluation, all j-particles within √h2 (unsoftened); then
//!   `g6_get_neighbour_list` copies one pipe's list.
//! - Reset, unit and buffer-management calls of the hardware are no-ops.
//!
//! Environment: `WEBGRAV_G6_JMEMSIZE` (j-particle memory, default 262144),
//! `WEBGRAV_G6_PRECISION` (`ds`, the default, `f32`, or `dp`: native f64
//! where the adapter has it), `WEBGRAV_G6_SPLIT_TARGET` (workgroups the
//! j-splitting of a block aims for; tuning, default 512 on GPUs),
//! `WEBGRAV_G6_WAIT` (`spin`, the default on GPUs: the host polls for the
//! forces, as CUDA's default synchronisation does; `block`: the driver's
//! sleeping wait, the default on CPU adapters), for every interface. GRAPE-6 functions return 0 on success and −1 on error (with
//! a message on stderr), where the GRAPE-6 API returns anything; the
//! GRAPE-5 and 6th-order calls return nothing and fill their outputs with
//! NaN on error.

mod engine;
mod grape5;
mod grape6;
mod sixth;

pub use engine::NPIPES;
