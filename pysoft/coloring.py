"""Batches of independent constraints (greedy graph colouring).

The XPBD kernels solve constraints Gauss-Seidel, one after another. Grouping
them into batches in which no two constraints share a particle makes the
order inside a batch irrelevant, so the NumPy twin can solve a whole batch at
once and still match the C loop bit for bit (and a threaded C loop could,
later, split a batch across threads). Recomputed only when the topology
changes.
"""

from __future__ import annotations

import numpy as np


def batches(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, batch_start)`` for constraints over particle ``rows`` (m, k).

    Greedy colouring in index order: each constraint takes the lowest colour
    none of its particles has yet. ``order`` lists constraints batch by batch
    (index order within a batch); batch ``b`` is ``order[batch_start[b]:batch_start[b+1]]``.
    """
    m = len(rows)
    colour = np.zeros(m, dtype=np.int64)
    used: dict[int, int] = {}
    for j, particles in enumerate(rows.tolist()):
        mask = 0
        for p in particles:
            mask |= used.get(p, 0)
        c = (~mask & (mask + 1)).bit_length() - 1  # the lowest free colour
        colour[j] = c
        bit = 1 << c
        for p in particles:
            used[p] = used.get(p, 0) | bit
    order = np.argsort(colour, kind="stable").astype(np.int32)
    counts = np.bincount(colour, minlength=1 if m else 0)
    batch_start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return order, batch_start
