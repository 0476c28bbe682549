"""Shared fixtures: small states (the tests run on lavapipe, a CPU Vulkan
driver, where a tree step of a few thousand particles takes ~0.5 s)."""

import numpy as np
import pytest


def direct_sum(pos, mass, eps):
    """Accelerations and potentials by numpy's f64 direct sum (Plummer
    softening, G = 1): the reference every force test compares with."""
    d = pos[None, :, :] - pos[:, None, :]
    r2 = (d**2).sum(-1) + eps**2
    inv = 1.0 / np.sqrt(r2)
    np.fill_diagonal(inv, 0.0)
    acc = (d * (mass[None, :] * inv**3)[:, :, None]).sum(1)
    pot = -(mass[None, :] * inv).sum(1)
    return acc, pot


@pytest.fixture
def plummer_arrays():
    """A Plummer-like cloud as plain numpy arrays (not webgrav's model),
    so the input path is exercised on its own: 256 particles of total mass
    1, positions with a Plummer density, small random velocities."""
    rng = np.random.default_rng(7)
    n = 256
    r = 1.0 / np.sqrt(rng.uniform(0.01, 0.9, n) ** (-2.0 / 3.0) - 1.0)
    u = rng.normal(size=(n, 3))
    pos = r[:, None] * u / np.linalg.norm(u, axis=1)[:, None]
    vel = 0.3 * rng.normal(size=(n, 3))
    mass = np.full(n, 1.0 / n)
    return pos, vel, mass
