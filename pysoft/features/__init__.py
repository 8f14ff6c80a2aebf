"""The features a World is made of, and what they do together.

Each feature is one module owning its tables, components, ``add_*``
functions, kernels (and the stage each runs in), snapshot fields and its
share of a removal cascade. Adding a feature is one line in
:data:`FEATURES`; their order is the order of the force terms (gravity
first: it resets the forces).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pysoft._ecs import RowView
from pysoft._store import Table
from pysoft.features._feature import Context, Feature
from pysoft.features.bodies import Bodies
from pysoft.features.colliders import Colliders
from pysoft.features.constraints import Constraints
from pysoft.features.contacts import BodyCollisions
from pysoft.features.edges import EdgeCollisions
from pysoft.features.grab import Grabbing
from pysoft.features.gravity import Gravity
from pysoft.features.particles import MAX_PARTICLES, Particles
from pysoft.features.springs import Springs

FEATURES: tuple[type[Feature], ...] = (Particles, Gravity, Springs, Constraints, Bodies, Colliders,
                                       EdgeCollisions, BodyCollisions, Grabbing)


class Features:
    """The World's features, composed: lookups by kind, the removal cascade, snapshots."""

    def __init__(self, ctx: Context) -> None:
        fields: dict[str, Any] = {}
        for cls in FEATURES:
            own = cls.particle_fields(ctx.dim)
            if set(own) & set(fields):
                raise ValueError(f"{cls.__name__} declares particle fields another feature has: "
                                 f"{sorted(set(own) & set(fields))}")
            fields.update(own)
        ctx.store.table("particles", fields, MAX_PARTICLES)
        self.all = [cls(ctx) for cls in FEATURES]
        self.ctx = ctx
        self.particles = next(f for f in self.all if isinstance(f, Particles))
        # the features with something to do after a frame (most have nothing), and those that
        # may need it done after every frame (Feature.repeats)
        self.after = [f for f in self.all if type(f).after_frame is not Feature.after_frame]
        self.checked = [f for f in self.all if type(f).repeats is not Feature.repeats]
        # what repeats() said, and the Store's (rows, edits) it said it for: a feature's answer
        # changes only with its tables' rows or counted edits
        self._repeats: tuple[int, int, bool] = (-1, -1, False)
        self.owner: dict[type[RowView], Feature] = {k: f for f in self.all for k in f.kinds}

    def __iter__(self) -> Iterator[Feature]:
        return iter(self.all)

    def get(self, cls: type[Any]) -> Any:
        """The feature of class ``cls``."""
        return next(f for f in self.all if isinstance(f, cls))

    def remove(self, entities: tuple[Any, ...]) -> None:
        """Remove entities with their cascade: links naming a removed particle go with it,
        bodies drop it, and the rows of the particles that moved are renumbered. All
        entities are checked first, so a bad one leaves the world unchanged."""
        ecs = self.ctx.ecs
        ids: list[int] = []
        for i, e in enumerate(entities):
            name = "entity" if len(entities) == 1 else f"entities[{i}]"
            e = ecs.entity_id(name, e)
            if e not in ecs.components:
                raise KeyError(f"{name}: entity {e} is not a live entity of this world")
            ids.append(e)
        doomed = sorted(set(ids))
        groups: dict[int, list[int]] = {}
        for e in doomed:
            feature = self.owner[type(ecs.components[e])]
            groups.setdefault(id(feature), []).append(e)
        particles = groups.pop(id(self.particles), [])
        if particles:
            for f in self.all:
                links = f.links_of(particles)
                if links:
                    groups.setdefault(id(f), []).extend(links)
        for f in self.all:
            own = groups.get(id(f))
            if own:
                f.remove(sorted(set(own)))
        if particles:
            for f in self.all:
                f.drop_particles(particles)
            moved, rows = self.particles.remove_rows(particles)
            if len(moved):
                for f in self.all:
                    f.particles_moved(moved, rows)

    def snapshot_tables(self) -> Iterator[tuple[str, Table, tuple[str, ...]]]:
        """(table name, table, fields) of everything a snapshot saves, in a fixed order."""
        for f in self.all:
            for name, fields in f.snapshot:
                yield name, self.ctx.store.tables[name], fields

    def moves(self) -> Iterator[tuple[Table, str]]:
        """(table, field) of everything a frame changes and the next frame reads."""
        for f in self.all:
            for name, fields in f.moves:
                for field in fields:
                    yield self.ctx.store.tables[name], field

    def links(self) -> Iterator[tuple[str, Table]]:
        """Tables whose ``ends`` name particles (their topology is checked on restore)."""
        for name, table in self.ctx.store.tables.items():
            if "ends" in table.fields:
                yield name, table

    def after_frame(self) -> None:
        for f in self.after:
            f.after_frame()

    def repeats(self) -> bool:
        """Whether ``after_frame`` is the same done once after several frames as after each
        (``Feature.repeats`` of every feature)."""
        clock = self.ctx.store.clock
        rows, edits, said = self._repeats
        if rows == clock.value and edits == clock.edits:
            return said
        said = all(f.repeats() for f in self.checked)
        self._repeats = (clock.value, clock.edits, said)
        return said
