"""Twin of csrc/src/finish.c: diagnostics."""

from __future__ import annotations

import numpy as np

from pysoft.twins._common import F64, dot


def find_unstable(pos: F64, vel: F64, n: int, dim: int, max_speed: float) -> int:
    """First row with a non-finite position/velocity or speed above max_speed, else -1."""
    x, v = pos[:n], vel[:n]
    finite = np.isfinite(x).all(axis=1) & np.isfinite(v).all(axis=1)
    with np.errstate(invalid="ignore", over="ignore"):
        bad = ~finite | (dot(v, v, dim) > max_speed * max_speed)
    rows = np.flatnonzero(bad)
    return int(rows[0]) if len(rows) else -1
