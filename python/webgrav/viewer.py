"""Interactive views in Jupyter: the built web app (the page's own WebGPU
renderer and series player) in an iframe, with the state as a snapshot
file. A small HTTP server on 127.0.0.1 (one per kernel, in a daemon
thread) serves the web app and the files of every view; the page opens
them with ``?embed=1&snapshot=...`` and, where the browser has no WebGPU,
shows ``fallback=``, the native renderer's PNG, which frontends without
HTML get too (``_repr_png_``).

The web app is found in ``$WEBGRAV_WEB_DIST`` (a ``trunk build`` output),
else in the package's ``web/`` folder (a wheel built after ``trunk build
--release --dist python/webgrav/web``).
"""

import atexit
import functools
import html
import http.server
import json
import os
import secrets
import shutil
import tempfile
import threading
from pathlib import Path
from urllib.parse import quote, unquote, urlencode, urlsplit

from ._webgrav import Engine
from .display import Picture


ENV = "WEBGRAV_WEB_DIST"

# Simulation.picture's view keywords → the page's URL parameters.
_URL_KEYS = {
    "color": "color",
    "yaw": "yaw",
    "pitch": "pitch",
    "distance": "dist",
    "fov": "fov",
    "point_size": "ps",
    "brightness": "bright",
    "attenuation": "atten",
}


def web_dist():
    """The built web app's folder (holding its ``index.html``), or None."""
    env = os.environ.get(ENV)
    folder = Path(env) if env else Path(__file__).parent / "web"
    return folder if (folder / "index.html").is_file() else None


def _no_dist():
    env = os.environ.get(ENV)
    where = f"{ENV}={env} has no index.html" if env else f"{ENV} is not set"
    return FileNotFoundError(
        f"no built web app ({where}, and the package has no web/ folder): "
        "run `trunk build` and set WEBGRAV_WEB_DIST to its dist/ folder, or "
        "build the wheel after `trunk build --release --dist python/webgrav/web`"
    )


class View:
    """An interactive view of a state or series: Jupyter shows
    ``_repr_html_`` (an iframe of the web app), frontends without HTML
    ``_repr_png_`` (the native renderer's picture, ``picture``)."""

    def __init__(self, url, width, height, picture):
        self.url = url
        self.width = width
        self.height = height
        self.picture = picture

    def _repr_html_(self):
        return (
            f'<iframe src="{html.escape(self.url)}" width="{self.width}" '
            f'height="{self.height}" style="border: 0" title="webgrav" '
            'allow="fullscreen"></iframe>'
        )

    def _repr_png_(self):
        return self.picture.png

    def __repr__(self):
        return f"<webgrav.View {self.url}>"


class _Handler(http.server.SimpleHTTPRequestHandler):
    """The web app's files, and under ``/data/TOKEN/NAME`` the files views
    registered (nothing else: no listings, no paths outside them)."""

    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".js": "text/javascript",
        ".svg": "image/svg+xml",
    }

    def __init__(self, files, *args, **kwargs):
        self.files = files
        super().__init__(*args, **kwargs)

    def _data(self):
        """(is a /data/ path, the registered file it names or None)."""
        parts = urlsplit(self.path).path.split("/")
        if len(parts) < 2 or parts[1] != "data":
            return False, None
        if len(parts) != 4:
            return True, None
        return True, self.files.get((unquote(parts[2]), unquote(parts[3])))

    def send_head(self):
        is_data, found = self._data()
        if is_data and found is None:
            self.send_error(404)
            return None
        return super().send_head()

    def translate_path(self, path):
        is_data, found = self._data()
        return str(found) if is_data and found else super().translate_path(path)

    def list_directory(self, path):
        self.send_error(404)
        return None

    def log_message(self, *args):
        pass


class _Server:
    """One HTTP server on 127.0.0.1, a free port, serving ``dist``."""

    def __init__(self, dist):
        self.files = {}  # (token, name) -> path
        handler = functools.partial(_Handler, self.files, directory=str(dist))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        threading.Thread(
            target=self.httpd.serve_forever, name="webgrav-view", daemon=True
        ).start()


_lock = threading.Lock()
_servers = {}  # dist folder -> _Server
_scratch = []  # the temporary folder of the kernel's views, once made


def _server(dist):
    key = str(Path(dist).resolve())
    with _lock:
        if key not in _servers:
            _servers[key] = _Server(dist)
        return _servers[key]


def _temp_folder():
    with _lock:
        if not _scratch:
            _scratch.append(Path(tempfile.mkdtemp(prefix="webgrav-view-")))
            atexit.register(shutil.rmtree, str(_scratch[0]), ignore_errors=True)
        folder = _scratch[0] / secrets.token_hex(8)
    folder.mkdir()
    return folder


