//! Tabulated spherical models and their isotropic distribution functions
//! by Eddington's (1916) inversion (Binney & Tremaine 2008, §4.3.1), in
//! the total potential of every component (G = 1).
//!
//! Everything lives on one logarithmic radial grid: each component's
//! density and enclosed mass, the total enclosed mass and the relative
//! potential Ψ = −Φ (zero at infinity). A component's f(E) is
//!
//!   f(E) = 1/(√8 π²) [ ∫₀^E d²ρ/dΨ² dΨ/√(E − Ψ) + (dρ/dΨ)|₀ / √E ],
//!
//! with dρ/dΨ = (dρ/dr)/(dΨ/dr) from the analytic slope of the density
//! and dΨ/dr = −M(r)/r² of the total model; the truncations make dρ/dΨ
//! vanish at Ψ = 0, so the boundary term is dropped. Between grid nodes
//! dρ/dΨ is taken linear in Ψ (d²ρ/dΨ² constant), so the integral is done
//! exactly, segment by segment, with no singularity at Ψ = E.

use super::profile::Profile;
use crate::state::parallel::map_indices;
use crate::state::rng::Rng;

/// Nodes of the radial grid; the Eddington integrals cost O(nodes²).
pub const GRID_NODES: usize = 2400;

/// `n` radii from `r_min` to `r_max`, evenly spaced in ln r.
pub fn log_grid(r_min: f64, r_max: f64, n: usize) -> Vec<f64> {
    let step = (r_max / r_min).ln() / (n - 1) as f64;
    (0..n).map(|i| r_min * (step * i as f64).exp()).collect()
}

/// One spherical component of mass `mass` on the grid `r`.
#[derive(Clone, Debug)]
pub struct Tabulated {
    pub profile: Profile,
    /// ρ(r) = norm × profile.density(r).
    pub norm: f64,
    pub r: Vec<f64>,
    /// Enclosed mass at each node.
    pub enclosed: Vec<f64>,
    /// Logarithmic slope of the density at the innermost node.
    inner_slope: f64,
}

impl Tabulated {
    /// Integrates 4π r³ ρ d ln r by trapezoids, with the mass inside the
    /// first node from the local power law ρ ∝ r^slope, then normalises
    /// the total to `mass`.
    pub fn new(profile: Profile, mass: f64, r: &[f64]) -> Self {
        let w = |x: f64| 4.0 * std::f64::consts::PI * x.powi(3) * profile.density(x);
        let inner_slope = profile.shape.log_slope(r[0]).max(-2.9);
        let mut enclosed = Vec::with_capacity(r.len());
        let mut m = w(r[0]) / (3.0 + inner_slope);
        enclosed.push(m);
        for i in 1..r.len() {
            m += 0.5 * (w(r[i - 1]) + w(r[i])) * (r[i] / r[i - 1]).ln();
            enclosed.push(m);
        }
        let norm = mass / m;
        enclosed.iter_mut().for_each(|e| *e *= norm);
        Self {
            profile,
            norm,
            r: r.to_vec(),
            enclosed,
            inner_slope,
        }
    }

    pub fn density(&self, r: f64) -> f64 {
        self.norm * self.profile.density(r)
    }

    /// Logarithmic slope of the density inside the first node (the power
    /// law `radius_of_fraction` follows there).
    pub fn inner_slope(&self) -> f64 {
        self.inner_slope
    }

    pub fn mass(&self) -> f64 {
        *self.enclosed.last().expect("grid")
    }

    /// The radius inside which a fraction `u` of the mass lies (inverse
    /// of the enclosed mass, linear in ln r between nodes).
    pub fn radius_of_fraction(&self, u: f64) -> f64 {
        let m = u * self.mass();
        let e = &self.enclosed;
        if m <= e[0] {
            return self.r[0] * (m / e[0]).powf(1.0 / (3.0 + self.inner_slope));
        }
        let k = e.partition_point(|x| *x < m).min(e.len() - 1);
        let t = (m - e[k - 1]) / (e[k] - e[k - 1]);
        self.r[k - 1] * (self.r[k] / self.r[k - 1]).powf(t)
    }
}

