"""Twin of csrc/src/springs.c: damped springs and area springs."""

from __future__ import annotations

import numpy as np

from pysoft.twins._common import (
    F64,
    I32,
    INVERSION_GAIN,
    MIN_LENGTH,
    dot_into,
    scatter_add,
    scatter_pairs,
    scratch,
)


def springs(
    force: F64, pos: F64, vel: F64, pairs: I32, rest_length: F64,
    stiffness: F64, damping: F64, spring_end: I32, incidence: I32, spring_force: F64,
    incidence_state: I32, m: int, dim: int, n: int, threads: int,
) -> None:
    """Add damped spring forces; spring j adds ``+f`` to ``a`` then ``-f`` to ``b``, a spring
    too short to have an axis ``f = -0.0``. (The C kernel's workspace and threads are not
    needed here.)"""
    a, b = pairs[:m, 0], pairs[:m, 1]
    # in work arrays (scratch): d = x_b - x_a, then u = d / |d|; e = the ends' other rows
    d, e, w = scratch("springs.d", (m, dim)), scratch("springs.e", (m, dim)), scratch("springs.w", (m,))
    np.take(pos, b, axis=0, out=d)  # (np.take: faster than pos[b])
    np.subtract(d, np.take(pos, a, axis=0, out=e), out=d)
    length = dot_into(scratch("springs.length", (m,)), d, d, dim, w)
    np.sqrt(length, out=length)
    live = length > MIN_LENGTH
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(1.0, length, out=w)
        for c in range(dim):  # u = d / |d|, a column at a time (faster than broadcasting)
            np.multiply(d[:, c], w, out=d[:, c])
        np.take(vel, b, axis=0, out=e)
        np.subtract(e, np.take(vel, a, axis=0, out=scratch("springs.va", (m, dim))), out=e)
        vrel = dot_into(scratch("springs.vrel", (m,)), e, d, dim, w)
        s = np.add(np.multiply(stiffness[:m], np.subtract(length, rest_length[:m], out=w), out=w),
                   np.multiply(damping[:m], vrel, out=vrel), out=w)
        f = e
        for c in range(dim):
            np.multiply(s, d[:, c], out=f[:, c])
        if not live.all():
            f[~live] = -0.0
    scatter_pairs(force, a, b, f)


def area_springs(
    force: F64, pos: F64, vel: F64, triangles: I32, rest_area: F64,
    stiffness: F64, damping: F64, m: int, dim: int,
) -> None:
    """Add the force -(k (A - A0) + c dA/dt) dA/dx of each triangle's signed area A to its
    corners a, then b, then c."""
    t = triangles[:m]
    a, b, c = pos[t[:, 0]], pos[t[:, 1]], pos[t[:, 2]]
    area = 0.5 * ((b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0]))
    g = np.stack([
        np.stack([0.5 * (b[:, 1] - c[:, 1]), 0.5 * (c[:, 0] - b[:, 0])], axis=1),
        np.stack([0.5 * (c[:, 1] - a[:, 1]), 0.5 * (a[:, 0] - c[:, 0])], axis=1),
        np.stack([0.5 * (a[:, 1] - b[:, 1]), 0.5 * (b[:, 0] - a[:, 0])], axis=1)], axis=1)  # (m, 3, 2)
    v = vel[t.reshape(-1)].reshape(-1, 3, dim)
    rate = np.zeros(len(t))
    for corner in range(3):
        for axis in range(2):
            rate = rate + g[:, corner, axis] * v[:, corner, axis]
    s = -(stiffness[:m] * (area - rest_area[:m]) + damping[:m] * rate)
    s = np.where(area < 0.0, s - INVERSION_GAIN * stiffness[:m] * area, s)
    scatter_add(force, t.reshape(-1), (s[:, None, None] * g).reshape(-1, 2))
