"""pynbody and AMUSE in and out, and snapshot files by extension."""

import numpy as np
import pytest

import webgrav

pynbody = pytest.importorskip("pynbody")


def by_id(ids, values):
    return values[np.argsort(ids)]


@pytest.fixture(scope="module")
def galaxy():
    """A galaxy of three components (halo, disk, bulge) carries kinds."""
    return webgrav.Simulation.from_model("disk-galaxy", n=3000, seed=2, solver="direct")


def test_pynbody_round_trip_keeps_particles_families_and_kinds(galaxy):
    snap = galaxy.to_pynbody()
    kinds = galaxy.kinds
    # Halo is dark matter; disk and bulge are stars.
    assert len(snap.dm) == (kinds == 1).sum() > 0
    assert len(snap.star) == np.isin(kinds, [2, 3]).sum() > 0
    back = webgrav.Simulation.from_pynbody(snap, solver="direct")
    ids = galaxy.ids
    np.testing.assert_array_equal(np.sort(back.ids), np.sort(ids))
    for name in ["pos", "vel", "mass"]:
        np.testing.assert_array_equal(
            by_id(back.ids, getattr(back, name)), by_id(ids, getattr(galaxy, name))
        )
    # webgrav_kind keeps disk and bulge apart through pynbody's families.
    np.testing.assert_array_equal(by_id(back.ids, back.kinds), by_id(ids, kinds))
    assert back.energy() == pytest.approx(galaxy.energy(), rel=1e-6)


def test_pynbody_physical_units_convert_to_webgrav_units():
    sim = webgrav.Simulation.from_model("plummer", n=200, seed=1, solver="direct")
    snap = sim.to_pynbody(units="physical")
    # 1 velocity unit is 100 km/s, 1 mass unit 2.325e9 Msol.
    np.testing.assert_allclose(snap["vel"].in_units("km s^-1"), sim.vel * 100, rtol=1e-12)
    np.testing.assert_allclose(snap["mass"].in_units("1e9 Msol"), sim.mass * 2.325, rtol=1e-12)
    back = webgrav.Simulation.from_pynbody(snap, units="physical", solver="direct")
    np.testing.assert_allclose(by_id(back.ids, back.vel), by_id(sim.ids, sim.vel), rtol=1e-6)


# pynbody looks for a gasoline .param file beside a Tipsy file.
@pytest.mark.filterwarnings("ignore:No readable param file")
def test_tipsy_file_reads_in_pynbody(tmp_path):
    sim = webgrav.Simulation.from_model("plummer", n=300, seed=3, solver="direct")
    sim.evolve(4 * sim.params["dt"])
    path = tmp_path / "state.tipsy"
    assert sim.snapshot(path) is None  # ids 0..N-1: no .iord needed
    snap = pynbody.load(str(path))
    np.testing.assert_allclose(np.asarray(snap["pos"]), sim.pos, rtol=0, atol=0)
    assert float(snap.properties["time"]) == pytest.approx(sim.time)


@pytest.fixture
def every_kind(plummer_arrays):
    """Particles of every kind in turn (gas, halo, disk, bulge, stars,
    boundary) with large ids."""
    pos, vel, mass = plummer_arrays
    n = len(mass)
    ids = (np.uint64(1) << np.uint64(40)) + 7 * np.arange(n, dtype=np.uint64)
    kinds = np.arange(n) % len(webgrav.KINDS)
    return webgrav.Simulation(pos, vel, mass, ids=ids, kinds=kinds, solver="direct")


@pytest.mark.parametrize("ext", ["tipsy", "bonsai", "csv", "gadget"])
def test_snapshot_formats_keep_every_kind_and_id(tmp_path, every_kind, ext):
    path = tmp_path / f"g.{ext}"
    if ext in ("tipsy", "bonsai"):
        # Kinds the flavour has no record or id range for: in a side file,
        # and the write says so.
        with pytest.warns(UserWarning, match="webgrav_kind"):
            every_kind.snapshot(path)
    else:
        every_kind.snapshot(path)
    back = webgrav.Simulation.from_file(path, solver="direct")
    np.testing.assert_array_equal(np.sort(back.ids), np.sort(every_kind.ids))
    np.testing.assert_array_equal(by_id(back.ids, back.pos), by_id(every_kind.ids, every_kind.pos))
    np.testing.assert_array_equal(
        by_id(back.ids, back.kinds), by_id(every_kind.ids, every_kind.kinds)
    )