/// The total model's enclosed mass and relative potential Ψ = −Φ on the
/// grid.
#[derive(Clone, Debug)]
pub struct Potential {
    pub r: Vec<f64>,
    pub enclosed: Vec<f64>,
    pub psi: Vec<f64>,
}

impl Potential {
    /// From the total enclosed mass at the grid's nodes (which holds
    /// all the mass by the last node): Ψ(r) = M(r)/r + ∫_r^∞ dM/r'.
    pub fn new(r: Vec<f64>, enclosed: Vec<f64>) -> Self {
        let n = r.len();
        let mut psi = vec![0.0; n];
        let mut outer = 0.0;
        psi[n - 1] = enclosed[n - 1] / r[n - 1];
        for i in (0..n - 1).rev() {
            outer += (enclosed[i + 1] - enclosed[i]) * 0.5 * (1.0 / r[i] + 1.0 / r[i + 1]);
            psi[i] = enclosed[i] / r[i] + outer;
        }
        Self { r, enclosed, psi }
    }

    /// Where `r` falls: the node below and the fraction of the way (in
    /// ln r) to the next.
    fn locate(&self, r: f64) -> (usize, f64) {
        let n = self.r.len();
        let k = self.r.partition_point(|x| *x <= r).clamp(1, n - 1);
        let t = (r / self.r[k - 1]).ln() / (self.r[k] / self.r[k - 1]).ln();
        (k - 1, t)
    }

    /// Ψ(r), interpolated as a power law between nodes (exact for a point
    /// mass, and extrapolated so inside the grid), M/r outside it.
    pub fn psi_at(&self, r: f64) -> f64 {
        let last = self.r.len() - 1;
        if r >= self.r[last] {
            return self.enclosed[last] / r;
        }
        let (k, t) = self.locate(r);
        self.psi[k] * (self.psi[k + 1] / self.psi[k]).powf(t)
    }

    /// Enclosed mass M(r), as a power law between nodes.
    pub fn mass_at(&self, r: f64) -> f64 {
        let last = self.r.len() - 1;
        if r >= self.r[last] {
            return self.enclosed[last];
        }
        let (k, t) = self.locate(r);
        self.enclosed[k] * (self.enclosed[k + 1] / self.enclosed[k]).powf(t)
    }
}

/// An isotropic distribution function f(E) of one component, tabulated at
/// the grid's binding energies E = Ψ(r_i).
#[derive(Clone, Debug)]
pub struct DistributionFunction {
    /// Ascending binding energies.
    energy: Vec<f64>,
    /// Their logarithms (f is interpolated in ln E).
    ln_energy: Vec<f64>,
    f: Vec<f64>,
    /// The peak of the speed distribution at Ψ = `energy[i]`: the
    /// rejection envelope, found once per node rather than per particle.
    peak: Vec<Peak>,
}

/// The largest value of f(Ψ(1 − q²)) q² over q = v/v_esc, and where.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Peak {
    q: f64,
    value: f64,
}

/// Speeds searched, besides those of the tabulated energies, for the peak
/// of the speed distribution at a node.
const ENVELOPE_POINTS: usize = 64;

/// The rejection envelope over the tabulated peak: between the energies
/// searched (neighbouring nodes of the fine grid) the distribution rises
/// by far less than this.
const ENVELOPE_MARGIN: f64 = 1.2;

/// Trials of the speed's rejection before the peak's speed is taken
/// (acceptance is ~1/2, so only a broken envelope ever gets there).
pub const SPEED_TRIES: u32 = 1000;

/// One node of a distribution function's table, for a sampler that
/// evaluates it elsewhere (the GPU's, `state::generate`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DfNode {
    pub energy: f64,
    pub f: f64,
    /// The rejection bound of the speeds at Ψ = `energy` and the speed
    /// (over the escape speed) of the peak under it.
    pub bound: f64,
    pub peak_q: f64,
}

