"""What the twins share: array types, the C core's constants, and C-ordered sums."""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pysoft._constants import CAPSULE, CELL_LIMIT, INVERSION_GAIN, MIN_LENGTH, POLYTOPE

F64 = NDArray[np.float64]
I32 = NDArray[np.int32]

__all__ = ["CAPSULE", "F64", "I32", "INVERSION_GAIN", "MIN_LENGTH", "POLYTOPE", "cell_of", "dot", "ranges",
           "scatter_add", "scratch", "workspace"]

# Work arrays the twins reuse from call to call, by name, one set per thread. A twin's
# temporaries of a world's size (a 10,000-particle scene's springs: half a megabyte each)
# allocated afresh every call are mapped from the system and given back when freed, and the
# page faults of mapping them again cost more than the arithmetic (the NumPy backend's step
# at 10k took 3.3 ms; 1.8 with the allocator told to keep its memory). Within a thread the
# twins run one at a time (a kernel never calls another), so one buffer per name serves
# them all; it grows to the largest world the thread stepped and is kept. Threads never
# share one: NumPy lets go of the GIL inside large operations, so a world stepped in
# another thread would write a buffer while this one reads it.
_THREAD = threading.local()


def workspace() -> dict[str, object]:
    """This thread's kept work objects, by name (see ``scratch``)."""
    kept: dict[str, object] | None = getattr(_THREAD, "kept", None)
    if kept is None:
        kept = _THREAD.kept = {}
    return kept


def scratch(name: str, shape: tuple[int, ...], dtype: type = np.float64) -> np.ndarray:
    """A work array of ``shape`` (contents undefined), reused by every call in this thread
    that names it."""
    size = math.prod(shape)
    kept = workspace()
    buf = kept.get(name)
    if not isinstance(buf, np.ndarray) or buf.size < size or buf.dtype != dtype:
        grown = 2 * buf.size if isinstance(buf, np.ndarray) else 0
        buf = kept[name] = np.empty(max(size, grown), dtype)
    return buf[:size].reshape(shape)


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


def scatter_add(out: F64, rows: NDArray[np.intp] | I32, vals: F64) -> None:
    """``out[rows[k]] += vals[k]`` for k in order, as the C loops add (and as
    ``np.add.at(out, rows, vals)``, bit for bit), ten times as fast: see _scatter."""
    _scatter(out, rows, [vals[:, c] for c in range(out.shape[1])])


def _counting(n: int) -> NDArray[np.intp]:
    """0, 1, ..., n - 1 (kept, per thread)."""
    kept = workspace()
    have = kept.get("counting")
    if not isinstance(have, np.ndarray) or len(have) < n:
        have = kept["counting"] = np.arange(max(n, 2 * (len(have) if isinstance(have, np.ndarray) else 0)))
    return have[:n]


def _scatter(out: F64, rows: NDArray[np.intp] | I32, columns: list[F64]) -> None:
    """``out[rows[k], c] += columns[c][k]`` for k in order: per column, one ``np.bincount``
    over each row's own value followed by the additions, which sums each bin in input order
    from 0.0. 0.0 + x is x except for x = -0.0, so a row whose value and additions were all
    -0.0 (the sum -0.0 in C) is given its -0.0 back."""
    if not len(rows):
        return
    n = int(rows.max()) + 1  # (out may be a table's whole capacity: only rows up to the last added)
    index = scratch("scatter.index", (n + len(rows),), np.intp)
    index[:n], index[n:] = _counting(n), rows
    weights = scratch("scatter.weights", (n + len(rows),))
    for c, add in enumerate(columns):
        own = out[:n, c]
        weights[:n], weights[n:] = own, add
        total = np.bincount(index, weights=weights, minlength=n)
        zero = total == 0.0
        if not zero.any():  # the common case: no sum is zero, so none lost its sign
            out[:n, c] = total
            continue
        lost = zero & np.signbit(own) & ~np.signbit(total)
        if lost.any():  # rare: keep those whose additions were all -0.0 too
            signed = np.zeros(n, dtype=bool)
            signed[rows[~((add == 0.0) & np.signbit(add))]] = True
            total[lost & ~signed] = -0.0
        out[:n, c] = total


def cell_of(x: float, cell: float) -> int:
    """floor(x / cell), clamped to +-CELL_LIMIT as cell_of in contacts.c and contacts3d.c (a
    NaN or an infinite coordinate gets a cell, not an error: candidates are then tested, and
    fail, as in C)."""
    v = x / cell
    if not v > -CELL_LIMIT:
        return -int(CELL_LIMIT)
    if not v < CELL_LIMIT:
        return int(CELL_LIMIT)
    return math.floor(v)


# A body's flags (its outline or surface is closed; it collides with itself) and a particle's
# owner when more than one body has it, as the body-contact passes (both dimensions) read them
CLOSED, SELF, SHARED = 1, 2, -2


def in_grid(s: Any, i: int, particle_collisions: int) -> bool:
    """Whether particle i of a body-contact pass's scene ``s`` (its radius, owner and the
    bodies' flags) is in the grid of particle pairs: a free particle with a radius when
    particles collide, one of an open or self-colliding body."""
    if not s.radius[i] > 0.0:
        return False
    o = s.owner[i]
    if o == -1:
        return bool(particle_collisions)
    if o < 0:
        return False
    return not s.flags[o] & CLOSED or bool(s.flags[o] & SELF)
