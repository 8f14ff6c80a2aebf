"""Springs: damped springs between particles, strain and tearing (``csrc/src/springs.c``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from pysoft import _validate
from pysoft._ecs import Column, RowView
from pysoft._kernels import Arg, Kernel, register
from pysoft._store import Field
from pysoft.features._feature import Context, Feature, PerState
from pysoft.features._links import Links, Pair, pair_entities

MAX_SPRINGS = 1 << 25

register(Kernel("springs", "springs",
                (Arg("force", ("n", "dim")), Arg("pos", ("n", "dim")), Arg("vel", ("n", "dim")),
                 Arg("pairs", ("m", 2), np.int32), Arg("rest_length", ("m",)),
                 Arg("stiffness", ("m",)), Arg("damping", ("m",))),
                ("m", "dim"), (), ("force",), index_args=(("pairs", "n"),)))


def max_strain_rows(value: Any, m: int) -> np.ndarray:
    """``max_strain`` for ``m`` springs: each > 1 (length / rest length at which it breaks) or inf."""
    out = _validate.per_row("max_strain", value, m)
    if np.isnan(out).any() or (out <= 1.0).any():
        raise ValueError("max_strain must be > 1 (length / rest length at which a spring breaks)")
    return out


class _MaxStrain(Column):
    """A spring's max_strain: writable, and counted (tearing is checked while any is finite)."""

    writes = 0  # every write, in any world: a feature recounts its finite ones when this moves

    def __set__(self, view: RowView, value: Any) -> None:
        view.table.arrays[self.field][view.row] = max_strain_rows(value, 1)[0]
        _MaxStrain.writes += 1


class Spring(Pair):
    """A damped spring between two particle entities (Hooke + axial damper)."""

    __slots__ = ()

    rest_length = Column("rest_length", "Rest length (m).", _validate.nonnegative)
    stiffness = Column("stiffness", "Stiffness k (N/m).", _validate.nonnegative)
    damping = Column("damping", "Damping along the spring axis (N s/m).", _validate.nonnegative)
    max_strain = _MaxStrain("max_strain", "Length / rest length at which it breaks (inf: never; "
                                          "writable, > 1).")


class _SpringTerm:
    def __init__(self, ctx: Context, links: Links) -> None:
        self.ctx, self.S = ctx, links.table
        a, s = ctx.store.particles.arrays, links.table.arrays
        self.calls = PerState(lambda p, v, f: ctx.bind(
            "springs", force=a[f], pos=a[p], vel=a[v], pairs=s["pairs"], rest_length=s["rest_length"],
            stiffness=s["stiffness"], damping=s["damping"]))

    def evaluate(self, state: int) -> None:
        if self.S.n:
            self.calls[state](self.S.n, self.ctx.dim)


class Springs(Feature):
    """Damped springs; a spring with ``max_strain`` breaks when stretched beyond it."""

    kinds = (Spring,)
    snapshot = (("springs", ("rest_length", "stiffness", "damping")),)

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.links = Links(ctx, "springs", 2, "pairs", {
            "rest_length": Field((), np.float64), "stiffness": Field((), np.float64),
            "damping": Field((), np.float64), "max_strain": Field((), np.float64, np.inf),
        }, MAX_SPRINGS)
        self.table = self.links.table
        self._tearable, self._counted = False, (-1, -1)  # any finite max_strain, as of (version, writes)
        self.broken_springs: list[int] = []
        self.term = _SpringTerm(ctx, self.links)
        ctx.pipeline.forces.append(self.term)

    def probes(self) -> dict[str, tuple[int, Callable[[], Any]]]:
        m = self.table.n
        return {"springs": (m, functools.partial(self.term.calls[0], m, self.ctx.dim))}

    def add_spring(self, a: int, b: int, stiffness: float = 500.0, damping: float = 2.0,
                   rest_length: float | None = None, max_strain: float | None = None) -> int:
        """A damped spring between particles ``a`` and ``b``; rest length defaults to their distance.

        With ``max_strain`` (length / rest length, > 1) the spring breaks (is
        removed) at the end of the first step in which it is stretched beyond it.
        """
        pair = pair_entities(self.ctx, a, b)
        rest = None if rest_length is None else [_validate.nonnegative("rest_length", rest_length)]
        return self.add_springs(pair, _validate.nonnegative("stiffness", stiffness),
                                _validate.nonnegative("damping", damping), rest, max_strain)[0]

    def add_springs(self, pairs: Any, stiffness: Any = 500.0, damping: Any = 2.0,
                    rest_lengths: Any = None, max_strain: Any = None) -> list[int]:
        """Springs in bulk: ``pairs`` is (M, 2) particle entities. Returns their entities."""
        ends, rows = self.links.resolve("pairs", pairs)
        m = len(ends)
        params = {name: _validate.nonnegative_rows(name, value, m)
                  for name, value in (("stiffness", stiffness), ("damping", damping))}
        rest = (self.links.lengths(rows) if rest_lengths is None
                else _validate.nonnegative_rows("rest_lengths", rest_lengths, m))
        if max_strain is not None:
            params["max_strain"] = max_strain_rows(max_strain, m)
        table = self.table
        entities = self.links.add("add_springs", lambda: Spring(table), ends, rows,
                                  rest_length=rest, **params)
        return cast(list[int], entities.tolist())

    def spring(self, entity: int) -> Spring:
        """The Spring component of ``entity``."""
        return self.ctx.ecs.get(entity, Spring, "spring")

    def spring_strain(self, entity: int | None = None) -> Any:
        """Length / rest length of every spring, in spring row order (inf for rest 0), for
        stress colours; of one spring if ``entity`` is given."""
        if entity is not None:
            return float(self.spring_strain()[self.spring(entity).row])
        S = self.table
        length = self.links.lengths(S.view("pairs"))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(S.view("rest_length") > 0.0, length / S.view("rest_length"), np.inf)

    def remove(self, entities: list[int]) -> None:
        self.links.remove(entities)

    def _any_tearable(self) -> bool:
        """Whether any spring has a finite max_strain (recounted after rows or writes change)."""
        now = (self.table.version, _MaxStrain.writes)
        if now != self._counted:
            self._tearable = bool(np.isfinite(self.table.view("max_strain")).any())
            self._counted = now
        return self._tearable

    def links_of(self, particles: list[int]) -> list[int]:
        return self.links.links_of(particles)

    def particles_moved(self, entities: np.ndarray, rows: np.ndarray) -> None:
        self.links.particles_moved(entities, rows)

    def after_frame(self) -> None:
        """Remove the springs stretched beyond their max_strain; list them in ``broken_springs``
        and their particle pairs in the context's ``torn``."""
        self.broken_springs = []
        self.ctx.torn.clear()
        if not self._any_tearable():
            return
        S = self.table
        broken = np.flatnonzero(self.spring_strain() > S.view("max_strain"))
        if len(broken):
            self.broken_springs = [int(e) for e in S.view("entity")[broken]]
            ends = self.ctx.store.particles.view("entity")[S.view("pairs")[broken]]
            self.ctx.torn.extend((int(a), int(b)) for a, b in ends)
            self.remove(self.broken_springs)
