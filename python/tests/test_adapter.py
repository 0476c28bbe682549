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


def test_every_default_is_the_tables_and_the_tree_default_is_bonsais_pair():
    """Python's defaults are the table's (the CLI and the page take theirs
    from it too); the default tree setting is the α that gives Bonsai's
    θ = 0.75 errors, θ = 0.75 starting the run; θ named alone selects the
    opening angle, as on the command line and in the URL."""
    import inspect

    from webgrav.simulation import DEFAULTS

    table = {r["key"]: r["default"] for r in webgrav.run_params()}
    assert set(DEFAULTS) == set(table)
    for key, text in table.items():
        want = text if DEFAULTS[key] == text else float(text)
        assert DEFAULTS[key] == want, key
    for name, p in inspect.signature(webgrav.Simulation.from_model).parameters.items():
        if name in table:
            assert p.default == DEFAULTS[name], name
    sim = webgrav.Simulation.from_model(n=64)
    for key, got in sim.params.items():
        want = DEFAULTS[key]
        assert got == (pytest.approx(want) if isinstance(got, float) else want), key
    assert sim.params["solver"] == "tree"
    assert (sim.params["theta"], sim.params["alpha"]) == pytest.approx((0.75, 0.1))
    assert webgrav.Simulation.from_model(n=64, theta=0.5).params["alpha"] == 0.0
    assert webgrav.Simulation.from_model(n=64, theta=0.5, alpha=0.002).params["alpha"] == pytest.approx(0.002)
    # The seed's range is the table's: the CLI and the page take 32 bits.
    with pytest.raises(webgrav.WebgravError, match=r"seed = 4294967296: expected a whole number in \[0, 4294967295\]"):
        webgrav.Simulation.from_model(n=64, seed=2**32)
