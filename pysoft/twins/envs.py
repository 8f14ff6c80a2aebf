"""Twins of csrc/src/envs.c (pysoft.envs' walkers, many worlds a call). The C kernels reach
world w's arrays through pointers; these take them as lists of arrays (``act[w]``,
``pos[w]``, ``vel[w]``), and loop over the worlds' particles in the kernels' order, each
step over all worlds at once."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pysoft.twins._common import F64, I32


def _clamp(v: F64, low: float, high: float) -> F64:
    np.minimum(v, high, out=v)  # (NaN stays NaN, as the kernel's compares)
    np.maximum(v, low, out=v)
    return v


def walkers_drive(act: Sequence[F64], action: F64, muscle_rows: I32, owners: I32, nw: int, k: int, m: int,
                  low: float, high: float) -> None:
    """Muscle i of world w gets 0.5 (e_a + e_b) clamped to [low, high], e = 1 + 0.5 x the
    action of its actuators a, b (owners[i]) clipped to [-1, 1]; at act[w][muscle_rows[w, i]]."""
    e = _clamp(action[:nw * k].reshape(nw, k).copy(), -1.0, 1.0)
    e *= 0.5
    e += 1.0
    pairs = owners[:2 * m].reshape(m, 2)
    out = _clamp(0.5 * (e[:, pairs[:, 0]] + e[:, pairs[:, 1]]), low, high)
    rows = muscle_rows[:nw * m].reshape(nw, m)
    for w in range(nw):
        act[w][rows[w]] = out[w]


def walkers_observe(obs: F64, x: F64, times: F64, pos: Sequence[F64], vel: Sequence[F64],
                    time: Sequence[Sequence[float]], rows: I32, weights: F64, nw: int, n: int,
                    limit: float) -> None:
    """World w's centre c and velocity u (weights' sums in particle order), its observation
    row (u, then each particle's position minus c), clamped to [-limit, limit]; x[w] = c_x;
    times[w] = time[w][0]."""
    r = rows[:nw * n].reshape(nw, n)
    p = np.stack([np.asarray(pos[w]).reshape(-1, 2)[r[w]] for w in range(nw)])  # (nw, n, 2)
    v = np.stack([np.asarray(vel[w]).reshape(-1, 2)[r[w]] for w in range(nw)])
    c, u = np.zeros((nw, 2)), np.zeros((nw, 2))
    for j in range(n):  # (the kernel's order: a product, then a sum)
        c += weights[j] * p[:, j]
        u += weights[j] * v[:, j]
    o = obs[:nw * (2 + 2 * n)].reshape(nw, 2 + 2 * n)
    o[:, :2] = _clamp(u, -limit, limit)
    o[:, 2:] = _clamp(p - c[:, None, :], -limit, limit).reshape(nw, 2 * n)
    x[:nw] = c[:, 0]
    times[:nw] = [t[0] for t in time[:nw]]
