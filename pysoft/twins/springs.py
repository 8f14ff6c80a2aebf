"""Twin of csrc/src/springs.c: damped springs."""

from __future__ import annotations

import numpy as np

from pysoft.twins._common import F64, I32, MIN_LENGTH, dot


def springs(
    force: F64, pos: F64, vel: F64, pairs: I32, rest_length: F64,
    stiffness: F64, damping: F64, m: int, dim: int,
) -> None:
    """Add damped spring forces; spring j adds ``+f`` to ``a`` then ``-f`` to ``b``."""
    a, b = pairs[:m, 0], pairs[:m, 1]
    d = pos[b] - pos[a]
    length = np.sqrt(dot(d, d, dim))
    live = length > MIN_LENGTH
    with np.errstate(divide="ignore", invalid="ignore"):
        u = d * (1.0 / length)[:, None]
    vrel = dot(vel[b] - vel[a], u, dim)
    s = stiffness[:m] * (length - rest_length[:m]) + damping[:m] * vrel
    f = (s[:, None] * u)[live]
    # Interleave (a0, b0, a1, b1, ...) so np.add.at accumulates in the C order.
    rows = np.stack([a[live], b[live]], axis=1).reshape(-1)
    vals = np.stack([f, -f], axis=1).reshape(-1, dim)
    np.add.at(force, rows, vals)