impl DistributionFunction {
    /// Eddington's inversion of `component` in `potential` (see the module
    /// comment). Negative values, which a component may have where its
    /// density cannot be in isotropic equilibrium in the total potential
    /// (e.g. a cored profile around a point mass), are set to zero.
    pub fn eddington(component: &Tabulated, potential: &Potential) -> Self {
        let n = potential.r.len();
        // Ascending Ψ, with dρ/dΨ at each node; node 0 is Ψ = 0, where
        // the truncated density's dρ/dΨ vanishes.
        let mut psi = vec![0.0];
        let mut g = vec![0.0];
        for i in (0..n).rev() {
            let r = potential.r[i];
            let dpsi_dr = -potential.enclosed[i] / (r * r);
            psi.push(potential.psi[i]);
            g.push(component.norm * component.profile.density_derivative(r) / dpsi_dr);
        }
        // d²ρ/dΨ² of each segment.
        let slope: Vec<f64> = (0..n)
            .map(|j| (g[j + 1] - g[j]) / (psi[j + 1] - psi[j]))
            .collect();
        // Σ_j s_j (√(E − Ψ_j) − √(E − Ψ_{j+1})) summed by parts, one
        // square root a term: Σ_j (s_j − s_{j−1}) √(E − Ψ_j) (the last
        // root, at Ψ_k = E, is zero).
        let kink: Vec<f64> = (0..n)
            .map(|j| slope[j] - if j > 0 { slope[j - 1] } else { 0.0 })
            .collect();
        let norm = 1.0 / (8f64.sqrt() * std::f64::consts::PI.powi(2));
        let f = map_indices(n, |i| {
            let sum = weighted_roots(psi[i + 1], &kink[..=i], &psi[..=i]);
            (norm * 2.0 * sum).max(0.0)
        });
        let mut df = Self {
            energy: psi[1..].to_vec(),
            ln_energy: psi[1..].iter().map(|e| e.ln()).collect(),
            f,
            peak: Vec::new(),
        };
        df.peak = df.node_peaks();
        df
    }

    /// f(Ψ(1 − q²)) q², the distribution of q = v/v_esc at `psi`.
    fn speed_density(&self, psi: f64, q: f64) -> f64 {
        self.at(psi * (1.0 - q * q)) * q * q
    }

    /// The peak of the speed distribution at `psi`: the largest value on
    /// a grid of speeds and at the speed of every tabulated energy below
    /// `psi` (near a black hole the distribution is a spike just under
    /// the escape speed, from the halo's orbits, which a grid of speeds
    /// alone misses).
    fn search_peak(&self, psi: f64) -> Peak {
        let grid = (0..ENVELOPE_POINTS).map(|i| {
            let q = (i as f64 + 0.5) / ENVELOPE_POINTS as f64;
            Peak {
                q,
                value: self.speed_density(psi, q),
            }
        });
        let nodes = self
            .energy
            .iter()
            .zip(&self.f)
            .take_while(|(e, _)| **e < psi)
            .map(|(e, f)| Peak {
                q: (1.0 - e / psi).sqrt(),
                value: f * (1.0 - e / psi),
            });
        grid.chain(nodes).fold(
            Peak::default(),
            |a, b| if b.value > a.value { b } else { a },
        )
    }

    /// `search_peak` at every node's energy, in O(nodes × (speeds +
    /// log nodes)) rather than O(nodes²): the grid of speeds by one sweep
    /// of the table per speed (E = Ψ(1 − q²) ascends with the node's Ψ),
    /// and the tabulated energies below each node by an upper envelope of
    /// lines (`LineEnvelope`): node j's value at Ψ is f_j (1 − E_j / Ψ),
    /// linear in 1/Ψ.
    fn node_peaks(&self) -> Vec<Peak> {
        let (energy, n) = (&self.energy, self.energy.len());
        let mut peak = vec![Peak::default(); n];
        for i in 0..ENVELOPE_POINTS {
            let q = (i as f64 + 0.5) / ENVELOPE_POINTS as f64;
            let ln_share = (1.0 - q * q).ln();
            let mut above = 0;
            for (k, psi) in energy.iter().enumerate() {
                let e = psi * (1.0 - q * q);
                while above < n && energy[above] < e {
                    above += 1;
                }
                let ln_e = self.ln_energy[k] + ln_share;
                let value = self.at_node(e, above, ln_e) * q * q;
                if value > peak[k].value {
                    peak[k] = Peak { q, value };
                }
            }
        }
        let value = |j: usize, k: usize| self.f[j] * (1.0 - energy[j] / energy[k]);
        let mut envelope = LineEnvelope::new(n);
        for k in 0..n {
            if let Some(j) = envelope.best(k, &value) {
                let v = value(j, k);
                if v > peak[k].value {
                    let q = (1.0 - energy[j] / energy[k]).sqrt();
                    peak[k] = Peak { q, value: v };
                }
            }
            envelope.insert(k, &value);
        }
        peak
    }

