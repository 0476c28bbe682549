//! Where a galaxy's particles are drawn. The generators (`spherical`,
//! `disk`, `merger`) decide how many particles each component gets and
//! where the galaxies go; a `Sampler` draws the particles of one component
//! from their streams. `Cpu` draws them on every core in f64 (the
//! reference, and what the Python API uses); `state::generate::Gpu` draws
//! the same streams on a GPU from the same tables, in f32.
//!
//! The generators are `async` so that a GPU sampler can wait for its
//! read-backs (in the browser, through the event loop); with `Cpu` their
//! futures are ready at once, which `now` relies on.

use super::disk::DiskEquilibrium;
use super::realization::PhasePoint;
use super::spherical::Equilibrium;
use crate::error::Result;
use crate::state::parallel::for_each_pair;
use crate::state::rng::Rng;
use std::future::Future;

/// The slots of one component's particles in a `Realization`: particle i
/// of the component goes to `pos[i]`, `vel[i]`.
pub struct Slots<'a> {
    pub pos: &'a mut [[f64; 3]],
    pub vel: &'a mut [[f64; 3]],
}

/// Draws the particles of one component of a galaxy, particle i from
/// `Rng::for_particle(seed, stream, i)`.
pub trait Sampler {
    /// Spheroid component `k` of `eq` (stream `k`): radii from its density,
    /// speeds from its f(E), both isotropic (`Equilibrium::draw`).
    fn spheroid(
        &self,
        eq: &Equilibrium,
        k: usize,
        seed: u64,
        out: Slots<'_>,
    ) -> impl Future<Output = Result<()>>;

    /// The disk of `eq` from streams `stream` = (seed, stream) (`DiskEquilibrium::draw`).
    fn disk(
        &self,
        eq: &DiskEquilibrium,
        stream: (u64, u64),
        out: Slots<'_>,
    ) -> impl Future<Output = Result<()>>;
}

/// Draws on the CPU's cores, in f64.
pub struct Cpu;

impl Cpu {
    fn fill(
        (seed, stream): (u64, u64),
        out: Slots<'_>,
        draw: impl Fn(&mut Rng) -> PhasePoint + Sync + Send,
    ) {
        for_each_pair(out.pos, out.vel, |i, x, v| {
            (*x, *v) = draw(&mut Rng::for_particle(seed, stream, i as u64));
        });
    }
}

impl Sampler for Cpu {
    async fn spheroid(&self, eq: &Equilibrium, k: usize, seed: u64, out: Slots<'_>) -> Result<()> {
        Self::fill((seed, k as u64), out, |rng| eq.draw(k, rng));
        Ok(())
    }

    async fn disk(&self, eq: &DiskEquilibrium, stream: (u64, u64), out: Slots<'_>) -> Result<()> {
        Self::fill(stream, out, |rng| eq.draw(rng));
        Ok(())
    }
}

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
