"""Components: esper components that are views into the Store.

A component holds its table and its row, never a copy of the state: reading
``particle.position`` reads the Store's array and assigning to it writes the
array. The World keeps ``row`` current when rows move (removal fills holes),
so a component stays valid for as long as its entity lives.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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


class Spring(_RowView):
    """A damped spring between two particle entities (Hooke + axial damper)."""

    __slots__ = ()

    @property
    def a(self) -> int:
        """First endpoint (particle entity)."""
        return int(self.table.arrays["ends"][self.row, 0])

    @property
    def b(self) -> int:
        """Second endpoint (particle entity)."""
        return int(self.table.arrays["ends"][self.row, 1])

    rest_length = _Column("rest_length", "Rest length (m).", validate.nonnegative)
    stiffness = _Column("stiffness", "Stiffness k (N/m).", validate.nonnegative)
    damping = _Column("damping", "Damping along the spring axis (N s/m).", validate.nonnegative)


@dataclass(frozen=True)
class Plane:
    """A half-space: solid where ``dot(normal, x) < offset`` (in 2D, a line with a facing side).

    ``normal`` need not be unit length (it is normalised; ``offset`` is in
    metres along the unit normal, so scale it with the normal you pass).
    """

    normal: tuple[float, ...]
    offset: float = 0.0

    def unit(self, dim: int) -> tuple[np.ndarray, float]:
        """The unit normal and the offset along it; raises ValueError if degenerate."""
        normal = validate.vector("normal", self.normal, dim)
        length = float(np.sqrt(np.dot(normal, normal)))
        if not length > 0.0:
            raise ValueError("normal must be a non-zero vector")
        offset = validate.finite("offset", self.offset)
        return normal / length, offset / length


class Collider(_RowView):
    """A collider entity's component: its shape and material (views of the Store)."""

    __slots__ = ("shape",)

    def __init__(self, table: Table, row: int, entity: int, shape: Plane) -> None:
        super().__init__(table, row, entity)
        self.shape = shape

    restitution = _Column("restitution", "Coefficient of restitution in [0, 1].", validate.unit_interval)
    friction = _Column("friction", "Coulomb friction coefficient (>= 0).", validate.nonnegative)
