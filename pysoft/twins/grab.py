"""Twin of csrc/src/grab.c: mouse springs from particles to targets."""

from __future__ import annotations

from pysoft.twins._common import F64, I32, scatter_add


def grab(
    force: F64, pos: F64, vel: F64, particle: I32, target: F64, stiffness: F64, damping: F64,
    m: int, dim: int,
) -> None:
    """Add k (t - x) - c v to each grabbed particle, grabs in index order."""
    i = particle[:m, 0]
    f = stiffness[:m, None] * (target[:m] - pos[i]) - damping[:m, None] * vel[i]
    scatter_add(force, i, f)
