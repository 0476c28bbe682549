//! `Engine`: one `webgrav::run::Run` on the shared GPU context, with the
//! particle kinds of its input and its latest read-out. Every call that
//! waits for the GPU releases the GIL; the read-out is taken once per
//! state (after a construction or an `evolve`) and serves every array
//! until the next `evolve`.

use crate::arrays::{particles, scalars, vectors};
use crate::context::shared;
use crate::errors::{invalid, to_py, IntoPy};
use crate::settings::config;
use numpy::{PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::sync::Mutex;
use std::time::Instant;
use webgrav::app::accuracy::{reference_forces, CompareWith};
use webgrav::app::check_device_particle_count;
use webgrav::app::host::check_host_memory;
use webgrav::app::picture::{self, View};
use webgrav::app::readout::{center_of_mass, lagrangian_radii};
use webgrav::gpu::GpuContext;
use webgrav::hermite::State64;
use webgrav::render::ColorMode;
use webgrav::run::params::{model_params, param};
use webgrav::run::schedule::check_end;
use webgrav::run::{write_state_as, Readout, Run, RunConfig, RunParams};
use webgrav::snapshot::{self, Snapshot};
use webgrav::state::stats::ErrorStats;
use webgrav::state::{Model, Particles, KINDS};

/// A simulation on the GPU (the Python class `webgrav.Simulation` wraps
/// it).
#[pyclass(module = "webgrav._webgrav")]
pub struct Engine {
    ctx: GpuContext,
    /// A Python object may be shared by threads: the run (not `Sync`, its
    /// solvers keep cells) behind a lock, taken only through `&mut self`
    /// but for the scalar getters.
    run: Mutex<Run>,
    /// Particle kinds of the input, input order (Gadget-2's numbering).
    types: Option<Vec<u8>>,
    /// The read-out of the current state, once taken.
    readout: Option<Readout>,
    /// Seconds the last `evolve` spent in `Run::run_to`, and the last
    /// read-out in `Run::readout`: the Python layer's overhead is the
    /// rest.
    evolve_s: f64,
    readout_s: f64,
}

impl Engine {
    fn run(&mut self) -> &mut Run {
        self.run.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    fn locked(&self) -> std::sync::MutexGuard<'_, Run> {
        self.run.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A run of `start` with `config`, its first read-out taken
    /// (the energy reference). Without the GIL.
    fn start(py: Python<'_>, start: Snapshot, config: RunConfig) -> PyResult<Self> {
        py.detach(move || -> webgrav::Result<Self> {
            let ctx = shared()?;
            let run = pollster::block_on(Run::new(&ctx, &start.particles, start.time, config))?;
            let mut engine = Engine {
                ctx,
                run: Mutex::new(run),
                types: start.types,
                readout: None,
                evolve_s: 0.0,
                readout_s: 0.0,
            };
            engine.take_readout()?;
            Ok(engine)
        })
        .py_err()
    }

    fn take_readout(&mut self) -> webgrav::Result<&Readout> {
        if self.readout.is_none() {
            let t0 = Instant::now();
            let ctx = self.ctx.clone();
            let r = pollster::block_on(self.run().readout(&ctx))?;
            self.readout_s = t0.elapsed().as_secs_f64();
            self.readout = Some(r);
        }
        Ok(self.readout.as_ref().expect("taken above"))
    }

    /// The current read-out, taken without the GIL if it is not yet.
    fn readout(&mut self, py: Python<'_>) -> PyResult<&Readout> {
        if self.readout.is_none() {
            py.detach(|| self.take_readout().map(|_| ())).py_err()?;
        }
        Ok(self.readout.as_ref().expect("taken above"))
    }

    /// The state in f64 where the integrator holds it so (Hermite):
    /// (mass, position, velocity) per particle.
    fn state_f64(&mut self, py: Python<'_>) -> PyResult<Option<&State64>> {
        Ok(self.readout(py)?.state_f64.as_ref())
    }

    fn snapshot(&mut self, py: Python<'_>) -> PyResult<Snapshot> {
        let types = self.types.clone();
        let r = self.readout(py)?;
        Ok(Snapshot {
            types,
            ..Snapshot::clone(&r.snapshot)
        })
    }
}

/// A dict of error percentiles.
fn stats_dict<'py>(py: Python<'py>, e: &ErrorStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("median", e.median)?;
    d.set_item("p90", e.p90)?;
    d.set_item("p99", e.p99)?;
    d.set_item("max", e.max)?;
    Ok(d)
}

/// A kind by name (`KINDS`) or Gadget-2 number.
fn kind(name: &str) -> PyResult<u8> {
    KINDS
        .iter()
        .position(|&k| k == name)
        .or_else(|| name.parse::<usize>().ok().filter(|&t| t < KINDS.len()))
        .map(|t| t as u8)
        .ok_or_else(|| {
            invalid(format!(
                "kind '{name}': expected {} or 0-5",
                KINDS.join(", ")
            ))
        })
}

#[pymethods]
impl Engine {
    /// A run of the given particles (float64 arrays: pos and vel (N, 3),
    /// mass (N), ids (N) or None, kinds (N, Gadget-2's numbering) or None)
    /// at `time`, with the run parameters `params`.
    #[new]
    #[pyo3(signature = (pos, vel, mass, ids=None, kinds=None, time=0.0, params=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        pos: PyReadonlyArray2<'_, f64>,
        vel: PyReadonlyArray2<'_, f64>,
        mass: PyReadonlyArray1<'_, f64>,
        ids: Option<PyReadonlyArray1<'_, u64>>,
        kinds: Option<PyReadonlyArray1<'_, u8>>,
        time: f64,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let config = config(RunParams::default(), params)?;
        let p: Particles = particles(pos, vel, mass, ids)?;
        let types = match kinds {
            Some(k) => {
                let k = k.as_array().to_vec();
                if k.len() != p.len() {
                    return Err(invalid(format!(
                        "{} kinds for {} particles",
                        k.len(),
                        p.len()
                    )));
                }
                if let Some(bad) = k.iter().find(|&&t| t as usize >= KINDS.len()) {
                    return Err(invalid(format!(
                        "kind {bad}: expected 0-5 ({})",
                        KINDS.join(", ")
                    )));
                }
                Some(k)
            }
            None => None,
        };
        let start = Snapshot {
            time,
            particles: p,
            types,
            ..Default::default()
        };
        Self::start(py, start, config)
    }

    /// `n` particles of the model `name` (deterministic per `seed`) with
    /// the galaxy models' parameters q, ratio, rperi, satellites, incl1,
    /// incl2, mhalo.
    #[staticmethod]
    #[pyo3(signature = (name, n, seed, q, ratio, rperi, satellites, incl1, incl2, mhalo, params=None))]
    #[allow(clippy::too_many_arguments)]
    fn from_model(
        py: Python<'_>,
        name: &str,
        n: u64,
        seed: u64,
        q: f64,
        ratio: f64,
        rperi: f64,
        satellites: f64,
        incl1: f64,
        incl2: f64,
        mhalo: f64,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let model = Model::from_name(name).map_err(|_| {
            let names: Vec<_> = Model::ALL.iter().map(|m| m.name()).collect();
            invalid(format!(
                "unknown model '{name}': expected one of {}",
                names.join(", ")
            ))
        })?;
        // N and the seed in the table's ranges, as the CLI and the page take
        // them (a seed past 32 bits would start a model they cannot).
        for (key, x) in [("n", n as f64), ("seed", seed as f64)] {
            param(key).expect("a model row").validate(x).py_err()?;
        }
        let model_params =
            model_params(q, ratio, rperi, satellites, incl1, incl2, mhalo).py_err()?;
        let config = config(RunParams::default(), params)?;
        let solver = config.solver();
        let tagged = py
            .detach(|| {
                // N is checked before anything is generated.
                check_device_particle_count(&shared()?, n, solver)?;
                check_host_memory(n, solver)?;
                model.generate_with(n as usize, seed, &model_params)
            })
            .py_err()?;
        let start = Snapshot {
            types: tagged.types(),
            particles: tagged.particles,
            ..Default::default()
        };
        Self::start(py, start, config)
    }

    /// The snapshot file `path` (any format webgrav reads); `units`
    /// (kpc, M☉, km/s per file unit) converts physical units to webgrav's.
    #[staticmethod]
    #[pyo3(signature = (path, units=None, params=None))]
    fn from_file(
        py: Python<'_>,
        path: &str,
        units: Option<(f64, f64, f64)>,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        // Parameters are checked before the file is read.
        let config = config(RunParams::default(), params)?;
        let mut snap = py.detach(|| snapshot::read_file(path)).py_err()?;
        if let Some((kpc, msun, kms)) = units {
            if ![kpc, msun, kms].iter().all(|x| x.is_finite() && *x > 0.0) {
                return Err(invalid(format!(
                    "units must be three positive numbers (kpc, Msun, km/s), got {:?}",
                    (kpc, msun, kms)
                )));
            }
            snapshot::gadget::to_nbody(&mut snap, kpc, msun, kms);
        }
        Self::start(py, snap, config)
    }

    /// Integrates to `t_end` (a whole number of dt, Hermite: dt_max, after
    /// the current time) without the GIL. `on_steps(done, of)` is called
    /// with the GIL after every batch of steps (Hermite: every block step,
    /// `of` 0); an exception it raises (or a pending KeyboardInterrupt)
    /// stops the run at a whole batch and is raised here: a leapfrog run
    /// keeps the next batch queued behind the one reported (the GPU runs
    /// it while the host hears of the last), so it stops after that one.
    #[pyo3(signature = (t_end, on_steps=None))]
    fn evolve(&mut self, py: Python<'_>, t_end: f64, on_steps: Option<Py<PyAny>>) -> PyResult<()> {
        let p = *self.run().config().params();
        let (step, name) = if p.solver.is_hermite() {
            (p.dt_max, "dt_max")
        } else {
            (p.dt, "dt")
        };
        check_end(self.run().time(), t_end, step, "t_end", name).py_err()?;
        let mut stopped: Option<PyErr> = None;
        let ctx = self.ctx.clone();
        let run = self.run();
        let t0 = Instant::now();
        let result = py.detach(|| {
            pollster::block_on(run.run_to(&ctx, t_end, |done, of| {
                Python::attach(|py| {
                    let called = match &on_steps {
                        Some(f) => f.call1(py, (done, of)).map(|_| ()),
                        None => Ok(()),
                    };
                    match called.and_then(|_| py.check_signals()) {
                        Ok(()) => true,
                        Err(e) => {
                            stopped = Some(e);
                            false
                        }
                    }
                })
            }))
        });
        self.evolve_s = t0.elapsed().as_secs_f64();
        // The state moved (also when stopped early).
        self.readout = None;
        result.map_err(to_py)?;
        match stopped {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Simulated time of the state.
    #[getter]
    fn time(&self) -> f64 {
        self.locked().time()
    }

    /// Steps taken (Hermite: block steps).
    #[getter]
    fn steps(&self) -> u64 {
        self.locked().steps()
    }

    #[getter]
    fn n(&self) -> u32 {
        self.locked().n()
    }

    /// Positions (N, 3), input order.
    fn pos<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        if let Some(s) = self.state_f64(py)? {
            return vectors(py, s.iter().map(|b| b.1));
        }
        let p = &self.readout(py)?.snapshot.particles;
        vectors(py, p.pos_mass.iter().map(|r| r.pos.map(f64::from)))
    }

    /// Velocities (N, 3), input order.
    fn vel<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        if let Some(s) = self.state_f64(py)? {
            return vectors(py, s.iter().map(|b| b.2));
        }
        let p = &self.readout(py)?.snapshot.particles;
        vectors(py, p.vel.iter().map(|r| r.vel.map(f64::from)))
    }

    /// Masses (N), input order.
    fn mass<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        if let Some(s) = self.state_f64(py)? {
            return Ok(scalars(py, s.iter().map(|b| b.0)));
        }
        let p = &self.readout(py)?.snapshot.particles;
        Ok(scalars(py, p.pos_mass.iter().map(|r| r.mass as f64)))
    }

    /// Accelerations (N, 3) of the state, input order.
    fn acc<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let r = self.readout(py)?;
        vectors(py, r.acc_pot.iter().map(|a| a.acc.map(f64::from)))
    }

    /// Potentials (N) of the state (softened, G = 1), input order.
    fn pot<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let r = self.readout(py)?;
        Ok(scalars(py, r.acc_pot.iter().map(|a| a.pot as f64)))
    }

    /// Particle ids (N), input order.
    fn ids<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let r = self.readout(py)?;
        Ok(PyArray1::from_slice(py, &r.snapshot.particles.id))
    }

    /// Particle kinds (Gadget-2's numbering) where the input had them.
    fn kinds<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray1<u8>>> {
        self.types.as_ref().map(|t| PyArray1::from_slice(py, t))
    }

    /// Energies and momenta of the state, summed in f64 (the run log's
    /// quantities): kinetic, potential, total, virial_ratio, momentum,
    /// angular_momentum (3-vectors), rel_energy_error against the first
    /// state and its largest value so far, steps, and potential_sum: how
    /// the potential energy was summed (`host-f64`, `gpu-double-single` or
    /// `solver-f32`, as the run log says).
    fn diagnostics<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = self.readout(py)?;
        let d = &r.diagnostics;
        let out = PyDict::new(py);
        out.set_item("kinetic", d.kinetic)?;
        out.set_item("potential", d.potential)?;
        out.set_item("total", d.total)?;
        out.set_item("virial_ratio", d.virial_ratio)?;
        out.set_item("momentum", d.momentum.to_vec())?;
        out.set_item("angular_momentum", d.angular_momentum.to_vec())?;
        out.set_item("e0", r.e0.total)?;
        out.set_item("rel_energy_error", r.energy_error())?;
        out.set_item("rel_energy_error_max", r.de_max)?;
        out.set_item("steps", r.steps)?;
        out.set_item("potential_sum", r.potential_sum.name())?;
        if let Some(h) = &r.hermite {
            out.set_item("block_steps", h.stats.block_steps)?;
            out.set_item("force_evaluations", h.stats.force_evaluations)?;
            out.set_item("particles_per_level", h.levels.clone())?;
        }
        if let Some(levels) = &r.block_levels {
            out.set_item("particles_per_level", levels.clone())?;
        }
        if let Some((pp, pc)) = r.interactions {
            out.set_item("pp_per_particle", pp)?;
            out.set_item("pc_per_particle", pc)?;
        }
        Ok(out)
    }

    /// Radii about the centre of mass enclosing `fractions` (ascending, in
    /// (0, 1]) of the mass: the page's Lagrangian radii.
    fn lagrangian_radii(&mut self, py: Python<'_>, fractions: Vec<f64>) -> PyResult<Vec<f64>> {
        if fractions.is_empty()
            || fractions.windows(2).any(|w| w[0] > w[1])
            || fractions.iter().any(|&f| !(f > 0.0 && f <= 1.0))
        {
            return Err(invalid(format!(
                "fractions {fractions:?}: expected ascending numbers in (0, 1]"
            )));
        }
        let p = &self.readout(py)?.snapshot.particles.pos_mass;
        Ok(lagrangian_radii(p, center_of_mass(p), &fractions))
    }

    /// The forces of the current state computed afresh with `params`
    /// (e.g. another theta; default: the run's), and with `compare`
    /// ("direct": the f64 sum on the CPU for `sample` particles, 0: all;
    /// "ds": the GPU double-single sum for every particle) their error
    /// percentiles, as `webgrav forces --compare` prints them.
    #[pyo3(signature = (params=None, compare=None, sample=4096, seed=1))]
    fn forces<'py>(
        &mut self,
        py: Python<'py>,
        params: Option<&Bound<'py, PyDict>>,
        compare: Option<&str>,
        sample: usize,
        seed: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let config = config(*self.run().config().params(), params)?;
        let compare = match compare {
            Some(name) => Some(
                CompareWith::from_name(name)
                    .ok_or_else(|| invalid(format!("compare = '{name}': expected direct or ds")))?,
            ),
            None => None,
        };
        let snap = self.snapshot(py)?;
        let ctx = &self.ctx;
        let (acc_pot, interactions, reference) = py
            .detach(|| -> webgrav::Result<_> {
                let p = &snap.particles;
                // A new run evaluates the forces of its initial state.
                let mut run = pollster::block_on(Run::new(ctx, p, snap.time, config))?;
                let r = pollster::block_on(run.readout(ctx))?;
                let reference = match compare {
                    Some(kind) => Some(pollster::block_on(reference_forces(
                        ctx,
                        p,
                        kind,
                        config.params().eps as f64,
                        sample,
                        seed,
                    ))?),
                    None => None,
                };
                Ok((r.acc_pot, r.interactions, reference))
            })
            .py_err()?;
        let out = PyDict::new(py);
        out.set_item(
            "acc",
            vectors(py, acc_pot.iter().map(|a| a.acc.map(f64::from)))?,
        )?;
        out.set_item("pot", scalars(py, acc_pot.iter().map(|a| a.pot as f64)))?;
        if let Some((pp, pc)) = interactions {
            out.set_item("pp_per_particle", pp)?;
            out.set_item("pc_per_particle", pc)?;
        }
        if let Some(reference) = reference {
            let c = reference.compare(&acc_pot);
            out.set_item("compare", reference.kind)?;
            out.set_item("compared", c.compared)?;
            out.set_item("reference_s", reference.seconds)?;
            out.set_item("acc_error", stats_dict(py, &c.acc)?)?;
            out.set_item("pot_error", stats_dict(py, &c.pot)?)?;
            if let Some((sampled, acc, pot)) = reference.check {
                let check = PyDict::new(py);
                check.set_item("against", "direct-f64")?;
                check.set_item("sampled", sampled)?;
                check.set_item("acc_max", acc)?;
                check.set_item("pot_max", pot)?;
                out.set_item("reference_check", check)?;
            }
        }
        Ok(out)
    }

    /// Writes the state to `path` in the format `format` or else its
    /// extension names (.tipsy, .bonsai, .csv, .gadget, .hdf5, or
    /// "swift-hdf5"; Hermite states in f64 to CSV):
    /// the `.iord` side file's path where one was written, and what the
    /// user should be told (where the kinds the format lacks went).
    #[pyo3(signature = (path, format=None))]
    fn write(
        &mut self,
        py: Python<'_>,
        path: &str,
        format: Option<&str>,
    ) -> PyResult<(Option<String>, Option<String>)> {
        let snap = self.snapshot(py)?;
        let f64s = self.readout(py)?.state_f64.clone();
        let written = py
            .detach(|| {
                let format = match format {
                    Some(name) => snapshot::Format::named(name)?,
                    None => snapshot::Format::from_path(path)?,
                };
                snapshot::check_output(path, &[])?;
                write_state_as(path, format, &snap, f64s.as_ref())
            })
            .py_err()?;
        let note = written.kinds_note(path);
        Ok((written.side_file, note))
    }

    /// A PNG of the state drawn with the page's renderer (see
    /// `webgrav.Simulation.show`).
    #[pyo3(signature = (width=640, height=480, color="speed", hide=Vec::new(), yaw=None,
        pitch=None, distance=None, target=None, fov=None, point_size=None, brightness=None,
        attenuation=true))]
    #[allow(clippy::too_many_arguments)]
    fn picture<'py>(
        &mut self,
        py: Python<'py>,
        width: u32,
        height: u32,
        color: &str,
        hide: Vec<String>,
        yaw: Option<f32>,
        pitch: Option<f32>,
        distance: Option<f32>,
        target: Option<[f32; 3]>,
        fov: Option<f32>,
        point_size: Option<f32>,
        brightness: Option<f32>,
        attenuation: bool,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let color = ColorMode::from_name(color).ok_or_else(|| {
            let names: Vec<_> = ColorMode::ALL.iter().map(|c| c.name()).collect();
            invalid(format!(
                "color = '{color}': expected one of {}",
                names.join(", ")
            ))
        })?;
        let view = View {
            width,
            height,
            yaw,
            pitch,
            distance,
            target,
            fov,
            point_size,
            brightness,
            attenuation,
            color,
            hidden: hide.iter().map(|k| kind(k)).collect::<PyResult<_>>()?,
            ..View::default()
        };
        let (ctx, types) = (self.ctx.clone(), self.types.clone());
        let run = self.run();
        let png = py
            .detach(|| pollster::block_on(picture::draw(&ctx, run, types.as_deref(), &view))?.png())
            .py_err()?;
        Ok(PyBytes::new(py, &png))
    }

    /// Switches to the run parameters `params` (over the current ones),
    /// carrying on from the current state: in place where only ε, dt, θ
    /// (leapfrog) or η and the precision (Hermite) change, else a new
    /// integrator from the state read back. The energy reference restarts
    /// (E depends on the softening and the solver).
    fn configure(&mut self, py: Python<'_>, params: &Bound<'_, PyDict>) -> PyResult<()> {
        let config = config(*self.run().config().params(), Some(params))?;
        let ctx = self.ctx.clone();
        let run = self.run();
        py.detach(|| pollster::block_on(run.reconfigure(&ctx, config)))
            .py_err()?;
        // A new reference: the next read-out sets E0.
        self.readout = None;
        py.detach(|| self.take_readout().map(|_| ())).py_err()
    }

    /// The run's parameters (every key of the table that configures a run).
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let p = *self.locked().config().params();
        let d = PyDict::new(py);
        d.set_item("solver", p.solver.name())?;
        d.set_item("eps", p.eps)?;
        d.set_item("dt", p.dt)?;
        d.set_item("theta", p.theta)?;
        d.set_item("alpha", p.alpha)?;
        d.set_item("rebuild", p.rebuild)?;
        d.set_item("timesteps", p.timesteps.name())?;
        d.set_item("levels", p.levels)?;
        d.set_item("eta", p.eta)?;
        d.set_item("criterion", p.criterion.name())?;
        d.set_item("precision", p.precision.name())?;
        d.set_item("dt_max", p.dt_max)?;
        Ok(d)
    }

    /// Seconds the last `evolve` spent integrating and the last read-out
    /// spent reading back (in Rust): what Python adds is the rest.
    fn timings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("evolve_s", self.evolve_s)?;
        d.set_item("readout_s", self.readout_s)?;
        Ok(d)
    }
}
