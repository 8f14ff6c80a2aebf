"""The NumPy twins of the C kernels: same names (without ``ps_``), same arguments.

Each twin is the readable definition of its kernel; ``csrc/`` is the fast
one. Arrays are the Store's: positions, velocities and forces ``(n, dim)``
float64, per-particle scalars ``(n,)``, spring pairs ``(m, 2)`` int32 rows.
Written arrays are modified in place, as in C. Each twin evaluates the same
expressions in the same order as its kernel (see the essays at the top of
the C files), so the parity tests can ask for identical bits.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]
I32 = NDArray[np.int32]

MIN_LENGTH = 1e-12  # PS_MIN_LENGTH in forces.c: below it a spring has no axis


def _dot(a: F64, b: F64, dim: int) -> F64:
    """Row-wise dot product, summed left to right like the C loops."""
    out = np.zeros(len(a))
    for c in range(dim):
        out = out + a[:, c] * b[:, c]
    return out


# forces.c -------------------------------------------------------------------


def gravity_drag(
    force: F64, vel: F64, mass: F64, inv_mass: F64, gravity: F64, n: int, dim: int,
    drag: float,
) -> None:
    """Set ``force = m (g - drag v)`` for movable particles, 0 for immovable."""
    movable = inv_mass[:n] != 0.0
    force[:n] = 0.0
    force[:n][movable] = mass[:n, None][movable] * (gravity[None, :dim] - drag * vel[:n][movable])


def springs(
    force: F64, pos: F64, vel: F64, pairs: I32, rest_length: F64,
    stiffness: F64, damping: F64, m: int, dim: int,
) -> None:
    """Add damped spring forces; spring j adds ``+f`` to ``a`` then ``-f`` to ``b``."""
    a, b = pairs[:m, 0], pairs[:m, 1]
    d = pos[b] - pos[a]
    length = np.sqrt(_dot(d, d, dim))
    live = length > MIN_LENGTH
    with np.errstate(divide="ignore", invalid="ignore"):
        u = d * (1.0 / length)[:, None]
    vrel = _dot(vel[b] - vel[a], u, dim)
    s = stiffness[:m] * (length - rest_length[:m]) + damping[:m] * vrel
    f = (s[:, None] * u)[live]
    # Interleave (a0, b0, a1, b1, ...) so np.add.at accumulates in the C order.
    rows = np.stack([a[live], b[live]], axis=1).reshape(-1)
    vals = np.stack([f, -f], axis=1).reshape(-1, dim)
    np.add.at(force, rows, vals)


# integrate.c ----------------------------------------------------------------


def symplectic_euler(
    pos: F64, vel: F64, force: F64, inv_mass: F64, n: int, dim: int, h: float
) -> None:
    """``v += h a; x += h v`` for movable particles."""
    mv = inv_mass[:n] != 0.0
    im = inv_mass[:n, None][mv]
    vel[:n][mv] = vel[:n][mv] + h * (force[:n][mv] * im)
    pos[:n][mv] = pos[:n][mv] + h * vel[:n][mv]


def explicit_euler(
    pos: F64, vel: F64, force: F64, inv_mass: F64, n: int, dim: int, h: float
) -> None:
    """``x += h v; v += h a`` for movable particles."""
    mv = inv_mass[:n] != 0.0
    im = inv_mass[:n, None][mv]
    pos[:n][mv] = pos[:n][mv] + h * vel[:n][mv]
    vel[:n][mv] = vel[:n][mv] + h * (force[:n][mv] * im)


def verlet_drift(
    pos: F64, vel_pred: F64, vel: F64, force: F64, inv_mass: F64, n: int, dim: int, h: float
) -> None:
    """``x += h v + h^2/2 a``; ``v_pred = v + h a`` (velocity Verlet, first half)."""
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
    pos: F64, vel: F64, v1: F64, v2: F64, v3: F64, v4: F64,
    f1: F64, f2: F64, f3: F64, f4: F64, inv_mass: F64, n: int, dim: int, h: float,
) -> None:
    """``x += h/6 (v1 + 2v2 + 2v3 + v4)``, ``v += h/6 (a1 + 2a2 + 2a3 + a4)``."""
    mv = inv_mass[:n] != 0.0
    h6 = h / 6.0
    s = (slice(0, n),)
    pos[s][mv] = pos[s][mv] + h6 * (v1[s][mv] + 2.0 * v2[s][mv] + 2.0 * v3[s][mv] + v4[s][mv])
    fsum = f1[s][mv] + 2.0 * f2[s][mv] + 2.0 * f3[s][mv] + f4[s][mv]
    vel[s][mv] = vel[s][mv] + h6 * (fsum * inv_mass[:n, None][mv])


def xpbd_predict(
    pos: F64, prev_pos: F64, vel: F64, force: F64, inv_mass: F64, n: int, dim: int, h: float
) -> None:
    """``p = x; v += h a; x += h v`` (immovable rows: only ``p = x``)."""
    prev_pos[:n] = pos[:n]
    symplectic_euler(pos, vel, force, inv_mass, n, dim, h)


def xpbd_velocity(
    vel: F64, pos: F64, prev_pos: F64, inv_mass: F64, n: int, dim: int, h: float
) -> None:
    """``v = (x - p) / h`` for movable particles."""
    mv = inv_mass[:n] != 0.0
    vel[:n][mv] = (pos[:n][mv] - prev_pos[:n][mv]) * (1.0 / h)


# collide.c ------------------------------------------------------------------


def collide_planes(
    pos: F64, vel: F64, radius: F64, inv_mass: F64, normal: F64, offset: F64,
    restitution: F64, friction: F64, n: int, k: int, dim: int, rest_speed: float,
) -> int:
    """Push particles out of half-spaces; restitution and Coulomb friction.

    Planes are applied one after another (the C loop is particles outer,
    planes inner, and a particle's result for plane j depends only on its
    own state, so plane-by-plane over all particles gives the same bits).
    """
    contacts = 0
    mv = inv_mass[:n] != 0.0
    for j in range(k):
        nrm = normal[j, :dim]
        x, v = pos[:n], vel[:n]
        dist = _dot(x, np.broadcast_to(nrm, x.shape), dim)
        depth = radius[:n] - (dist - offset[j])
        hit = mv & (depth > 0.0)
        contacts += int(hit.sum())
        x[hit] = x[hit] + depth[hit, None] * nrm
        vh = v[hit]
        vn = _dot(vh, np.broadcast_to(nrm, vh.shape), dim)
        app = vn < 0.0
        vn, vh = vn[app], vh[app]
        vn_new = np.where(-vn > rest_speed, -restitution[j] * vn, 0.0)
        dvn = vn_new - vn
        vt = vh - vn[:, None] * nrm
        vt_len = np.sqrt(_dot(vt, vt, dim))
        limit = friction[j] * dvn
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(vt_len <= limit, 0.0, 1.0 - limit / vt_len)
        rows = np.flatnonzero(hit)[app]
        v[rows] = vt * scale[:, None] + vn_new[:, None] * nrm
    return contacts


# finish.c -------------------------------------------------------------------


def find_unstable(pos: F64, vel: F64, n: int, dim: int, max_speed: float) -> int:
    """First row with a non-finite position/velocity or speed above max_speed, else -1."""
    x, v = pos[:n], vel[:n]
    finite = np.isfinite(x).all(axis=1) & np.isfinite(v).all(axis=1)
    with np.errstate(invalid="ignore", over="ignore"):
        bad = ~finite | (_dot(v, v, dim) > max_speed * max_speed)
    rows = np.flatnonzero(bad)
    return int(rows[0]) if len(rows) else -1
