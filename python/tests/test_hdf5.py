"""HDF5 snapshots in GADGET-4's and SWIFT's layouts: files written by h5py
(both layouts, and the layout of GADGET-4's own examples) read by webgrav
value by value; webgrav's files opened by h5py and pynbody with every
value checked."""

import numpy as np
import pytest

import webgrav

h5py = pytest.importorskip("h5py")

N_TYPE = [5, 40, 7, 3, 6, 2]  # particles of each type, 0 gas … 5 boundary


def particles(seed=11):
    """Per type: float32 positions, velocities, masses, potentials, and
    64-bit ids up to 2^64 - 1 (beyond int64)."""
    rng = np.random.default_rng(seed)
    out, next_id = [], np.uint64(2**64 - 1)
    for t, n in enumerate(N_TYPE):
        ids = next_id - np.arange(n, dtype=np.uint64) * np.uint64(3)
        next_id = ids[-1] - np.uint64(3)
        out.append(
            dict(
                pos=rng.normal(size=(n, 3)).astype(np.float32),
                vel=rng.normal(scale=0.3, size=(n, 3)).astype(np.float32),
                mass=rng.uniform(0.5, 2.0, n).astype(np.float32) / 100,
                pot=-rng.uniform(1.0, 3.0, n).astype(np.float32),
                ids=ids,
            )
        )
    return out


def write_gadget4(path, parts, time):
    with h5py.File(path, "w") as f:
        h = f.create_group("Header")
        counts = np.array([len(p["ids"]) for p in parts], dtype=np.uint64)
        h.attrs["NumPart_ThisFile"] = counts
        h.attrs["NumPart_Total"] = counts
        h.attrs["MassTable"] = np.zeros(6)
        h.attrs["Time"] = time
        h.attrs["Redshift"] = 0.0
        h.attrs["BoxSize"] = 0.0
        h.attrs["NumFilesPerSnapshot"] = np.int32(1)
        for t, p in enumerate(parts):
            g = f.create_group(f"PartType{t}")
            g["Coordinates"] = p["pos"]
            g["Velocities"] = p["vel"]
            g["Masses"] = p["mass"]
            g["ParticleIDs"] = p["ids"]
            g["Potential"] = p["pot"]


def write_swift(path, parts, time):
    """SWIFT's layout: Units, InternalCodeUnits, Cosmology and Code groups,
    double-precision Coordinates, Potentials (plural)."""
    with h5py.File(path, "w") as f:
        h = f.create_group("Header")
        counts = np.array([len(p["ids"]) for p in parts] + [0], dtype=np.int64)
        h.attrs["NumPart_ThisFile"] = counts
        h.attrs["NumPart_Total"] = counts
        h.attrs["NumPart_Total_HighWord"] = np.zeros(7, dtype=np.uint32)
        h.attrs["MassTable"] = np.zeros(7)
        h.attrs["Time"] = np.array([time])
        h.attrs["Redshift"] = np.array([0.0])
        h.attrs["Scale-factor"] = np.array([1.0])
        h.attrs["BoxSize"] = np.array([100.0, 100.0, 100.0])
        h.attrs["Dimension"] = np.array([3], dtype=np.int32)
        h.attrs["NumFilesPerSnapshot"] = np.array([1], dtype=np.int32)
        for name in ["Units", "InternalCodeUnits"]:
            u = f.create_group(name)
            u.attrs["Unit mass in cgs (U_M)"] = np.array([1.98841e43])
            u.attrs["Unit length in cgs (U_L)"] = np.array([3.08567758e24])
            u.attrs["Unit time in cgs (U_t)"] = np.array([3.08567758e19])
            u.attrs["Unit current in cgs (U_I)"] = np.array([1.0])
            u.attrs["Unit temperature in cgs (U_T)"] = np.array([1.0])
        c = f.create_group("Cosmology")
        c.attrs["Cosmological run"] = np.array([0], dtype=np.int32)
        f.create_group("Code").attrs["Code"] = "SWIFT"
        for t, p in enumerate(parts):
            g = f.create_group(f"PartType{t}")
            g["Coordinates"] = p["pos"].astype(np.float64)
            g["Velocities"] = p["vel"]
            g["Masses"] = p["mass"]
            g["ParticleIDs"] = p["ids"]
            g["Potentials"] = p["pot"]
            g["Softenings"] = np.full(len(p["ids"]), 0.01, dtype=np.float32)


def check_read(sim, parts, time):
    """Every value of every particle, matched by id."""
    assert sim.time == time
    order = np.argsort(sim.ids)
    ids = np.concatenate([p["ids"] for p in parts])
    want = np.argsort(ids)
    np.testing.assert_array_equal(sim.ids[order], ids[want])
    kinds = np.concatenate([np.full(len(p["ids"]), t) for t, p in enumerate(parts)])
    np.testing.assert_array_equal(sim.kinds[order], kinds[want])
    for name, key in [("pos", "pos"), ("vel", "vel"), ("mass", "mass")]:
        got = getattr(sim, name)[order]
        np.testing.assert_array_equal(got, np.concatenate([p[key] for p in parts])[want])


