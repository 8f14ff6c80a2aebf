"""The World: the public API over the features, the step loop and an esper context.

A World composes the features of ``pysoft.features`` (particles, gravity,
springs, XPBD constraints, bodies, colliders), each of which owns its Store
tables, components, ``add_*`` functions and kernels; the public methods
below hand over to them. Its bases give it its settings as attributes
(``pysoft._pipeline.WorldSettings``), its frames (``pysoft._stepping``: ``step``, the systems)
and its life (``pysoft._lifetime``: capacity, one thread at a time, ``close``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

import esper
import numpy as np

from pysoft import _frame, _lifetime, _native, _replay, _snapshot, _validate
from pysoft._ecs import Ecs
from pysoft._lifetime import ClosedError, ConcurrentUseError
from pysoft._pipeline import INTEGRATORS, STAGES, InstabilityError, WorldSettings
from pysoft._stepping import Stepping
from pysoft._store import FULL_CAPACITY
from pysoft.features._feature import Feature
from pysoft.features.bodies import Bodies
from pysoft.features.colliders import Colliders, Contacts
from pysoft.features.constraints import Constraints
from pysoft.features.contacts import BodyCollisions, BodyContacts
from pysoft.features.grab import Grabbing
from pysoft.features.gravity import Gravity
from pysoft.features.particles import Particles
from pysoft.features.springs import Springs

__all__ = ["BACKENDS", "INTEGRATORS", "BodyContacts", "ClosedError", "ConcurrentUseError", "Contacts",
           "InstabilityError", "World"]

BACKENDS = ("c", "python")
P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Feature)


def _api(cls: type[F], method: Callable[Concatenate[F, P], R], changes: bool = False
         ) -> Callable[Concatenate[World, P], R]:
    """A World method that hands over to feature ``cls`` (its signature and docstring);
    one that ``changes`` the world holds it (``World._changing``) while it runs."""

    def call(self: World, *args: P.args, **kwargs: P.kwargs) -> R:
        feature = self._feature.get(cls)
        if feature is None:
            raise ClosedError(f"this World was closed ({self.context}); make a new one")
        if not changes:
            return method(cast(F, feature), *args, **kwargs)
        with self._changing(method.__name__):
            return method(cast(F, feature), *args, **kwargs)

    return cast("Callable[Concatenate[World, P], R]", functools.wraps(method)(call))


def _view(cls: type[Feature], name: str) -> Any:
    """A read-only World property that hands over to feature ``cls``."""
    prop = getattr(cls, name)

    def get(self: World) -> Any:
        feature = self._feature.get(cls)
        if feature is None:
            raise ClosedError(f"this World was closed ({self.context}); make a new one")
        return getattr(feature, name)

    return property(get, doc=prop.__doc__)


class World(WorldSettings, Stepping, _lifetime.Lifetime):
    """A soft-body world. SI units, y up.

    >>> w = World(gravity=(0.0, -9.81))
    >>> p = w.add_particle((0.0, 1.0))
    >>> w.step()
    >>> bool(w.particle(p).position[1] < 1.0)
    True
    """

    def __init__(
        self,
        dim: int = 2,
        gravity: Sequence[float] | None = None,
        dt: float = 1.0 / 60.0,
        substeps: int = 8,
        max_dt: float = 1.0 / 15.0,
        drag: float = 0.0,
        integrator: str = "symplectic_euler",
        backend: str | None = None,
        context: str | None = None,
        *,
        restitution_threshold: float = 0.25,
        contact_iterations: int | None = None,
        constraint_iterations: int = 2,
        max_speed: float = 1e3, on_instability: str = "raise", particle_collisions: bool = False,
        body_collisions: bool = True, body_contact_iterations: int = 1, threads: int = 1,
        capacity: int | None = None,
    ) -> None:
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim not in (2, 3):
            raise ValueError(f"dim must be 2 or 3, got {dim!r}")
        if backend is None:  # the C core, or the NumPy twins where it was not built
            backend = _native.default_backend()
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if backend == "c":
            _native.require()
        capacity = None if capacity is None else _validate.integer("capacity", capacity, 1, FULL_CAPACITY)
        self.dim = dim
        self.backend = backend
        settings = self._configure(
            dim, gravity=(0.0, -9.81, 0.0)[:dim] if gravity is None else gravity, dt=dt,
            substeps=substeps, max_dt=max_dt, drag=drag, integrator=integrator,
            restitution_threshold=restitution_threshold, max_speed=max_speed,
            on_instability=on_instability,
            contact_iterations=dim if contact_iterations is None else contact_iterations,
            constraint_iterations=constraint_iterations, particle_collisions=particle_collisions,
            body_collisions=body_collisions, body_contact_iterations=body_contact_iterations,
            threads=threads)
        self._feature: dict[type[Feature], Feature] = {}
        self._ecs = Ecs(context)
        self.context = self._ecs.context
        self._guard = _lifetime.Guard(self.context)  # held by the thread stepping or changing it
        try:
            self.store, self.pipeline, self._features = _lifetime.make(dim, capacity, self._ecs,
                                                                       settings, backend)
        except BaseException:
            self._guard.closed = True
            self._ecs.close()
            raise
        self._feature = {type(f): f for f in self._features}
        self._frame_start = _replay.FrameStart(self.store, self._features.moves())
        # the run order, replaced (never changed in place) by add_system / remove_system, so a
        # system that adds or removes one during step() changes the next frame, not this one
        self._systems: tuple[esper.Processor, ...] = tuple(cls(self.pipeline) for cls in STAGES)
        self._stages = self._systems  # while the run order is these, a frame may run in one call
        self._frame = _frame.Frame(self.pipeline, self.store.clock, self._ecs) if backend == "c" else None
        self._stepping = False
        self._elapsed: tuple[tuple[Any, ...], Any] = ((), [])  # the last step's systems, seconds

    @property
    def capacity(self) -> int:
        """The most particles this world holds (``World(capacity=...)``); the other tables'
        limits scale with it. Adding past a limit raises ``pysoft.CapacityError``."""
        return self.store.capacity

    @property
    def time(self) -> float:
        """Simulated seconds so far."""
        return self.pipeline.time

    @time.setter
    def time(self, value: float) -> None:
        self.pipeline.time = _validate.finite("time", value)

    # -- the features' public API (each hands over to its feature) --------------

    add_particle = _api(Particles, Particles.add_particle, changes=True)
    add_particles = _api(Particles, Particles.add_particles, changes=True)
    particle = _api(Particles, Particles.particle)
    row = _api(Particles, Particles.row)
    positions = _view(Particles, "positions")
    velocities = _view(Particles, "velocities")
    forces = _view(Particles, "forces")
    particles = _view(Particles, "particles")
    add_spring = _api(Springs, Springs.add_spring, changes=True)
    add_springs = _api(Springs, Springs.add_springs, changes=True)
    spring = _api(Springs, Springs.spring)
    spring_strain = _api(Springs, Springs.spring_strain)
    spring_pairs = _api(Springs, Springs.spring_pairs)
    add_muscles = _api(Springs, Springs.add_muscles, changes=True)
    add_area_spring = _api(Springs, Springs.add_area_spring, changes=True)
    add_area_springs = _api(Springs, Springs.add_area_springs, changes=True)
    area_spring = _api(Springs, Springs.area_spring)
    add_distance_constraint = _api(Constraints, Constraints.add_distance_constraint, changes=True)
    add_distance_constraints = _api(Constraints, Constraints.add_distance_constraints, changes=True)
    add_volume_constraint = _api(Constraints, Constraints.add_volume_constraint, changes=True)
    add_volume_constraints = _api(Constraints, Constraints.add_volume_constraints, changes=True)
    distance_constraint = _api(Constraints, Constraints.distance_constraint)
    volume_constraint = _api(Constraints, Constraints.volume_constraint)
    add_material_constraint = _api(Constraints, Constraints.add_material_constraint, changes=True)
    add_material_constraints = _api(Constraints, Constraints.add_material_constraints, changes=True)
    material_constraint = _api(Constraints, Constraints.material_constraint)
    add_body = _api(Bodies, Bodies.add_body, changes=True)
    body = _api(Bodies, Bodies.body)
    add_collider = _api(Colliders, Colliders.add_collider, changes=True)
    collider = _api(Colliders, Colliders.collider)
    add_pusher = _api(Colliders, Colliders.add_pusher, changes=True)
    contacts: Contacts = _view(Colliders, "contacts")
    body_contacts: BodyContacts = _view(BodyCollisions, "body_contacts")
    grab = _api(Grabbing, Grabbing.grab, changes=True)
    nearest_particle = _api(Grabbing, Grabbing.nearest_particle)
    body_at = _api(Bodies, Bodies.body_at)
    body_shapes = _api(Bodies, Bodies.body_shapes)
    add_gravity_well = _api(Gravity, Gravity.add_gravity_well, changes=True)
    gravity_well = _api(Gravity, Gravity.gravity_well)

    def debug_draw(self, drawer: Any, flags: int | None = None, camera: Any = None) -> None:
        """Hand the world's primitives to ``drawer`` (any object with some of ``polygons``,
        ``segments``, ``circles``, ``lines``, ``arrows``, ``text``; see ``pysoft.draw``);
        ``flags`` a ``pysoft.draw.DrawFlags`` (default: outlines, springs by strain,
        colliders, text; in 3D shaded surfaces, colliders, text). A 3D world is seen through
        ``camera``, a ``pysoft.draw.Camera3D`` (default: the drawer's ``camera``)."""
        from pysoft.draw import debug_draw

        debug_draw(self, drawer, flags, camera)

    @property
    def broken_springs(self) -> list[int]:
        """Spring entities that broke (were removed) in the last step."""
        return list(self._feature[Springs].broken_springs)  # type: ignore[attr-defined]

    # -- removal ------------------------------------------------------------------

    def remove(self, *entities: int) -> None:
        """Remove entities. A particle takes the springs and constraints that name it along
        and leaves the bodies it belonged to; the rest keep their state. All are checked
        first: an unknown or removed entity raises KeyError and nothing is removed."""
        if not entities:
            raise ValueError("remove needs at least one entity")
        with self._guard.held("remove"):
            self._sweep_ghosts()
            self._features.remove(entities)

    # -- snapshots ------------------------------------------------------------------

    def snapshot(self) -> bytes:
        """The full integration state as a versioned, checksummed blob."""
        with self._guard.held("snapshot"):
            return _snapshot.pack(self._features, self.time)

    def restore(self, blob: bytes) -> None:
        """Restore a snapshot of a world of the same topology; raises ValueError otherwise."""
        with self._guard.held("restore"):
            self.pipeline.time = _snapshot.unpack(self._features, blob)
            if self._frame is not None:  # (the next frame starts from Python)
                self._frame.resumable = False

    def __repr__(self) -> str:
        if not self._feature:
            return f"<pysoft.World dim={self.dim} closed backend={self.backend!r}>"
        s = self.store
        return (f"<pysoft.World dim={self.dim} particles={s.particles.n} springs={s.springs.n} "
                f"colliders={s.colliders.n} t={self.time:.4g}s backend={self.backend!r}>")
