"""Components: esper components that are views into the Store.

A component holds its table and its row, never a copy of the state: reading
``particle.position`` reads the Store's array and assigning to it writes the
array. The World keeps ``row`` current when rows move (removal fills holes),
so a component stays valid for as long as its entity lives.
"""

from __future__ import annotations

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

    def _get(self, name: str) -> Any:
        return self.table.arrays[name][self.row]

    def _scalar(self, name: str) -> float:
        return float(self.table.arrays[name][self.row])

    def __repr__(self) -> str:
        return f"<{type(self).__name__} entity={self.entity} row={self.row}>"


class Particle(_RowView):
    """A point mass. SI units: m, m/s, kg, m."""

    __slots__ = ()

    @property
    def position(self) -> np.ndarray:
        """Position (m), a writable view of the Store row."""
        out: np.ndarray = self._get("pos")
        return out

    @position.setter
    def position(self, value: Any) -> None:
        self.table.arrays["pos"][self.row] = validate.vector("position", value, self._dim)

    @property
    def velocity(self) -> np.ndarray:
        """Velocity (m/s), a writable view of the Store row."""
        out: np.ndarray = self._get("vel")
        return out

    @velocity.setter
    def velocity(self, value: Any) -> None:
        self.table.arrays["vel"][self.row] = validate.vector("velocity", value, self._dim)

    @property
    def force(self) -> np.ndarray:
        """Force accumulated this substep (N); user systems may add to it."""
        out: np.ndarray = self._get("force")
        return out

    @property
    def mass(self) -> float:
        """Mass (kg); ``inf`` for an immovable particle."""
        return self._scalar("mass")

    @property
    def inv_mass(self) -> float:
        """1 / mass (1/kg); 0 when the particle is pinned or of infinite mass."""
        return self._scalar("inv_mass")

    @property
    def pinned(self) -> bool:
        """True if the particle never moves."""
        return self._scalar("inv_mass") == 0.0

    @property
    def radius(self) -> float:
        """Collision radius (m)."""
        return self._scalar("radius")

    @property
    def _dim(self) -> int:
        return int(self.table.arrays["pos"].shape[1])


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

    @property
    def rest_length(self) -> float:
        """Rest length (m)."""
        return self._scalar("rest_length")

    @rest_length.setter
    def rest_length(self, value: float) -> None:
        self.table.arrays["rest_length"][self.row] = validate.nonnegative("rest_length", value)

    @property
    def stiffness(self) -> float:
        """Stiffness k (N/m)."""
        return self._scalar("stiffness")

    @stiffness.setter
    def stiffness(self, value: float) -> None:
        self.table.arrays["stiffness"][self.row] = validate.nonnegative("stiffness", value)

    @property
    def damping(self) -> float:
        """Damping along the spring axis (N s/m)."""
        return self._scalar("damping")

    @damping.setter
    def damping(self, value: float) -> None:
        self.table.arrays["damping"][self.row] = validate.nonnegative("damping", value)


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

    @property
    def restitution(self) -> float:
        """Coefficient of restitution in [0, 1]."""
        return self._scalar("restitution")

    @restitution.setter
    def restitution(self, value: float) -> None:
        self.table.arrays["restitution"][self.row] = validate.unit_interval("restitution", value)

    @property
    def friction(self) -> float:
        """Coulomb friction coefficient (>= 0)."""
        return self._scalar("friction")

    @friction.setter
    def friction(self, value: float) -> None:
        self.table.arrays["friction"][self.row] = validate.nonnegative("friction", value)
