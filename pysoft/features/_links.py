"""Rows that name particles: springs, distance constraints, volume constraints.

A :class:`Links` table keeps each row's particle entities (``ends``, the
truth) and their current rows (the index column the kernels read), and an
:class:`Incidence` from particle to links, so that removing a particle finds
its links, and moving a particle renumbers them, in O(its links).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pysoft import _validate
from pysoft._ecs import RowView
from pysoft._store import Field, Incidence
from pysoft.features._feature import Context
from pysoft.features.particles import Particle


class Links:
    """A table of rows naming ``width`` distinct particles each."""

    def __init__(self, ctx: Context, name: str, width: int, index: str, fields: dict[str, Field],
                 max_rows: int) -> None:
        self.ctx = ctx
        self.width = width
        self.index = index  # the column of particle rows the kernels read
        self.table = ctx.store.table(name, {
            "ends": Field((width,), np.int64, -1), index: Field((width,), np.int32),
            "entity": Field((), np.int64, -1), **fields}, max_rows)
        self.incidence = Incidence()

    def resolve(self, name: str, value: Any) -> tuple[np.ndarray, np.ndarray]:
        """Validated (M, width) live particle entities, distinct within a row, and their rows."""
        ends = _validate.array(name, value, (None, self.width), integral=True)
        row_of = self.ctx.store.particles.row_of
        rows = np.fromiter((row_of.get(e, -1) for e in ends.reshape(-1).tolist()), dtype=np.int64,
                           count=ends.size).reshape(ends.shape)
        if (rows < 0).any():
            raise KeyError(f"{name}: entity {int(ends[rows < 0][0])} is not a live particle of this world")
        srt = np.sort(ends, axis=1)
        if (srt[:, 1:] == srt[:, :-1]).any():
            raise ValueError(f"{name}: each row needs {self.width} different particles")
        return ends, rows.astype(np.int32)

    def add(self, what: str, make: Callable[[], RowView], ends: np.ndarray, rows: np.ndarray,
            **values: Any) -> np.ndarray:
        """Rows for resolved ``ends``; returns their entities."""
        T = self.table
        T.room(len(ends), what)
        entities = self.ctx.ecs.create(len(ends), make)
        T.add(len(ends), ends=ends, entity=entities, **{self.index: rows}, **values)
        self.incidence.add(ends, entities)
        return entities

    def links_of(self, particles: list[int]) -> list[int]:
        return self.incidence.owners(particles)

    def remove(self, entities: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Remove links; returns their rows (before removal) and the rows that moved (from, to)."""
        T = self.table
        rows = T.rows(entities)
        ends = T.arrays["ends"]
        for e, row in zip(entities, rows.tolist(), strict=True):
            self.incidence.discard(ends[row].tolist(), e)
        moved_from, moved_to = T.remove_rows(rows)
        self.ctx.ecs.delete(entities)
        return rows, moved_from, moved_to

    def particles_moved(self, entities: np.ndarray, rows: np.ndarray) -> None:
        """Renumber the rows of links naming particles that moved to ``rows``."""
        T = self.table
        of, row_of = self.incidence.of, T.row_of
        link_rows, particle, new_row = [], [], []
        for e, r in zip(entities.tolist(), rows.tolist(), strict=True):
            for link in of.get(e, ()):
                link_rows.append(row_of[link])
                particle.append(e)
                new_row.append(r)
        if link_rows:
            lr = np.array(link_rows)
            column = np.argmax(T.arrays["ends"][lr] == np.array(particle)[:, None], axis=1)
            T.arrays[self.index][lr, column] = new_row  # (link, column) pairs are distinct
        if len(entities):
            T.changed()

    def lengths(self, rows: np.ndarray) -> np.ndarray:
        """Current distances between the particle rows of each pair."""
        pos = self.ctx.store.particles.arrays["pos"]
        out: np.ndarray = np.sqrt(((pos[rows[:, 1]] - pos[rows[:, 0]]) ** 2).sum(axis=1))
        return out

    def rest_lengths(self, name: str, ends: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Default rest lengths (m): the current distances of the pairs (their particle
        entities ``ends``, rows ``rows``); ValueError naming ``name`` and the particles if one
        is not finite (the particles' squared distance overflows: they are more than about
        1e154 m apart, where the kernels' squared lengths would overflow too)."""
        with np.errstate(over="ignore", invalid="ignore"):
            out = self.lengths(rows)
        bad = np.flatnonzero(~np.isfinite(out))
        if len(bad):
            a, b = (int(e) for e in ends[bad[0]])
            raise ValueError(f"{name}: particles {a} and {b} are too far apart for a rest length "
                             f"(their squared distance overflows): move them closer")
        return out


class Pair(RowView):
    """A row that links two particle entities (``ends``): springs, distance constraints."""

    __slots__ = ()

    @property
    def a(self) -> int:
        """First endpoint (particle entity)."""
        return int(self.table.arrays["ends"][self.row, 0])

    @property
    def b(self) -> int:
        """Second endpoint (particle entity)."""
        return int(self.table.arrays["ends"][self.row, 1])


def pair_entities(ctx: Context, a: int, b: int) -> list[list[int]]:
    """``[[a, b]]`` for two distinct live particles, errors naming ``a`` or ``b``."""
    ea = ctx.ecs.get(a, Particle, "particle", "a").entity
    eb = ctx.ecs.get(b, Particle, "particle", "b").entity
    if ea == eb:
        raise ValueError(f"b must be a different particle from a (both are entity {ea})")
    return [[ea, eb]]
