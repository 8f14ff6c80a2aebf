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
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000 if sys.platform.startswith("linux") else 0)
_ALIGN = 64  # bytes: each field starts on a cache line
_PAGE = 4096


def _stagger(k: int, big: bool) -> int:
    """Where the k-th field of a Store starts past its slot (under 1 MiB + 4 KiB; under 4 KiB
    in a table that is not ``big``).

    Fields reserved for millions of rows would all start at large powers of two apart: the
    same element of each would fall on the same cache set, alias in the CPU's 4 KiB
    store-to-load check, and sit on pages of the same TLB set, so a pass streaming through
    ten fields at once evicts its own translations. Field k starts 9k cache lines (mod 64)
    and, in a big table, 37k pages (mod 256) later, counted over the whole Store, so no two
    fields of its tables share both. (Measured on 2026-11-25 on the canonical scene at 100,000
    particles: World.step 3.6-4.4 ms with the old 9-line stagger per table, 2.7-3.3 ms with
    this.) A small table's fields are too short for pages to alias, and a page stagger would
    cost each of them a MiB of address space."""
    return _ALIGN * ((9 * k) % 64) + (_PAGE * ((37 * k) % 256) if big else 0)


def _stagger_room(big: bool) -> int:
    """The most _stagger adds, rounded up."""
    return _PAGE * 256 if big else _PAGE


_BIG = 1 << 24  # bytes of a field from which its table staggers fields by pages too


class RemovedError(KeyError):
    """A component or entity was used after it was removed from its world (or its world was
    closed)."""


class _Released(dict):  # type: ignore[type-arg]
    """A closed world's table's arrays: every field is gone."""

    def __missing__(self, name: str) -> Any:
        raise RemovedError(f"field {name!r}: this table's world was closed")


class CapacityError(ValueError):
    """A table is full: the world reserved room for fewer rows than were added."""


class OverBudget(MemoryError):
    """A Store's tables would reserve more address space than its budget."""


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

    __slots__ = ("edits", "fields", "shared", "value")

    def __init__(self) -> None:
        self.value = 0
        self.edits = 0  # the tables' edits (Table.edited), all together
        self.fields = 0  # fields placed in the Store's tables so far (see _stagger)
        self.shared = array("q", [0, 0])  # value and edits where C reads them (step_many's lane)

    def tick(self) -> None:
        """A change of a table's rows."""
        self.value += 1
        self.shared[0] = self.value

    def edit(self) -> None:
        """A counted write through a component (``Table.edited``)."""
        self.edits += 1
        self.shared[1] = self.edits


def _big(fields: dict[str, Field], rows: int) -> bool:
    return max((rows * f.row_bytes() for f in fields.values()), default=0) >= _BIG


