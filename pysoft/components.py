"""Components: esper components that are views into the Store.

A component holds its table and its row, never a copy of the state: reading
``particle.position`` reads the Store's array and assigning to it writes the
array. The World keeps ``row`` current when rows move (removal fills holes),
so a component stays valid for as long as its entity lives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pysoft import validate
from pysoft.store import Table


class _RowView:
    """Base of the view components: a table and a row in it."""

    __slots__ = ("entity", "row", "table")

    def __init__(self, table: Table, row: int, entity: int) -> None:
        self.table = table
        self.row = row
        self.entity = entity

    def __repr__(self) -> str:
        return f"<{type(self).__name__} entity={self.entity} row={self.row}>"


class _Column:
    """A scalar field of a row view: reads the Store; writes it through ``check`` (None: read-only)."""

    def __init__(self, field: str, doc: str, check: Callable[[str, Any], float] | None = None) -> None:
        self.field, self.check, self.__doc__ = field, check, doc

    def __get__(self, view: _RowView | None, owner: Any = None) -> Any:
        return self if view is None else float(view.table.arrays[self.field][view.row])

    def __set__(self, view: _RowView, value: Any) -> None:
        if self.check is None:
            raise AttributeError(f"{self.field} is read-only")
        view.table.arrays[self.field][view.row] = self.check(self.field, value)


class _Vector:
    """A vector field of a row view: a writable view of the Store row; assignment is checked."""

    def __init__(self, field: str, name: str, doc: str) -> None:
        self.field, self.name, self.__doc__ = field, name, doc

    def __get__(self, view: _RowView | None, owner: Any = None) -> Any:
        return self if view is None else view.table.arrays[self.field][view.row]

    def __set__(self, view: _RowView, value: Any) -> None:
        arr = view.table.arrays[self.field]
        arr[view.row] = validate.vector(self.name, value, arr.shape[1])


class Particle(_RowView):
    """A point mass. SI units: m, m/s, kg, m."""

    __slots__ = ()

    position = _Vector("pos", "position", "Position (m), a writable view of the Store row.")
    velocity = _Vector("vel", "velocity", "Velocity (m/s), a writable view of the Store row.")
    force = _Vector("force", "force", "Force of the current substep (N); user systems may add to it.")
    mass = _Column("mass", "Mass (kg); ``inf`` for an immovable particle.")
    inv_mass = _Column("inv_mass", "1 / mass (1/kg); 0 when pinned or of infinite mass.")
    radius = _Column("radius", "Collision radius (m).")

    @property
    def pinned(self) -> bool:
        """True if the particle never moves."""
        return bool(self.inv_mass == 0.0)


class _Pair(_RowView):
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


class Spring(_Pair):
    """A damped spring between two particle entities (Hooke + axial damper)."""

    __slots__ = ()


    rest_length = _Column("rest_length", "Rest length (m).", validate.nonnegative)
    stiffness = _Column("stiffness", "Stiffness k (N/m).", validate.nonnegative)
    damping = _Column("damping", "Damping along the spring axis (N s/m).", validate.nonnegative)
    max_strain = _Column("max_strain", "Length / rest length at which it breaks (inf: never).")


class Collider(_RowView):
    """A collider entity's component: its shape, pose, motion and material (views of the Store).

    Moving a collider: assign ``position`` / ``angle`` (a teleport: contacts
    see no surface motion), or give it a ``velocity`` / ``angular_velocity``
    and the world moves it every substep (a kinematic body: what rests on it
    is carried along by friction).
    """

    __slots__ = ("geometry", "shape")

    def __init__(self, table: Table, row: int, entity: int, shape: Any, geometry: Any) -> None:
        super().__init__(table, row, entity)
        self.shape = shape
        self.geometry = geometry

    position = _Vector("center", "position", "Position of the shape's centre (m).")
    velocity = _Vector("velocity", "velocity", "Velocity (m/s); the world moves the collider by it.")
    restitution = _Column("restitution", "Coefficient of restitution in [0, 1].", validate.unit_interval)
    friction = _Column("friction", "Coulomb friction coefficient (>= 0).", validate.nonnegative)
    tangential_damping = _Column(
        "tangential_damping", "Exponential damping of sliding (1/s): vt *= exp(-rate h) per contact.",
        validate.nonnegative)

    @property
    def angle(self) -> float:
        """Rotation (radians, CCW; 2D only)."""
        return float(self.table.arrays["angle"][self.row])

    @angle.setter
    def angle(self, value: float) -> None:
        if self.table.arrays["center"].shape[1] != 2:
            raise ValueError("angle is for 2D colliders; set rotation in 3D")
        from pysoft.shapes import rotation_2d

        angle = validate.finite("angle", value)
        self.table.arrays["angle"][self.row] = angle
        self.table.arrays["rotation"][self.row] = rotation_2d(angle)

    @property
    def rotation(self) -> np.ndarray:
        """Rotation matrix (world = R local + position), a read-only copy."""
        out: np.ndarray = self.table.arrays["rotation"][self.row].copy()
        return out

    @property
    def angular_velocity(self) -> Any:
        """Angular velocity (rad/s): a float in 2D, a 3-vector in 3D."""
        w = self.table.arrays["angular_velocity"][self.row]
        return float(w[2]) if self.table.arrays["center"].shape[1] == 2 else w.copy()

    @angular_velocity.setter
    def angular_velocity(self, value: Any) -> None:
        w = self.table.arrays["angular_velocity"]
        if self.table.arrays["center"].shape[1] == 2:
            w[self.row] = (0.0, 0.0, validate.finite("angular_velocity", value))
        else:
            w[self.row] = validate.vector("angular_velocity", value, 3)


class GravityWell(_RowView):
    """A radial gravity field: acceleration strength / max(d, min_distance)^falloff toward center."""

    __slots__ = ()

    center = _Vector("center", "center", "Centre of attraction (m).")
    strength = _Column("strength", "Acceleration at 1 m for falloff 2: G M (m^3/s^2).", validate.finite)
    min_distance = _Column("min_distance", "Softening distance (m).", validate.positive)

    @property
    def falloff(self) -> int:
        """Exponent of the distance in the denominator (0, 1, 2 or 3)."""
        return int(self.table.arrays["falloff"][self.row])


class DistanceConstraint(_Pair):
    """An XPBD distance constraint between particles ``a`` and ``b``."""

    __slots__ = ()

    rest_length = _Column("rest_length", "Rest length (m).", validate.nonnegative)
    compliance = _Column("compliance", "Compliance (m/N): 0 is rigid, 1/k is a spring of k.",
                         validate.nonnegative)



class VolumeConstraint(_RowView):
    """An XPBD constraint on a simplex's signed area (2D triangle) or volume (3D tetrahedron)."""

    __slots__ = ()

    rest_volume = _Column("rest_volume", "Rest area (m^2, 2D) or volume (m^3, 3D), signed.")
    compliance = _Column("compliance", "Compliance: 0 keeps the area or volume exactly.",
                         validate.nonnegative)

    @property
    def particles(self) -> list[int]:
        """The simplex's particle entities."""
        return [int(e) for e in self.table.arrays["ends"][self.row]]