@pytest.mark.filterwarnings("ignore:No readable param file")
def test_pynbody_reads_the_kinds_of_a_tipsy_file(tmp_path, every_kind):
    path = tmp_path / "k.tipsy"
    with pytest.warns(UserWarning):
        every_kind.snapshot(path)
    snap = pynbody.load(str(path))
    # Gas, dark matter and stars by record; the exact kind from the side
    # file pynbody loads as an array; ids from the .iord.
    assert len(snap.gas) == (every_kind.kinds == 0).sum() > 0
    back = webgrav.Simulation.from_pynbody(snap, solver="direct")
    np.testing.assert_array_equal(
        by_id(back.ids, back.kinds), by_id(every_kind.ids, every_kind.kinds)
    )


def test_bonsai_refuses_ids_beyond_its_ranges(tmp_path, plummer_arrays):
    pos, vel, mass = plummer_arrays
    ids = np.arange(len(mass), dtype=np.uint64)
    ids[5] = 3 * 10**18 + 7  # Bonsai would read it as halo particle 7
    sim = webgrav.Simulation(pos, vel, mass, ids=ids, solver="direct")
    with pytest.raises(webgrav.WebgravError, match="particle 5"):
        sim.snapshot(tmp_path / "x.bonsai")
    assert not (tmp_path / "x.bonsai").exists()


def test_to_pynbody_keeps_ids_from_2_63(plummer_arrays):
    pos, vel, mass = plummer_arrays
    ids = np.uint64(2**64 - 1) - np.arange(len(mass), dtype=np.uint64)
    sim = webgrav.Simulation(pos, vel, mass, ids=ids, solver="direct")
    snap = sim.to_pynbody()
    assert (np.asarray(snap["iord"]) >= 2**63).all()
    back = webgrav.Simulation.from_pynbody(snap, solver="direct")
    np.testing.assert_array_equal(np.sort(back.ids), np.sort(ids))


def test_hermite_csv_keeps_f64(tmp_path):
    sim = webgrav.Simulation.from_model("plummer", n=64, seed=1, solver="hermite4", eps=0.05)
    sim.evolve(0.125)
    path = tmp_path / "h.csv"
    sim.snapshot(path)
    rows = np.genfromtxt(path, delimiter=",", names=True)
    np.testing.assert_array_equal(rows["x"], sim.pos[:, 0])


class Quantity:
    """Stands in for an AMUSE quantity: numbers in a unit, `value_in`
    converts (AMUSE itself is too heavy a test dependency)."""

    def __init__(self, values, unit):
        self.values, self.unit = np.asarray(values), unit

    def value_in(self, unit):
        factor = {("pc", "pc"): 1.0, ("km/s", "km/s"): 1.0, ("pc", "kpc"): 1e-3}
        return self.values * factor[(self.unit, unit)] if unit != "msun" else self.values


class Particles:
    def __init__(self, pos, vel, mass):
        self.position = Quantity(pos, "pc")
        self.velocity = Quantity(vel, "km/s")
        self.mass = Quantity(mass, "msun")
        self.key = np.arange(len(mass), dtype=np.uint64) + 1000


def test_amuse_units_are_stripped_as_named(plummer_arrays):
    pos, vel, mass = plummer_arrays
    p = Particles(pos * 1000, vel, mass)
    sim = webgrav.Simulation.from_amuse(
        p, length="kpc", speed="km/s", mass="msun", solver="direct"
    )
    np.testing.assert_allclose(sim.pos, pos.astype(np.float32), rtol=1e-6)
    np.testing.assert_array_equal(sim.ids, p.key)
