"""Arrays in and out: any real dtype and memory order, ids and kinds kept,
properties that are float64 copies of the f32 state in input order."""

import numpy as np
import pytest

import webgrav


def f32(a):
    """What the GPU holds of a float64 array."""
    return np.asarray(a, dtype=np.float32).astype(np.float64)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.longdouble, np.int32])
@pytest.mark.parametrize("order", ["C", "F"])
def test_state_round_trips_through_the_gpu(plummer_arrays, dtype, order):
    pos, vel, mass = plummer_arrays
    pos_in = np.asarray(pos * (4 if dtype == np.int32 else 1), dtype=dtype, order=order)
    vel_in = np.asarray(vel, dtype=dtype, order=order)
    sim = webgrav.Simulation(pos_in, vel_in, mass, solver="direct")
    # The tree and direct solvers reorder nothing the user sees: the read
    # state is the input, rounded to f32 once, in input order, exactly.
    for got, given in [(sim.pos, pos_in), (sim.vel, vel_in), (sim.mass, mass)]:
        assert got.dtype == np.float64 and got.flags.c_contiguous
        np.testing.assert_array_equal(got, f32(np.asarray(given, dtype=np.float64)))


def test_tree_keeps_input_order_ids_and_kinds(plummer_arrays):
    pos, vel, mass = plummer_arrays
    n = len(mass)
    rng = np.random.default_rng(3)
    ids = rng.permutation(n).astype(np.uint64) + np.uint64(2**40)
    kinds = rng.choice(["halo", "disk", "bulge"], n)
    sim = webgrav.Simulation(pos, vel, mass, ids=ids, kinds=kinds, solver="tree")
    sim.evolve(2 * sim.params["dt"])
    np.testing.assert_array_equal(sim.ids, ids)
    want = np.array([webgrav.KINDS.index(k) for k in kinds], dtype=np.uint8)
    np.testing.assert_array_equal(sim.kinds, want)
    # Two steps move particles by ~|v| 2 dt ≈ 0.01, not across the cloud:
    # each row is still the same particle.
    assert np.abs(sim.pos - pos).max() < 0.1


def test_hermite_state_is_f64(plummer_arrays):
    pos, vel, mass = plummer_arrays
    sim = webgrav.Simulation(pos, vel, mass, solver="hermite4", eps=0.05)
    sim.evolve(0.125)
    # The Hermite corrector works in f64 on the host: after a step the
    # positions are no longer f32 numbers.
    assert (f32(sim.pos) != sim.pos).any()


def test_properties_are_copies(plummer_arrays):
    pos, vel, mass = plummer_arrays
    sim = webgrav.Simulation(pos, vel, mass, solver="direct")
    p = sim.pos
    p[:] = 0
    np.testing.assert_array_equal(sim.pos, f32(pos))


def test_one_mass_for_all(plummer_arrays):
    pos, vel, _ = plummer_arrays
    sim = webgrav.Simulation(pos, vel, 0.5, solver="direct")
    np.testing.assert_array_equal(sim.mass, np.full(len(pos), 0.5))
