"""The Store: the simulation state as one contiguous NumPy array per field.

A :class:`Table` is a structure of arrays with spare capacity: ``add`` grows
it geometrically (amortised O(1) per row), ``swap_remove`` fills a hole with
the last row so rows stay dense. Every reallocation or removal bumps
:attr:`Store.version`; the World rebuilds index arrays and rebinds kernels
only when that number changes, so a steady-state step gathers nothing.

Views returned by :meth:`Table.view` are valid until the next topology
change (adding or removing entities); components never hold views, only
their row, so they always read the live arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Field:
    """A column: per-row shape (``()`` for scalars), dtype and fill value."""

    shape: tuple[int, ...]
    dtype: type
    fill: float = 0.0


class Table:
    """Rows of fields in contiguous arrays, with geometric growth."""

    def __init__(self, fields: dict[str, Field], capacity: int = 16) -> None:
        self.fields = fields
        self.n = 0
        self.capacity = capacity
        self.arrays: dict[str, np.ndarray] = {
            name: np.full((capacity, *f.shape), f.fill, dtype=f.dtype) for name, f in fields.items()
        }

    def view(self, name: str) -> np.ndarray:
        """The live rows of field ``name`` (a view, not a copy)."""
        return self.arrays[name][: self.n]

    def reserve(self, count: int) -> bool:
        """Make room for ``count`` more rows; True if the arrays were reallocated."""
        need = self.n + count
        if need <= self.capacity:
            return False
        cap = max(need, 2 * self.capacity)
        for name, f in self.fields.items():
            grown: np.ndarray = np.full((cap, *f.shape), f.fill, dtype=f.dtype)
            grown[: self.n] = self.arrays[name][: self.n]
            self.arrays[name] = grown
        self.capacity = cap
        return True

    def add(self, count: int, **values: Any) -> int:
        """Append ``count`` rows; fields not given keep their fill. Returns the first row."""
        self.reserve(count)
        start = self.n
        for name, value in values.items():
            self.arrays[name][start : start + count] = value
        self.n += count
        return start

    def swap_remove(self, row: int) -> int | None:
        """Remove ``row`` by moving the last row into it; returns the moved row's old index."""
        last = self.n - 1
        for name, f in self.fields.items():
            arr = self.arrays[name]
            if row != last:
                arr[row] = arr[last]
            arr[last] = f.fill
        self.n -= 1
        return last if row != last else None

    def snapshot_fields(self, names: tuple[str, ...]) -> dict[str, np.ndarray]:
        """Copies of the live rows of ``names``."""
        return {name: self.view(name).copy() for name in names}


def particle_table(dim: int) -> Table:
    """Particles: state, material, contacts of the last step, and the integrators' scratch."""
    vec = Field((dim,), np.float64)
    scratch = ("prev_pos", "vel_pred", "force1", "force_builtin",
               "stage_pos", "v2", "v3", "v4", "f2", "f3", "f4")
    return Table({
        "pos": vec, "vel": vec, "force": vec,
        "mass": Field((), np.float64, 1.0), "inv_mass": Field((), np.float64, 1.0),
        "radius": Field((), np.float64), "entity": Field((), np.int64, -1),
        "contact_collider": Field((), np.int32, -1), "contact_normal": vec,
        "contact_impulse": Field((), np.float64),
        **{name: vec for name in scratch},
    })


def spring_table() -> Table:
    """Springs: endpoint entities (truth) and rows (derived), and parameters."""
    return Table({
        "ends": Field((2,), np.int64, -1), "pairs": Field((2,), np.int32),
        "rest_length": Field((), np.float64), "stiffness": Field((), np.float64),
        "damping": Field((), np.float64), "max_strain": Field((), np.float64, np.inf),
        "entity": Field((), np.int64, -1),
    })