@pytest.mark.parametrize("layout", ["gadget4", "swift"])
@pytest.mark.parametrize("name", ["snap_000.hdf5", "snapshot.dat"])
def test_h5py_files_read_value_by_value(tmp_path, layout, name):
    parts = particles()
    path = tmp_path / name
    {"gadget4": write_gadget4, "swift": write_swift}[layout](path, parts, 0.375)
    sim = webgrav.Simulation.from_file(path, solver="direct")
    check_read(sim, parts, 0.375)


def test_gadget4_example_layout(tmp_path):
    """The layout GADGET-4's examples write (e.g. DM-L50-N128): dark matter
    only, its mass in the header's MassTable, 32-bit ids, counts as int64,
    Config and Parameters groups with the code's units."""
    rng = np.random.default_rng(3)
    n = 64
    pos = rng.uniform(0, 50, (n, 3)).astype(np.float32)
    vel = rng.normal(scale=100, size=(n, 3)).astype(np.float32)
    ids = np.arange(1, n + 1, dtype=np.uint32)
    path = tmp_path / "snapshot_000.hdf5"
    with h5py.File(path, "w") as f:
        h = f.create_group("Header")
        h.attrs["BoxSize"] = 50.0
        h.attrs["MassTable"] = np.array([0, 0.6755, 0, 0, 0, 0], dtype=np.float64)
        h.attrs["NumFilesPerSnapshot"] = np.int32(1)
        h.attrs["NumPart_ThisFile"] = np.array([0, n, 0, 0, 0, 0], dtype=np.int64)
        h.attrs["NumPart_Total"] = np.array([0, n, 0, 0, 0, 0], dtype=np.uint64)
        h.attrs["Redshift"] = 63.0
        h.attrs["Time"] = 1 / 64
        cfg = f.create_group("Config")
        cfg.attrs["PMGRID"] = np.int32(128)
        cfg.attrs["SELFGRAVITY"] = np.int32(1)
        par = f.create_group("Parameters")
        par.attrs["UnitLength_in_cm"] = 3.085678e24
        par.attrs["UnitMass_in_g"] = 1.989e43
        par.attrs["UnitVelocity_in_cm_per_s"] = 1e5
        par.attrs["Omega0"] = 0.308
        par.attrs["HubbleParam"] = 0.678
        g = f.create_group("PartType1")
        g["Coordinates"] = pos
        g["ParticleIDs"] = ids
        g["Velocities"] = vel
    sim = webgrav.Simulation.from_file(path, solver="direct")
    assert sim.time == 1 / 64
    order = np.argsort(sim.ids)
    np.testing.assert_array_equal(sim.ids[order], ids.astype(np.uint64))
    np.testing.assert_array_equal(sim.pos[order], pos)
    np.testing.assert_array_equal(sim.vel[order], vel)
    np.testing.assert_array_equal(sim.mass, np.float32(0.6755))
    np.testing.assert_array_equal(sim.kinds, 1)
    # Its units (Mpc, 1e10 Msun, km/s) convert as Gadget-2's do.
    conv = webgrav.Simulation.from_file(path, units=(1000, 1e10, 1), solver="direct")
    np.testing.assert_allclose(conv.pos[np.argsort(conv.ids)], pos * 1000, rtol=1e-6)


def test_malformed_files_name_the_dataset(tmp_path):
    parts = particles()
    path = tmp_path / "bad.hdf5"
    write_gadget4(path, parts, 1.0)
    with h5py.File(path, "a") as f:
        del f["PartType1/Velocities"]
        f["PartType1/Velocities"] = np.zeros((N_TYPE[1] - 1, 3), dtype=np.float32)
    with pytest.raises(webgrav.WebgravError, match="PartType1/Velocities has shape"):
        webgrav.Simulation.from_file(path, solver="direct")
    with h5py.File(path, "a") as f:
        del f["PartType2/Coordinates"]
    with pytest.raises(webgrav.WebgravError, match="PartType1/Velocities|PartType2/Coordinates"):
        webgrav.Simulation.from_file(path, solver="direct")


