"""Batches of independent constraints (greedy graph colouring), kept incrementally.

The XPBD kernels solve constraints Gauss-Seidel, one after another. Grouping
them into batches in which no two constraints share a particle makes the
order inside a batch irrelevant, so the NumPy twin can solve a whole batch at
once and still match the C loop bit for bit (and a threaded C loop could,
later, split a batch across threads).

Colouring is greedy: a new constraint takes the lowest colour none of its
particles has yet. :class:`Batches` keeps the kernels' ``order`` (constraint
rows, batch by batch) and ``batch_start`` as constraints come and go:
adding or removing one moves one row per later batch (O(colours)), and a
row that moves in the constraint table moves one entry of ``order``. A bulk
addition larger than the rest is recounted in one pass instead.

Those moves leave a batch's constraints in no particular order, and a solve that jumps
about the particle table waits on memory: a colour batch of 80 tetrahedral cubes built
one by one was solved a third slower than the same batch in particle order. Before a
solve after its table changed, :meth:`Batches.tidy` sorts each batch by the lowest
particle row of its constraints (O(m log m) in NumPy, once per change of the table, not
per step). No two constraints of a batch share a particle, so their order in it changes
no result, bit for bit.
"""

from __future__ import annotations

import numpy as np

from pysoft._store import Field, Store, Table


def batches(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, batch_start)`` for constraints over particle ``rows`` (m, k), coloured from
    scratch in index order (what :class:`Batches` gives a table filled in one call)."""
    m = len(rows)
    colour = np.zeros(m, dtype=np.int64)
    masks: dict[int, int] = {}
    for j, particles in enumerate(rows.tolist()):
        colour[j] = _take_colour(masks, particles)
    order = np.argsort(colour, kind="stable").astype(np.int32)
    counts = np.bincount(colour, minlength=1 if m else 0)
    batch_start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return order, batch_start


def _take_colour(masks: dict[int, int], particles: list[int]) -> int:
    """The lowest colour none of ``particles`` has; mark it taken for them."""
    mask = 0
    for p in particles:
        mask |= masks.get(p, 0)
    c = (~mask & (mask + 1)).bit_length() - 1
    bit = 1 << c
    for p in particles:
        masks[p] = masks.get(p, 0) | bit
    return c


class Batches:
    """The batch order of one constraint table with ``colour`` and ``slot`` columns.

    ``order[slot[j]] == j``; batch ``b`` is ``order[start[b]:start[b + 1]]``.
    Particles are named by entity (``ends``), so their rows may move freely.
    """

    def __init__(self, table: Table, store: Store, max_colours: int = 1 << 20) -> None:
        self.table = table
        self.order = store.work_table(f"{table.name}.order", {"row": Field((), np.int32)},
                                      table.capacity, exact=True).arrays["row"]
        # (no more colours than constraints)
        self.start = store.work_table(f"{table.name}.batches", {"start": Field((), np.int32)},
                                      min(max_colours, table.capacity) + 1, exact=True).arrays["start"]
        self.colours = 0  # batches in use (the last one is never empty)
        self.masks: dict[int, int] = {}  # particle entity -> bit mask of the colours it is in
        self.recounts = 0  # full recounts so far (bulk additions)
        self.tidied = -1  # the table's version when the batches were last sorted (``tidy``)

    def add(self, rows: np.ndarray) -> None:
        """Colour and insert the constraints in ``rows`` (just appended to the table)."""
        T = self.table
        colour, ends = T.arrays["colour"], T.arrays["ends"]
        for j, particles in zip(rows.tolist(), ends[rows].tolist(), strict=True):
            colour[j] = _take_colour(self.masks, particles)
        top = int(colour[rows].max(initial=-1)) + 1
        if len(rows) * max(self.colours, top) > T.n - len(rows):
            self._recount()
            return
        for j in rows.tolist():
            self._insert(j, int(colour[j]))

    def _recount(self) -> None:
        m = self.table.n
        colour = self.table.arrays["colour"][:m]
        order = np.argsort(colour, kind="stable").astype(np.int32)
        counts = np.bincount(colour, minlength=1 if m else 0)
        self.colours = len(counts)
        self.start[0] = 0
        self.start[1 : self.colours + 1] = np.cumsum(counts)
        self.order[:m] = order
        self.table.arrays["slot"][order] = np.arange(m, dtype=np.int32)
        self.recounts += 1

    def _insert(self, j: int, c: int) -> None:
        start, order, slot = self.start, self.order, self.table.arrays["slot"]
        while self.colours <= c:  # open empty batches up to c
            self.colours += 1
            start[self.colours] = start[self.colours - 1]
        last = self.colours
        pos = int(start[last])  # the free place after the last batch
        for b in range(last - 1, c, -1):  # each later batch hands its first row to its end
            first = int(start[b])
            if first != pos:  # (an empty batch has nothing to hand on)
                moved = int(order[first])
                order[pos], slot[moved] = moved, pos
            pos = first
            start[b] += 1
        start[last] += 1
        order[pos], slot[j] = j, pos

    def remove(self, rows: np.ndarray) -> None:
        """Take the constraints in ``rows`` out (before the table removes them)."""
        T = self.table
        colour, ends, slot = T.arrays["colour"], T.arrays["ends"], T.arrays["slot"]
        start, order = self.start, self.order
        for j, particles in zip(rows.tolist(), ends[rows].tolist(), strict=True):
            c = int(colour[j])
            bit = ~(1 << c)
            for p in particles:
                self.masks[p] &= bit
                if not self.masks[p]:
                    del self.masks[p]
            hole = int(start[c + 1]) - 1  # the batch's last row fills j's place
            moved = int(order[hole])
            order[slot[j]], slot[moved] = moved, slot[j]
            for b in range(c + 1, self.colours):  # each later batch moves its last row down
                last = int(start[b + 1]) - 1
                if last >= start[b]:
                    moved = int(order[last])
                    order[hole], slot[moved] = moved, hole
                start[b] -= 1
                hole = last
            start[self.colours] -= 1
            while self.colours and start[self.colours - 1] == start[self.colours]:
                self.colours -= 1

    def tidy(self, index: str) -> None:
        """Sort each batch's constraints by the lowest particle row they name (column
        ``index`` of the table), unless the table is unchanged since the last sort."""
        T = self.table
        if T.version == self.tidied:
            return
        self.tidied = T.version
        m = T.n
        if not m:
            return
        start = self.start[: self.colours + 1]
        order = self.order[:m]
        batch = np.repeat(np.arange(self.colours, dtype=np.int64), np.diff(start))
        first = T.arrays[index][:m].reshape(m, -1).min(axis=1)[order]
        order[:] = order[np.lexsort((order, first, batch))]
        T.arrays["slot"][order] = np.arange(m, dtype=np.int32)

    def moved(self, moved_from: np.ndarray, moved_to: np.ndarray) -> None:
        """Constraint rows ``moved_from`` now live in ``moved_to`` (their slot moved along)."""
        if len(moved_to):
            self.order[self.table.arrays["slot"][moved_to]] = moved_to
