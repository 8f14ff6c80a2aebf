"""Twin of csrc/src/gravity.c: uniform gravity with drag, radial gravity wells."""

from __future__ import annotations

import numpy as np

from pysoft.twins._common import F64, I32, MIN_LENGTH, dot, scratch


def gravity_drag(
    force: F64, vel: F64, start_vel: F64, mass: F64, inv_mass: F64, gravity: F64, n: int,
    dim: int, drag: float, record: int,
) -> None:
    """Set ``force = m (g - drag v)`` for movable particles; force and velocity 0 for immovable
    ones (whatever velocity was written to them). With ``record``, first copy the velocities
    into ``start_vel``."""
    if record:
        np.copyto(start_vel[:n], vel[:n])
    movable = inv_mass[:n] != 0.0
    if movable.all():  # the common case, without the masks' copies: the same operations, a
        t = scratch("gravity.t", (n,))  # component at a time (NumPy broadcasts over rows of 2 slowly)
        for c in range(dim):
            np.subtract(gravity[c], np.multiply(drag, vel[:n, c], out=t), out=t)
            np.multiply(mass[:n], t, out=force[:n, c])
        return
    force[:n] = 0.0
    vel[:n][~movable] = 0.0
    force[:n][movable] = mass[:n, None][movable] * (gravity[None, :dim] - drag * vel[:n][movable])


@np.errstate(divide="ignore", invalid="ignore")  # masked-out rows may divide by zero
def radial_gravity(
    force: F64, pos: F64, mass: F64, inv_mass: F64, well_center: F64, well_strength: F64,
    well_falloff: I32, well_min_distance: F64, n: int, w: int, dim: int,
) -> None:
    """Add ``m * strength / max(d, d_min)^falloff`` toward each well, wells in index order."""
    mv = np.flatnonzero(inv_mass[:n] != 0.0)
    x = pos[mv]
    f = force[mv]
    for j in range(w):
        d = well_center[j] - x
        dist = np.sqrt(dot(d, d, dim))
        live = dist > MIN_LENGTH
        eff = np.where(dist > well_min_distance[j], dist, well_min_distance[j])
        denom = np.ones(len(x))
        for _ in range(int(well_falloff[j])):
            denom = denom * eff
        with np.errstate(divide="ignore", invalid="ignore"):
            s = mass[mv] * (well_strength[j] / denom) / dist
        f = np.where(live[:, None], f + s[:, None] * d, f)
    force[mv] = f
