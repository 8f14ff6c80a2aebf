"""Twin of csrc/src/bodies.c: gas pressure and shape matching."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from pysoft._constants import JACOBI_SWEEPS, UNMIRROR_GAIN, UNMIRROR_STIFFNESS
from pysoft.twins._common import F64, I32, ranges, scatter_add


@np.errstate(divide="ignore", invalid="ignore")  # bodies without the model: 0/0, unused
def pressure(
    force: F64, pos: F64, outline: I32, body_start: I32, body_count: I32, amount: F64,
    min_area: F64, nb: int, dim: int,
) -> None:
    """Ideal-gas pressure amount / area on each outline edge, half to each endpoint (3D: amount
    / volume on each surface triangle, a third to each corner)."""
    if dim == 3:
        _pressure_3d(force, pos, outline, body_start, body_count, amount, min_area, nb)
        return
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


def _triple(a: F64, b: F64, c: F64) -> F64:
    """a . (b x c) per row, in bodies.c's order."""
    return (a[:, 0] * (b[:, 1] * c[:, 2] - b[:, 2] * c[:, 1])
            + a[:, 1] * (b[:, 2] * c[:, 0] - b[:, 0] * c[:, 2])
            + a[:, 2] * (b[:, 0] * c[:, 1] - b[:, 1] * c[:, 0]))


def _tri_normal(a: F64, b: F64, c: F64) -> F64:
    """(b - a) x (c - a) per row (twice the area times the normal)."""
    e, g = b - a, c - a
    return np.stack([e[:, 1] * g[:, 2] - e[:, 2] * g[:, 1], e[:, 2] * g[:, 0] - e[:, 0] * g[:, 2],
                     e[:, 0] * g[:, 1] - e[:, 1] * g[:, 0]], axis=1)


