"""The World: the public API over the features, the step loop and an esper context.

A World composes the features of ``pysoft.features`` (particles, gravity,
springs, XPBD constraints, bodies, colliders), each of which owns its Store
tables, components, ``add_*`` functions and kernels; the public methods
below hand over to them. ``step`` runs the stages of ``pysoft._pipeline`` (or
the frame in one call of the C core, ``pysoft._frame``), whose kernels were bound
once to the Store's buffers: a step rebinds nothing, whatever changed since the last.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

import esper
import numpy as np

from pysoft import _frame, _native, _replay, _snapshot, _validate
from pysoft._ecs import Ecs
from pysoft._pipeline import INTEGRATORS, MIN_DT, STAGES, InstabilityError, Pipeline, Settings, Stage
from pysoft._store import Store
from pysoft.features import Features
from pysoft.features._feature import Context, Feature
from pysoft.features.bodies import Bodies
from pysoft.features.colliders import Colliders, Contacts
from pysoft.features.constraints import Constraints
from pysoft.features.contacts import BodyCollisions, BodyContacts
from pysoft.features.grab import Grabbing
from pysoft.features.gravity import Gravity
from pysoft.features.particles import Particles
from pysoft.features.springs import Springs

__all__ = ["BACKENDS", "INTEGRATORS", "BodyContacts", "Contacts", "InstabilityError", "World"]

BACKENDS = ("c", "python")
P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Feature)


def _api(cls: type[F], method: Callable[Concatenate[F, P], R]) -> Callable[Concatenate[World, P], R]:
    """A World method that hands over to feature ``cls`` (its signature and docstring)."""

    def call(self: World, *args: P.args, **kwargs: P.kwargs) -> R:
        return method(cast(F, self._feature[cls]), *args, **kwargs)

    return cast("Callable[Concatenate[World, P], R]", functools.wraps(method)(call))


def _view(cls: type[Feature], name: str) -> Any:
    """A read-only World property that hands over to feature ``cls``."""
    prop = getattr(cls, name)
    return property(lambda self: getattr(self._feature[cls], name), doc=prop.__doc__)


class StepProcessor(esper.Processor):
    """Runs ``world.step(dt)`` from a game's own ``esper.process(dt)``."""

    def __init__(self, world: World) -> None:
        self.world = world

    def process(self, dt: float | None = None, *args: Any, **kwargs: Any) -> None:
        self.world.step(dt)