def reservation(fields: dict[str, Field], rows: int) -> int:
    """The address space (bytes) a table of ``rows`` rows of ``fields`` reserves."""
    room = _stagger_room(_big(fields, rows))
    return sum(-(-rows * f.row_bytes() // _ALIGN) * _ALIGN + room for f in fields.values())


class Table:
    """Rows of fields in arrays reserved once for ``max_rows`` rows.

    A table with an ``entity`` field keeps ``row_of`` (entity id -> row)
    current through additions, removals and moves. ``how``: what a full table's
    CapacityError adds (how to get more room).
    """

    def __init__(self, name: str, fields: dict[str, Field], max_rows: int,
                 clock: Clock | None = None, how: str = "") -> None:
        self.name = name
        self.fields = fields
        self.n = 0
        self.version = 0
        self.edits = 0  # writes through a component that a feature counts (e.g. max_strain)
        self.clock = clock if clock is not None else Clock()
        self.how = how
        self.row_of: dict[int, int] = {}
        self.arrays: dict[str, np.ndarray] = {}
        self.capacity = max_rows
        self._place(_reserve(reservation(fields, max_rows)))

    def edited(self) -> None:
        """Count a write through a component that a feature counts (``edits``, and the
        clock's)."""
        self.edits += 1
        self.clock.edit()

    def _place(self, raw: np.ndarray) -> None:
        """Lay the fields out in ``raw`` (the table's reservation)."""
        rows, big = self.capacity, _big(self.fields, self.capacity)
        offset, room = 0, _stagger_room(big)
        for name, f in self.fields.items():
            count = rows * math.prod(f.shape)
            self.arrays[name] = np.frombuffer(raw.data, dtype=f.dtype, count=count,
                                              offset=offset + _stagger(self.clock.fields, big)
                                              ).reshape(rows, *f.shape)
            self.clock.fields += 1
            offset += -(-rows * f.row_bytes() // _ALIGN) * _ALIGN + room

    def release(self) -> None:
        """Let go of the table's arrays (a closed world's): its reservation is unmapped as soon
        as no view of it is held elsewhere."""
        self.arrays = _Released()
        self.row_of = {}
        self.n = self.capacity = 0

    def view(self, name: str) -> np.ndarray:
        """The live rows of field ``name`` (a view into the Store, never a copy)."""
        return self.arrays[name][: self.n]

    def changed(self) -> None:
        """Record a change of this table's rows (advances its version and the Store's)."""
        self.version += 1
        self.clock.tick()

    def room(self, count: int, what: str = "") -> None:
        """Raise :class:`CapacityError` unless ``count`` more rows fit."""
        if self.n + count > self.capacity:
            raise CapacityError(f"{what or self.name}: this world has room for {self.capacity:,} "
                                f"{self.name} rows; {self.n:,} are in use and {count:,} more were "
                                f"added{self.how}")

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


FULL_CAPACITY = 1 << 24  # particles a World holds by default, where the process can reserve it
LEAST_ROWS = 4096  # the fewest rows a table is given (unless it asks for fewer)


class Store:
    """All tables of one World and the Store-wide version (see the module docstring).

    ``capacity``: the particles the world holds; every table's limit is scaled from its
    limit at FULL_CAPACITY by the same factor (rounded up, at least LEAST_ROWS rows).
    ``budget``: the most address space (bytes) its tables may reserve, or None; a table
    that would pass it raises :class:`OverBudget` before reserving anything.
    """

    def __init__(self, dim: int, capacity: int = FULL_CAPACITY, budget: int | None = None) -> None:
        self.dim = dim
        self.capacity = capacity
        self.budget = budget
        self.reserved = 0  # bytes the tables reserved
        self.clock = Clock()
        self.tables: dict[str, Table] = {}
        self.work: list[Table] = []  # the kernels' work tables (not part of the world's state)

    def rows(self, max_rows: int) -> int:
        """A table's limit in this Store, given its limit at FULL_CAPACITY."""
        return max(min(max_rows, LEAST_ROWS), -(-max_rows * self.capacity // FULL_CAPACITY))

    def _make(self, name: str, fields: dict[str, Field], max_rows: int, exact: bool = False) -> Table:
        rows = max_rows if exact else self.rows(max_rows)
        size = reservation(fields, rows)
        if self.budget is not None and self.reserved + size > self.budget:
            raise OverBudget(f"table {name!r} would pass the world's address-space budget")
        how = (f" (World(capacity={self.capacity:,}) reserves {rows:,}; a larger capacity reserves "
               "more of every table)")
        table = Table(name, fields, rows, self.clock, how)
        self.reserved += size
        return table

    def table(self, name: str, fields: dict[str, Field], max_rows: int) -> Table:
        """Make (once) and register the table ``name``; ``store.<name>`` then reaches it.
        ``max_rows``: its limit at FULL_CAPACITY."""
        if name in self.tables:
            raise ValueError(f"table {name!r} exists already")
        table = self.tables[name] = self._make(name, fields, max_rows)
        if not hasattr(type(self), name) and name not in self.__dict__:
            self.__dict__[name] = table  # ``store.<name>`` without __getattr__'s slow path
        return table

    def work_table(self, name: str, fields: dict[str, Field], max_rows: int,
                   exact: bool = False) -> Table:
        """A kernel's work table (not saved, not registered by name), sized as ``table`` (or of
        ``max_rows`` rows if ``exact``)."""
        table = self._make(name, fields, max_rows, exact)
        self.work.append(table)
        return table

    def release(self) -> None:
        """Let go of every table's arrays (a closed world's Store)."""
        for table in (*self.tables.values(), *self.work):
            table.release()
        for name in self.tables:
            self.__dict__.pop(name, None)
        self.tables, self.work = {}, []

    def __getattr__(self, name: str) -> Table:
        tables: dict[str, Table] = self.__dict__.get("tables", {})
        if name in tables:
            return tables[name]
        raise AttributeError(name)

    @property
    def version(self) -> int:
        """Changes to any table so far."""
        return self.clock.value