@np.errstate(divide="ignore", invalid="ignore")  # bodies without the model: 0/0, unused
def _pressure_3d(force: F64, pos: F64, surface: I32, body_start: I32, body_count: I32, amount: F64,
                 min_volume: F64, nb: int) -> None:
    """amount / volume on each surface triangle along its normal, a third to each corner."""
    body, j = ranges(body_start, (body_count[:nb] // 3 * 3).astype(np.int32), nb)
    first = (j - body_start[body]) % 3 == 0
    body, j = body[first], j[first]
    if not len(body):
        return
    a, b, c = pos[surface[j]], pos[surface[j + 1]], pos[surface[j + 2]]
    six = np.zeros(nb)
    np.add.at(six, body, _triple(a, b, c))
    volume = six / 6.0
    sixth = (amount[:nb] / np.where(volume > min_volume[:nb], volume, min_volume[:nb])) / 6.0
    f = sixth[body][:, None] * _tri_normal(a, b, c)
    rows = np.stack([surface[j], surface[j + 1], surface[j + 2]], axis=1).reshape(-1)
    scatter_add(force, rows, np.repeat(f, 3, axis=0))


def unmirrored(k: F64) -> F64:
    """bodies.c's unmirrored: a mirrored body's stiffness."""
    gained = UNMIRROR_GAIN * k
    least = np.where(gained > UNMIRROR_STIFFNESS, gained, UNMIRROR_STIFFNESS)
    return np.where(k < least, least, k)


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
    if dim == 3:
        _shape_match_3d(force, pos, vel, mass, inv_mass, members, rest, body_start, body_count,
                        stiffness, damping, nb)
        return
    f = rigid_fit(pos, vel, members, rest, body_start, body_count, nb)
    body, idx, q, rx, ry = f.body, f.idx, f.q, f.rx, f.ry
    x, v = pos[idx], vel[idx]
    k = np.where(f.mirrored, unmirrored(stiffness[:nb]), stiffness[:nb])
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


@np.errstate(divide="ignore", invalid="ignore", over="ignore")  # a theta whose square overflows: t = 0
def best_rotation(S: F64) -> F64:
    """bodies.c's best_rotation for each (3, 3) S[b] = sum q r^T: Horn's quaternion by cyclic
    Jacobi sweeps, the same operations, bodies side by side; (nb, 3, 3) rotations."""
    xx, xy, xz, yx, yy, yz, zx, zy, zz = (S[:, a, e] for a in range(3) for e in range(3))
    A = np.stack([np.stack([xx + yy + zz, yz - zy, zx - xz, xy - yx], axis=1),
                  np.stack([yz - zy, xx - yy - zz, xy + yx, zx + xz], axis=1),
                  np.stack([zx - xz, xy + yx, -xx + yy - zz, yz + zy], axis=1),
                  np.stack([xy - yx, zx + xz, yz + zy, -xx - yy + zz], axis=1)], axis=1)
    V = np.broadcast_to(np.eye(4), A.shape).copy()
    for _ in range(JACOBI_SWEEPS):
        for p in range(3):
            for q in range(p + 1, 4):
                apq = A[:, p, q].copy()
                go = apq != 0.0
                theta = (A[:, q, q] - A[:, p, p]) / (2.0 * apq)
                t = 1.0 / (np.abs(theta) + np.sqrt(theta * theta + 1.0))
                t = np.where(theta < 0.0, -t, t)
                c = 1.0 / np.sqrt(t * t + 1.0)
                s = t * c
                for r in range(4):
                    if r in (p, q):
                        continue
                    akp, akq = A[:, r, p].copy(), A[:, r, q].copy()
                    A[:, r, p] = A[:, p, r] = np.where(go, c * akp - s * akq, akp)
                    A[:, r, q] = A[:, q, r] = np.where(go, s * akp + c * akq, akq)
                app, aqq = A[:, p, p].copy(), A[:, q, q].copy()
                A[:, p, p] = np.where(go, app - t * apq, app)
                A[:, q, q] = np.where(go, aqq + t * apq, aqq)
                A[:, p, q] = A[:, q, p] = np.where(go, 0.0, apq)
                for r in range(4):
                    vkp, vkq = V[:, r, p].copy(), V[:, r, q].copy()
                    V[:, r, p] = np.where(go, c * vkp - s * vkq, vkp)
                    V[:, r, q] = np.where(go, s * vkp + c * vkq, vkq)
    k: NDArray[np.intp] = np.zeros(len(S), np.intp)
    best = A[:, 0, 0].copy()
    for j in range(1, 4):
        higher = A[:, j, j] > best
        k = np.where(higher, j, k)
        best = np.where(higher, A[:, j, j], best)
    w, x, y, z = (V[np.arange(len(S)), i, k] for i in range(4))
    n = ((w * w + x * x) + y * y) + z * z
    ww, xx2, yy2, zz2 = w * w / n, x * x / n, y * y / n, z * z / n
    wx, wy, wz = 2.0 * (w * x) / n, 2.0 * (w * y) / n, 2.0 * (w * z) / n
    xy2, xz2, yz2 = 2.0 * (x * y) / n, 2.0 * (x * z) / n, 2.0 * (y * z) / n
    R = np.stack([((ww + xx2) - yy2) - zz2, xy2 - wz, xz2 + wy,
                  xy2 + wz, ((ww - xx2) + yy2) - zz2, yz2 - wx,
                  xz2 - wy, yz2 + wx, ((ww - xx2) - yy2) + zz2], axis=1)
    return R.reshape(-1, 3, 3)


class Fit3(NamedTuple):
    """Each body's 3D best-fit rigid motion (internal.h's ps_rigid_fit3), and per member entry
    its body, row, rest offset and offset from the body's mean."""

    c: F64  # (nb, 3) mean positions
    u: F64  # (nb, 3) mean velocities
    R: F64  # (nb, 3, 3) best-fit rotations
    w: F64  # (nb, 3) spins
    det: F64  # (nb,) det S: < 0 for a mirrored body
    body: NDArray[np.intp]
    idx: I32
    q: F64
    r: F64


@np.errstate(divide="ignore", invalid="ignore")  # bodies without members: 0/0, unused
def rigid_fit3(pos: F64, vel: F64, members: I32, rest: F64, body_start: I32, body_count: I32,
               nb: int) -> Fit3:
    """ps_rigid_fit3 for every body (sums in member order, as np.add.at adds)."""
    body, j = ranges(body_start, body_count, nb)
    idx = members[j]
    x, v, q = pos[idx], vel[idx], rest[j]
    sums = np.zeros((nb, 6))
    np.add.at(sums, body, np.concatenate([x, v], axis=1))
    count = body_count[:nb].astype(np.float64)
    c, u = sums[:, :3] / count[:, None], sums[:, 3:] / count[:, None]
    r, g = x - c[body], v - u[body]
    rr = (r[:, 0] * r[:, 0] + r[:, 1] * r[:, 1]) + r[:, 2] * r[:, 2]
    terms = [q[:, a] * r[:, e] for a in range(3) for e in range(3)]
    terms += [r[:, 1] * g[:, 2] - r[:, 2] * g[:, 1], r[:, 2] * g[:, 0] - r[:, 0] * g[:, 2],
              r[:, 0] * g[:, 1] - r[:, 1] * g[:, 0]]
    terms += [(rr if a == e else 0.0) - r[:, a] * r[:, e] for a in range(3) for e in range(3)]
    acc = np.zeros((nb, 21))
    np.add.at(acc, body, np.stack(terms, axis=1))
    S, L, inertia = acc[:, :9].reshape(-1, 3, 3), acc[:, 9:12], acc[:, 12:].reshape(-1, 3, 3)
    R = best_rotation(S)
    det = (S[:, 0, 0] * (S[:, 1, 1] * S[:, 2, 2] - S[:, 1, 2] * S[:, 2, 1])
           - S[:, 0, 1] * (S[:, 1, 0] * S[:, 2, 2] - S[:, 1, 2] * S[:, 2, 0])
           + S[:, 0, 2] * (S[:, 1, 0] * S[:, 2, 1] - S[:, 1, 1] * S[:, 2, 0]))

    w, _ = inertia_solve(L, inertia[:, 0, 0], inertia[:, 1, 1], inertia[:, 2, 2], inertia[:, 0, 1],
                         inertia[:, 0, 2], inertia[:, 1, 2])  # (inertia symmetric)
    return Fit3(c, u, R, w, det, body, idx, q, r)


@np.errstate(divide="ignore", invalid="ignore")  # rows not solved: 0/0, replaced
def inertia_solve(L: F64, i00: F64, i11: F64, i22: F64, i01: F64, i02: F64,
                  i12: F64) -> tuple[F64, NDArray[np.bool_]]:
    """internal.h's ps_inertia_solve per row: w with I w = L (I symmetric: i00, i11, i22 on the
    diagonal, i01, i02, i12 off it) by I's adjugate, or 2 L / tr I where I is nearly singular,
    0 where tr I <= 0; and where it was solved (not the last case)."""
    a00, a01, a02 = i11 * i22 - i12 * i12, i02 * i12 - i01 * i22, i01 * i12 - i02 * i11
    a11, a12, a22 = i00 * i22 - i02 * i02, i02 * i01 - i00 * i12, i00 * i11 - i01 * i01
    detI = (i00 * a00 + i01 * a01) + i02 * a02
    tr = (i00 + i11) + i22
    third = tr / 3.0
    solved = detI > 1e-12 * (third * third * third)
    by_adj = np.stack([(a00 * L[:, 0] + a01 * L[:, 1]) + a02 * L[:, 2],
                       (a01 * L[:, 0] + a11 * L[:, 1]) + a12 * L[:, 2],
                       (a02 * L[:, 0] + a12 * L[:, 1]) + a22 * L[:, 2]], axis=1)
    line = np.where((tr > 0.0)[:, None], 2.0 * L / tr[:, None], 0.0)
    return np.where(solved[:, None], by_adj / detI[:, None], line), solved | (tr > 0.0)


def rotated(R: F64, q: F64) -> F64:
    """R q per row ((m, 3, 3) and (m, 3)), in bodies.c's order."""
    return (R[:, :, 0] * q[:, 0:1] + R[:, :, 1] * q[:, 1:2]) + R[:, :, 2] * q[:, 2:3]


def cross(w: F64, r: F64) -> F64:
    """w x r per row."""
    return np.stack([w[:, 1] * r[:, 2] - w[:, 2] * r[:, 1], w[:, 2] * r[:, 0] - w[:, 0] * r[:, 2],
                     w[:, 0] * r[:, 1] - w[:, 1] * r[:, 0]], axis=1)


def _shape_match_3d(force: F64, pos: F64, vel: F64, mass: F64, inv_mass: F64, members: I32, rest: F64,
                    body_start: I32, body_count: I32, stiffness: F64, damping: F64, nb: int) -> None:
    """shape_match in 3D (bodies.c's shape_match_3d): the best-fit rotation by Horn's method,
    the damping's spin from the members' inertia tensor."""
    f = rigid_fit3(pos, vel, members, rest, body_start, body_count, nb)
    body, idx, q, r = f.body, f.idx, f.q, f.r
    x, v = pos[idx], vel[idx]
    k = np.where(f.det < 0.0, unmirrored(stiffness[:nb]), stiffness[:nb])
    target = f.c[body] + rotated(f.R[body], q)
    mk, md = (mass[idx] * k[body])[:, None], (mass[idx] * damping[body])[:, None]
    damp = md * ((f.u[body] + cross(f.w[body], r)) - v)
    # a body with no pull (k = 0) gets its damping alone (C fits no rotation for it)
    out = np.where((k[body] != 0.0)[:, None], mk * (target - x) + damp, damp)
    live = inv_mass[idx] != 0.0
    scatter_add(force, idx[live], out[live])
