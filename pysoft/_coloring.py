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

The kernels do not solve ``order`` itself but a plan of it (:meth:`Batches.plan`),
made again before a solve when the table changed: the constraints are cut into tiles
of whole connected groups (bodies that share no particle) of about TILE_PARTICLES
particles, and the plan solves tile after tile, each tile's share of every batch in
batch order, each share sorted by the lowest particle row of its constraints. Two
constraints of different tiles share no particle, and those of one batch none either,
so the plan makes every constraint's solve see what the batch order would have shown
it: the same bits, while a tile's particles stay in cache through all its batches (80
tetrahedral cubes: a colour batch spans all 10,000 particles, a tile 1,000). A world of
fewer particles than a tile is one tile.
"""

from __future__ import annotations

import numpy as np

from pysoft._store import Field, Store, Table

# The particles a tile of the solve plan holds about (a tile's positions, velocities and
# inverse masses, 80 KB, stay in a core's L2 cache through its batches)
TILE_PARTICLES = 1024


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


def _tiles(rows: np.ndarray) -> np.ndarray:
    """Each constraint's tile: the groups of constraints joined through shared particles
    (``rows``: (m, k) particle rows), in the order of their lowest particle row, cut into
    tiles of about TILE_PARTICLES particles (a larger group is a tile of its own)."""
    nodes, inverse = np.unique(rows, return_inverse=True)
    if len(nodes) <= TILE_PARTICLES:
        return np.zeros(len(rows), np.int64)
    from scipy.sparse import coo_matrix  # type: ignore[import-untyped]
    from scipy.sparse.csgraph import connected_components  # type: ignore[import-untyped]

    corner = inverse.reshape(rows.shape)
    k = rows.shape[1]
    graph = coo_matrix((np.ones(len(rows) * (k - 1), np.int8),
                        (np.repeat(corner[:, 0], k - 1), corner[:, 1:].ravel())),
                       shape=(len(nodes), len(nodes)))
    count, label = connected_components(graph, directed=False)
    lowest = np.full(count, len(nodes))
    np.minimum.at(lowest, label, np.arange(len(nodes)))
    by_lowest = np.argsort(lowest, kind="stable")
    size = np.bincount(label, minlength=count)[by_lowest]
    tile_of = np.empty(count, np.int64)
    tile_of[by_lowest] = (np.cumsum(size) - size) // TILE_PARTICLES
    tiles: np.ndarray = tile_of[label[corner[:, 0]]]
    return tiles


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
        # the solve plan (``plan``): constraint rows tile by tile, each tile batch by batch
        self.plan_order = store.work_table(f"{table.name}.plan", {"row": Field((), np.int32)},
                                           table.capacity, exact=True).arrays["row"]
        self.plan_start = store.work_table(f"{table.name}.plan_batches", {"start": Field((), np.int32)},
                                           table.capacity + 1, exact=True).arrays["start"]
        self.planned = 0  # the plan's batches
        self.planned_for = -1  # the table's version the plan was made for

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

    def plan(self, index: str) -> int:
        """The solve plan (``plan_order``, ``plan_start``; see the module docstring) for the
        particle rows in column ``index`` of the table, made again only if the table changed
        since the last; returns its number of batches."""
        T = self.table
        if T.version == self.planned_for:
            return self.planned
        self.planned_for = T.version
        m = T.n
        self.plan_start[0] = 0
        if not m:
            self.planned = 0
            return 0
        rows = T.arrays[index][:m].reshape(m, -1).astype(np.int64)
        colour = T.arrays["colour"][:m].astype(np.int64)
        tile = _tiles(rows)
        order = np.lexsort((np.arange(m), rows.min(axis=1), colour, tile))
        key = tile[order] * (int(colour.max()) + 1) + colour[order]
        start = np.concatenate([[0], np.flatnonzero(np.diff(key)) + 1, [m]])
        self.planned = len(start) - 1
        self.plan_order[:m] = order
        self.plan_start[: self.planned + 1] = start
        return self.planned

    def moved(self, moved_from: np.ndarray, moved_to: np.ndarray) -> None:
        """Constraint rows ``moved_from`` now live in ``moved_to`` (their slot moved along)."""
        if len(moved_to):
            self.order[self.table.arrays["slot"][moved_to]] = moved_to
