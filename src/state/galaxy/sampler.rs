//! Where a galaxy's particles are drawn. The generators (`spherical`,
//! `disk`, `merger`) decide how many particles each component gets and
//! where the galaxies go; a sampler draws the particles of one component
//! from their streams (`spherical::SpheroidSampler`,
//! `disk::DiskSampler`; `disk::Sampler` is both). `Cpu` draws them on
//! every core in f64 (the reference, and what the Python API uses);
//! `state::generate::Gpu` draws the same streams on a GPU from the same
//! tables, in f32.
//!
//! The generators are `async` so that a GPU sampler can wait for its
//! read-backs (in the browser, through the event loop); with `Cpu` their
//! futures are ready at once, which `now` relies on.

use super::realization::{PhasePoint, Realization, Slots};
use crate::error::Result;
use crate::state::parallel::for_each_pair;
use crate::state::rng::Rng;
use crate::state::share::Share;
use std::future::Future;

/// Draws on the CPU's cores, in f64.
pub struct Cpu;

impl Cpu {
    /// Fills `out`, particle i with what `draw` makes of the stream
    /// `Rng::for_particle(seed, stream, i)`.
    pub fn fill(
        (seed, stream): (u64, u64),
        out: Slots<'_>,
        draw: impl Fn(&mut Rng) -> PhasePoint + Sync + Send,
    ) {
        let first = out.first as u64;
        for_each_pair(out.pos, out.vel, |i, x, v| {
            (*x, *v) = draw(&mut Rng::for_particle(seed, stream, first + i as u64));
        });
    }
}

/// A galaxy model whose particles a sampler `S` draws.
pub trait Realize<S> {
    /// `n` particles in the centre-of-mass frame, deterministic for
    /// `seed`, drawn by `sampler`.
    fn realize_with(
        &self,
        n: usize,
        seed: u64,
        sampler: &S,
    ) -> impl Future<Output = Result<Realization>> {
        self.realize_at(Place { origin: 0, n }, seed, sampler)
    }

    /// `realize_with` as the part `at` of a larger model (a merger's
    /// second galaxy, say): the same
    /// particles, but a process that holds a share of the whole model
    /// (`SpheroidSampler::share`) samples only its own.
    fn realize_at(
        &self,
        at: Place,
        seed: u64,
        sampler: &S,
    ) -> impl Future<Output = Result<Realization>>;
}

/// Where a realization lies in the whole model: its `n` particles from
/// index `origin` on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub origin: usize,
    pub n: usize,
}

/// A sampler `S` that draws only a share of the model's particles
/// (`state::share`): a rank of a run on several GPUs.
pub struct Shared<'a, S> {
    pub sampler: &'a S,
    pub share: Share<'a>,
}

/// `Realize::realize_with` on the CPU, at once (the reference; Python).
pub trait RealizeOnCpu: Realize<Cpu> {
    fn realize(&self, n: usize, seed: u64) -> Result<Realization> {
        now(self.realize_with(n, seed, &Cpu))
    }
}

impl<T: Realize<Cpu>> RealizeOnCpu for T {}

/// The value of a future that is ready when first polled: a generator
/// run with `Cpu`, which never waits.
pub fn now<T>(future: impl Future<Output = T>) -> T {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(value) => value,
        std::task::Poll::Pending => unreachable!("the CPU sampler never waits"),
    }
}
