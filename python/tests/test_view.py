"""The interactive view: the web app served with the state's snapshot from
a server on 127.0.0.1 (a fake web app here: the page itself is tested in
the browser by tests/e2e), and the PNG where no web app is found."""

import json
import re
import urllib.error
import urllib.request
from urllib.parse import parse_qs, urljoin, urlsplit

import numpy as np
import pytest

import webgrav
from webgrav import viewer

INDEX = b"<!doctype html><title>fake webgrav</title>"


@pytest.fixture
def dist(tmp_path, monkeypatch):
    """A fake built web app, found through WEBGRAV_WEB_DIST."""
    folder = tmp_path / "dist"
    folder.mkdir()
    (folder / "index.html").write_bytes(INDEX)
    monkeypatch.setenv(viewer.ENV, str(folder))
    return folder


@pytest.fixture
def no_dist(tmp_path, monkeypatch):
    """No web app: WEBGRAV_WEB_DIST names a folder without one."""
    monkeypatch.setenv(viewer.ENV, str(tmp_path))


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read()


def status(url):
    try:
        return urllib.request.urlopen(url, timeout=10).status
    except urllib.error.HTTPError as e:
        return e.code


def iframe_url(v):
    m = re.fullmatch(r'<iframe src="([^"]+)" width="(\d+)" height="(\d+)".*</iframe>', v._repr_html_())
    assert m, v._repr_html_()
    return m.group(1).replace("&amp;", "&"), int(m.group(2)), int(m.group(3))


def test_view_serves_the_web_app_and_the_state(dist, tmp_path):
    sim = webgrav.Simulation.from_model("disk-galaxy", n=300, seed=2, solver="direct")
    v = webgrav.view(sim, width=64, height=48, color="component", hide=["halo"], yaw=0.5)
    url, w, h = iframe_url(v)
    assert (w, h) == (64, 48)
    parts = urlsplit(url)
    assert parts.scheme == "http" and parts.hostname == "127.0.0.1" and parts.path == "/"
    q = parse_qs(parts.query)
    assert q["embed"] == ["1"] and q["autoplay"] == ["0"]
    assert q["color"] == ["component"] and q["halo"] == ["0"] and q["yaw"] == ["0.5"]
    # The page itself, from the web app's folder.
    assert get(urljoin(url, "/")) == INDEX
    # The state as a snapshot file, a path on the same origin.
    (snapshot,) = q["snapshot"]
    assert not urlsplit(snapshot).netloc and not snapshot.startswith("/")
    (tmp_path / "got.gadget").write_bytes(get(urljoin(url, snapshot)))
    back = webgrav.Simulation.from_file(tmp_path / "got.gadget", solver="direct")
    assert back.n == 300
    order = np.argsort(back.ids)
    assert abs(back.pos[order] - sim.pos[np.argsort(sim.ids)]).max() < 1e-6
    assert (back.kinds[order] == sim.kinds[np.argsort(sim.ids)]).all()
    # The fallback picture is the native renderer's PNG, also _repr_png_.
    png = get(urljoin(url, q["fallback"][0]))
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png == v._repr_png_()
    # One server per kernel: a second view reuses it.
    assert urlsplit(iframe_url(webgrav.view(sim, 32, 32))[0]).port == parts.port
    # Nothing but the web app and the views' files.
    token = snapshot.split("/")[1]
    for path in [f"data/{token}/../../{dist.name}/index.html", f"data/{token}/nope", "data/x/state.gadget", "data/", "missing.js"]:
        assert status(urljoin(url, path)) == 404, path


def test_view_of_files_and_a_series(dist, tmp_path):
    sim = webgrav.Simulation.from_model("plummer", n=200, seed=1, solver="direct")
    sim.snapshot(tmp_path / "a.csv")
    index = {"snapshots": [{"file": "a.csv", "time": 0.0}, {"file": "b.bonsai", "time": 0.5}]}
    sim.snapshot(tmp_path / "b.bonsai")
    (tmp_path / "index.json").write_text(json.dumps(index))
    url, _, _ = iframe_url(webgrav.view(tmp_path / "a.csv", 40, 30))
    (one,) = parse_qs(urlsplit(url).query)["snapshot"]
    assert get(urljoin(url, one)) == (tmp_path / "a.csv").read_bytes()
    url, _, _ = iframe_url(webgrav.view([str(tmp_path / "index.json")], 40, 30))
    (series,) = parse_qs(urlsplit(url).query)["series"]
    assert json.loads(get(urljoin(url, series))) == index
    # The files the index lists, beside it (as the page fetches them).
    assert get(urljoin(urljoin(url, series), "b.bonsai")) == (tmp_path / "b.bonsai").read_bytes()


def test_bad_input_is_refused(dist, tmp_path):
    sim = webgrav.Simulation.from_model("plummer", n=100, solver="direct")
    with pytest.raises(TypeError):
        webgrav.view(42)
    with pytest.raises(TypeError, match="unknown view keyword"):
        webgrav.view(sim, colour="speed")
    with pytest.raises(webgrav.WebgravError, match="nothing to hide"):
        webgrav.view(sim, hide=["halo"])
    with pytest.raises(ValueError, match="positive"):
        webgrav.view(sim, width=0)
    with pytest.raises(ValueError, match="at least one"):
        webgrav.view([])
    with pytest.raises(FileNotFoundError):
        webgrav.view(tmp_path / "missing.tipsy")
    (tmp_path / "index.json").write_text('{"snapshots": [{"file": "../x.tipsy", "time": 0}]}')
    with pytest.raises(ValueError, match="not a file beside the index"):
        webgrav.view(tmp_path / "index.json")
    (tmp_path / "index.json").write_text("not json")
    with pytest.raises(ValueError, match="not a series index"):
        webgrav.view(tmp_path / "index.json")


def test_without_the_web_app_show_gives_the_png(no_dist):
    sim = webgrav.Simulation.from_model("plummer", n=100, solver="direct")
    assert viewer.web_dist() is None
    pic = sim.show(16, 16)
    assert isinstance(pic, webgrav.Picture) and pic.png[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(FileNotFoundError, match="WEBGRAV_WEB_DIST"):
        sim.show(16, 16, interactive=True)


def test_show_is_interactive_on_request(dist):
    sim = webgrav.Simulation.from_model("plummer", n=100, solver="direct")
    # Outside a Jupyter kernel the default is the PNG, asked: the view.
    assert isinstance(sim.show(16, 16), webgrav.Picture)
    v = sim.show(16, 16, interactive=True)
    assert isinstance(v, webgrav.View) and v._repr_png_()[:4] == b"\x89PNG"
    assert isinstance(sim.show(16, 16, interactive=False), webgrav.Picture)


def test_the_viewer_and_the_simulation_do_not_import_each_other():
    # Issue 48 item 8: simulation.py imported viewer.py and viewer.py
    # imported simulation.py back; the viewer takes what it draws instead.
    import ast
    from pathlib import Path

    import webgrav.viewer

    tree = ast.parse(Path(webgrav.viewer.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {
        a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names
    }
    assert "simulation" not in imported and "Simulation" not in imported, imported
