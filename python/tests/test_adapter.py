"""The adapter, the parameter table and the device's limits as Python sees
them."""

import pytest

import webgrav


def test_adapter_info_and_limits():
    info = webgrav.adapter_info()
    assert info["name"] in info["summary"]
    solvers = next(r for r in webgrav.run_params() if r["key"] == "solver")
    assert set(info["max_particles"]) == set(solvers["expected"][len("one of ") :].split(", "))
    # The direct solver stores one 16-byte record per particle, the others
    # more: it holds the most.
    assert max(info["max_particles"].values()) == info["max_particles"]["direct"]
    assert isinstance(info["f64"], bool)


def test_too_many_particles_are_refused_before_generating():
    limit = webgrav.adapter_info()["max_particles"]["hermite4"]
    with pytest.raises(webgrav.WebgravError, match=f"exceeds this device's limit of {limit}") as e:
        webgrav.Simulation.from_model("plummer", n=limit + 1, solver="hermite4")
    assert e.value.kind == "too-many-particles"


def test_defaults_are_webgravs_table():
    sim = webgrav.Simulation.from_model("plummer", n=16, solver="direct")
    table = {r["key"]: r["default"] for r in webgrav.run_params()}
    assert sim.params["dt"] == float(table["dt"])
    assert sim.params["theta"] == pytest.approx(float(table["theta"]))
    assert set(webgrav.models()) >= {"plummer", "milky-way", "galaxy-merger"}
