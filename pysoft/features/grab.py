"""Grabbing and picking: a mouse spring from a particle to a target the game moves
(``World.grab``, ``csrc/src/grab.c``), and the nearest particle to a point. (The pusher,
a kinematic disc that follows a target, is a collider: ``features/colliders.py``.)

A grab is a one-particle link (its row follows the particle; removing the particle
removes the grab), a target point, a stiffness and a damper; its force term adds
k (target - x) - c v to the particle in every force evaluation.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from pysoft import _validate
from pysoft._ecs import Column, RowView, Vector
from pysoft._frame import FORCES, Op, cached
from pysoft._kernels import Arg, Kernel, register
from pysoft._pipeline import MAIN
from pysoft._store import Field
from pysoft.features._feature import Context, Feature, PerState
from pysoft.features._links import Links

MAX_GRABS = 1 << 16

register(Kernel("grab", "grab",
                (Arg("force", ("n", "dim")), Arg("pos", ("n", "dim")), Arg("vel", ("n", "dim")),
                 Arg("particle", ("m", 1), np.int32), Arg("target", ("m", "dim")),
                 Arg("stiffness", ("m",)), Arg("damping", ("m",))),
                ("m", "dim"), (), ("force",), index_args=(("particle", "n"),)))


class Grab(RowView):
    """A mouse spring: move ``target`` each frame; ``release()`` lets go."""

    __slots__ = ("_release",)

    target = Vector("target", "target", "Where the particle is pulled (m); the game moves it.")
    stiffness = Column("stiffness", "Stiffness k (N/m) of the zero-length spring.", _validate.nonnegative)
    damping = Column("damping", "Damping c (N s/m) of the particle's velocity.", _validate.nonnegative)

    def __init__(self, table: Any, release: Callable[[int], None]) -> None:
        super().__init__(table)
        self._release = release

    @property
    def particle(self) -> int:
        """The grabbed particle's entity."""
        return int(self.table.arrays["ends"][self.row][0])

    def release(self) -> None:
        """Let go: the grab is removed from its world."""
        self._release(self.entity)


class _GrabTerm:
    label = "grabs"  # its name in an InstabilityError

    def __init__(self, ctx: Context, links: Links) -> None:
        self.ctx, self.G = ctx, links.table
        a, g = ctx.store.particles.arrays, links.table.arrays
        self.calls = PerState(lambda p, v, f: ctx.bind(
            "grab", force=a[f], pos=a[p], vel=a[v], particle=g["particle"], target=g["target"],
            stiffness=g["stiffness"], damping=g["damping"]))

    def evaluate(self, state: int) -> None:
        if self.G.n:
            self.calls[state](self.G.n, self.ctx.dim)

    def ops(self, h: float) -> list[Op]:
        if not self.G.n:
            return []
        return [cached(self, "grab", self.calls[MAIN], FORCES).set(self.G.n, self.ctx.dim)]


class Grabbing(Feature):
    """Mouse springs, and picking the particle nearest a point."""

    kinds = (Grab,)
    snapshot = (("grabs", ("target", "stiffness", "damping")),)

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.links = Links(ctx, "grabs", 1, "particle", {
            "target": Field((ctx.dim,), np.float64), "stiffness": Field((), np.float64),
            "damping": Field((), np.float64)}, MAX_GRABS)
        self.term = _GrabTerm(ctx, self.links)
        ctx.pipeline.forces.append(self.term)

    def nearest_particle(self, point: Any, max_distance: float = math.inf,
                         movable: bool = False) -> int | None:
        """The entity of the particle nearest ``point`` (the first in row order on a tie), or
        None if none is within ``max_distance`` (m); ``movable`` skips immovable ones."""
        p = _validate.vector("point", point, self.ctx.dim)
        reach = _validate.reach("max_distance", max_distance)
        P = self.ctx.store.particles
        d2 = ((P.view("pos") - p) ** 2).sum(axis=1)
        if movable:
            d2 = np.where(P.view("inv_mass") > 0.0, d2, np.inf)
        if not len(d2):
            return None
        i = int(np.argmin(d2))
        if not (d2[i] <= reach * reach):
            return None
        return int(P.view("entity")[i])

    def grab(self, what: Any, stiffness: float = 50.0, damping: float = 2.0,
             max_distance: float = math.inf) -> Grab:
        """Grab a particle: ``what`` is a particle entity (the target starts at the particle)
        or a point (the nearest movable particle within ``max_distance`` is grabbed and the
        target starts at the point). A zero-length spring of ``stiffness`` (N/m) pulls it
        toward the handle's ``target``, with ``damping`` (N s/m) on its velocity; move the
        target each frame, ``release()`` to let go. Raises ValueError if there is nothing to
        grab there, or if the spring would be unstable for the particle's mass at the
        world's substep (k h^2 / m must stay below 0.4)."""
        k = _validate.nonnegative("stiffness", stiffness)
        c = _validate.nonnegative("damping", damping)
        P = self.ctx.store.particles
        if isinstance(what, (int, np.integer)) and not isinstance(what, bool):
            entity = int(what)
            if entity not in P.row_of:
                raise KeyError(f"what: entity {entity} is not a live particle of this world")
            target = P.view("pos")[P.row_of[entity]].copy()
        else:
            target = _validate.vector("what", what, self.ctx.dim)
            found = self.nearest_particle(target, max_distance, movable=True)
            if found is None:
                raise ValueError(f"what: no movable particle within max_distance={max_distance} of "
                                 f"{target.tolist()}")
            entity = found
        row = P.row_of[entity]
        mass, h = float(P.view("mass")[row]), self.ctx.settings._dt / self.ctx.settings._substeps
        if math.isfinite(mass) and k * h * h / mass >= 0.4:
            raise ValueError(f"stiffness: {k} N/m is unstable on a {mass} kg particle at a substep "
                             f"of {h:.3g} s (at most {0.4 * mass / (h * h):.4g})")
        ends, rows = self.links.resolve("what", [[entity]])
        table = self.links.table
        made = self.links.add("grab", lambda: Grab(table, self._release), ends, rows,
                              target=target[None], stiffness=[k], damping=[c])
        return self.ctx.ecs.components[int(made[0])]  # type: ignore[return-value]

    def _release(self, entity: int) -> None:
        if entity not in self.links.table.row_of:
            raise KeyError(f"grab {entity} was released already")
        self.links.remove([entity])

    def probes(self) -> dict[str, tuple[int, Callable[[], Any]]]:
        m = self.links.table.n
        return {"grab": (m, functools.partial(self.term.calls[0], m, self.ctx.dim))}

    def remove(self, entities: list[int]) -> None:
        self.links.remove(entities)

    def links_of(self, particles: list[int]) -> list[int]:
        return self.links.links_of(particles)

    def particles_moved(self, entities: np.ndarray, rows: np.ndarray) -> None:
        self.links.particles_moved(entities, rows)