    /// The table, node by node (ascending energies).
    pub fn nodes(&self) -> impl Iterator<Item = DfNode> + '_ {
        (0..self.energy.len()).map(|i| DfNode {
            energy: self.energy[i],
            f: self.f[i],
            bound: ENVELOPE_MARGIN * self.peak[i].value,
            peak_q: self.peak[i].q,
        })
    }

    /// The rejection bound beyond the table's deepest energy (the
    /// centre's extrapolation): the margin over the largest f.
    pub fn bound_beyond(&self) -> f64 {
        ENVELOPE_MARGIN * self.f.iter().copied().fold(0.0, f64::max)
    }

    /// A peak that bounds the speed distribution at `psi`: the one at the
    /// node at or above it (f(E)(1 − E/Ψ) grows with Ψ at every E, so the
    /// peak does), or where `psi` is beyond the table (the centre's
    /// extrapolation) the largest f.
    fn envelope_peak(&self, psi: f64) -> Peak {
        let k = self.energy.partition_point(|x| *x < psi);
        match self.peak.get(k) {
            Some(peak) => *peak,
            None => Peak {
                value: self.f.iter().copied().fold(0.0, f64::max),
                ..self.search_peak(psi)
            },
        }
    }

    /// f(E), linear in ln E between nodes, falling linearly to zero below
    /// the outermost node's energy.
    pub fn at(&self, e: f64) -> f64 {
        self.at_node(e, self.energy.partition_point(|x| *x < e), e.ln())
    }

    /// `at(e)` where `k` is the first node at or above `e`, whose
    /// logarithm is `ln_e` (a sweep over the table has it without a
    /// logarithm per call).
    fn at_node(&self, e: f64, k: usize, ln_e: f64) -> f64 {
        let (en, ln_en, f) = (&self.energy, &self.ln_energy, &self.f);
        if e <= 0.0 {
            return 0.0;
        }
        if e <= en[0] {
            return f[0] * e / en[0];
        }
        if k >= en.len() {
            return f[en.len() - 1];
        }
        let span = ln_en[k] - ln_en[k - 1];
        if span <= 0.0 {
            // Two nodes whose energies are one in f64's logarithm: no
            // interval to interpolate in (and no 0/0).
            return f[k];
        }
        f[k - 1] + (ln_e - ln_en[k - 1]) / span * (f[k] - f[k - 1])
    }

    /// A speed at relative potential `psi`, distributed as
    /// f(Ψ − v²/2) v² on [0, √(2Ψ)]: von Neumann rejection under
    /// `ENVELOPE_MARGIN` × the tabulated peak (the density is smooth and
    /// single-peaked, so the envelope holds).
    pub fn sample_speed(&self, psi: f64, rng: &mut Rng) -> f64 {
        let v_esc = (2.0 * psi).sqrt();
        let peak = self.envelope_peak(psi);
        if peak.value <= 0.0 {
            // No bound orbits here (f = 0): the particle starts at rest.
            return 0.0;
        }
        let bound = ENVELOPE_MARGIN * peak.value;
        // Acceptance is ~1/2; a thousand failures would mean a broken
        // envelope, and the peak is then the best answer there is.
        for _ in 0..SPEED_TRIES {
            let q = rng.uniform();
            if bound * rng.uniform() < self.speed_density(psi, q) {
                return q * v_esc;
            }
        }
        peak.q * v_esc
    }
}

/// Σ_j w_j √(e − x_j), in four running sums: independent chains of
/// additions the compiler can overlap (or vectorise), where one sum would
/// wait on each addition in turn.
fn weighted_roots(e: f64, w: &[f64], x: &[f64]) -> f64 {
    let mut sums = [0.0; 4];
    let (w4, x4) = (w.chunks_exact(4), x.chunks_exact(4));
    let tail: f64 = (w4.remainder().iter().zip(x4.remainder()))
        .map(|(w, x)| w * (e - x).sqrt())
        .sum();
    for (w, x) in w4.zip(x4) {
        for l in 0..4 {
            sums[l] += w[l] * (e - x[l]).sqrt();
        }
    }
    (sums[0] + sums[1]) + (sums[2] + sums[3]) + tail
}

