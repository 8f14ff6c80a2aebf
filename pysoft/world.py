"""The World: the public API over the Store, the kernels and an esper context.

Entities (particles, springs, colliders) are esper entities whose components
are views into the Store (see components.py). Every change of topology goes
through a World method, which updates the Store and esper together and bumps
the Store's version; ``step`` rebinds kernels only when that version moved.
"""

from __future__ import annotations

import itertools
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from time import perf_counter
from types import SimpleNamespace
from typing import Any, NamedTuple, TypeVar, cast

import esper
import numpy as np

from pysoft import _native, snapshot, validate
from pysoft.binding import bind_kernels
from pysoft.components import (
    Collider,
    DistanceConstraint,
    GravityWell,
    Particle,
    Pressure,
    ShapeMatching,
    SoftBody,
    Spring,
    VolumeConstraint,
    _RowView,
)
from pysoft.shapes import SHAPES, Shape, signed_area
from pysoft.store import Store, Table
from pysoft.systems import BUILT_IN, Pass

INTEGRATORS = ("symplectic_euler", "explicit_euler", "verlet", "rk4", "xpbd")
BACKENDS = ("c", "python")
_contexts = itertools.count(1)
_V = TypeVar("_V", bound=_RowView)


class InstabilityError(RuntimeError):
    """A particle's state went non-finite or faster than ``World.max_speed``."""

    def __init__(self, message: str, entity: int, row: int) -> None:
        super().__init__(message)
        self.entity = entity
        self.row = row


class Contacts(NamedTuple):
    """Contacts of the last step, one row per particle that touched a collider.

    ``impulses`` is the normal impulse (N s) summed over the step's substeps;
    ``colliders`` and ``normals`` are those of the particle's last contact.
    """

    particles: np.ndarray
    colliders: np.ndarray
    normals: np.ndarray
    impulses: np.ndarray


class StepProcessor(esper.Processor):
    """Runs ``world.step(dt)`` from a game's own ``esper.process(dt)``."""

    def __init__(self, world: World) -> None:
        self.world = world

    def process(self, dt: float | None = None, *args: Any, **kwargs: Any) -> None:
        self.world.step(dt)


def _drop_context(name: str) -> None:
    if name in esper.list_worlds() and esper.current_world != name:
        esper.delete_world(name)


