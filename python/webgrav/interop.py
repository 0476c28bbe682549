"""Simulations from and to the tools astronomers already use.

pynbody: a ``SimSnap``'s families become webgrav's particle kinds (gas →
gas, dm → halo, star → stars, bh → black hole, i.e. kind 5) and back
(halo → dm; disk, bulge, stars and black holes → star, gas → gas); the
exact kind travels in an array ``webgrav_kind`` so a round trip keeps
disk and bulge apart. ``iord`` carries the ids.

Units are stripped explicitly, never guessed:

- pynbody, ``units=None`` (default): the numbers as the snapshot holds
  them, taken to be webgrav's G = 1 units already (N-body units);
  ``units="physical"``: converted to kpc, M☉ and km/s by pynbody, then to
  webgrav's G = 1 units as Bonsai chooses them (1 kpc, 2.325e9 M☉,
  100 km/s; time unit 9.78 Myr), like ``webgrav run --units``.
- AMUSE: the caller names the units the numbers are taken in
  (``length=nbody_system.length, mass=nbody_system.mass,
  speed=nbody_system.speed``, or any set in which G = 1); each quantity is
  turned into numbers with ``value_in``. AMUSE is not a dependency:
  anything with ``position``, ``velocity`` and ``mass`` quantities that
  have ``value_in`` works.
"""

import numpy as np

from . import arrays

# pynbody's family names and webgrav's kinds (Gadget-2's numbering).
FAMILY_KIND = {"gas": 0, "dm": 1, "star": 4, "bh": 5}
KIND_FAMILY = {0: "gas", 1: "dm", 2: "star", 3: "star", 4: "star", 5: "star"}

# webgrav's physical units (snapshot::gadget::to_nbody): G = 1 with these.
UNIT_KPC = 1.0
UNIT_MSUN = 2.325e9
UNIT_KMS = 100.0
# kpc / (100 km/s) in Gyr.
UNIT_GYR = 3.0856775814913673e16 / (UNIT_KMS * 3.15576e16)


def _numbers(array, unit):
    """The numbers of a pynbody array, in ``unit`` where one is given."""
    if unit is not None:
        array = array.in_units(unit)
    return np.asarray(array.view(np.ndarray), dtype=np.float64)


def _time(snap, physical):
    t = snap.properties.get("time", 0.0)
    if physical and hasattr(t, "in_units"):
        return float(t.in_units("Gyr")) / UNIT_GYR
    try:
        return float(t)
    except (TypeError, ValueError):
        raise arrays.invalid(
            f"the snapshot's time {t!r} has units: pass units='physical' to convert it"
        ) from None


def _check_units(units):
    if units not in (None, "physical"):
        raise arrays.invalid(f"units = {units!r}: expected None (N-body numbers) or 'physical'")
    return units == "physical"


def from_pynbody(cls, snap, *, units=None, **run):
    """A simulation of a pynbody ``SimSnap`` (see the module's notes on
    families and units); run parameters as keywords."""
    physical = _check_units(units)
    pos, vel, mass, ids, kinds = [], [], [], [], []
    for family in snap.families():
        if family.name not in FAMILY_KIND:
            raise arrays.invalid(
                f"pynbody family '{family.name}' has no webgrav kind "
                f"(expected {', '.join(FAMILY_KIND)})"
            )
        sub = snap[family]
        keys = set(sub.keys()) | set(sub.loadable_keys())
        pos.append(_numbers(sub["pos"], "kpc" if physical else None) / UNIT_KPC)
        vel.append(_numbers(sub["vel"], "km s^-1" if physical else None) / UNIT_KMS ** physical)
        mass.append(_numbers(sub["mass"], "Msol" if physical else None) / UNIT_MSUN ** physical)
        ids.append(np.asarray(sub["iord"]) if "iord" in keys else None)
        if "webgrav_kind" in keys:
            kinds.append(np.asarray(sub["webgrav_kind"], dtype=np.uint8))
        else:
            kinds.append(np.full(len(sub), FAMILY_KIND[family.name], dtype=np.uint8))
    if not pos:
        raise arrays.invalid("the pynbody snapshot has no particles")
    if any(i is None for i in ids):
        # Without ids in every family: numbered in the snapshot's order.
        ids = None
    else:
        ids = np.concatenate(ids)
    kinds = np.concatenate(kinds)
    # A snapshot of one family of dark matter is a one-component model.
    return cls(
        np.concatenate(pos),
        np.concatenate(vel),
        np.concatenate(mass),
        ids=ids,
        kinds=kinds,
        time=_time(snap, physical),
        **run,
    )


def to_pynbody(self, *, units=None):
    """The state as a new pynbody ``SimSnap``: families from the kinds
    (particles without kinds are dark matter, as webgrav's Tipsy files have
    them), ``iord`` the ids, ``webgrav_kind`` the kinds, ``eps`` the
    softening, ``phi`` the potential. ``units='physical'`` writes kpc, M☉,
    km/s and Gyr; the default leaves N-body numbers without units."""
    import pynbody

    physical = _check_units(units)
    pos, vel, mass, pot, ids = self.pos, self.vel, self.mass, self.pot, self.ids
    kinds = self.kinds
    if kinds is None:
        kinds = np.full(len(mass), 1, dtype=np.uint8)
    family = np.array([KIND_FAMILY[int(k)] for k in kinds])
    counts = {f: int((family == f).sum()) for f in ("dm", "star", "gas")}
    snap = pynbody.new(**{f: c for f, c in counts.items() if c})
    eps = self.params["eps"]
    for name, count in counts.items():
        if not count:
            continue
        sub = snap[getattr(pynbody.family, name)]
        pick = family == name
        sub["pos"] = pos[pick] * UNIT_KPC
        sub["vel"] = vel[pick] * UNIT_KMS ** physical
        sub["mass"] = mass[pick] * UNIT_MSUN ** physical
        sub["phi"] = pot[pick] * (UNIT_KMS**2) ** physical
        sub["eps"] = np.full(count, eps * UNIT_KPC)
        # Unsigned, as webgrav's ids are: int64 would turn ids from 2^63
        # negative.
        sub["iord"] = ids[pick].astype(np.uint64)
        sub["webgrav_kind"] = kinds[pick].astype(np.int32)
        if physical:
            sub["pos"].units = "kpc"
            sub["eps"].units = "kpc"
            sub["vel"].units = "km s^-1"
            sub["phi"].units = "km^2 s^-2"
            sub["mass"].units = "Msol"
    if physical:
        snap.properties["time"] = pynbody.units.Unit(f"{self.time * UNIT_GYR} Gyr")
    else:
        snap.properties["time"] = self.time
    return snap


def from_amuse(cls, particles, *, length, mass, speed, **run):
    """A simulation of an AMUSE particle set, its quantities turned into
    numbers in the units named (which must make G = 1, e.g. AMUSE's
    ``nbody_system.length``, ``nbody_system.mass``, ``nbody_system.speed``);
    the particles' ``key`` become the ids where they have keys."""
    pos = particles.position.value_in(length)
    vel = particles.velocity.value_in(speed)
    m = particles.mass.value_in(mass)
    ids = getattr(particles, "key", None)
    return cls(pos, vel, m, ids=None if ids is None else np.asarray(ids), **run)
