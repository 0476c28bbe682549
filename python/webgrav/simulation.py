"""``webgrav.Simulation``: particles, a solver and an integrator on the GPU,
driven from numpy (the native ``Engine`` does the work; this class gives
it keyword defaults, input checks, a progress bar and interop)."""

import warnings

import numpy as np

from . import arrays, display, interop, viewer
from ._webgrav import Engine, run_params
from .progress import ProgressBar


def _defaults():
    """The run parameters' defaults, from webgrav's one table (the CLI's
    options and the page's settings are made from it too): {key: value}."""
    out = {}
    for row in run_params():
        text = row["default"]
        try:
            out[row["key"]] = int(text) if text.isdigit() else float(text)
        except ValueError:
            out[row["key"]] = text
    return out


DEFAULTS = _defaults()


def _state(name, doc):
    """A read-only property of the state: the engine's array ``name``."""
    return property(lambda self: getattr(self._engine, name)(), doc=doc)


class Simulation:
    """An N-body simulation in N-body units (G = 1) on the GPU.

    ``Simulation(pos, vel, mass)`` starts from arrays: ``pos`` and ``vel``
    of shape (N, 3), ``mass`` of N (or one number), any real dtype and any
    memory order; ``ids`` (N integers, default 0..N-1) and ``kinds`` (N
    names of ``webgrav.KINDS`` or Gadget-2's numbers) travel with the
    particles into snapshots. Keywords choose the solver and integrator
    (their ranges and defaults are webgrav's table, ``webgrav.run_params()``
    and ``webgrav.simulation.DEFAULTS``: the tree with ``alpha=0.1``,
    ``theta=0.75`` starting the run, ``eps=0.01``, ``dt=1/128``; the CLI and
    the page start from the same):

    - ``solver``: "tree" (Bonsai-style octree, leapfrog), "direct" (O(N²)
      f32, leapfrog), "hermite4" or "hermite6" (block time steps, Sapporo
      style forces, f64 state on the host);
    - ``theta``: the tree's opening angle; ``alpha``: the tolerance of its
      acceleration MAC (0: the opening angle decides; above 0 a cell is
      taken when its error estimate is at most ``alpha`` times the group's
      last smallest |a|, and ``theta`` only starts the run; ``theta``
      given without ``alpha`` selects the opening angle, ``alpha=0``, as on
      the command line and in the page's URL); ``rebuild``: the tree is built
      every ``rebuild`` steps and refitted in between (1: every step);
      ``eps``: Plummer softening; ``dt``: the leapfrog's time step;
      ``timesteps``: "shared" (one ``dt``) or "block" (each particle
      ``dt/2^k`` from sqrt(2 ``eta`` ``eps`` / |a|), at most ``levels``
      levels deep; tree only);
    - Hermite: ``eta`` (time-step accuracy), ``criterion`` ("sapporo2" or
      "aarseth", 6th order), ``precision`` ("ds" double-single, "ds-fast"
      Sapporo2's double-single, "f32", or "dp" native f64 where the adapter has it), ``dt_max`` (largest block
      step, a power of two).

    The state lives on the GPU in f32 (Hermite: f64 on the host). ``pos``,
    ``vel``, ``mass``, ``acc``, ``pot`` are float64 copies of it (upcast),
    ``ids`` uint64, all in the order the particles were given; each access
    makes a new array, so keep one rather than index the property in a
    loop.
    """

    def __init__(
        self,
        pos,
        vel,
        mass,
        *,
        ids=None,
        kinds=None,
        time=0.0,
        **run,
    ):
        pos = arrays.vectors("pos", pos)
        n = len(pos)
        self._engine = Engine(
            pos,
            arrays.vectors("vel", vel, n),
            arrays.masses(mass, n),
            arrays.ids(ids, n),
            arrays.kinds(kinds, n),
            float(time),
            run,
        )

    @classmethod
    def _of(cls, engine):
        sim = cls.__new__(cls)
        sim._engine = engine
        return sim

    @classmethod
    def from_model(
        cls,
        model=DEFAULTS["model"],
        n=DEFAULTS["n"],
        seed=DEFAULTS["seed"],
        *,
        q=DEFAULTS["q"],
        ratio=DEFAULTS["ratio"],
        rperi=DEFAULTS["rperi"],
        satellites=DEFAULTS["satellites"],
        incl1=DEFAULTS["incl1"],
        incl2=DEFAULTS["incl2"],
        mhalo=DEFAULTS["mhalo"],
        **run,
    ):
        """``n`` particles of one of webgrav's models (``webgrav.models()``:
        plummer, cold-collapse, hernquist, nfw, sersic, disk-galaxy,
        milky-way, galaxy-merger, galaxy-crash, minor-mergers, planets,
        figure-eight), deterministic per ``seed``; ``q`` (Toomre Q:
        disk-galaxy, milky-way, galaxy-crash), ``ratio`` and ``rperi``
        (galaxy-merger, galaxy-crash; kpc), ``satellites`` (minor-mergers),
        ``incl1`` and ``incl2`` (the disks' inclinations to the orbit's
        plane in degrees, 0 prograde to 180 retrograde) and ``mhalo`` (each
        halo's mass over its galaxy's stars, 0: none; galaxy-crash) as on
        the command line. Galaxies carry their components as ``kinds``.
        Other keywords: the run parameters, as for ``Simulation``."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise arrays.invalid(f"n must be a positive whole number, got {n!r}")
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise arrays.invalid(f"seed must be a non-negative whole number, got {seed!r}")
        return cls._of(
            Engine.from_model(
                model,
                n,
                seed,
                float(q),
                float(ratio),
                float(rperi),
                float(satellites),
                float(incl1),
                float(incl2),
                float(mhalo),
                run,
            )
        )

    @classmethod
    def from_file(cls, path, *, units=None, **run):
        """The snapshot ``path``: Tipsy (standard or Bonsai's), CSV,
        Gadget-2 or HDF5 (GADGET-4's and SWIFT's layouts), by extension or
        content, with its time, ids and particle
        kinds. ``units=(kpc, msun, kms)`` says the file is in physical units
        (its length unit in kpc, mass unit in M☉, velocity unit in km/s,
        Gadget-2's usual (1, 1e10, 1)) and converts it to webgrav's G = 1
        units as Bonsai chooses them (1 kpc, 2.325e9 M☉, 100 km/s). Other
        keywords: the run parameters, as for ``Simulation``."""
        return cls._of(Engine.from_file(str(path), units, run))

    from_pynbody = classmethod(interop.from_pynbody)
    to_pynbody = interop.to_pynbody
    from_amuse = classmethod(interop.from_amuse)

    def evolve(self, t_end, *, progress=None):
        """Integrates to time ``t_end``: a whole number of ``dt`` (Hermite:
        ``dt_max``) after the current time. The GIL is released while the
        GPU works. ``progress``: draw a progress bar on stderr (default:
        when stderr is a terminal). Ctrl-C (KeyboardInterrupt) stops at the
        next batch of steps with a consistent state."""
        if progress is None:
            progress = ProgressBar.wanted()
        bar = ProgressBar() if progress else None
        try:
            self._engine.evolve(float(t_end), bar)
        finally:
            if bar is not None:
                bar.close()

    def configure(self, **run):
        """Changes run parameters mid-run (e.g. ``dt=1/256``, ``theta=0.3``,
        ``solver="hermite4"``), carrying on from the current state; the
        energy reference of ``energy_error`` restarts, since E depends on
        the softening and the solver."""
        self._engine.configure(run)

    @property
    def time(self):
        """Simulated time of the state."""
        return self._engine.time

    @property
    def steps(self):
        """Steps taken (Hermite: block steps)."""
        return self._engine.steps

    @property
    def n(self):
        return self._engine.n

    def __len__(self):
        return self._engine.n

    @property
    def params(self):
        """The run parameters in force (a new dict)."""
        return self._engine.params()

    pos = _state("pos", "Positions, float64 (N, 3), a new array (the GPU holds f32).")
    vel = _state("vel", "Velocities, float64 (N, 3), a new array.")
    mass = _state("mass", "Masses, float64 (N), a new array.")
    acc = _state("acc", "Accelerations of the state, float64 (N, 3), from the solver's f32 forces.")
    pot = _state("pot", "Softened potentials (G = 1), float64 (N).")
    ids = _state("ids", "Particle ids, uint64 (N).")
    kinds = _state(
        "kinds",
        "Particle kinds (numbers into ``webgrav.KINDS``, uint8), or None where "
        "the particles carry none.",
    )

    def energy(self):
        """Total energy E = K + W (W = ½ Σ m φ with the softened potential),
        summed in f64."""
        return self._engine.diagnostics()["total"]

    def energy_error(self):
        """|E − E₀| / |E₀| against the first state of this simulation."""
        return self._engine.diagnostics()["rel_energy_error"]

    def diagnostics(self):
        """Energies, virial ratio, momentum and angular momentum, |ΔE/E₀|
        and its largest value so far, steps, the solver's counters and
        ``potential_sum``, how the potential energy was summed
        (``host-f64``, ``gpu-double-single`` or ``solver-f32``; as in
        ``webgrav run``'s log), as a dict."""
        return self._engine.diagnostics()

    def lagrangian_radii(self, fractions=(0.1, 0.5, 0.9)):
        """Radii about the centre of mass enclosing each of ``fractions``
        (ascending, in (0, 1]) of the mass, as a float64 array."""
        return np.array(self._engine.lagrangian_radii([float(f) for f in fractions]))

    def forces(self, *, compare="direct", sample=4096, seed=1, **run):
        """Forces of the current state computed afresh (run parameters as
        keywords override the simulation's, e.g. ``theta=0.3``): a dict with
        ``acc`` (N, 3) and ``pot`` (N), and with ``compare`` ("direct": the
        f64 direct sum on the CPU for ``sample`` particles, 0: all; "ds":
        the GPU double-single sum for every particle; None: no comparison)
        the relative error percentiles ``acc_error`` and ``pot_error``
        (median, p90, p99, max), as ``webgrav forces --compare`` prints."""
        return self._engine.forces(run, compare, int(sample), int(seed))

    def snapshot(self, path, format=None):
        """Writes the state to ``path``: .tipsy (standard, pynbody reads
        it), .bonsai, .csv, .gadget or .hdf5 (GADGET-4's layout), by
        extension, or as ``format`` names it ("swift-hdf5" for SWIFT's
        HDF5 layout); ids and kinds kept. .gadget, .hdf5 and .csv hold
        both. Standard Tipsy has no id field (ids
        other than 0..N-1 go to ``PATH.iord``) and no record for disk,
        bulge and boundary particles; Bonsai's format tells only disk,
        bulge and dark matter apart (by id range). Kinds a Tipsy flavour
        lacks go to ``PATH.webgrav_kind`` (pynbody loads it as the array
        ``webgrav_kind``, ``from_file`` reads it), with a ``UserWarning``
        saying so; ids beyond Bonsai's ranges are refused
        (``WebgravError``) rather than changed. Returns the path of the
        ``.iord`` side file where standard Tipsy needed one, else None."""
        side, note = self._engine.write(str(path), format)
        if note is not None:
            warnings.warn(note, UserWarning, stacklevel=2)
        return side

    def picture(self, width=640, height=480, *, color="speed", hide=(), **camera):
        """A ``webgrav.Picture`` (PNG) of the state from webgrav's renderer,
        the page's, exposed by the picture itself: ``color`` "speed",
        "potential", "component" or "uniform"; ``hide`` kinds to leave out
        (e.g. ``["halo"]``); camera keywords yaw, pitch (radians), distance,
        target (x, y, z), fov, point_size, brightness (a bias of the
        exposure), attenuation, as the page's URL and ``webgrav render``
        take them (unset: fitted to 90 % of the light drawn, a disk
        face-on)."""
        png = self._engine.picture(
            int(width), int(height), color, [str(k) for k in hide], **camera
        )
        return display.Picture(png)

    def show(self, width=640, height=480, *, interactive=None, **view):
        """Shows the state inline in Jupyter: interactive (``webgrav.view``:
        the web app's WebGPU renderer in an iframe, falling back to the PNG
        where the browser has no WebGPU) when ``interactive`` is true, or
        when None and a Jupyter kernel runs us and the built web app is
        found; else a PNG from webgrav's renderer (see ``picture``).
        ``view``: ``picture``'s keywords. Outside IPython returns the
        ``View`` or ``Picture``."""
        if interactive is None:
            interactive = display.in_kernel() and viewer.web_dist() is not None
        if interactive:
            return display.show(viewer.view(self, width, height, **view))
        return display.show(self.picture(width, height, **view))

    def timings(self):
        """Seconds the last ``evolve`` spent integrating and the last
        read-out spent reading the GPU back, measured in the native code:
        the Python layer's own cost is the rest of a call's time."""
        return self._engine.timings()

    def __repr__(self):
        p = self.params
        return f"<webgrav.Simulation N={self.n} t={self.time:g} solver={p['solver']}>"

