"""What the twins share: array types, the C core's constants, and C-ordered sums."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from pysoft._constants import CAPSULE, INVERSION_GAIN, MIN_LENGTH, POLYTOPE

F64 = NDArray[np.float64]
I32 = NDArray[np.int32]

__all__ = ["CAPSULE", "F64", "I32", "INVERSION_GAIN", "MIN_LENGTH", "POLYTOPE", "dot", "ranges"]


def dot(a: F64, b: F64, dim: int) -> F64:
    """Row-wise dot product, summed left to right like the C loops (``ps_dot``)."""
    out = np.zeros(len(a))
    for c in range(dim):
        out = out + a[:, c] * b[:, c]
    return out


def ranges(start: I32, count: I32, nb: int) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """For ranges ``[start[b], start[b] + count[b])`` of ``nb`` owners (gaps allowed): each
    entry's owner and its flat index, owners in order, entries in order within each."""
    count = count[:nb].astype(np.intp)
    owner = np.repeat(np.arange(nb), count)
    first = np.cumsum(count) - count
    flat = start[:nb].astype(np.intp)[owner] + (np.arange(len(owner)) - first[owner])
    return owner, flat
