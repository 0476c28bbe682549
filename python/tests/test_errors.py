"""Bad input is refused with webgrav's message, before any GPU work."""

import numpy as np
import pytest

import webgrav


def refused(match, f, *args, **kw):
    with pytest.raises(webgrav.WebgravError, match=match) as e:
        f(*args, **kw)
    assert isinstance(e.value, ValueError)
    assert e.value.kind == "invalid-parameter"


def test_bad_arrays(plummer_arrays):
    pos, vel, mass = plummer_arrays
    S = webgrav.Simulation
    bad = pos.copy()
    bad[7, 1] = np.nan
    refused(r"pos\[7\] is not finite", S, bad, vel, mass)
    refused(r"vel must have shape \(256, 3\), got \(255, 3\)", S, pos, vel[1:], mass)
    refused(r"pos must have shape \(N, 3\), got \(256, 2\)", S, pos[:, :2], vel, mass)
    refused(r"mass must have shape \(256,\)", S, pos, vel, mass[:10])
    refused("real numbers", S, pos.astype(complex), vel, mass)
    refused("ids must be 256 integers", S, pos, vel, mass, ids=np.arange(3))
    refused("unknown kind 'comet'", S, pos, vel, mass, kinds=["comet"] * 256)
    # webgrav's own checks: masses, magnitudes.
    refused("particle 3: invalid mass", S, pos, vel, np.where(np.arange(256) == 3, -1.0, mass))
    refused("beyond the 1e15", S, pos * 1e20, vel, mass)


def test_bad_run_parameters(plummer_arrays):
    pos, vel, mass = plummer_arrays
    S = webgrav.Simulation
    refused(r"solver = 'fmm': expected one of tree, direct, hermite4, hermite6", S, pos, vel, mass, solver="fmm")
    refused(r"theta = 2: expected a number > 0 and <= 1.15", S, pos, vel, mass, theta=2.0)
    refused(r"dt_max = 0.3: .*power of two", S, pos, vel, mass, solver="hermite4", dt_max=0.3)
    refused("unknown run parameter 'thetta'", S.from_file, "x.csv", thetta=1)
    refused("unknown model 'plumber'", S.from_model, "plumber", n=10)
    refused(r"q = 9: expected a number in \[0.5, 5\]", S.from_model, "disk-galaxy", n=10, q=9)
    refused("n must be a positive whole number", S.from_model, "plummer", n=0)


def test_bad_files_and_outputs(tmp_path):
    sim = webgrav.Simulation.from_model("plummer", n=32, solver="direct")
    with pytest.raises(webgrav.WebgravError, match="cannot tell the snapshot format"):
        sim.snapshot(tmp_path / "x.txt")
    with pytest.raises(webgrav.WebgravError) as e:
        webgrav.Simulation.from_file(tmp_path / "missing.tipsy")
    assert e.value.kind == "io"
    junk = tmp_path / "junk.csv"
    junk.write_text("id,x\n1,2\n")
    with pytest.raises(webgrav.WebgravError, match="junk.csv"):
        webgrav.Simulation.from_file(junk)
    refused("compare = 'fmm'", sim.forces, compare="fmm")
    refused("nothing to hide", sim.picture, 32, 32, hide=["halo"])
    refused("color = 'rainbow'", sim.picture, 32, 32, color="rainbow")
