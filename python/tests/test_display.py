"""Pictures from webgrav's renderer, for Jupyter."""

import struct
import zlib

import numpy as np
import pytest

import webgrav


def decode_png(data):
    """Width, height and RGBA pixels of an 8-bit RGBA PNG without
    interlacing (what webgrav writes), undoing the row filters."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            w, h, depth, colour = struct.unpack(">IIBB", body[:10])
            assert (depth, colour) == (8, 6)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = 4 * w
    img = np.zeros((h, stride), dtype=np.int32)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(h):
        f = raw[y * (stride + 1)]
        row = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        out = np.zeros(stride, dtype=np.int32)
        for x in range(stride):
            a = out[x - 4] if x >= 4 else 0
            b = prev[x]
            c = prev[x - 4] if x >= 4 else 0
            if f == 0:
                p = 0
            elif f == 1:
                p = a
            elif f == 2:
                p = b
            elif f == 3:
                p = (a + b) // 2
            else:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            out[x] = (row[x] + p) & 0xFF
        img[y] = out
        prev = out
    return w, h, img.reshape(h, w, 4)


def test_picture_draws_the_particles_in_the_middle():
    sim = webgrav.Simulation.from_model("plummer", n=2000, seed=1, solver="direct")
    pic = sim.picture(48, 32)
    assert pic._repr_png_() == pic.png
    w, h, rgba = decode_png(pic.png)
    assert (w, h) == (48, 32)
    light = rgba[:, :, :3].sum(-1)
    # The view is fitted to 90 % of the mass around the centre: the
    # centre is bright, the corners (outside the sphere) much darker.
    assert light[12:20, 20:28].mean() > 4 * light[:4, :4].mean()


def test_show_outside_ipython_returns_the_picture(tmp_path):
    sim = webgrav.Simulation.from_model("plummer", n=100, solver="direct")
    pic = sim.show(16, 16)
    assert isinstance(pic, webgrav.Picture)
    pic.save(tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes() == pic.png


def test_hiding_the_halo_of_a_galaxy_changes_the_picture():
    sim = webgrav.Simulation.from_model("disk-galaxy", n=3000, seed=1, solver="direct")
    whole = sim.picture(32, 32, color="component").png
    disk = sim.picture(32, 32, color="component", hide=["halo"]).png
    assert whole != disk
