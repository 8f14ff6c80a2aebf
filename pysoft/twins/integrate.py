"""Twin of csrc/src/integrate.c: the integrators."""

from __future__ import annotations

import numpy as np

from pysoft.twins._common import F64, scratch


def symplectic_euler(
    pos: F64, vel: F64, prev_pos: F64, force: F64, inv_mass: F64, n: int, dim: int, h: float
) -> None:
    """``p = x`` (all rows); ``v += h a; x += h v`` for movable particles."""
    prev_pos[:n] = pos[:n]
    mv = inv_mass[:n] != 0.0
    if mv.all():  # the common case, without the masks' copies: the same operations (v a
        t = scratch("integrate.t", (n,))  # component at a time: NumPy broadcasts over rows of 2 slowly)
        for c in range(dim):
            np.multiply(np.multiply(force[:n, c], inv_mass[:n], out=t), h, out=t)
            np.add(vel[:n, c], t, out=vel[:n, c])
        step = np.multiply(vel[:n], h, out=scratch("integrate.step", (n, dim)))
        np.add(pos[:n], step, out=pos[:n])
        return
    im = inv_mass[:n, None][mv]
    vel[:n][mv] = vel[:n][mv] + h * (force[:n][mv] * im)
    pos[:n][mv] = pos[:n][mv] + h * vel[:n][mv]


def explicit_euler(
    pos: F64, vel: F64, prev_pos: F64, force: F64, inv_mass: F64, n: int, dim: int, h: float
) -> None:
    """``p = x`` (all rows); ``x += h v; v += h a`` for movable particles."""
    prev_pos[:n] = pos[:n]
    mv = inv_mass[:n] != 0.0
    im = inv_mass[:n, None][mv]
    pos[:n][mv] = pos[:n][mv] + h * vel[:n][mv]
    vel[:n][mv] = vel[:n][mv] + h * (force[:n][mv] * im)


def verlet_drift(
    pos: F64, vel_pred: F64, prev_pos: F64, vel: F64, force: F64, inv_mass: F64, n: int, dim: int,
    h: float,
) -> None:
    """``p = x``; ``x += h v + h^2/2 a``; ``v_pred = v + h a`` (velocity Verlet, first half)."""
    prev_pos[:n] = pos[:n]
    mv = inv_mass[:n] != 0.0
    a = force[:n][mv] * inv_mass[:n, None][mv]
    hh = 0.5 * h * h
    pos[:n][mv] = pos[:n][mv] + h * vel[:n][mv] + hh * a
    vel_pred[:n][mv] = vel[:n][mv] + h * a


def verlet_kick(
    vel: F64, force0: F64, force1: F64, inv_mass: F64, n: int, dim: int, h: float
) -> None:
    """``v += h/2 (a0 + a1)`` (velocity Verlet, second half)."""
    mv = inv_mass[:n] != 0.0
    im = inv_mass[:n, None][mv]
    vel[:n][mv] = vel[:n][mv] + (0.5 * h) * (force0[:n][mv] * im + force1[:n][mv] * im)


def rk4_stage(
    pos_out: F64, vel_out: F64, pos: F64, vel: F64, dpos: F64, force: F64,
    inv_mass: F64, n: int, dim: int, c: float,
) -> None:
    """One RK4 stage state ``x + c dx, v + c a``; immovable rows are copied."""
    mv = inv_mass[:n] != 0.0
    pos_out[:n] = pos[:n]
    vel_out[:n] = vel[:n]
    pos_out[:n][mv] = pos[:n][mv] + c * dpos[:n][mv]
    vel_out[:n][mv] = vel[:n][mv] + c * (force[:n][mv] * inv_mass[:n, None][mv])


def rk4_combine(
    pos: F64, vel: F64, prev_pos: F64, v1: F64, v2: F64, v3: F64, v4: F64,
    f1: F64, f2: F64, f3: F64, f4: F64, inv_mass: F64, n: int, dim: int, h: float,
) -> None:
    """``p = x``; ``x += h/6 (v1 + 2v2 + 2v3 + v4)``, ``v += h/6 (a1 + 2a2 + 2a3 + a4)``."""
    prev_pos[:n] = pos[:n]
    mv = inv_mass[:n] != 0.0
    h6 = h / 6.0
    vs = v1[:n][mv] + 2.0 * v2[:n][mv] + 2.0 * v3[:n][mv] + v4[:n][mv]
    pos[:n][mv] = pos[:n][mv] + h6 * vs
    fsum = f1[:n][mv] + 2.0 * f2[:n][mv] + 2.0 * f3[:n][mv] + f4[:n][mv]
    vel[:n][mv] = vel[:n][mv] + h6 * (fsum * inv_mass[:n, None][mv])


def xpbd_predict(
    pos: F64, prev_pos: F64, vel: F64, force: F64, inv_mass: F64, n: int, dim: int, h: float
) -> None:
    """``p = x; v += h a; x += h v`` (immovable rows: only ``p = x``)."""
    symplectic_euler(pos, vel, prev_pos, force, inv_mass, n, dim, h)


def xpbd_velocity(
    vel: F64, pos: F64, prev_pos: F64, withheld: F64, inv_mass: F64, n: int, dim: int, h: float
) -> None:
    """``v = (x - p) / h - withheld`` for movable particles: the position change, less the
    velocity the constraints' caps kept back from their corrections."""
    mv = inv_mass[:n] != 0.0
    vel[:n][mv] = (pos[:n][mv] - prev_pos[:n][mv]) * (1.0 / h) - withheld[:n][mv]