/// The upper envelope of lines over the points 0..n, each line inserted
/// once and evaluated by a closure `value(line, point)` (a Li Chao tree:
/// each node of a segment tree over the points keeps the line best at its
/// middle; two lines cross at most once, so the loser is best, if
/// anywhere, on one side only). Ties go to the earlier line, as a fold
/// keeping the first largest value does.
struct LineEnvelope {
    n: usize,
    /// The line kept at each node of the tree (heap order, root 1).
    kept: Vec<Option<usize>>,
}

impl LineEnvelope {
    fn new(n: usize) -> Self {
        Self {
            n,
            kept: vec![None; 4 * n.max(1)],
        }
    }

    /// Whether line `a` beats line `b` at `point`.
    fn beats(value: &impl Fn(usize, usize) -> f64, a: usize, b: usize, point: usize) -> bool {
        let (va, vb) = (value(a, point), value(b, point));
        va > vb || (va == vb && a < b)
    }

    fn insert(&mut self, line: usize, value: &impl Fn(usize, usize) -> f64) {
        let (mut node, mut lo, mut hi, mut line) = (1, 0, self.n - 1, line);
        loop {
            let Some(kept) = self.kept[node] else {
                self.kept[node] = Some(line);
                return;
            };
            let mid = (lo + hi) / 2;
            let mut loser = line;
            if Self::beats(value, line, kept, mid) {
                self.kept[node] = Some(line);
                loser = kept;
            }
            let winner = self.kept[node].expect("kept");
            if lo == hi {
                return;
            }
            line = loser;
            if Self::beats(value, loser, winner, lo) {
                (node, hi) = (2 * node, mid);
            } else if Self::beats(value, loser, winner, hi) {
                (node, lo) = (2 * node + 1, mid + 1);
            } else {
                return;
            }
        }
    }