class World(Settings):
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
    ) -> None:
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim not in (2, 3):
            raise ValueError(f"dim must be 2 or 3, got {dim!r}")
        if backend is None:  # the C core, or the NumPy twins where it was not built
            backend = _native.default_backend()
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if backend == "c":
            _native.require()
        self.dim = dim
        self.backend = backend
        self._gravity = np.zeros(dim)
        self.gravity = (0.0, -9.81, 0.0)[:dim] if gravity is None else gravity
        self.dt = dt
        self.substeps = substeps
        self.max_dt = max_dt
        self.drag = drag
        self.integrator = integrator
        self.restitution_threshold = restitution_threshold
        self.max_speed = max_speed
        self.on_instability = on_instability
        self.contact_iterations = dim if contact_iterations is None else contact_iterations
        self.constraint_iterations = constraint_iterations
        self.particle_collisions = particle_collisions
        self.body_collisions = body_collisions
        self.body_contact_iterations, self.threads = body_contact_iterations, threads
        self._ecs = Ecs(context)
        self.context = self._ecs.context
        self.store = Store(dim)
        self.pipeline = Pipeline(self)
        self._features = Features(Context(self.store, self._ecs, self, self.pipeline, backend, dim))
        self._feature: dict[type[Feature], Feature] = {type(f): f for f in self._features}
        self._frame_start = _replay.FrameStart(self.store, self._features.moves())
        # the run order, replaced (never changed in place) by add_system / remove_system, so a
        # system that adds or removes one during step() changes the next frame, not this one
        self._systems: tuple[esper.Processor, ...] = tuple(cls(self.pipeline) for cls in STAGES)
        self._stages = self._systems  # while the run order is these, a frame may run in one call
        self._frame = _frame.Frame(self.pipeline, self.store.clock) if backend == "c" else None
        self._stepping = False
        self._elapsed: tuple[tuple[Any, ...], Any] = ((), [])  # the last step's systems, seconds

    @property
    def time(self) -> float:
        """Simulated seconds so far."""
        return self.pipeline.time

    @time.setter
    def time(self, value: float) -> None:
        self.pipeline.time = _validate.finite("time", value)

    # -- the features' public API (each hands over to its feature) --------------

    add_particle = _api(Particles, Particles.add_particle)
    add_particles = _api(Particles, Particles.add_particles)
    particle = _api(Particles, Particles.particle)
    row = _api(Particles, Particles.row)
    positions = _view(Particles, "positions")
    velocities = _view(Particles, "velocities")
    forces = _view(Particles, "forces")
    particles = _view(Particles, "particles")
    add_spring = _api(Springs, Springs.add_spring)
    add_springs = _api(Springs, Springs.add_springs)
    spring = _api(Springs, Springs.spring)
    spring_strain = _api(Springs, Springs.spring_strain)
    spring_pairs = _api(Springs, Springs.spring_pairs)
    add_area_spring = _api(Springs, Springs.add_area_spring)
    add_area_springs = _api(Springs, Springs.add_area_springs)
    area_spring = _api(Springs, Springs.area_spring)
    add_distance_constraint = _api(Constraints, Constraints.add_distance_constraint)
    add_distance_constraints = _api(Constraints, Constraints.add_distance_constraints)
    add_volume_constraint = _api(Constraints, Constraints.add_volume_constraint)
    add_volume_constraints = _api(Constraints, Constraints.add_volume_constraints)
    distance_constraint = _api(Constraints, Constraints.distance_constraint)
    volume_constraint = _api(Constraints, Constraints.volume_constraint)
    add_body = _api(Bodies, Bodies.add_body)
    body = _api(Bodies, Bodies.body)
    add_collider = _api(Colliders, Colliders.add_collider)
    collider = _api(Colliders, Colliders.collider)
    add_pusher = _api(Colliders, Colliders.add_pusher)
    contacts: Contacts = _view(Colliders, "contacts")
    body_contacts: BodyContacts = _view(BodyCollisions, "body_contacts")
    grab = _api(Grabbing, Grabbing.grab)
    nearest_particle = _api(Grabbing, Grabbing.nearest_particle)
    body_at = _api(Bodies, Bodies.body_at)
    body_shapes = _api(Bodies, Bodies.body_shapes)
    add_gravity_well = _api(Gravity, Gravity.add_gravity_well)
    gravity_well = _api(Gravity, Gravity.gravity_well)

    def debug_draw(self, drawer: Any, flags: int | None = None) -> None:
        """Hand the world's primitives to ``drawer`` (any object with some of ``polygons``,
        ``segments``, ``circles``, ``lines``, ``arrows``, ``text``; see ``pysoft.draw``);
        ``flags`` a ``pysoft.draw.DrawFlags`` (default: outlines, springs by strain,
        colliders, text)."""
        from pysoft.draw import DrawFlags, debug_draw

        debug_draw(self, drawer, DrawFlags.DEFAULT if flags is None else flags)

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
        self._sweep_ghosts()
        self._features.remove(entities)

    def _sweep_ghosts(self) -> None:
        """Give entities deleted through esper itself the World's cascade."""
        ghosts = self._ecs.ghosts()
        if ghosts:
            self._features.remove(tuple(ghosts))

    # -- systems and stepping -------------------------------------------------------

    def add_system(self, processor: esper.Processor, priority: int = 0) -> None:
        """Run ``processor.process(h)`` inside every substep, ordered by priority.

        Built-in stages have the priorities of ``pysoft.Priority`` (higher runs
        first); e.g. ``priority=450`` runs between forces and integration.
        """
        if not callable(getattr(processor, "process", None)):
            raise ValueError("processor must have a process(h) method (an esper.Processor)")
        priority = _validate.integer("priority", priority, -(2**31), 2**31 - 1)
        if processor in self._systems:
            raise ValueError("processor is already a system of this world")
        processor.priority = priority
        # stable: ties keep insertion order
        self._systems = tuple(sorted((*self._systems, processor), key=lambda p: -p.priority))

    def remove_system(self, processor: esper.Processor) -> None:
        """Stop running a processor added with ``add_system``."""
        if isinstance(processor, Stage) or processor not in self._systems:
            raise ValueError("processor is not a user system of this world")
        self._systems = tuple(p for p in self._systems if p is not processor)

    @property
    def systems(self) -> list[esper.Processor]:
        """The processors of one substep, in run order."""
        return list(self._systems)

    def processor(self) -> StepProcessor:
        """An esper.Processor that steps this world from a game's ``esper.process(dt)``."""
        return StepProcessor(self)

    def step(self, dt: float | None = None) -> None:
        """Advance one frame of ``dt`` seconds (default ``self.dt``), clamped to ``max_dt``; a frame
        shorter than ``MIN_DT`` (1 µs, or 0) does nothing. Systems added or removed by a system
        during the frame run from the next frame on; calling ``step`` from inside ``step`` raises
        RuntimeError."""
        if self._stepping:
            raise RuntimeError("step() was called from inside step() (from a system?): a frame "
                               "cannot start before the running one ends")
        dt = self._dt if dt is None else _validate.nonnegative("dt", dt)
        if dt < MIN_DT:  # no frame: 0, or shorter than a microsecond
            return
        self._sweep_ghosts()
        dt = min(dt, self._max_dt)
        h = dt / self._substeps
        systems, pipeline = self._systems, self.pipeline
        frame, start = self._frame if systems == self._stages else None, self._frame_start
        elapsed: Any = frame.seconds if frame is not None else ()  # each stage's seconds, if it runs
        if watched := self._on_instability in ("raise", "warn"):  # where a replay would start
            start.save(frame.kept(self._substeps) if frame is not None else ())
        pipeline.unstable, error, self._stepping = -1, None, True
        try:
            if not (frame is not None and frame.run(h, self._substeps, start)):
                elapsed = [0.0] * len(systems)
                start.keep_only()  # (the fields left to their records: pysoft._replay)
                with self._ecs.entered():  # the stages (and the user's systems), one by one
                    pipeline.run(systems, h, elapsed)
            if pipeline.unstable >= 0 and watched:
                with self._ecs.entered():  # where it began: pysoft._replay
                    error = _replay.diagnose(pipeline, start, systems, h, self._features.particles.scan)
        finally:
            self._stepping = False
        pipeline.time += dt  # the frame ran to its end, whatever the scan found
        _replay.deliver(error, self._on_instability)  # raise or warn what the scan found
        self._features.after_frame()
        self._elapsed = (systems, elapsed)

    @property
    def profile(self) -> dict[str, float]:
        """Milliseconds each system took in the last step (over its substeps), by name."""
        return {getattr(s, "name", type(s).__name__): 1e3 * t for s, t in zip(*self._elapsed, strict=True)}

    # -- snapshots ------------------------------------------------------------------

    def snapshot(self) -> bytes:
        """The full integration state as a versioned, checksummed blob."""
        return _snapshot.pack(self._features, self.time)

    def restore(self, blob: bytes) -> None:
        """Restore a snapshot of a world of the same topology; raises ValueError otherwise."""
        self.pipeline.time = _snapshot.unpack(self._features, blob)

    def __repr__(self) -> str:
        s = self.store
        return (f"<pysoft.World dim={self.dim} particles={s.particles.n} springs={s.springs.n} "
                f"colliders={s.colliders.n} t={self.time:.4g}s backend={self.backend!r}>")
