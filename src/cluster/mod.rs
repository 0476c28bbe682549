//! The tree code on several GPUs, one rank each (Bédorf, Gaburov, Fujii,
//! Nitadori, Ishiyama & Portegies Zwart 2014, "24.77 Pflops on a
//! gravitational tree-code", §2; Bédorf's thesis, ch. 6):
//!
//! - `decomposition`: domains along the space-filling curve from sampled
//!   keys, balanced by the work of the last walk; `domain_keys` and
//!   `migration` redraw them on the GPU, moving only the particles that
//!   change rank through the host; `global_ids` keeps the particles' ids
//!   on the GPU;
//! - `summary` and `let_tree`: each rank cuts, on the GPU, the local
//!   essential tree of every other domain from its own tree, against the
//!   domain's box and tolerances;
//! - `solver`: the local walk runs on the GPU while the trees travel,
//!   then `imports` walks the received trees like the local one;
//! - `comm`: the collective operations, over MPI (`mpi`, feature `mpi`)
//!   or between threads; `shared_memory` carries the trees between the
//!   ranks of one host;
//! - `staging`: the host-visible buffers those trees pass through, kept
//!   from one step to the next.

pub mod comm;
pub mod decomposition;
pub mod domain_keys;
pub mod global_ids;
pub mod imports;
pub mod let_tree;
pub mod migration;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod run;
pub mod shared_memory;
pub mod solver;
pub mod spanning;
pub mod staging;
pub mod summary;