    /// The best line at `point`, if any was inserted.
    fn best(&self, point: usize, value: &impl Fn(usize, usize) -> f64) -> Option<usize> {
        let (mut node, mut lo, mut hi) = (1, 0, self.n - 1);
        let mut best: Option<usize> = None;
        loop {
            if let Some(line) = self.kept[node] {
                if best.is_none_or(|b| Self::beats(value, line, b, point)) {
                    best = Some(line);
                }
            }
            if lo == hi {
                return best;
            }
            let mid = (lo + hi) / 2;
            if point <= mid {
                (node, hi) = (2 * node, mid);
            } else {
                (node, lo) = (2 * node + 1, mid + 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::galaxy::profile::Shape;

    /// Hernquist's (1990, eq. 17) analytic f(E) for M = a = G = 1.
    fn hernquist_df(e: f64) -> f64 {
        let q = e.sqrt();
        let pi = std::f64::consts::PI;
        let s = 1.0 - q * q;
        1.0 / (8.0 * 2f64.sqrt() * pi.powi(3))
            * (3.0 * q.asin()
                + q * s.sqrt() * (1.0 - 2.0 * q * q) * (8.0 * q.powi(4) - 8.0 * q * q - 3.0))
            / s.powf(2.5)
    }

    #[test]
    fn hernquist_df_matches_the_analytic_one() {
        // Truncated far out (r_t = 10⁴ a), so the model is Hernquist's to
        // about 1e-4 inside r ~ 100.
        let profile = Profile::truncated(Shape::Hernquist { a: 1.0 }, 1e4);
        let r = log_grid(1e-4, profile.outer_radius(), GRID_NODES);
        let comp = Tabulated::new(profile, 1.0, &r);
        let pot = Potential::new(r, comp.enclosed.clone());
        // Ψ(0) = GM/a = 1 for Hernquist.
        assert!((pot.psi[0] - 1.0).abs() < 1e-3, "{}", pot.psi[0]);
        let df = DistributionFunction::eddington(&comp, &pot);
        // f(E) for binding energies of r from ~0.05 to ~20 a: within 1 %
        // (the grid's discretisation and the far truncation).
        for e in [0.05, 0.1, 0.3, 0.5, 0.7, 0.9] {
            let (num, exact) = (df.at(e), hernquist_df(e));
            assert!(
                (num / exact - 1.0).abs() < 0.01,
                "E = {e}: {num} vs {exact}"
            );
        }
    }

    #[test]
    fn nodes_of_one_energy_interpolate_to_a_number() {
        // Two nodes whose energies are one in ln E (an ulp apart): f at
        // that energy is the upper node's, not 0/0.
        let e = 0.5f64;
        let df = DistributionFunction {
            energy: vec![0.25, e, f64::from_bits(e.to_bits() + 1), 1.0],
            ln_energy: vec![0.25f64.ln(), e.ln(), e.ln(), 0.0],
            f: vec![1.0, 2.0, 3.0, 4.0],
            peak: Vec::new(),
        };
        assert_eq!(df.at_node(e, 2, e.ln()), 3.0);
        assert_eq!(df.at(0.75), 3.0 + (0.75f64.ln() - e.ln()) / -e.ln());
        assert!(df.at(0.375).is_finite());
    }

    #[test]
    fn node_peaks_are_the_searched_peaks() {
        // The sweep and the envelope of lines find, at every node, the peak
        // a search over every speed and every lower node finds: an NFW
        // halo alone and about a black hole, a Hernquist sphere.
        let nfw = Profile::truncated(Shape::Nfw { rs: 1.0 }, 10.0);
        let hernquist = Profile::truncated(Shape::Hernquist { a: 1.0 }, 1e3);
        for (profile, point_mass) in [(nfw, 0.0), (nfw, 0.01), (hernquist, 0.0)] {
            let r = log_grid(1e-4, profile.outer_radius(), GRID_NODES);
            let comp = Tabulated::new(profile, 1.0, &r);
            let total = comp.enclosed.iter().map(|m| m + point_mass).collect();
            let df = DistributionFunction::eddington(&comp, &Potential::new(r, total));
            let mut from_nodes = 0;
            for (k, e) in df.energy.iter().enumerate() {
                // The same to rounding: the sweep takes ln E as a sum, which
                // the centre's close energies (ln E's steps ~1e-8) magnify
                // to ~1e-12; the speed may differ only between values that
                // tie so.
                let (swept, searched) = (df.peak[k], df.search_peak(*e));
                let off = (swept.value - searched.value).abs();
                assert!(
                    off <= 1e-10 * searched.value,
                    "node {k} of {profile:?}: {swept:?} {searched:?}"
                );
                from_nodes += usize::from(searched.q != (searched.q * 128.0).round() / 128.0);
            }
            // The lower nodes' part is exercised, not only the grid's.
            assert!(from_nodes > 0, "{profile:?}: every peak on the grid");
        }
    }

    #[test]
    fn tabulated_envelope_bounds_the_speed_distribution_between_nodes() {
        // An NFW halo alone and about a black hole of 1 % (the steepest
        // Ψ near the centre, where the speeds crowd under the escape
        // speed): at potentials between the nodes the speed distribution
        // stays under the envelope the sampler uses, so rejection draws it
        // exactly. A search over 256 speeds alone, per node or per
        // particle, fails here.
        let profile = Profile::truncated(Shape::Nfw { rs: 1.0 }, 10.0);
        let r = log_grid(1e-4, profile.outer_radius(), GRID_NODES);
        let comp = Tabulated::new(profile, 1.0, &r);
        for point_mass in [0.0, 0.01] {
            let total = comp.enclosed.iter().map(|m| m + point_mass).collect();
            let pot = Potential::new(r.clone(), total);
            let df = DistributionFunction::eddington(&comp, &pot);
            let mut rng = Rng::new(5);
            for _ in 0..2000 {
                let radius = r[0] * (r[r.len() - 1] / r[0]).powf(rng.uniform());
                let psi = pot.psi_at(radius);
                let bound = ENVELOPE_MARGIN * df.envelope_peak(psi).value;
                for i in 0..=1000 {
                    let q = i as f64 / 1000.0;
                    let d = df.speed_density(psi, q);
                    assert!(d <= bound, "r = {radius}, q = {q}: {d} > {bound}");
                }
            }
        }
    }
}