def _series_files(index):
    """The snapshot files a series index lists, beside it."""
    try:
        listed = [s["file"] for s in json.loads(index.read_text())["snapshots"]]
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{index}: not a series index ({e})") from None
    for name in listed:
        if not isinstance(name, str) or Path(name).name != name:
            raise ValueError(f"{index}: {name!r} is not a file beside the index")
    return [index.parent / name for name in listed]


def _url_options(options):
    """The page's URL parameters for ``Simulation.picture``'s keywords."""
    out = []
    for key, value in options.items():
        if key == "hide":
            # The page hides the dark haloes only.
            if "halo" in value:
                out.append(("halo", "0"))
        elif key == "target":
            out += [(k, str(float(x))) for k, x in zip(("tx", "ty", "tz"), value)]
        elif key in _URL_KEYS:
            text = str(int(bool(value))) if key == "attenuation" else str(value)
            out.append((_URL_KEYS[key], text))
        else:
            raise TypeError(f"unknown view keyword {key!r}")
    return out


class _FileState:
    """A snapshot file drawn by webgrav's renderer (the view's fallback
    picture), read as ``Simulation.from_file`` reads it."""

    def __init__(self, path):
        self._engine = Engine.from_file(str(path), None, {})

    def picture(self, width, height, *, color="speed", hide=(), **camera):
        png = self._engine.picture(
            int(width), int(height), color, [str(k) for k in hide], **camera
        )
        return Picture(png)


def view(obj, width=640, height=480, **options):
    """An interactive view (``webgrav.View``) of ``obj`` in the web app's
    WebGPU renderer: a ``Simulation`` (its state now, as a snapshot), a
    snapshot's path, or a list of paths (a series; a run's ``index.json``
    brings the files it lists). ``width`` × ``height``: the iframe's size
    and the fallback picture's pixels. ``options``: ``Simulation.picture``'s
    view keywords (color, hide=["halo"], the camera). Raises
    ``FileNotFoundError`` where no built web app is found (see the module)."""
    width, height = int(width), int(height)
    if width <= 0 or height <= 0:
        raise ValueError(f"width and height must be positive, got {width}×{height}")
    dist = web_dist()
    if dist is None:
        raise _no_dist()
    query = [("embed", "1"), ("autoplay", "0")] + _url_options(options)
    folder = _temp_folder()
    served = {}  # name -> path
    # A state that writes its snapshot and draws itself (a Simulation):
    # taken by what it does, so this module needs no Simulation.
    if hasattr(obj, "snapshot") and hasattr(obj, "picture"):
        # Gadget-2 holds every kind and id as they are (the page reads
        # only the one file, no side files).
        served["state.gadget"] = folder / "state.gadget"
        obj.snapshot(served["state.gadget"])
        shown = obj
        query.append(("snapshot", "state.gadget"))
    else:
        paths = [obj] if isinstance(obj, (str, os.PathLike)) else obj
        if not isinstance(paths, (list, tuple)) or not all(
            isinstance(p, (str, os.PathLike)) for p in paths
        ):
            raise TypeError(
                "view() takes a Simulation, a snapshot's path or a list of paths, "
                f"not {type(obj).__name__}"
            )
        if not paths:
            raise ValueError("view() needs at least one snapshot")
        snapshots = []
        for p in map(Path, paths):
            if not p.is_file():
                raise FileNotFoundError(f"no snapshot file {p}")
            if p.name == "index.json":
                listed = _series_files(p)
                query.append(("series", p.name))
            else:
                listed = [p]
                query.append(("snapshot", p.name))
            snapshots += listed
            for f in {p, *listed}:
                if not f.is_file():
                    raise FileNotFoundError(f"{p} lists {f.name}, which is not there")
                if served.setdefault(f.name, f.resolve()) != f.resolve():
                    raise ValueError(f"two files named {f.name} in one view")
        if not snapshots:
            raise ValueError("view() needs at least one snapshot")
        shown = _FileState(snapshots[0])
    # The native picture: the page's fallback and _repr_png_ (drawn
    # first: a bad view keyword is refused before anything is served).
    picture = shown.picture(width, height, **options)
    picture.save(folder / "fallback.png")
    server = _server(dist)
    # The view's files under data/TOKEN/ (index entries beside their
    # index), the picture under a token of its own (no name clashes).
    token, pic = folder.name, secrets.token_hex(8)
    for name, path in served.items():
        server.files[(token, name)] = path
    server.files[(pic, "fallback.png")] = folder / "fallback.png"
    files = ("snapshot", "series")
    query = [(k, f"data/{token}/{quote(v)}" if k in files else v) for k, v in query]
    query.append(("fallback", f"data/{pic}/fallback.png"))
    return View(server.url + "?" + urlencode(query), width, height, picture)