class World:
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
        backend: str = "c",
        context: str | None = None,
        *,
        restitution_threshold: float = 0.25,
        contact_iterations: int | None = None,
        constraint_iterations: int = 2,
        max_speed: float = 1e3,
        on_instability: str = "raise",
    ) -> None:
        if dim not in (2, 3) or isinstance(dim, bool):
            raise ValueError(f"dim must be 2 or 3, got {dim!r}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if backend == "c":
            _native.require()
        if context is not None and not isinstance(context, str):
            raise ValueError(f"context must be a string or None, got {context!r}")
        self.dim = dim
        self.backend = backend
        self.store = Store(dim)
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
        self.time = 0.0
        self.profile: dict[str, float] = {}
        self._components: dict[int, _RowView] = {}
        self._systems: list[esper.Processor] = [cls(self) for cls in BUILT_IN]
        self._bound = SimpleNamespace()
        self._bound_version = -1
        self._last_substep = False
        self._substep = 0
        self.broken_springs: list[int] = []
        self.context = context if context is not None else f"pysoft.world.{next(_contexts)}"
        if context is None:
            weakref.finalize(self, _drop_context, self.context)
        with self._entered():
            pass  # creates the esper context now

    # -- settings, validated ------------------------------------------------

    @property
    def gravity(self) -> np.ndarray:
        """Uniform gravity (m/s^2); a copy, assign to change it."""
        return self._gravity.copy()

    @gravity.setter
    def gravity(self, value: Any) -> None:
        self._gravity[:] = validate.vector("gravity", value, self.dim)  # kernels hold this array

    # Checked settings keep their value in _<name>, which the step loop reads.
    _dt: float
    _substeps: int
    _max_dt: float
    _drag: float
    _integrator: str
    _restitution_threshold: float
    _max_speed: float
    _on_instability: str
    _contact_iterations: int
    _constraint_iterations: int
    dt = validate.Checked(validate.positive, "Default frame length (s) of ``step()``.")
    substeps = validate.Checked(lambda n, v: validate.integer(n, v, 1), "Substeps per frame.")
    max_dt = validate.Checked(validate.positive, "Frame length cap (s): a longer frame is clamped to it.")
    drag = validate.Checked(validate.nonnegative, "Linear air resistance (1/s).")
    integrator = validate.Checked(validate.choice(INTEGRATORS), "One of ``INTEGRATORS``.")
    restitution_threshold = validate.Checked(
        validate.nonnegative, "Approach speed (m/s) below which a contact does not bounce.")
    max_speed = validate.Checked(validate.positive, "Speed (m/s) above which a particle counts as unstable.")
    contact_iterations = validate.Checked(
        lambda n, v: validate.integer(n, v, 1),
        "Contact searches per particle and substep (default dim): settles corners of several shapes.")
    constraint_iterations = validate.Checked(
        lambda n, v: validate.integer(n, v, 1),
        "XPBD solver sweeps per substep (default 2; more substeps converge better than more sweeps).")
    on_instability = validate.Checked(
        validate.choice(("raise", "warn", "ignore")),
        '''"raise" (InstabilityError), "warn" (RuntimeWarning) or "ignore".''')

    # -- esper context ------------------------------------------------------

    @contextmanager
    def _entered(self) -> Iterator[None]:
        """Switch esper to this world's context and back."""
        previous = esper.current_world
        if previous == self.context:
            yield
            return
        esper.switch_world(self.context)
        try:
            yield
        finally:
            esper.switch_world(previous)

    # -- particles ----------------------------------------------------------

    def add_particle(
        self,
        position: Sequence[float],
        velocity: Sequence[float] | None = None,
        mass: float = 1.0,
        radius: float = 0.0,
        pinned: bool = False,
    ) -> int:
        """Add one particle; returns its entity. ``mass=inf`` or ``pinned=True``: immovable."""
        pos = validate.vector("position", position, self.dim)
        vel = np.zeros(self.dim) if velocity is None else validate.vector("velocity", velocity, self.dim)
        return int(self._add_particles(pos[None], vel[None], np.array([validate.mass("mass", mass)]),
                                       np.array([validate.nonnegative("radius", radius)]),
                                       np.array([self._flag("pinned", pinned)]))[0])

    def add_particles(
        self,
        positions: Any,
        velocities: Any = None,
        masses: Any = 1.0,
        radii: Any = 0.0,
        pinned: Any = False,
    ) -> list[int]:
        """Add particles in bulk; ``positions`` is (N, dim). Returns their entities."""
        pos = validate.array("positions", positions, (None, self.dim))
        n = len(pos)
        vel = (np.zeros_like(pos) if velocities is None
               else validate.array("velocities", velocities, (n, self.dim)))
        m = validate.per_row("masses", masses, n)
        if np.isnan(m).any() or (m <= 0.0).any():
            raise ValueError("masses must be > 0 (inf for immovable)")
        r = self._nonnegative_rows("radii", radii, n)
        pin = np.asarray(pinned)
        if pin.dtype != bool or pin.ndim > 1 or (pin.ndim == 1 and len(pin) != n):
            raise ValueError(f"pinned must be a bool or {n} bools")
        return cast(list[int], self._add_particles(pos, vel, m, r, np.broadcast_to(pin, (n,))).tolist())

    @staticmethod
    def _flag(name: str, value: Any) -> bool:
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{name} must be a bool, got {value!r}")
        return bool(value)

    def _add_particles(self, pos: np.ndarray, vel: np.ndarray, mass: np.ndarray,
                       radius: np.ndarray, pinned: np.ndarray) -> np.ndarray:
        inv = np.where(pinned | np.isinf(mass), 0.0, 1.0 / mass)
        vel = np.where(inv[:, None] == 0.0, 0.0, vel)
        table = self.store.particles
        start = table.add(len(pos), pos=pos, vel=vel, mass=mass, inv_mass=inv, radius=radius)
        entities = self._create_entities(table, start, len(pos), lambda row: Particle(table, row, 0))
        self.store.set_particle_rows(entities, np.arange(start, start + len(pos)))
        return entities

    def _create_entities(self, table: Table, start: int, count: int,
                         make: Callable[[int], _RowView]) -> np.ndarray:
        """esper entities for rows ``start .. start+count`` with components ``make(row)``."""
        entities = np.empty(count, dtype=np.int64)
        with self._entered():
            create = esper.create_entity
            for i in range(count):
                component = make(start + i)
                component.entity = entities[i] = create(component)
                self._components[component.entity] = component
        table.view("entity")[start:] = entities
        self.store.touch()
        return entities

    def particle(self, entity: int) -> Particle:
        """The Particle component of ``entity`` (KeyError if it is not a live particle)."""
        return self._component(entity, Particle, "particle")

    def row(self, entity: int) -> int:
        """The particle's row in the Store arrays (``positions[row]``)."""
        return self.particle(entity).row

    @property
    def positions(self) -> np.ndarray:
        """(N, dim) positions (m): a writable view, valid until the topology changes."""
        return self.store.particles.view("pos")

    @property
    def velocities(self) -> np.ndarray:
        """(N, dim) velocities (m/s): a writable view, valid until the topology changes."""
        return self.store.particles.view("vel")

    @property
    def forces(self) -> np.ndarray:
        """(N, dim) forces (N) of the current substep; a user system may add to them."""
        return self.store.particles.view("force")

    @property
    def particles(self) -> np.ndarray:
        """Particle entities in row order (a copy)."""
        return self.store.particles.view("entity").copy()

    # -- springs ------------------------------------------------------------

    def add_spring(self, a: int, b: int, stiffness: float = 500.0, damping: float = 2.0,
                   rest_length: float | None = None, max_strain: float | None = None) -> int:
        """A damped spring between particles ``a`` and ``b``; rest length defaults to their distance.

        With ``max_strain`` (length / rest length, > 1) the spring breaks (is
        removed) at the end of the first step in which it is stretched beyond it.
        """
        ea = self._component(a, Particle, "particle", "a").entity
        eb = self._component(b, Particle, "particle", "b").entity
        if ea == eb:
            raise ValueError(f"b must be a different particle from a (both are entity {ea})")
        rest = None if rest_length is None else [validate.nonnegative("rest_length", rest_length)]
        return self.add_springs([[ea, eb]],
                                validate.nonnegative("stiffness", stiffness),
                                validate.nonnegative("damping", damping), rest, max_strain)[0]

    def add_springs(self, pairs: Any, stiffness: Any = 500.0, damping: Any = 2.0,
                    rest_lengths: Any = None, max_strain: Any = None) -> list[int]:
        """Springs in bulk: ``pairs`` is (M, 2) particle entities. Returns their entities."""
        ends, rows = self._linked_rows("pairs", pairs, 2)
        m = len(ends)
        params = {name: self._nonnegative_rows(name, value, m)
                  for name, value in (("stiffness", stiffness), ("damping", damping))}
        rest = (self._lengths(rows) if rest_lengths is None
                else self._nonnegative_rows("rest_lengths", rest_lengths, m))
        if max_strain is not None:
            params["max_strain"] = validate.per_row("max_strain", max_strain, m)
            if np.isnan(params["max_strain"]).any() or (params["max_strain"] <= 1.0).any():
                raise ValueError("max_strain must be > 1 (length / rest length at which a spring breaks)")
        table = self.store.springs
        start = table.add(m, ends=ends, pairs=rows.astype(np.int32), rest_length=rest, **params)
        return cast(list[int], self._create_entities(
            table, start, m, lambda row: Spring(table, row, 0)).tolist())

    def spring(self, entity: int) -> Spring:
        """The Spring component of ``entity``."""
        return self._component(entity, Spring, "spring")

    # -- colliders ----------------------------------------------------------

    def add_collider(self, shape: Shape, restitution: float = 0.3, friction: float = 0.5,
                     tangential_damping: float = 0.0, velocity: Sequence[float] | None = None,
                     angular_velocity: Any = None) -> int:
        """A collider: ``Plane``, ``Disc``/``Sphere``, ``Box``, ``Polygon`` or ``Segment``.

        ``restitution`` in [0, 1]; ``friction`` is Coulomb's coefficient;
        ``tangential_damping`` (1/s) damps sliding exponentially. A collider
        with a ``velocity`` / ``angular_velocity`` (rad/s; a 3-vector in 3D)
        is moved by the world every substep and carries what rests on it.
        """
        if not isinstance(shape, SHAPES):
            names = ", ".join(cls.__name__ for cls in SHAPES)
            raise ValueError(f"shape must be one of pysoft's shapes ({names}), got {type(shape).__name__}")
        geo = shape.geometry(self.dim)
        values = {
            "kind": geo.kind, "center": geo.center, "rotation": geo.rotation, "angle": geo.angle,
            "restitution": validate.unit_interval("restitution", restitution),
            "friction": validate.nonnegative("friction", friction),
            "tangential_damping": validate.nonnegative("tangential_damping", tangential_damping),
            "velocity": np.zeros(self.dim) if velocity is None else validate.vector(
                "velocity", velocity, self.dim),
            "cap_radius": geo.cap_radius, "face_count": len(geo.face_offset), "bound": geo.bound,
            "grow": geo.grow,
        }
        if angular_velocity is not None:
            values["angular_velocity"] = (
                (0.0, 0.0, validate.finite("angular_velocity", angular_velocity)) if self.dim == 2
                else validate.vector("angular_velocity", angular_velocity, 3))
        if geo.cap_a is not None:
            values["cap_a"], values["cap_b"] = geo.cap_a, geo.cap_b
        table = self.store.colliders
        start = table.add(1, **values)
        made = self._create_entities(table, start, 1, lambda row: Collider(table, row, 0, shape, geo))
        return int(made[0])

    def collider(self, entity: int) -> Collider:
        """The Collider component of ``entity``."""
        return self._component(entity, Collider, "collider")

    def add_gravity_well(self, center: Sequence[float], strength: float, falloff: int = 2,
                         min_distance: float = 0.1) -> int:
        """A radial gravity field (a planet): particles accelerate toward ``center``.

        Acceleration ``strength / max(d, min_distance)**falloff`` (m/s^2), with
        ``falloff`` 0 (constant), 1, 2 (inverse square: strength = G M) or 3.
        Works beside or instead of uniform gravity (``World(gravity=(0, 0))``).
        """
        c = validate.vector("center", center, self.dim)
        g = validate.finite("strength", strength)
        k = validate.integer("falloff", falloff, 0)
        if k > 3:
            raise ValueError(f"falloff must be 0, 1, 2 or 3, got {k}")
        d = validate.positive("min_distance", min_distance)
        table = self.store.wells
        start = table.add(1, center=c, strength=g, falloff=k, min_distance=d)
        return int(self._create_entities(table, start, 1, lambda row: GravityWell(table, row, 0))[0])

    def gravity_well(self, entity: int) -> GravityWell:
        """The GravityWell component of ``entity``."""
        return self._component(entity, GravityWell, "gravity well")

    @property
    def contacts(self) -> Contacts:
        """Contacts of the last step as arrays (entities, normals, impulses)."""
        P, C = self.store.particles, self.store.colliders
        which = P.view("contact_collider")
        rows = np.flatnonzero(which >= 0)
        return Contacts(P.view("entity")[rows].copy(), C.view("entity")[which[rows]].copy(),
                        P.view("contact_normal")[rows].copy(), P.view("contact_impulse")[rows].copy())

    # -- XPBD constraints -----------------------------------------------------

    def add_distance_constraint(self, a: int, b: int, compliance: float = 0.0,
                                rest_length: float | None = None) -> int:
        """An XPBD distance constraint (compliance in m/N; 0 is rigid); rest length defaults
        to the current distance."""
        ea = self._component(a, Particle, "particle", "a").entity
        eb = self._component(b, Particle, "particle", "b").entity
        if ea == eb:
            raise ValueError(f"b must be a different particle from a (both are entity {ea})")
        rest = None if rest_length is None else [validate.nonnegative("rest_length", rest_length)]
        return self.add_distance_constraints([[ea, eb]], validate.nonnegative("compliance", compliance),
                                             rest)[0]

    def add_distance_constraints(self, pairs: Any, compliance: Any = 0.0,
                                 rest_lengths: Any = None) -> list[int]:
        """XPBD distance constraints in bulk over (M, 2) particle entities."""
        ends, rows = self._linked_rows("pairs", pairs, 2)
        alpha = self._nonnegative_rows("compliance", compliance, len(ends))
        rest = (self._lengths(rows) if rest_lengths is None
                else self._nonnegative_rows("rest_lengths", rest_lengths, len(ends)))
        table = self.store.distances
        start = table.add(len(ends), ends=ends, pairs=rows, rest_length=rest, compliance=alpha)
        return cast(list[int], self._create_entities(
            table, start, len(ends), lambda row: DistanceConstraint(table, row, 0)).tolist())

    def add_volume_constraint(self, particles: Sequence[int], compliance: float = 0.0) -> int:
        """An XPBD constraint keeping a triangle's area (2D: 3 particles) or a tetrahedron's
        volume (3D: 4 particles) at its current signed value."""
        return self.add_volume_constraints([list(particles)],
                                           validate.nonnegative("compliance", compliance))[0]

    def add_volume_constraints(self, simplices: Any, compliance: Any = 0.0) -> list[int]:
        """Volume constraints in bulk over (M, dim + 1) particle entities."""
        ends, rows = self._linked_rows("simplices", simplices, self.dim + 1)
        alpha = self._nonnegative_rows("compliance", compliance, len(ends))
        from pysoft.twins import _simplex

        rest = _simplex(self.store.particles.view("pos"), rows, self.dim)[0]
        pos = self.store.particles.view("pos")
        span = np.ptp(pos[rows.reshape(-1)], axis=0).max() if len(rows) else 0.0
        if len(rest) and not (np.abs(rest) > 1e-12 * span**self.dim).all():
            raise ValueError("simplices: a simplex has zero area/volume (collinear or coplanar points)")
        table = self.store.volumes
        start = table.add(len(ends), ends=ends, simplices=rows, rest_volume=rest, compliance=alpha)
        return cast(list[int], self._create_entities(
            table, start, len(ends), lambda row: VolumeConstraint(table, row, 0)).tolist())

    def _linked_rows(self, name: str, value: Any, width: int) -> tuple[np.ndarray, np.ndarray]:
        """Validated (M, width) particle entities (distinct within a row) and their rows."""
        ends = validate.array(name, value, (None, width), integral=True)
        rows = self.store.rows_of(ends)
        if (rows < 0).any():
            raise KeyError(f"{name}: entity {int(ends[rows < 0][0])} is not a live particle of this world")
        srt = np.sort(ends, axis=1)
        if (srt[:, 1:] == srt[:, :-1]).any():
            raise ValueError(f"{name}: each row needs {width} different particles")
        return ends, rows.astype(np.int32)

    def _lengths(self, rows: np.ndarray) -> np.ndarray:
        """Current distances between the particle rows of each pair."""
        pos = self.store.particles.view("pos")
        out: np.ndarray = np.sqrt(((pos[rows[:, 1]] - pos[rows[:, 0]]) ** 2).sum(axis=1))
        return out

    @staticmethod
    def _nonnegative_rows(name: str, value: Any, m: int) -> np.ndarray:
        out = validate.per_row(name, value, m)
        if not np.isfinite(out).all() or (out < 0).any():
            raise ValueError(f"{name} must be finite and >= 0")
        return out

    def distance_constraint(self, entity: int) -> DistanceConstraint:
        """The DistanceConstraint component of ``entity``."""
        return self._component(entity, DistanceConstraint, "distance constraint")

    def volume_constraint(self, entity: int) -> VolumeConstraint:
        """The VolumeConstraint component of ``entity``."""
        return self._component(entity, VolumeConstraint, "volume constraint")

    # -- bodies -------------------------------------------------------------

    def add_body(self, outline: Sequence[int], *models: Pressure | ShapeMatching,
                 particles: Sequence[int] | None = None) -> int:
        """A soft body: ``outline`` particle entities (counter-clockwise; clockwise is reversed),
        models (``Pressure``, ``ShapeMatching``), and optionally all its ``particles``
        (default: the outline). Bodies may share particles. 2D for now.
        """
        if self.dim != 2:
            raise ValueError("add_body: body models are 2D for now (this world has dim=3)")
        ring = self._particle_list("outline", outline)
        members = ring if particles is None else self._particle_list("particles", particles)
        if not set(ring) <= set(members):
            raise ValueError("outline must be a subset of particles")
        kinds = [type(m) for m in models]
        for m in models:
            if not isinstance(m, (Pressure, ShapeMatching)):
                raise ValueError(f"models must be Pressure or ShapeMatching, got {type(m).__name__}")
            if m.table is not None:
                raise ValueError(f"this {type(m).__name__} already belongs to a body; make a new one")
        if len(set(kinds)) != len(kinds):
            raise ValueError("models: at most one of each kind per body")
        pos = self.store.particles.view("pos")
        area = 0.0
        if len(ring) >= 3:
            xy = pos[self.store.rows_of(np.array(ring))]
            area = signed_area(xy)
            if area < 0.0:
                ring, area = ring[::-1], -area
        if Pressure in kinds and not area > 0.0:
            raise ValueError("outline must enclose an area (3 or more particles, not collinear) "
                             "for Pressure")
        xy = pos[self.store.rows_of(np.array(members))]
        rest = xy - xy.mean(axis=0)
        table = self.store.bodies
        start = table.add(1, min_area=1e-3 * area)
        body = self._create_entities(table, start, 1, lambda row: SoftBody(
            table, row, 0, list(members), list(ring), rest, models))
        entity = int(body[0])
        with self._entered():
            for m in models:
                m.attach(table, start)
                esper.add_component(entity, m)
        return entity

    def _particle_list(self, name: str, entities: Sequence[int]) -> list[int]:
        ids = validate.array(name, entities, (None,), integral=True)
        if len(np.unique(ids)) != len(ids):
            raise ValueError(f"{name} names a particle twice")
        bad = ids[self.store.rows_of(ids) < 0]
        if len(bad):
            raise KeyError(f"{name}: entity {int(bad[0])} is not a live particle of this world")
        return [int(e) for e in ids]

    def body(self, entity: int) -> SoftBody:
        """The SoftBody component of ``entity``."""
        return self._component(entity, SoftBody, "body")

    def _bodies(self) -> list[SoftBody]:
        return [self.body(int(e)) for e in self.store.bodies.view("entity")]

    # -- springs: strain and tearing -----------------------------------------

    def spring_strain(self, entity: int | None = None) -> Any:
        """Length / rest length of every spring, in spring row order (inf for rest 0), for
        stress colours; of one spring if ``entity`` is given."""
        if entity is not None:
            return float(self.spring_strain()[self.spring(entity).row])
        S = self.store.springs
        length = self._lengths(self.store.rows_of(S.view("ends")))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(S.view("rest_length") > 0.0, length / S.view("rest_length"), np.inf)

    def _tear(self) -> None:
        """Remove the springs stretched beyond their max_strain; list them in ``broken_springs``."""
        self.broken_springs = []
        if not self._bound.tearing:  # decided at bind time: no per-step scan of every spring
            return
        S = self.store.springs
        broken = np.flatnonzero(self.spring_strain() > S.view("max_strain"))
        self.broken_springs = [int(e) for e in S.view("entity")[broken]]
        for entity in self.broken_springs:
            self.remove(entity)

    # -- removal ------------------------------------------------------------

    def remove(self, entity: int) -> None:
        """Remove an entity; a particle takes the springs that name it along."""
        component = self._components.get(self._entity_id("entity", entity))
        if component is None:
            raise KeyError(f"entity {entity} is not a live entity of this world")
        if isinstance(component, Particle):
            for table in self.store.linked:
                doomed = np.flatnonzero((table.view("ends") == entity).any(axis=1))
                for row in doomed[::-1]:
                    self._remove_row(int(table.view("entity")[row]))
            for body in self._bodies():
                body.drop(entity)
            self.store.particle_row[entity] = -1
        self._remove_row(entity)

    def _remove_row(self, entity: int) -> None:
        component = self._components.pop(entity)
        table = component.table
        if table is self.store.colliders:  # contacts name collider rows: forget them
            self.store.particles.view("contact_collider")[:] = -1
        moved_from = table.swap_remove(component.row)
        if moved_from is not None:
            moved = self._components[int(table.arrays["entity"][component.row])]
            moved.row = component.row
            if isinstance(moved, Particle):
                self.store.particle_row[moved.entity] = component.row
        with self._entered():
            esper.delete_entity(entity, immediate=True)
        self.store.touch()

    def _entity_id(self, name: str, entity: Any) -> int:
        if isinstance(entity, bool) or not isinstance(entity, (int, np.integer)):
            raise KeyError(f"{name} must be an entity id (int), got {entity!r}")
        return int(entity)

    def _component(self, entity: int, kind: type[_V], what: str, name: str = "entity") -> _V:
        component = self._components.get(self._entity_id(name, entity))
        if not isinstance(component, kind):
            raise KeyError(f"{name}: entity {entity} is not a live {what} of this world")
        return component

    # -- systems and stepping -----------------------------------------------

    def add_system(self, processor: esper.Processor, priority: int = 0) -> None:
        """Run ``processor.process(h)`` inside every substep, ordered by priority.

        Built-in passes have the priorities of ``pysoft.Priority`` (higher runs
        first); e.g. ``priority=450`` runs between forces and integration.
        """
        if not callable(getattr(processor, "process", None)):
            raise ValueError("processor must have a process(h) method (an esper.Processor)")
        processor.priority = validate.integer("priority", priority, -(2**31))
        self._systems.append(processor)
        self._systems.sort(key=lambda p: -p.priority)  # stable: ties keep insertion order

    def remove_system(self, processor: esper.Processor) -> None:
        """Stop running a processor added with ``add_system``."""
        if isinstance(processor, Pass) or processor not in self._systems:
            raise ValueError("processor is not a user system of this world")
        self._systems.remove(processor)

    @property
    def systems(self) -> list[esper.Processor]:
        """The processors of one substep, in run order."""
        return list(self._systems)

    def processor(self) -> StepProcessor:
        """An esper.Processor that steps this world from a game's ``esper.process(dt)``."""
        return StepProcessor(self)

    def step(self, dt: float | None = None) -> None:
        """Advance one frame of ``dt`` seconds (default ``self.dt``), clamped to ``max_dt``."""
        dt = self._dt if dt is None else validate.nonnegative("dt", dt)
        if dt == 0.0:
            return
        dt = min(dt, self._max_dt)
        h = dt / self._substeps
        systems = self._systems
        elapsed = [0.0] * len(systems)
        with self._entered():
            for substep in range(self._substeps):
                self._substep = substep
                self._last_substep = substep == self._substeps - 1
                for i, system in enumerate(systems):
                    if self.store.version != self._bound_version:
                        self._bind()
                    t0 = perf_counter()
                    system.process(h)
                    elapsed[i] += perf_counter() - t0
        self.time += dt
        self._tear()
        self.profile = {getattr(s, "name", type(s).__name__): 1e3 * t
                        for s, t in zip(systems, elapsed, strict=True)}

    def _report_instability(self, row: int) -> None:
        entity = int(self.store.particles.view("entity")[row])
        p, v = self.positions[row], self.velocities[row]
        message = (f"particle {entity} (row {row}) went unstable at t={self.time:.6g} s: "
                   f"position {p.tolist()}, velocity {v.tolist()}")
        if self._on_instability == "raise":
            raise InstabilityError(message, entity, row)
        warnings.warn(message, RuntimeWarning, stacklevel=4)

    def _bind(self) -> None:
        """Rebind every kernel to the current Store arrays (see binding.py)."""
        self._bound = bind_kernels(self)
        self._bound_version = self.store.version

    # -- snapshots ----------------------------------------------------------

    def snapshot(self) -> bytes:
        """The full integration state as a versioned, checksummed blob."""
        return snapshot.pack(self)

    def restore(self, blob: bytes) -> None:
        """Restore a snapshot of a world of the same topology; raises ValueError otherwise."""
        snapshot.unpack(self, blob)

    def __repr__(self) -> str:
        return (f"<pysoft.World dim={self.dim} particles={self.store.particles.n} "
                f"springs={self.store.springs.n} colliders={self.store.colliders.n} "
                f"t={self.time:.4g}s backend={self.backend!r}>")

