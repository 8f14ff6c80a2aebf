"""Twin of csrc/src/finish.c: diagnostics."""

from __future__ import annotations

import numpy as np

from pysoft.twins._common import F64, dot


def find_unstable(pos: F64, vel: F64, n: int, dim: int, max_speed: float) -> int:
    """First row with a non-finite position/velocity or speed above max_speed, else -1."""
    x, v = pos[:n], vel[:n]
    with np.errstate(invalid="ignore", over="ignore"):
        fast = dot(v, v, dim) > max_speed * max_speed
    if np.isfinite(x).all() and np.isfinite(v).all():  # the common case: one test per array
        bad = fast
    else:
        bad = ~(np.isfinite(x).all(axis=1) & np.isfinite(v).all(axis=1)) | fast
    rows = np.flatnonzero(bad)
    return int(rows[0]) if len(rows) else -1


def clamp_speeds(pos: F64, vel: F64, prev_pos: F64, n: int, dim: int, max_speed: float) -> int:
    """Non-finite rows back to prev_pos (0 where that is not finite) at rest; rows faster than
    max_speed scaled to it. Returns the number of rows changed."""
    x, v, p = pos[:n], vel[:n], prev_pos[:n]
    finite = np.isfinite(x).all(axis=1) & np.isfinite(v).all(axis=1)
    with np.errstate(invalid="ignore", over="ignore"):
        v2 = dot(v, v, dim)
        fast = finite & (v2 > max_speed * max_speed)
        scale = max_speed / np.sqrt(v2[fast])
    bad = ~finite
    x[bad] = np.where(np.isfinite(p[bad]), p[bad], 0.0)
    v[bad] = 0.0
    v[fast] = v[fast] * scale[:, None]
    return int(bad.sum() + fast.sum())
