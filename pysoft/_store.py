"""The Store: the simulation state as one contiguous NumPy array per field.

Buffers that never move
    Each :class:`Table` reserves address space for ``max_rows`` rows of every
    field once, when it is made (an anonymous ``mmap`` with ``MAP_NORESERVE``
    on Linux: untouched pages cost no memory), and never reallocates. Growing
    is writing further rows. So a kernel binds to a table's arrays once and
    takes the live count at each call, and an array a user holds (a
    particle's ``position``, ``world.positions``) keeps sharing memory with
    the Store however large the world grows. Where the operating system
    refuses the reservation, a smaller one is taken; a table that is full
    raises :class:`CapacityError` naming the table and its limit.

Dense rows
    Live rows are ``0 .. n-1``: removing rows moves the last live rows into
    the holes (:meth:`Table.remove_rows` reports which moved), so the bulk
    views (``world.positions``) hold exactly the live particles.

Versions
    Every table counts its own changes (rows added, removed or moved) in
    ``version``, and all tables of a Store share one ``Store.version``, so a
    step checks one integer and only the features whose tables changed
    refresh what they derived from them.

Ragged data (body members, outlines, collider faces) lives in a
:class:`Ragged`: ranges ``(start, count)`` in the owner's table into flat
columns, with the space of removed ranges reclaimed by an occasional
compaction (amortised O(1) per removed row). :class:`Incidence` records,
for each particle entity, the entities that name it (springs, constraints,
bodies), so removing or moving a particle costs O(its links), not O(world).
"""

from __future__ import annotations

import math
import mmap
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000 if sys.platform.startswith("linux") else 0)
_ALIGN = 64  # bytes: each field starts on a cache line
_PAGE = 4096


def _stagger(k: int) -> int:
    """Where the k-th field of a Store starts past its slot (under 1 MiB + 4 KiB).

    Fields reserved for millions of rows would all start at large powers of two apart: the
    same element of each would fall on the same cache set, alias in the CPU's 4 KiB
    store-to-load check, and sit on pages of the same TLB set, so a pass streaming through
    ten fields at once evicts its own translations. Field k starts 9k cache lines (mod 64)
    and 37k pages (mod 256) later, counted over the whole Store, so no two fields of its
    tables share both. (Measured on 2026-11-25 on the canonical scene at 100,000 particles:
    World.step 3.6-4.4 ms with the old 9-line stagger per table, 2.7-3.3 ms with this.)"""
    return _ALIGN * ((9 * k) % 64) + _PAGE * ((37 * k) % 256)


_STAGGER_ROOM = _PAGE * 256  # the most _stagger adds, rounded up


class CapacityError(ValueError):
    """A table is full: the world reserved room for fewer rows than were added."""


@dataclass(frozen=True)
class Field:
    """A column: per-row shape (``()`` for scalars), dtype and fill value of new rows."""

    shape: tuple[int, ...]
    dtype: type
    fill: float = 0.0

    def row_bytes(self) -> int:
        return np.dtype(self.dtype).itemsize * math.prod(self.shape)


def _reserve(nbytes: int) -> np.ndarray:
    """Zeroed bytes whose address never changes; pages are committed when first written."""
    if nbytes == 0:
        return np.zeros(0, dtype=np.uint8)
    flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0) | _NORESERVE
    buf = mmap.mmap(-1, nbytes, flags=flags) if flags else mmap.mmap(-1, nbytes)
    return np.frombuffer(buf, dtype=np.uint8)


class Clock:
    """The Store-wide change counter that every table of a Store advances."""

    __slots__ = ("fields", "value")

    def __init__(self) -> None:
        self.value = 0
        self.fields = 0  # fields placed in the Store's tables so far (see _stagger)