@pytest.fixture(scope="module")
def evolved():
    """Every kind, ids near 2^64 - 1, after a few steps (potentials and a
    time that is not zero)."""
    parts = particles(5)
    pos = np.concatenate([p["pos"] for p in parts]).astype(np.float64)
    vel = np.concatenate([p["vel"] for p in parts]).astype(np.float64)
    mass = np.concatenate([p["mass"] for p in parts]).astype(np.float64)
    ids = np.concatenate([p["ids"] for p in parts])
    kinds = np.concatenate([np.full(n, t) for t, n in enumerate(N_TYPE)])
    sim = webgrav.Simulation(pos, vel, mass, ids=ids, kinds=kinds, solver="direct", eps=0.05)
    sim.evolve(4 * sim.params["dt"])
    return sim


@pytest.mark.parametrize("fmt", [None, "swift-hdf5"])
def test_h5py_reads_every_value_webgrav_wrote(tmp_path, evolved, fmt):
    sim = evolved
    path = tmp_path / "out.hdf5"
    assert sim.snapshot(path, format=fmt) is None
    swift = fmt == "swift-hdf5"
    with h5py.File(path, "r") as f:
        assert ("Units" in f and "Cosmology" in f) == swift
        assert f["Header"].attrs["Time"] == sim.time
        counts = f["Header"].attrs["NumPart_ThisFile"]
        np.testing.assert_array_equal(counts, N_TYPE)
        phi = "Potentials" if swift else "Potential"
        for t in range(6):
            g = f[f"PartType{t}"]
            ids = g["ParticleIDs"][:]
            assert g["ParticleIDs"].dtype == np.uint64
            assert g["Coordinates"].dtype == (np.float64 if swift else np.float32)
            k = np.array([np.nonzero(sim.ids == i)[0][0] for i in ids])
            np.testing.assert_array_equal(sim.kinds[k], t)
            np.testing.assert_array_equal(g["Coordinates"][:], sim.pos[k])
            np.testing.assert_array_equal(g["Velocities"][:], sim.vel[k])
            np.testing.assert_array_equal(g["Masses"][:], sim.mass[k])
            if phi in g:
                np.testing.assert_array_equal(g[phi][:], sim.pot[k].astype(np.float32))
    back = webgrav.Simulation.from_file(path, solver="direct")
    order, want = np.argsort(back.ids), np.argsort(sim.ids)
    for name in ["ids", "kinds", "pos", "vel", "mass"]:
        np.testing.assert_array_equal(getattr(back, name)[order], getattr(sim, name)[want])
    assert back.time == sim.time


def test_pynbody_reads_webgrav_gadget4_files(tmp_path, evolved):
    pynbody = pytest.importorskip("pynbody")
    sim = evolved
    path = tmp_path / "pyn.hdf5"
    sim.snapshot(path)
    snap = pynbody.load(str(path))
    assert len(snap) == sim.n
    iord = np.asarray(snap["iord"]).astype(np.uint64)
    k = np.array([np.nonzero(sim.ids == i)[0][0] for i in iord])
    for key, want in [("pos", sim.pos), ("vel", sim.vel), ("mass", sim.mass)]:
        # In the file's units, as pynbody converts them back.
        got = np.asarray(snap[key].in_original_units())
        np.testing.assert_allclose(got, want[k], rtol=1e-6)
    # pynbody's families: gas, dark matter (types 1 to 3), stars.
    assert len(snap.gas) == N_TYPE[0]
    assert len(snap.dm) == sum(N_TYPE[1:4])
    assert len(snap.star) == N_TYPE[4]


def test_swiftsimio_reads_webgrav_swift_files(tmp_path, evolved):
    sw = pytest.importorskip("swiftsimio")
    sim = evolved
    path = tmp_path / "sw.hdf5"
    sim.snapshot(path, format="swift-hdf5")
    data = sw.load(str(path))
    # SWIFT's names of the particle types webgrav has.
    names = ["gas", "dark_matter", "dark_matter_background", "sinks", "stars", "black_holes"]
    seen = 0
    for t, name in enumerate(names):
        group = getattr(data, name, None)
        if group is None:
            continue
        ids = np.asarray(group.particle_ids).astype(np.uint64)
        k = np.array([np.nonzero(sim.ids == i)[0][0] for i in ids])
        np.testing.assert_array_equal(sim.kinds[k], t)
        # In the file's units (webgrav's: kpc, 2.325e9 Msun, 100 km/s).
        np.testing.assert_array_equal(group.coordinates.value, sim.pos[k])
        np.testing.assert_array_equal(group.velocities.value, sim.vel[k])
        np.testing.assert_array_equal(group.masses.value, sim.mass[k])
        assert float(group.masses.to("Msun").value[0]) == pytest.approx(sim.mass[k[0]] * 2.325e9, rel=1e-3)  # M☉: 1.989e33 g or 1.98841e33
        np.testing.assert_array_equal(group.potentials.value, sim.pot[k].astype(np.float32))
        seen += len(ids)
    assert seen >= sum(N_TYPE[:2]) + N_TYPE[4]
    assert float(data.metadata.time.value) == sim.time