class SoftBody(_RowView):
    """A body: its member particles, its outline (counter-clockwise), and its models.

    ``particles`` and ``outline`` are entity lists; removing a particle drops
    it from every body. ``rest`` holds the members' rest offsets from their
    centroid (shape matching's rest shape).
    """

    __slots__ = ("models", "outline", "particles", "rest")

    def __init__(self, table: Table, row: int, entity: int, particles: list[int], outline: list[int],
                 rest: np.ndarray, models: tuple[Any, ...]) -> None:
        super().__init__(table, row, entity)
        self.particles = particles
        self.outline = outline
        self.rest = rest
        self.models = models

    @property
    def pressure(self) -> Pressure | None:
        """The body's Pressure model, if it has one."""
        return next((m for m in self.models if isinstance(m, Pressure)), None)

    @property
    def shape_matching(self) -> ShapeMatching | None:
        """The body's ShapeMatching model, if it has one."""
        return next((m for m in self.models if isinstance(m, ShapeMatching)), None)

    def drop(self, particle: int) -> None:
        """Forget a removed particle."""
        keep = [i for i, e in enumerate(self.particles) if e != particle]
        self.particles = [self.particles[i] for i in keep]
        self.rest = self.rest[keep]
        if len(self.rest):  # rest offsets are about the members' centroid: re-centre
            self.rest = self.rest - self.rest.mean(axis=0)
        self.outline = [e for e in self.outline if e != particle]


class _Model:
    """A body model: holds its parameters until attached, then views the body's row."""

    __slots__ = ("_pending", "row", "table")
    _fields: tuple[str, ...] = ()

    def __init__(self, **values: float) -> None:
        self._pending = values
        self.table: Table | None = None
        self.row = -1

    def _get(self, field: str) -> float:
        if self.table is None:
            return float(self._pending[field])
        return float(self.table.arrays[field][self.row])

    def _set(self, field: str, value: float) -> None:
        if self.table is None:
            self._pending[field] = value
        else:
            self.table.arrays[field][self.row] = value

    def attach(self, table: Table, row: int) -> None:
        """Bind to a body row (World.add_body does this); a model serves one body."""
        if self.table is not None:
            raise ValueError(f"this {type(self).__name__} already belongs to a body; make a new one")
        self.table, self.row = table, row
        for field, value in self._pending.items():
            self._set(field, value)

    def __repr__(self) -> str:
        args = ", ".join(f"{f}={self._get(f)!r}" for f in self._pending)
        return f"{type(self).__name__}({args})"


class _ModelField:
    """A model parameter: a body-table column once attached, a pending value before; checked."""

    def __init__(self, field: str, name: str, doc: str) -> None:
        self.field, self.name, self.__doc__ = field, name, doc

    def __get__(self, model: _Model | None, owner: Any = None) -> Any:
        return self if model is None else model._get(self.field)

    def __set__(self, model: _Model, value: Any) -> None:
        model._set(self.field, validate.nonnegative(self.name, value))


class Pressure(_Model):
    """Ideal-gas pressure: ``amount`` = nRT (J, i.e. N m in 2D); pressure = amount / area."""

    __slots__ = ()

    amount = _ModelField("amount", "amount", "nRT (N m in 2D): the pressure is amount / area.")

    def __init__(self, amount: float) -> None:
        super().__init__(amount=validate.nonnegative("amount", amount))


class ShapeMatching(_Model):
    """Springs to the best-fit rotated rest shape: ``stiffness`` (1/s^2), ``damping`` (1/s)."""

    __slots__ = ()

    stiffness = _ModelField("match_stiffness", "stiffness",
                            "Pull toward the rest shape per metre of offset (1/s^2).")
    damping = _ModelField("match_damping", "damping",
                          "Pull of velocities toward the body's rigid motion (1/s).")

    def __init__(self, stiffness: float = 200.0, damping: float = 5.0) -> None:
        super().__init__(match_stiffness=validate.nonnegative("stiffness", stiffness),
                         match_damping=validate.nonnegative("damping", damping))