def collider_table(dim: int) -> Table:
    """Colliders: pose and motion, material, and where their local shape lives.

    Polytope faces live in the World's face arrays (``face_start``,
    ``face_count``), rebuilt when the topology changes; capsules keep their
    segment and radius here. ``keep`` is exp(-tangential_damping h), refreshed
    each frame.
    """
    vec = Field((dim,), np.float64)
    return Table({
        "kind": Field((), np.int32), "center": vec, "rotation": Field((dim, dim), np.float64),
        "angle": Field((), np.float64), "velocity": vec, "angular_velocity": Field((3,), np.float64),
        "restitution": Field((), np.float64), "friction": Field((), np.float64),
        "tangential_damping": Field((), np.float64), "keep": Field((), np.float64, 1.0),
        "face_start": Field((), np.int32), "face_count": Field((), np.int32),
        "cap_a": vec, "cap_b": vec, "cap_radius": Field((), np.float64),
        "bound": Field((), np.float64), "grow": Field((), np.float64, 1.0),
        "entity": Field((), np.int64, -1),
    })


def distance_table() -> Table:
    """XPBD distance constraints: endpoint entities and rows, rest length, compliance (m/N)."""
    return Table({
        "ends": Field((2,), np.int64, -1), "pairs": Field((2,), np.int32),
        "rest_length": Field((), np.float64), "compliance": Field((), np.float64),
        "lambda": Field((), np.float64), "entity": Field((), np.int64, -1),
    })


def volume_table(dim: int) -> Table:
    """XPBD volume constraints over simplices (triangles in 2D, tetrahedra in 3D)."""
    return Table({
        "ends": Field((dim + 1,), np.int64, -1), "simplices": Field((dim + 1,), np.int32),
        "rest_volume": Field((), np.float64), "compliance": Field((), np.float64),
        "lambda": Field((), np.float64), "entity": Field((), np.int64, -1),
    })


def body_table() -> Table:
    """Soft bodies: the parameters of their models (0 where a body lacks the model)."""
    return Table({
        "amount": Field((), np.float64), "min_area": Field((), np.float64),
        "match_stiffness": Field((), np.float64), "match_damping": Field((), np.float64),
        "entity": Field((), np.int64, -1),
    })


def well_table(dim: int) -> Table:
    """Radial gravity wells: centre, strength, integer falloff exponent, softening distance."""
    return Table({
        "center": Field((dim,), np.float64), "strength": Field((), np.float64),
        "falloff": Field((), np.int32), "min_distance": Field((), np.float64),
        "entity": Field((), np.int64, -1),
    })


class Store:
    """All tables of one World, plus the topology version and entity lookup."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.particles = particle_table(dim)
        self.springs = spring_table()
        self.colliders = collider_table(dim)
        self.wells = well_table(dim)
        self.bodies = body_table()
        self.distances = distance_table()
        self.volumes = volume_table(dim)
        # Tables whose "ends" name particles: removing a particle removes their rows.
        self.linked = (self.springs, self.distances, self.volumes)
        self.version = 0
        # Row of each particle entity, indexed by entity id (-1: not a particle).
        self.particle_row = np.full(64, -1, dtype=np.int64)

    def touch(self) -> None:
        """Record a topology change (rows added, removed or reallocated)."""
        self.version += 1

    def set_particle_rows(self, entities: np.ndarray, rows: np.ndarray) -> None:
        """Record that particle ``entities[i]`` lives in ``rows[i]``."""
        top = int(entities.max(initial=-1))
        if top >= len(self.particle_row):
            grown = np.full(max(top + 1, 2 * len(self.particle_row)), -1, dtype=np.int64)
            grown[: len(self.particle_row)] = self.particle_row
            self.particle_row = grown
        self.particle_row[entities] = rows

    def rows_of(self, entities: np.ndarray) -> np.ndarray:
        """Particle rows of entity ids (-1 where an id is not a live particle)."""
        ids = np.asarray(entities, dtype=np.int64)
        inside = (ids >= 0) & (ids < len(self.particle_row))
        out = np.full(ids.shape, -1, dtype=np.int64)
        out[inside] = self.particle_row[ids[inside]]
        return out