class Table:
    """Rows of fields in arrays reserved once for ``max_rows`` rows.

    A table with an ``entity`` field keeps ``row_of`` (entity id -> row)
    current through additions, removals and moves.
    """

    def __init__(self, name: str, fields: dict[str, Field], max_rows: int,
                 clock: Clock | None = None) -> None:
        self.name = name
        self.fields = fields
        self.n = 0
        self.version = 0
        self.clock = clock if clock is not None else Clock()
        self.row_of: dict[int, int] = {}
        self.arrays: dict[str, np.ndarray] = {}
        self.capacity = self._allocate(max_rows)

    def _allocate(self, max_rows: int) -> int:
        """Reserve ``max_rows`` rows of every field in one mapping (fewer if refused)."""
        rows = max_rows
        while True:
            sizes = [-(-rows * f.row_bytes() // _ALIGN) * _ALIGN + _STAGGER_ROOM
                     for f in self.fields.values()]
            try:
                raw = _reserve(sum(sizes))
                break
            except (OSError, ValueError, OverflowError):  # pragma: no cover - no overcommit here
                if rows <= 1024:
                    raise
                rows //= 8
        offset = 0
        for (name, f), size in zip(self.fields.items(), sizes, strict=True):
            count = rows * math.prod(f.shape)
            self.arrays[name] = np.frombuffer(raw.data, dtype=f.dtype, count=count,
                                              offset=offset + _stagger(self.clock.fields)
                                              ).reshape(rows, *f.shape)
            self.clock.fields += 1
            offset += size
        return rows

    def view(self, name: str) -> np.ndarray:
        """The live rows of field ``name`` (a view into the Store, never a copy)."""
        return self.arrays[name][: self.n]

    def changed(self) -> None:
        """Record a change of this table's rows (advances its version and the Store's)."""
        self.version += 1
        self.clock.value += 1

    def room(self, count: int, what: str = "") -> None:
        """Raise :class:`CapacityError` unless ``count`` more rows fit."""
        if self.n + count > self.capacity:
            raise CapacityError(f"{what or self.name}: this world has room for {self.capacity:,} "
                                f"{self.name} rows; {self.n:,} are in use and {count:,} more were added")

    def add(self, count: int, **values: Any) -> int:
        """Append ``count`` rows; fields not given take their fill. Returns the first row."""
        self.room(count)
        start, end = self.n, self.n + count
        for name, f in self.fields.items():
            self.arrays[name][start:end] = values.get(name, f.fill)
        self.n = end
        if "entity" in values:
            self.row_of.update(zip(self.arrays["entity"][start:end].tolist(), range(start, end),
                                   strict=True))
        self.changed()
        return start

    def remove_rows(self, rows: Iterable[int]) -> tuple[np.ndarray, np.ndarray]:
        """Remove distinct live ``rows``; the last live rows fill the holes.

        Returns ``(moved_from, moved_to)``: rows whose contents moved, in
        ascending order of the hole they filled.
        """
        doomed = np.unique(np.fromiter(rows, dtype=np.int64))
        new_n = self.n - len(doomed)
        holes = doomed[doomed < new_n]
        tail = np.arange(new_n, self.n)
        movers = tail[~np.isin(tail, doomed)]
        if "entity" in self.fields:
            entity = self.arrays["entity"]
            for e in entity[doomed].tolist():
                del self.row_of[e]
        for name, f in self.fields.items():
            arr = self.arrays[name]
            if len(holes):
                arr[holes] = arr[movers]
            arr[new_n : self.n] = f.fill
        if "entity" in self.fields:
            self.row_of.update(zip(entity[holes].tolist(), holes.tolist(), strict=True))
        self.n = new_n
        self.changed()
        return movers, holes

    def rows(self, entities: Iterable[int]) -> np.ndarray:
        """Rows of live entities of this table (KeyError for one that is not)."""
        return np.fromiter((self.row_of[int(e)] for e in entities), dtype=np.int64)

    def snapshot_fields(self, names: tuple[str, ...]) -> dict[str, np.ndarray]:
        """Copies of the live rows of ``names``."""
        return {name: self.view(name).copy() for name in names}


class Ragged:
    """A variable-length list of rows per owner row, e.g. each body's members.

    The owner table has the columns ``<prefix>_start`` and ``<prefix>_count``;
    the entries live in the flat table ``flat``, owner by owner. Removed
    ranges leave garbage that :meth:`compact` reclaims once it is more than
    half of the flat table; kernels read ranges through the owner columns,
    so gaps are harmless to them.
    """

    def __init__(self, owner: Table, prefix: str, flat: Table) -> None:
        self.owner = owner
        self.start = owner.arrays[f"{prefix}_start"]
        self.count = owner.arrays[f"{prefix}_count"]
        self.flat = flat
        self.garbage = 0

    def span(self, row: int) -> slice:
        s = int(self.start[row])
        return slice(s, s + int(self.count[row]))

    def get(self, row: int, field: str) -> np.ndarray:
        """The entries of owner ``row`` in ``field`` (a view)."""
        return self.flat.arrays[field][self.span(row)]

    def assign(self, row: int, **values: np.ndarray) -> None:
        """Give owner ``row`` a new list (its old one becomes garbage)."""
        count = len(next(iter(values.values())))
        self.release(row)
        if self.flat.n + count > self.flat.capacity and self.garbage:
            self.compact()
        self.start[row] = self.flat.add(count, **values)
        self.count[row] = count

    def release(self, row: int) -> None:
        """Drop owner ``row``'s list (before the owner row is removed)."""
        self.garbage += int(self.count[row])
        self.count[row] = 0
        if self.garbage > max(1024, self.flat.n // 2):
            self.compact()

    def delete(self, row: int, index: int) -> None:
        """Remove entry ``index`` of owner ``row``'s list, keeping the others in order."""
        s, c = int(self.start[row]), int(self.count[row])
        for arr in self.flat.arrays.values():
            arr[s + index : s + c - 1] = arr[s + index + 1 : s + c].copy()
        self.count[row] = c - 1
        self.garbage += 1
        self.flat.changed()

    def compact(self) -> None:
        """Pack the live ranges in owner-row order, reclaiming the garbage."""
        n = self.owner.n
        starts, counts = self.start[:n].copy(), self.count[:n].astype(np.int64)
        total = int(counts.sum())
        new_starts = np.cumsum(counts) - counts
        src = np.repeat(starts.astype(np.int64) - new_starts, counts) + np.arange(total)
        for arr in self.flat.arrays.values():
            arr[:total] = arr[src]
        self.start[:n] = new_starts
        self.flat.n = total
        self.garbage = 0
        self.flat.changed()


class Incidence:
    """Which entities (springs, constraints, bodies) name each particle entity.

    Kept by each feature whose rows name particles, so that removing or
    moving a particle finds its links in O(links of that particle).
    """

    def __init__(self) -> None:
        self.of: dict[int, list[int]] = {}

    def add(self, particles: np.ndarray, owners: np.ndarray) -> None:
        """Owner ``owners[i]`` names the particles ``particles[i]`` (a row of entity ids)."""
        of = self.of
        for row, owner in zip(particles.tolist(), owners.tolist(), strict=True):
            for p in row:
                lst = of.get(p)
                if lst is None:
                    of[p] = [owner]
                else:
                    lst.append(owner)

    def discard(self, particles: Iterable[int], owner: int) -> None:
        """``owner`` no longer names ``particles``."""
        for p in particles:
            lst = self.of[p]
            lst.remove(owner)
            if not lst:
                del self.of[p]

    def owners(self, particles: Iterable[int]) -> list[int]:
        """The distinct entities naming any of ``particles``, ascending."""
        found: set[int] = set()
        for p in particles:
            found.update(self.of.get(p, ()))
        return sorted(found)


class Store:
    """All tables of one World and the Store-wide version (see the module docstring)."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.clock = Clock()
        self.tables: dict[str, Table] = {}

    def table(self, name: str, fields: dict[str, Field], max_rows: int) -> Table:
        """Make (once) and register the table ``name``; ``store.<name>`` then reaches it."""
        if name in self.tables:
            raise ValueError(f"table {name!r} exists already")
        table = self.tables[name] = Table(name, fields, max_rows, self.clock)
        if not hasattr(type(self), name) and name not in self.__dict__:
            self.__dict__[name] = table  # ``store.<name>`` without __getattr__'s slow path
        return table

    def __getattr__(self, name: str) -> Table:
        tables: dict[str, Table] = self.__dict__.get("tables", {})
        if name in tables:
            return tables[name]
        raise AttributeError(name)

    @property
    def version(self) -> int:
        """Changes to any table so far."""
        return self.clock.value
