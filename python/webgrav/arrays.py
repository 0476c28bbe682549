"""Checks and converts what users pass in: numpy arrays (or anything
numpy.asarray takes) of any real dtype and memory order, into the
contiguous float64 / uint64 / uint8 arrays the native module reads. Bad
shapes, lengths that disagree and non-finite values are refused with a
message naming the array and the particle."""

import numpy as np

from ._webgrav import KINDS, WebgravError


def invalid(message):
    """A WebgravError of kind invalid-parameter, like webgrav's own."""
    error = WebgravError(f"invalid parameter: {message}")
    error.kind = "invalid-parameter"
    return error


def _real(name, values):
    a = np.asarray(values)
    # Booleans and complex numbers are no coordinates.
    if a.dtype.kind not in "fiu":
        raise invalid(f"{name} must hold real numbers, got dtype {a.dtype}")
    return a


def _finite(name, a):
    bad = ~np.isfinite(a)
    if bad.any():
        k = int(np.argwhere(bad)[0][0])
        raise invalid(f"{name}[{k}] is not finite: {a[k]}")
    return a


def vectors(name, values, n=None):
    """An (N, 3) float64 C-ordered copy of ``values``."""
    a = _real(name, values)
    if a.ndim != 2 or a.shape[1] != 3 or (n is not None and a.shape[0] != n):
        want = "(N, 3)" if n is None else f"({n}, 3)"
        raise invalid(f"{name} must have shape {want}, got {a.shape}")
    return _finite(name, np.ascontiguousarray(a, dtype=np.float64))


def masses(values, n):
    """N float64 masses; a single number is every particle's mass."""
    a = _real("mass", values)
    if a.ndim == 0:
        a = np.full(n, float(a))
    if a.shape != (n,):
        raise invalid(f"mass must have shape ({n},) (or be one number), got {a.shape}")
    return _finite("mass", np.ascontiguousarray(a, dtype=np.float64))


def ids(values, n):
    """N non-negative integer ids as uint64, or None."""
    if values is None:
        return None
    a = np.asarray(values)
    if a.dtype.kind not in "iu" or a.shape != (n,):
        raise invalid(f"ids must be {n} integers, got dtype {a.dtype} and shape {a.shape}")
    if a.dtype.kind == "i" and (a < 0).any():
        raise invalid(f"ids must be non-negative, got {a[a < 0][0]}")
    return np.ascontiguousarray(a, dtype=np.uint64)


def kinds(values, n):
    """N particle kinds (names of webgrav.KINDS or Gadget-2's numbers 0-5)
    as uint8, or None."""
    if values is None:
        return None
    a = np.asarray(values)
    if a.shape != (n,):
        raise invalid(f"kinds must have shape ({n},), got {a.shape}")
    if a.dtype.kind in "US":
        names = {name: k for k, name in enumerate(KINDS)}
        unknown = sorted(set(a.tolist()) - set(names))
        if unknown:
            raise invalid(f"unknown kind {unknown[0]!r}: expected one of {', '.join(KINDS)}")
        return np.array([names[x] for x in a.tolist()], dtype=np.uint8)
    if a.dtype.kind not in "iu" or ((a < 0) | (a >= len(KINDS))).any():
        raise invalid(f"kinds must be names ({', '.join(KINDS)}) or numbers 0-5")
    return np.ascontiguousarray(a, dtype=np.uint8)
