"""Twin of csrc/src/springs.c: damped springs and area springs."""

from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from pysoft._constants import VOLUME_STIFFENING
from pysoft.twins._common import (
    F64,
    I32,
    INVERSION_GAIN,
    MIN_LENGTH,
    scatter_add,
    scratch,
    workspace,
)
from pysoft.twins.constraints import _simplex


class _Lists(NamedTuple):
    """A spring table's incidence lists, as the twin sums them. The springs' forces sit in
    rows 0..m-1 of a work array, their negatives in rows m..2m-1 and -0.0 in row 2m (x + -0.0
    is x bit for bit, so it pads a list without changing a sum)."""
    a: NDArray[np.intp]  # each spring's ends
    b: NDArray[np.intp]
    levels: NDArray[np.intp]  # (K, n): row k holds each particle's k-th addition (2m: none)
    deep: NDArray[np.intp]  # the particles with more than K springs
    deeper: NDArray[np.intp]  # (depth - K, len(deep)): their further additions, likewise


def _lists(pairs: I32, state: I32, m: int, n: int) -> _Lists:
    """The lists for these springs: kept from the last call while ``state`` says the springs
    have not changed (as the C kernel keeps its own), else built afresh.

    The C kernel keeps its lists in the workspace arrays; the twin's take a form NumPy sums
    quickly, so they are kept in this thread's workspace (``_common.workspace``) by the id of
    the spring term's incidence_state (held weakly: a state of the same id is a new term's,
    and is rebuilt), and built when the C kernel would build its own (incidence_state says
    they are stale) or when another thread steps the world."""
    built = workspace()
    have = built.get(f"springs.lists.{id(state)}")
    if state[0] and state[1] == m and state[2] == n and isinstance(have, tuple) and have[0]() is state:
        return have[1]  # type: ignore[no-any-return]
    ends = pairs[:m].reshape(-1).astype(np.intp)  # entry 2j: spring j's end a; 2j + 1: its end b
    order = np.argsort(ends, kind="stable")  # each particle's entries, in spring order
    count = np.bincount(ends, minlength=n)
    end = np.cumsum(count)
    state[:] = 1, m, n
    source = np.where(order % 2 == 0, order // 2, m + order // 2)  # entry e adds row e // 2 or m + e // 2
    first = end - count
    # K levels over every particle (the rest padded with row 2m), K the fewest that leave at
    # most an eighth of the particles with further additions (a hub of many springs)
    width = int(np.sort(count)[::-1][n // 8])

    def padded(levels: NDArray[np.intp], rows: NDArray[np.intp]) -> NDArray[np.intp]:
        at = first[rows] + levels[:, None]
        return np.where(levels[:, None] < count[rows], source[np.minimum(at, 2 * m - 1)], 2 * m)

    deep = np.flatnonzero(count > width)
    lists = _Lists(ends[0::2].copy(), ends[1::2].copy(), padded(np.arange(width), np.arange(n)),
                   deep, padded(np.arange(width, int(count.max())), deep))
    key = f"springs.lists.{id(state)}"
    built[key] = (weakref.ref(state, lambda _: built.pop(key, None)), lists)
    return lists


def springs(
    force: F64, pos: F64, vel: F64, pairs: I32, rest_length: F64,
    stiffness: F64, damping: F64, spring_end: I32, incidence: I32, spring_force: F64,
    incidence_state: I32, m: int, dim: int, n: int, threads: int,
) -> None:
    """Add damped spring forces; spring j adds ``+f`` to ``a`` then ``-f`` to ``b``, a spring
    too short to have an axis ``f = -0.0``. Each particle adds its springs' forces in spring
    order, starting from its force as it was (the C kernel's pass 2): level k of the lists
    adds every particle's k-th. (The C kernel's workspace, ``spring_end``, ``incidence`` and
    ``spring_force``, and the threads are not needed here: the lists are kept by _lists.)"""
    if not m:
        return
    lists = _lists(pairs, incidence_state, m, n)
    a, b = lists.a, lists.b
    # d = x_b - x_a, then u = d / |d|, and w = v_b - v_a (mode "clip": the rows are valid,
    # and np.take writes into ``out`` directly only so)
    d, w, e = (scratch(f"springs.{name}", (m, dim)) for name in "dwe")
    length, vrel = scratch("springs.length", (m,)), scratch("springs.vrel", (m,))
    t, s = scratch("springs.t", (m,)), scratch("springs.s", (m,))
    for x, out in ((pos, d), (vel, w)):
        np.take(x, b, axis=0, out=out, mode="clip")
        np.subtract(out, np.take(x, a, axis=0, out=e, mode="clip"), out=out)
    d, w = d.T, w.T  # component rows
    np.multiply(d[0], d[0], out=length)  # (0.0 + dx dx: 0.0 + a square is the square)
    for c in range(1, dim):
        np.add(length, np.multiply(d[c], d[c], out=t), out=length)
    np.sqrt(length, out=length)
    vrel.fill(0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(1.0, length, out=s)
        for c in range(dim):
            np.multiply(d[c], s, out=d[c])
            np.add(vrel, np.multiply(w[c], d[c], out=t), out=vrel)
        np.multiply(stiffness[:m], np.subtract(length, rest_length[:m], out=s), out=s)
        np.add(s, np.multiply(damping[:m], vrel, out=vrel), out=s)
        g = scratch("springs.g", (2 * m + 1, dim))  # +f, then -f, then -0.0
        for c in range(dim):
            np.multiply(s, d[c], out=g[:m, c])
    live = length > MIN_LENGTH
    if not live.all():
        g[:m][~live] = -0.0
    np.negative(g[:m], out=g[m:2 * m])
    g[2 * m] = -0.0
    total = force[:n]
    levels = scratch("springs.levels", (*lists.levels.shape, dim))
    np.take(g, lists.levels, axis=0, out=levels, mode="clip")
    for level in levels:
        np.add(total, level, out=total)
    if len(lists.deep):  # the rest of the longer lists, one after another
        more = np.take(g, lists.deeper, axis=0)
        total[lists.deep] = np.add.accumulate(np.concatenate([total[lists.deep][None], more]), axis=0)[-1]


def area_springs(
    force: F64, pos: F64, vel: F64, triangles: I32, rest_area: F64, rest_gradient: F64,
    stiffness: F64, damping: F64, m: int, dim: int,
) -> None:
    """Add the force -(k (A - A0) + c dA/dt) dA/dx of each triangle's signed area A to its
    corners a, then b, then c (3D: each tetrahedron's signed volume, its four corners, the
    force scaled down where the squared gradient exceeds VOLUME_STIFFENING x its rest one)."""
    t = triangles[:m]
    area, g = _simplex(pos, t, dim)  # (m,) signed areas (volumes), (m, dim + 1, dim) gradients
    v = vel[t.reshape(-1)].reshape(-1, dim + 1, dim)
    rate = np.zeros(len(t))
    for corner in range(dim + 1):
        for axis in range(dim):
            rate = rate + g[:, corner, axis] * v[:, corner, axis]
    s = -(stiffness[:m] * (area - rest_area[:m]) + damping[:m] * rate)
    s = np.where(area < 0.0, s - INVERSION_GAIN * stiffness[:m] * area, s)
    if dim == 3:
        size = np.zeros(len(t))
        for corner in range(4):
            for axis in range(3):
                size = size + g[:, corner, axis] * g[:, corner, axis]
        cap = VOLUME_STIFFENING * rest_gradient[:m]
        over = size > cap
        s = np.where(over, s * np.divide(cap, size, out=np.ones_like(size), where=over), s)
    scatter_add(force, t.reshape(-1), (s[:, None, None] * g).reshape(-1, dim))


def muscles(rest_length: F64, muscle_length: F64, activation: F64, m: int, low: float, high: float) -> None:
    """A spring whose muscle_length is >= 0 gets the rest length muscle_length x its activation,
    clamped to [low, high] (NaN to low); the others are left alone."""
    base, a = muscle_length[:m], activation[:m]
    a = np.where(a >= low, a, low)
    a = np.where(a > high, high, a)
    np.copyto(rest_length[:m], base * a, where=base >= 0.0)
