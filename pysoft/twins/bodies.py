"""Twin of csrc/src/bodies.c: gas pressure and shape matching."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from pysoft._constants import UNMIRROR_STIFFNESS
from pysoft.twins._common import F64, I32, ranges, scatter_add


@np.errstate(divide="ignore", invalid="ignore")  # bodies without the model: 0/0, unused
def pressure(
    force: F64, pos: F64, outline: I32, body_start: I32, body_count: I32, amount: F64,
    min_area: F64, nb: int, dim: int,
) -> None:
    """Ideal-gas pressure amount / area on each outline edge, half to each endpoint."""
    body, j = ranges(body_start, body_count, nb)
    if not len(body):
        return
    local = j - body_start[body]
    nxt = body_start[body] + (local + 1) % body_count[body]
    p, q = pos[outline[j]], pos[outline[nxt]]
    twice = np.zeros(nb)
    np.add.at(twice, body, p[:, 0] * q[:, 1] - q[:, 0] * p[:, 1])
    area = 0.5 * twice
    half = 0.5 * (amount[:nb] / np.where(area > min_area[:nb], area, min_area[:nb]))
    f = np.stack([half[body] * (q[:, 1] - p[:, 1]), half[body] * -(q[:, 0] - p[:, 0])], axis=1)
    rows = np.stack([outline[j], outline[nxt]], axis=1).reshape(-1)
    scatter_add(force, rows, np.repeat(f, 2, axis=0))


class Fit(NamedTuple):
    """Each body's best-fit rigid motion (internal.h's ps_rigid_fit), and per member entry
    (bodies in order, members in order within each) its body, row, rest offset and offset
    from the body's mean."""

    cx: F64
    cy: F64
    ux: F64
    uy: F64
    co: F64
    si: F64
    w: F64
    mirrored: NDArray[np.bool_]
    body: NDArray[np.intp]
    idx: I32
    q: F64
    rx: F64
    ry: F64


@np.errstate(divide="ignore", invalid="ignore")  # bodies without members: 0/0, unused
def rigid_fit(pos: F64, vel: F64, members: I32, rest: F64, body_start: I32, body_count: I32,
              nb: int) -> Fit:
    """The best-fit rigid motion of each body's members (sums in member order, as np.add.at
    adds: the C loops' order)."""
    body, j = ranges(body_start, body_count, nb)
    idx = members[j]
    x, v, q = pos[idx], vel[idx], rest[j]
    sums = np.zeros((nb, 4))
    np.add.at(sums, body, np.concatenate([x[:, :2], v[:, :2]], axis=1))
    count = body_count[:nb].astype(np.float64)
    cx, cy, ux, uy = (sums[:, i] / count for i in range(4))
    rx, ry = x[:, 0] - cx[body], x[:, 1] - cy[body]
    terms = np.stack([q[:, 0] * rx + q[:, 1] * ry, q[:, 0] * ry - q[:, 1] * rx,
                      rx * (v[:, 1] - uy[body]) - ry * (v[:, 0] - ux[body]), rx * rx + ry * ry,
                      q[:, 0] * rx - q[:, 1] * ry, q[:, 1] * rx + q[:, 0] * ry], axis=1)
    acc = np.zeros((nb, 6))
    np.add.at(acc, body, terms)
    D, S, L, rr, E, T = acc.T
    length = np.sqrt(D * D + S * S)
    co = np.where(length > 0.0, D / length, 1.0)
    si = np.where(length > 0.0, S / length, 0.0)
    w = np.where(rr > 0.0, L / rr, 0.0)
    mirrored = D * D + S * S < E * E + T * T  # a reflection fits better: turned inside out
    return Fit(cx, cy, ux, uy, co, si, w, mirrored, body, idx, q, rx, ry)


