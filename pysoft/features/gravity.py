"""Gravity: uniform gravity with linear drag, and radial gravity wells (planets)
(``csrc/src/gravity.c``).

Gravity runs first in every force evaluation: it *sets* the force array,
which every later force term adds to.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pysoft import _validate
from pysoft._ecs import Column, RowView, Vector
from pysoft._frame import FORCES, Op, cached
from pysoft._kernels import Arg, Kernel, register
from pysoft._pipeline import MAIN
from pysoft._store import Field, Table
from pysoft.features._feature import Context, Feature, PerState

MAX_WELLS = 1 << 16


def _check_wells(arrays: dict[str, np.ndarray], sizes: dict[str, int]) -> None:
    falloff = arrays["well_falloff"][: sizes["w"]]
    if ((falloff < 0) | (falloff > 3)).any():
        raise ValueError("radial_gravity: well_falloff must be 0..3")


_P, _S = ("n", "dim"), ("n",)
register(
    Kernel("gravity_drag", "gravity",
           (Arg("force", _P), Arg("vel", _P), Arg("start_vel", _P), Arg("mass", _S),
            Arg("inv_mass", _S), Arg("gravity", ("dim",))),
           ("n", "dim"), ("drag", "record"), ("force", "vel", "start_vel"), rows="void"),
    Kernel("radial_gravity", "gravity",
           (Arg("force", _P), Arg("pos", _P), Arg("mass", _S), Arg("inv_mass", _S),
            Arg("well_center", ("w", "dim")), Arg("well_strength", ("w",)),
            Arg("well_falloff", ("w",), np.int32), Arg("well_min_distance", ("w",))),
           ("n", "w", "dim"), (), ("force",), check=_check_wells),
)


class GravityWell(RowView):
    """A radial gravity field: acceleration strength / max(d, min_distance)^falloff toward center."""

    __slots__ = ()

    center = Vector("center", "center", "Centre of attraction (m).")
    strength = Column("strength", "Acceleration at 1 m for falloff 2: G M (m^3/s^2).", _validate.finite)
    min_distance = Column("min_distance", "Softening distance (m).", _validate.positive)

    @property
    def falloff(self) -> int:
        """Exponent of the distance in the denominator (0, 1, 2 or 3)."""
        return int(self.table.arrays["falloff"][self.row])


class _GravityTerm:
    """gravity_drag then radial_gravity, bound for every force state."""
    label = "gravity and wells"  # its name in an InstabilityError

    def __init__(self, ctx: Context, P: Table, W: Table) -> None:
        self.ctx, self.P, self.W = ctx, P, W
        a, w = P.arrays, W.arrays
        shared = {"mass": a["mass"], "inv_mass": a["inv_mass"]}
        self.gravity = PerState(lambda p, v, f: ctx.bind(
            "gravity_drag", force=a[f], vel=a[v], start_vel=a["start_vel"],
            gravity=ctx.settings._gravity, **shared))
        self.wells = PerState(lambda p, v, f: ctx.bind(
            "radial_gravity", force=a[f], pos=a[p], well_center=w["center"],
            well_strength=w["strength"], well_falloff=w["falloff"],
            well_min_distance=w["min_distance"], **shared))

    def evaluate(self, state: int) -> None:
        n, dim = self.P.n, self.ctx.dim
        self.gravity[state](n, dim, self.ctx.settings._drag, 0)
        if self.W.n:
            self.wells[state](n, self.W.n, dim)

    def ops(self, h: float) -> list[Op]:
        n, dim = self.P.n, self.ctx.dim
        # on a frame's first substep it records the start velocities (``record``, the 4th)
        gravity = cached(self, "gravity", self.gravity[MAIN], FORCES, vary=3)
        out = [gravity.set(n, dim, self.ctx.settings._drag, 0)]
        if self.W.n:
            out.append(cached(self, "wells", self.wells[MAIN], FORCES).set(n, self.W.n, dim))
        return out


class Gravity(Feature):
    """Uniform gravity, drag and radial gravity wells."""

    kinds = (GravityWell,)
    snapshot = (("wells", ("center", "strength", "falloff", "min_distance")),)

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.table = ctx.store.table("wells", {
            "center": Field((ctx.dim,), np.float64), "strength": Field((), np.float64),
            "falloff": Field((), np.int32), "min_distance": Field((), np.float64),
            "entity": Field((), np.int64, -1),
        }, MAX_WELLS)
        self.term = _GravityTerm(ctx, ctx.store.particles, self.table)
        ctx.pipeline.forces.append(self.term)

    def add_gravity_well(self, center: Sequence[float], strength: float, falloff: int = 2,
                         min_distance: float = 0.1) -> int:
        """A radial gravity field (a planet): particles accelerate toward ``center``.

        Acceleration ``strength / max(d, min_distance)**falloff`` (m/s^2), with
        ``falloff`` 0 (constant), 1, 2 (inverse square: strength = G M) or 3.
        Works beside or instead of uniform gravity (``World(gravity=(0, 0))``).
        """
        c = _validate.vector("center", center, self.ctx.dim)
        g = _validate.finite("strength", strength)
        k = _validate.integer("falloff", falloff, 0)
        if k > 3:
            raise ValueError(f"falloff must be 0, 1, 2 or 3, got {k}")
        d = _validate.positive("min_distance", min_distance)
        W = self.table
        W.room(1, "add_gravity_well")
        entities = self.ctx.ecs.create(1, lambda: GravityWell(W))
        W.add(1, center=c, strength=g, falloff=k, min_distance=d, entity=entities)
        return int(entities[0])

    def probes(self) -> dict[str, tuple[int, Callable[[], Any]]]:
        term, n, w, dim = self.term, self.ctx.store.particles.n, self.table.n, self.ctx.dim
        return {"gravity_drag": (n, functools.partial(term.gravity[0], n, dim, 0.1, 0)),
                "radial_gravity": (n * w, functools.partial(term.wells[0], n, w, dim))}

    def gravity_well(self, entity: int) -> GravityWell:
        """The GravityWell component of ``entity``."""
        return self.ctx.ecs.get(entity, GravityWell, "gravity well")

    def remove(self, entities: list[int]) -> None:
        self.table.remove_rows(self.table.rows(entities))
        self.ctx.ecs.delete(entities)