def shape_match(
    force: F64, pos: F64, vel: F64, mass: F64, inv_mass: F64, members: I32, rest: F64,
    body_start: I32, body_count: I32, stiffness: F64, damping: F64, nb: int, dim: int,
) -> None:
    """Pull members toward the best-fit rotated rest shape; damp toward the rigid motion."""
    if not body_count[:nb].any():
        return
    f = rigid_fit(pos, vel, members, rest, body_start, body_count, nb)
    body, idx, q, rx, ry = f.body, f.idx, f.q, f.rx, f.ry
    x, v = pos[idx], vel[idx]
    k = np.where(f.mirrored & (stiffness[:nb] < UNMIRROR_STIFFNESS), UNMIRROR_STIFFNESS, stiffness[:nb])
    tx = f.cx[body] + (f.co[body] * q[:, 0] - f.si[body] * q[:, 1])
    ty = f.cy[body] + (f.si[body] * q[:, 0] + f.co[body] * q[:, 1])
    gx, gy = f.ux[body] + -f.w[body] * ry, f.uy[body] + f.w[body] * rx
    mk, md = mass[idx] * k[body], mass[idx] * damping[body]
    out = np.stack([mk * (tx - x[:, 0]) + md * (gx - v[:, 0]),
                    mk * (ty - x[:, 1]) + md * (gy - v[:, 1])], axis=1)
    live = inv_mass[idx] != 0.0
    scatter_add(force, idx[live], out[live])


def rolling_resistance(
    vel: F64, rolled: F64, pos: F64, mass: F64, inv_mass: F64, contact_impulse: F64, members: I32,
    body_start: I32, body_count: I32, coefficient: F64, nb: int, dim: int,
) -> None:
    """Take up to coefficient x this substep's collider load x its lever of angular momentum
    from each touching body's spin; bodies in order (a body reads what earlier ones wrote)."""
    count = np.where(coefficient[:nb] > 0.0, body_count[:nb], 0).astype(np.int32)
    body, j = ranges(body_start, count, nb)
    if not len(body):
        return
    idx = members[j]
    owners = np.bincount(idx, minlength=len(vel))
    if (owners[idx] > 1).any():  # bodies share members: one at a time, in order
        for b in np.unique(body).tolist():
            one = np.zeros(nb, np.int32)
            one[b] = count[b]
            _rolling(vel, rolled, pos, mass, inv_mass, contact_impulse, members, body_start, one,
                     coefficient, nb)
    else:
        _rolling(vel, rolled, pos, mass, inv_mass, contact_impulse, members, body_start, count,
                 coefficient, nb)


@np.errstate(divide="ignore", invalid="ignore")  # bodies that do not roll: 0/0, unused
def _rolling(vel: F64, rolled: F64, pos: F64, mass: F64, inv_mass: F64, contact_impulse: F64,
             members: I32, body_start: I32, count: I32, coefficient: F64, nb: int) -> None:
    """rolling_resistance for bodies that share no member (each reads only its own)."""
    body, j = ranges(body_start, count, nb)
    idx = members[j]
    x, v, m = pos[idx], vel[idx], mass[idx]
    sums = np.zeros((nb, 6))
    np.add.at(sums, body, np.stack([contact_impulse[idx], m, m * x[:, 0], m * x[:, 1], m * v[:, 0],
                                    m * v[:, 1]], axis=1))
    total, M = sums[:, 0], sums[:, 1]
    held = np.zeros(nb, bool)
    np.logical_or.at(held, body, inv_mass[idx] == 0.0)
    J = total - rolled[:nb]
    rolling = count > 0
    rolled[:nb][rolling] = total[rolling]
    cx, cy, ux, uy = (sums[:, i] / M for i in range(2, 6))
    rx, ry = x[:, 0] - cx[body], x[:, 1] - cy[body]
    terms = np.stack([m * (rx * (v[:, 1] - uy[body]) - ry * (v[:, 0] - ux[body])),
                      m * (rx * rx + ry * ry), contact_impulse[idx] * np.sqrt(rx * rx + ry * ry)], axis=1)
    acc = np.zeros((nb, 3))
    np.add.at(acc, body, terms)
    L, inertia, lever = acc.T
    go = rolling & ~held & (J > 0.0) & (M > 0.0) & (inertia > 0.0) & (L != 0.0)
    limit = coefficient[:nb] * J * (lever / total)
    s = np.where(np.abs(L) <= limit, 1.0, limit / np.abs(L))
    dw = np.where(go, -s * (L / inertia), 0.0)
    live = go[body]
    rows, b = idx[live], body[live]
    np.add.at(vel, (rows, 0), dw[b] * -ry[live])  # unbuffered: a member listed twice moves twice
    np.add.at(vel, (rows, 1), dw[b] * rx[live])
