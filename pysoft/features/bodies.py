"""Soft bodies: member particles, an outline, and the models that hold their shape --
gas pressure and shape matching (``csrc/src/bodies.c``).

A body's members (with their rest offsets) and its outline are ragged rows
in the Store (``Ragged``): the kernels read each body's range through the
body table's ``*_start`` / ``*_count`` columns, and a model a body lacks has
a count of 0, so nothing rebinds when bodies come and go.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, cast

import numpy as np

from pysoft import _validate
from pysoft._ecs import Bits, Column, RowView
from pysoft._frame import COLLIDE, FORCES, Op, cached
from pysoft._kernels import Arg, Kernel, register
from pysoft._pipeline import MAIN
from pysoft._store import Field, Incidence, Ragged, RemovedError, Table
from pysoft.features._feature import Context, Feature, PerState
from pysoft.shapes import enclosed_volume, signed_area, signed_volumes
from pysoft.twins._common import ranges

# the gas's pressure is that of at least this fraction of the rest area: a crushed body's gas
# pushes back at up to 10x its rest pressure, and an outline turned inside out (area <= 0)
# is pushed back through itself by that much, never blown apart
MIN_AREA_FRACTION = 0.1
MAX_BODIES = 1 << 20
MAX_MEMBERS = 1 << 25
CLOSED, SELF = 1, 2  # body flags: an outline that encloses an area; self-collision


Check = Callable[[dict[str, np.ndarray], dict[str, int]], None]


def check_ranges(index: str, any_dim: bool = False) -> Check:
    """The check of a kernel over body ranges of ``index`` (body models are 2D, unless
    ``any_dim``)."""
    def check(arrays: dict[str, np.ndarray], sizes: dict[str, int]) -> None:
        nb = sizes["b"]
        start, count, idx = arrays["body_start"][:nb], arrays["body_count"][:nb], arrays[index]
        if (count < 0).any() or (start < 0).any() or (start.astype(np.int64) + count > len(idx)).any():
            raise ValueError(f"body_start/body_count reach outside {index}")
        if idx.size and (idx.min() < 0 or idx.max() >= sizes["n"]):
            raise ValueError(f"{index} holds rows outside [0, {sizes['n']})")
        if not any_dim and sizes.get("dim", 2) != 2 and count.any():
            raise ValueError("rolling resistance is 2D for now (dim must be 2)")
        if index == "outline" and sizes.get("dim", 2) == 3 and (count % 3).any():
            raise ValueError("body_count: a 3D body's surface has three rows a triangle")

    return check


def closed_surface(triangles: np.ndarray) -> bool:
    """Whether triangles (T, 3) of labels form a closed, consistently oriented surface: each
    directed edge once, and its reverse once."""
    if not len(triangles):
        return False
    edges = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]])
    directed = {tuple(e) for e in edges.tolist()}
    return len(directed) == len(edges) and all((b, a) in directed for a, b in directed)


_P, _S, _B = ("n", "dim"), ("n",), ("b",)
_RANGES = (Arg("body_start", _B, np.int32), Arg("body_count", _B, np.int32))
register(
    Kernel("pressure", "bodies",
           (Arg("force", _P), Arg("pos", _P), Arg("outline", ("e",), np.int32), *_RANGES,
            Arg("amount", _B), Arg("min_area", _B)),
           ("b", "dim"), (), ("force",), check=check_ranges("outline", any_dim=True)),
    Kernel("shape_match", "bodies",
           (Arg("force", _P), Arg("pos", _P), Arg("vel", _P), Arg("mass", _S), Arg("inv_mass", _S),
            Arg("members", ("e",), np.int32), Arg("rest", ("e", "dim")), *_RANGES,
            Arg("stiffness", _B), Arg("damping", _B)),
           ("b", "dim"), (), ("force",), check=check_ranges("members", any_dim=True)),
    Kernel("rolling_resistance", "bodies",
           (Arg("vel", _P), Arg("rolled", _B), Arg("pos", _P), Arg("mass", _S), Arg("inv_mass", _S),
            Arg("contact_impulse", _S), Arg("members", ("e",), np.int32), *_RANGES,
            Arg("coefficient", _B)),
           ("b", "dim"), (), ("vel", "rolled"), check=check_ranges("members")),
)


class _Model:
    """A body model: holds its parameters until attached, then views its body's row."""

    __slots__ = ("_pending", "entity", "table")
    _fields: tuple[str, ...] = ()

    def __init__(self, **values: float) -> None:
        self._pending = values
        self.table: Table | None = None
        self.entity = -1

    def _get(self, field: str) -> float:
        if self.table is None:
            return float(self._pending[field])
        return float(self.table.arrays[field][self._row()])

    def _set(self, field: str, value: float) -> None:
        if self.table is None:
            self._pending[field] = value
        else:
            self.table.arrays[field][self._row()] = value

    def _row(self) -> int:
        try:
            return cast(Table, self.table).row_of[self.entity]
        except KeyError:
            raise RemovedError(f"{type(self).__name__} of body {self.entity} was removed "
                               "from its world") from None

    def attach(self, table: Table, entity: int) -> None:
        """Bind to a body (World.add_body does this); a model serves one body."""
        self.table, self.entity = table, entity
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
        model._set(self.field, _validate.nonnegative(self.name, value))


class Pressure(_Model):
    """Ideal-gas pressure: ``amount`` = nRT (J, i.e. N m in 2D); pressure = amount / area."""

    __slots__ = ()

    amount = _ModelField("amount", "amount", "nRT (N m in 2D): the pressure is amount / area.")

    def __init__(self, amount: float) -> None:
        super().__init__(amount=_validate.nonnegative("amount", amount))


class ShapeMatching(_Model):
    """Springs to the best-fit rotated rest shape: ``stiffness`` (1/s^2), ``damping`` (1/s)."""

    __slots__ = ()

    stiffness = _ModelField("match_stiffness", "stiffness",
                            "Pull toward the rest shape per metre of offset (1/s^2).")
    damping = _ModelField("match_damping", "damping",
                          "Pull of velocities toward the body's rigid motion (1/s).")

    def __init__(self, stiffness: float = 200.0, damping: float = 5.0) -> None:
        super().__init__(match_stiffness=_validate.nonnegative("stiffness", stiffness),
                         match_damping=_validate.nonnegative("damping", damping))


class SoftBody(RowView):
    """A body: its member particles, its outline (counter-clockwise), and its models.

    ``particles`` and ``outline`` are entity lists read from the Store;
    removing a particle drops it from every body. ``rest`` holds the members'
    rest offsets from their centroid (shape matching's rest shape).
    """

    __slots__ = ("_color", "_members", "_outline", "_particles", "_render", "_tets", "models")

    def __init__(self, table: Table, members: Ragged, outline: Ragged, models: tuple[Any, ...],
                 particles: Table, tets: Ragged | None = None) -> None:
        super().__init__(table)
        self._members, self._outline, self.models, self._tets = members, outline, models, tets
        self._particles = particles
        # a render mesh embedded in the body: its vertices' particles (M, 4), their
        # barycentric weights (M, 4) and its faces (F, 3) (build.mesh sets it)
        self._render: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._color: tuple[int, int, int, int] | None = None

    @property
    def color(self) -> tuple[int, int, int, int] | None:
        """The body's colour in debug drawing, RGBA in 0..255 (as pymunk's ``shape.color``);
        None (default): a colour of ``pysoft.draw``'s palette. Set RGB or RGBA."""
        return self._color

    @color.setter
    def color(self, value: Any) -> None:
        if value is None:
            self._color = None
            return
        c = _validate.array("color", value, (None,))
        if len(c) not in (3, 4) or not ((c >= 0) & (c <= 255)).all():
            raise ValueError(f"color must be 3 or 4 numbers in 0..255 (RGB or RGBA), got {value!r}")
        rgba = [round(float(v)) for v in c] + [255] * (4 - len(c))
        self._color = (rgba[0], rgba[1], rgba[2], rgba[3])

    def embed(self, corners: np.ndarray, weights: np.ndarray, faces: np.ndarray) -> None:
        """Keep a render mesh in the body: vertex i is the weighted sum of particles
        ``corners[i]`` (entities, (M, 4)) with ``weights[i]``; ``faces`` (F, 3) index the
        vertices (see render_mesh)."""
        self._render = (np.array(corners, np.int64), np.array(weights, np.float64),
                        np.array(faces, np.int64))

    def render_mesh(self) -> tuple[np.ndarray, np.ndarray]:
        """The embedded render mesh moved with the simulation: its vertices now ((M, 3),
        barycentric in the body's tetrahedra, or a surface body's own particles) and faces
        ((F, 3), counter-clockwise seen from outside): draw the detailed mesh over the coarse
        simulated one. ValueError for a body built without one (build.mesh and build.ball
        make them); RemovedError once a particle it follows was removed."""
        if self._render is None:
            raise ValueError("render_mesh: this body has no embedded render mesh (build.mesh makes one)")
        corners, weights, faces = self._render
        try:
            rows = self._particles.rows(corners.reshape(-1))
        except KeyError:
            raise RemovedError("render_mesh: a particle the render mesh follows was removed") from None
        x = self._particles.arrays["pos"][rows].reshape(len(corners), 4, -1)
        return np.einsum("ij,ijk->ik", weights, x), faces.copy()

    @property
    def dim(self) -> int:
        """2 or 3: the world's."""
        return int(self._members.flat.arrays["rest"].shape[1])

    @property
    def particles(self) -> list[int]:
        """Member particle entities."""
        return [int(e) for e in self._members.get(self.row, "particle")]

    @property
    def outline(self) -> list[int]:
        """Outline particle entities, counter-clockwise (2D; a 3D body has a ``surface``)."""
        if self.dim == 3:
            raise ValueError("outline: a 3D body has a surface of triangles (body.surface), not an outline")
        return [int(e) for e in self._outline.get(self.row, "particle")]

    @property
    def surface(self) -> np.ndarray:
        """3D: the surface's triangles, (T, 3) particle entities, counter-clockwise seen from
        outside (a copy). A closed surface encloses the body's volume; an open body's
        (a cloth) is its sheet of triangles; a rope's is empty."""
        if self.dim != 3:
            raise ValueError("surface: a 2D body has an outline (body.outline), not a surface")
        return self._outline.get(self.row, "particle").reshape(-1, 3).copy()

    @property
    def tetrahedra(self) -> np.ndarray:
        """3D: the body's tetrahedra, (K, 4) particle entities, each positively oriented
        (empty for a surface-only body; a copy)."""
        if self._tets is None:
            raise ValueError("tetrahedra: a 2D body has no tetrahedra")
        return self._tets.get(self.row, "particle").reshape(-1, 4).copy()

    @property
    def volume(self) -> float:
        """The volume its closed surface encloses now (m^3, divergence theorem; 0.0 for an
        open surface); in 2D the area its outline encloses (m^2, signed: positive
        counter-clockwise)."""
        pos = self._particles.arrays["pos"][self._outline.get(self.row, "rows")]
        if self.dim == 2:
            return signed_area(pos) if len(pos) >= 3 else 0.0
        if not self.table.arrays["flags"][self.row] & CLOSED:
            return 0.0
        return enclosed_volume(pos.reshape(-1, 3, 3))

    @property
    def rest(self) -> np.ndarray:
        """Rest offsets of the members from their centroid (a copy)."""
        return self._members.get(self.row, "rest").copy()

    @property
    def closed(self) -> bool:
        """True if the outline encloses an area: other bodies' particles collide with it
        (a rope's outline does not; its particles collide as particles)."""
        return bool(self.table.arrays["flags"][self.row] & CLOSED)

    @property
    def self_collision(self) -> bool:
        """Whether the body's particles collide with its own outline and, with radii, with
        each other (the pairs that overlap in the rest shape excepted)."""
        return bool(self.table.arrays["flags"][self.row] & SELF)

    @self_collision.setter
    def self_collision(self, value: bool) -> None:
        flags = self.table.arrays["flags"]
        row = self.row
        flags[row] = (flags[row] & ~SELF) | (SELF if _validate.flag("self_collision", value) else 0)

    category = Bits("category", "Collision category bits of the body and its particles.")
    mask = Bits("mask", "The categories the body collides with (a pair collides if each accepts the other).")

    friction = Column("friction", "Coulomb friction against other bodies (mixed: sqrt(mu1 mu2)).",
                      _validate.nonnegative)
    restitution = Column("restitution", "Restitution against other bodies in [0, 1] (mixed: the "
                         "larger).", _validate.unit_interval)
    rolling_resistance = Column("rolling_resistance", "Resistance to rolling on colliders: a torque "
                                "against the body's spin of at most this x the contact load x its "
                                "lever (0: none).", _validate.nonnegative)

    @property
    def pressure(self) -> Pressure | None:
        """The body's Pressure model, if it has one."""
        return next((m for m in self.models if isinstance(m, Pressure)), None)

    @property
    def shape_matching(self) -> ShapeMatching | None:
        """The body's ShapeMatching model, if it has one."""
        return next((m for m in self.models if isinstance(m, ShapeMatching)), None)


class BodyShapes(NamedTuple):
    """Every body's shape at once (``World.body_shapes``), in body row order."""

    entities: np.ndarray  # (nb,) body entities
    offsets: np.ndarray  # (nb + 1,) body b's outline is rows[offsets[b]:offsets[b + 1]]
    rows: np.ndarray  # the outlines' particle rows, concatenated
    centroids: np.ndarray  # (nb, dim) mass-weighted centroids of the members
    areas: np.ndarray  # (nb,) signed outline areas (m^2)
    angles: np.ndarray  # (nb,) best-fit rotation from the rest shape (rad)


class _BodyTerm:
    """Pressure then shape matching, bound for every force state."""
    label = "pressure and shape matching"  # its name in an InstabilityError

    def __init__(self, ctx: Context, B: Table, members: Table, outline: Table) -> None:
        self.ctx, self.B = ctx, B
        a, b = ctx.store.particles.arrays, B.arrays
        shared = {"mass": a["mass"], "inv_mass": a["inv_mass"]}
        self.pressure = PerState(lambda p, v, f: ctx.bind(
            "pressure", force=a[f], pos=a[p], outline=outline.arrays["rows"],
            body_start=b["outline_start"], body_count=b["pressure_count"], amount=b["amount"],
            min_area=b["min_area"]))
        self.matching = PerState(lambda p, v, f: ctx.bind(
            "shape_match", force=a[f], pos=a[p], vel=a[v], **shared, members=members.arrays["rows"],
            rest=members.arrays["rest"], body_start=b["member_start"], body_count=b["match_count"],
            stiffness=b["match_stiffness"], damping=b["match_damping"]))
        self.with_pressure = self.with_matching = 0  # bodies that have each model

    def evaluate(self, state: int) -> None:
        nb, dim = self.B.n, self.ctx.dim
        if self.with_pressure:
            self.pressure[state](nb, dim)
        if self.with_matching:
            self.matching[state](nb, dim)

    def ops(self, h: float) -> list[Op]:
        nb, dim, out = self.B.n, self.ctx.dim, []
        if self.with_pressure:
            out.append(cached(self, "pressure", self.pressure[MAIN], FORCES).set(nb, dim))
        if self.with_matching:
            out.append(cached(self, "matching", self.matching[MAIN], FORCES).set(nb, dim))
        return out


class _RollingTerm:
    """Rolling resistance after the collide stage, for bodies on colliders (the contact
    impulses it reads are the colliders'); ``rolled`` restarts with them each frame."""
    label = "rolling resistance"  # its name in an InstabilityError

    def __init__(self, ctx: Context, B: Table, members: Table) -> None:
        self.ctx, self.B = ctx, B
        a, b = ctx.store.particles.arrays, B.arrays
        self.call = ctx.bind(
            "rolling_resistance", vel=a["vel"], rolled=b["rolled"], pos=a["pos"], mass=a["mass"],
            inv_mass=a["inv_mass"], contact_impulse=a["contact_impulse"], members=members.arrays["rows"],
            body_start=b["member_start"], body_count=b["member_count"], coefficient=b["rolling_resistance"])
        self.rolling = False  # whether a body has a rolling resistance (looked at once a frame)

    def present(self) -> bool:
        """Whether there are bodies and colliders (else nothing to do)."""
        return bool(self.B.n and self.ctx.store.tables["colliders"].n)

    def first_substep(self) -> None:
        """Whether a body has a rolling resistance, and ``rolled`` restarts."""
        self.rolling = bool(self.B.view("rolling_resistance").any())
        self.B.view("rolled")[:] = 0.0

    def run(self, h: float) -> None:
        if not self.present():
            return
        if self.ctx.pipeline.substep == 0:
            self.first_substep()
        if self.rolling:
            self.call(self.B.n, self.ctx.dim)

    def frame_start(self, h: float) -> bool:
        """A one-call frame's first substep; whether there is a call (whether a body has a
        rolling resistance)."""
        if not self.present():
            return False
        self.first_substep()
        return self.rolling

    def watched(self) -> list[np.ndarray]:
        """What ``frame_start`` reads besides the rows: the bodies' rolling resistances."""
        return [self.B.view("rolling_resistance")] if self.present() else []

    def between(self) -> list[tuple[np.ndarray, int]]:
        """What ``frame_start`` does to the arrays at a later frame of the same plan (see
        pysoft._frame.Frame.between): ``rolled`` restarts (0.0: zero bytes)."""
        return [(self.B.view("rolled"), 0)] if self.present() else []

    def ops(self, h: float) -> list[Op]:
        """The call of every substep, after ``frame_start``."""
        if not (self.rolling and self.present()):
            return []
        return [cached(self, "rolling", self.call, COLLIDE).set(self.B.n, self.ctx.dim)]

    def probe(self, nb: int, dim: int) -> None:
        """One call as in a substep with fresh contact load (the benchmark's probe)."""
        self.B.view("rolled")[:] = 0.0
        self.call(nb, dim)


class Bodies(Feature):
    """Soft bodies and their models."""

    kinds = (SoftBody,)
    snapshot = (("bodies", ("amount", "min_area", "match_stiffness", "match_damping", "flags",
                            "category", "mask", "friction", "restitution", "rolling_resistance")),)

    @staticmethod
    def particle_fields(dim: int) -> dict[str, Field]:
        # owner: the row of the one body a particle belongs to, -1 for none, -2 for several;
        # rest_pos: its rest offset in that body (self-collision spares neighbours at rest).
        return {"owner": Field((), np.int32, -1), "rest_pos": Field((dim,), np.float64)}

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        i32, f64 = Field((), np.int32), Field((), np.float64)
        self.table = B = ctx.store.table("bodies", {
            "member_start": i32, "member_count": i32, "outline_start": i32, "outline_count": i32,
            "pressure_count": i32, "match_count": i32, "amount": f64, "min_area": f64,
            "match_stiffness": f64, "match_damping": f64, "flags": i32,
            "category": Field((), np.int32, 1), "mask": Field((), np.int32, -1),
            "friction": Field((), np.float64, 0.5), "restitution": f64, "rolling_resistance": f64,
            "rolled": f64,  # workspace of the rolling resistance: this frame's contact impulses so far
            "tangled": i32,  # the untangle pass's: 1 for a body it put back at its rest shape
            # workspaces of the spin pass (features/constraints.py): the angular momentum before
            # the substep's constraint solve, and 1 for a body a constraint links to another
            "spin": Field((3,), np.float64), "linked": i32,
            "entity": Field((), np.int64, -1),
            **({"tet_start": i32, "tet_count": i32} if ctx.dim == 3 else {}),
        }, MAX_BODIES)
        particle = Field((), np.int64, -1)  # the member's particle entity
        members = ctx.store.table("body_members", {"rows": i32, "particle": particle,
                                                   "rest": Field((ctx.dim,), np.float64)}, MAX_MEMBERS)
        outline = ctx.store.table("body_outlines", {"rows": i32, "particle": particle}, MAX_MEMBERS)
        self.members, self.outline = Ragged(B, "member", members), Ragged(B, "outline", outline)
        self.tets: Ragged | None = None  # 3D: each body's tetrahedra, four particles each
        if ctx.dim == 3:
            self.tets = Ragged(B, "tet", ctx.store.table("body_tets", {"particle": particle}, MAX_MEMBERS))
        self.incidence = Incidence()
        self.term = _BodyTerm(ctx, B, members, outline)
        ctx.pipeline.forces.append(self.term)
        self.rolling = _RollingTerm(ctx, B, members)
        ctx.pipeline.settle.append(self.rolling)

    def add_body(self, outline: Sequence[int] | Any, *models: Pressure | ShapeMatching,
                 particles: Sequence[int] | None = None, tetrahedra: Any = None,
                 self_collision: bool = False, category: int = 1, mask: int = 0xFFFFFFFF,
                 friction: float = 0.5, restitution: float = 0.0,
                 rolling_resistance: float = 0.0) -> int:
        """A soft body: its boundary ``outline``, models (``Pressure``, ``ShapeMatching``), and
        optionally all its ``particles`` (default: the boundary's). Bodies may share particles.

        In 2D ``outline`` is particle entities in order around the body (counter-clockwise;
        clockwise is reversed). In 3D it is the body's surface: (T, 3) particle entities, each
        triangle counter-clockwise seen from outside (a closed surface given inside out is
        reversed; an open one, a cloth's sheet, is kept as given; empty for a rope), and
        ``tetrahedra`` (K, 4) particle entities may give a volumetric body's tetrahedra (each
        reordered to positive volume; ``body.tetrahedra``), which must be members. Pressure
        needs an outline that encloses an area (2D) or a closed surface that encloses a volume
        (3D: each edge joins two triangles, consistently oriented).

        Bodies collide: another body's particles are kept out of an outline that encloses
        an area (2D) or a closed surface (3D). ``category``/``mask`` filter pairs as in Box2D
        (a pair collides if each one's category meets the other's mask); ``friction``
        (Coulomb) and ``restitution`` mix with the other body's as sqrt(mu1 mu2) and
        max(e1, e2); ``self_collision`` keeps the body from passing through itself (in 3D by
        its particles' radii: see csrc/src/contacts3d.c). ``rolling_resistance`` (>= 0, default 0;
        2D) slows the body's spin while it touches colliders: each substep it loses up to
        rolling_resistance x its normal load x the load's lever of angular momentum (Box2D's
        rolling resistance; the 2D builders default to 0.1).
        """
        dim = self.ctx.dim
        if dim == 3:
            ring, tris = self._surface(outline)
        else:
            ring, tris = self._particle_list("outline", outline), None
        if particles is not None:
            members = self._particle_list("particles", particles)
        else:  # the boundary's particles: in 2D in order, in 3D each once
            members = ring if dim == 2 else np.unique(ring)
        tets = self._tetrahedra(tetrahedra, members)
        if particles is None and tets is not None and len(tets):
            members = np.concatenate([members, np.setdiff1d(tets.reshape(-1), members)])
        if not set(ring.tolist()) <= set(members.tolist()):
            raise ValueError("outline must be a subset of particles")
        if tets is not None and not set(tets.reshape(-1).tolist()) <= set(members.tolist()):
            raise ValueError("tetrahedra: every corner must be one of particles")
        kinds = [type(m) for m in models]
        for m in models:
            if not isinstance(m, (Pressure, ShapeMatching)):
                raise ValueError(f"models must be Pressure or ShapeMatching, got {type(m).__name__}")
            if m.table is not None:
                raise ValueError(f"this {type(m).__name__} already belongs to a body; make a new one")
        if len(set(kinds)) != len(kinds):
            raise ValueError("models: at most one of each kind per body")
        flags = SELF if _validate.flag("self_collision", self_collision) else 0
        material = {"category": _validate.bits("category", category),
                    "mask": _validate.bits("mask", mask),
                    "friction": _validate.nonnegative("friction", friction),
                    "restitution": _validate.unit_interval("restitution", restitution),
                    "rolling_resistance": _validate.nonnegative("rolling_resistance", rolling_resistance)}
        if dim == 3 and material["rolling_resistance"]:
            raise ValueError("rolling_resistance: rolling resistance is 2D for now (this world has dim=3)")
        P = self.ctx.store.particles
        pos = P.arrays["pos"]
        span = float(np.ptp(pos[P.rows(ring)], axis=0).max()) if len(ring) else 0.0
        if dim == 3:
            closed = tris is not None and closed_surface(tris)
            area = enclosed_volume(pos[P.rows(ring)].reshape(-1, 3, 3)) if closed else 0.0
            if area < 0.0:
                ring, area = ring.reshape(-1, 3)[:, ::-1].reshape(-1).copy(), -area
            if Pressure in kinds and not (closed and area > 0.0):
                raise ValueError("outline must be a closed surface (each edge joins two triangles, "
                                 "consistently oriented) that encloses a volume, for Pressure")
            enclosing = closed and area > 1e-12 * span**3
        else:
            area = 0.0
            if len(ring) >= 3:
                area = signed_area(pos[P.rows(ring)])
                if area < 0.0:
                    ring, area = ring[::-1].copy(), -area
            if Pressure in kinds and not area > 0.0:
                raise ValueError("outline must enclose an area (3 or more particles, not collinear) "
                                 "for Pressure")
            enclosing = area > 1e-12 * span * span  # a straight rope's rounding (1e-15 m^2) encloses nothing
        B = self.table
        B.room(1, "add_body")
        self.members.flat.room(len(members), "add_body")
        self.outline.flat.room(len(ring), "add_body")
        if self.tets is not None and tets is not None:
            self.tets.flat.room(tets.size, "add_body")
        xy = pos[P.rows(members)]
        entity = int(self.ctx.ecs.create(1, lambda: SoftBody(B, self.members, self.outline,
                                                             models, P, self.tets))[0])
        if enclosing:
            flags |= CLOSED
        row = B.add(1, min_area=MIN_AREA_FRACTION * area, entity=[entity], flags=flags, **material)
        self.members.assign(row, rows=P.rows(members).astype(np.int32), particle=members,
                            rest=xy - xy.mean(axis=0))
        self.outline.assign(row, rows=P.rows(ring).astype(np.int32), particle=ring)
        if self.tets is not None:
            self.tets.assign(row, particle=(tets if tets is not None else np.zeros((0, 4), np.int64)
                                            ).reshape(-1))
        for m in models:
            m.attach(B, entity)
            self.ctx.ecs.add_component(entity, m)
        self.incidence.add(members[None, :], np.array([entity]))
        self._counts(row)
        self._owners(members.tolist())
        return entity

    def _surface(self, outline: Any) -> tuple[np.ndarray, np.ndarray]:
        """A 3D body's surface: its corners flat (T * 3 entities) and as (T, 3)."""
        tris = _validate.array("outline", outline, (None, 3), integral=True) if len(
            np.asarray(outline, dtype=object).reshape(-1)) else np.zeros((0, 3), np.int64)
        if (tris[:, 0] == tris[:, 1]).any() or (tris[:, 1] == tris[:, 2]).any() or (
                tris[:, 0] == tris[:, 2]).any():
            raise ValueError("outline: a triangle names a particle twice")
        self._live("outline", tris.reshape(-1))
        return tris.reshape(-1).astype(np.int64), tris.astype(np.int64)

    def _tetrahedra(self, tetrahedra: Any, members: np.ndarray) -> np.ndarray | None:
        """The (K, 4) tetrahedra given, each ordered to positive volume (3D), or None."""
        if tetrahedra is None:
            return None
        if self.ctx.dim != 3:
            raise ValueError("tetrahedra: a 2D body has none (this world has dim=2)")
        tets = _validate.array("tetrahedra", tetrahedra, (None, 4), integral=True).astype(np.int64)
        if any(len(set(t)) != 4 for t in tets.tolist()):
            raise ValueError("tetrahedra: a tetrahedron names a particle twice")
        self._live("tetrahedra", tets.reshape(-1))
        P = self.ctx.store.particles
        rows = P.rows(tets.reshape(-1)).reshape(-1, 4)
        volume = signed_volumes(P.arrays["pos"], rows)
        if not (volume != 0.0).all():
            raise ValueError("tetrahedra: a tetrahedron has zero volume")
        flip = volume < 0.0
        tets[flip] = tets[flip][:, [0, 1, 3, 2]]
        return tets

    def _live(self, name: str, ids: np.ndarray) -> None:
        """KeyError naming ``name`` unless every entity is a live particle."""
        row_of = self.ctx.store.particles.row_of
        bad = [e for e in ids.tolist() if e not in row_of]
        if bad:
            raise KeyError(f"{name}: entity {bad[0]} is not a live particle of this world")

    def _particle_list(self, name: str, entities: Sequence[int]) -> np.ndarray:
        ids = _validate.array(name, entities, (None,), integral=True)
        if len(np.unique(ids)) != len(ids):
            raise ValueError(f"{name} names a particle twice")
        self._live(name, ids)
        return ids

    def _owners(self, particles: list[int]) -> None:
        """Set the ``owner`` and ``rest_pos`` columns of ``particles`` from their bodies."""
        P, B = self.ctx.store.particles, self.table
        owner, rest_pos = P.arrays["owner"], P.arrays["rest_pos"]
        single: dict[int, list[int]] = {}
        for p in particles:
            r = P.row_of.get(p)
            if r is None:
                continue
            bodies = self.incidence.of.get(p, ())
            if len(bodies) == 1:
                single.setdefault(bodies[0], []).append(p)
            else:
                owner[r] = -1 if not bodies else -2
                rest_pos[r] = 0.0
        for body, ps in single.items():
            row = B.row_of[body]
            index = {e: k for k, e in enumerate(self.members.get(row, "particle").tolist())}
            rest = self.members.get(row, "rest")
            for p in ps:
                r = P.row_of[p]
                owner[r] = row
                rest_pos[r] = rest[index[p]]

    def _counts(self, row: int) -> None:
        """Set a body's model counts from its ranges and models (0: the kernel skips it)."""
        B, term = self.table, self.term
        body = cast(SoftBody, self.ctx.ecs.components[int(B.arrays["entity"][row])])
        had = B.arrays["pressure_count"][row] > 0, B.arrays["match_count"][row] > 0
        outline = int(B.arrays["outline_count"][row])
        gas = body.pressure is not None and outline >= 3
        if self.ctx.dim == 3:  # a surface holds gas while it is closed
            gas = gas and bool(B.arrays["flags"][row] & CLOSED)
        B.arrays["pressure_count"][row] = outline if gas else 0
        B.arrays["match_count"][row] = (B.arrays["member_count"][row]
                                        if body.shape_matching is not None else 0)
        term.with_pressure += int(B.arrays["pressure_count"][row] > 0) - int(had[0])
        term.with_matching += int(B.arrays["match_count"][row] > 0) - int(had[1])

    def after_frame(self) -> None:
        """A pressure body whose outline tore between two neighbours (a spring that joined
        them broke this frame) loses its gas: its amount drops to 0 (a balloon pops)."""
        for a, b in self.ctx.torn:
            for body in set(self.incidence.owners([a])) & set(self.incidence.owners([b])):
                row = self.table.row_of[body]
                if not self.table.arrays["pressure_count"][row]:
                    continue
                if self.ctx.dim == 3:  # a torn edge of the surface: two corners of a triangle
                    tris = self.outline.get(row, "particle").reshape(-1, 3)
                    if ((tris == a).any(axis=1) & (tris == b).any(axis=1)).any():
                        self.table.arrays["amount"][row] = 0.0
                    continue
                ring = self.outline.get(row, "particle").tolist()
                if a in ring and b in ring:
                    apart = (ring.index(a) - ring.index(b)) % len(ring)
                    if apart in (1, len(ring) - 1):  # neighbours on the outline
                        self.table.arrays["amount"][row] = 0.0

    def probes(self) -> dict[str, tuple[int, Callable[[], Any]]]:
        B, dim = self.table, self.ctx.dim
        return {"pressure": (int(B.view("pressure_count").sum()),
                             functools.partial(self.term.pressure[0], B.n, dim)),
                "shape_match": (int(B.view("match_count").sum()),
                                functools.partial(self.term.matching[0], B.n, dim)),
                "rolling_resistance": (int(B.view("member_count").sum()),
                                       functools.partial(self.rolling.probe, B.n, dim))}

    def body(self, entity: int) -> SoftBody:
        """The SoftBody component of ``entity``."""
        return self.ctx.ecs.get(entity, SoftBody, "body")

    def body_shapes(self) -> BodyShapes:
        """Every body at once, in body row order, for drawing and games (arrays, no Python
        loop over bodies): entities; outlines as ragged rows (body b's outline particle rows
        are ``rows[offsets[b]:offsets[b + 1]]``, counter-clockwise as built); the members'
        mass-weighted centroids; the outlines' signed areas; and angles (rad), the best-fit
        rotation of the members from their rest shape (shape matching's, atan2(S, D))."""
        B, dim = self.table, self.ctx.dim
        if dim != 2:
            raise ValueError("body_shapes is 2D for now (this world has dim=3)")
        P = self.ctx.store.particles.arrays
        pos, mass = P["pos"], P["mass"]
        offsets = np.concatenate([[0], np.cumsum(B.view("outline_count"), dtype=np.int64)])
        body, rows, nxt = self._outline_edges()
        a, b = pos[rows], pos[nxt]
        areas = 0.5 * np.bincount(body, a[:, 0] * b[:, 1] - b[:, 0] * a[:, 1], minlength=B.n)
        owner, mflat = ranges(B.view("member_start"), B.view("member_count"), B.n)
        mrows = self.members.flat.arrays["rows"][mflat]
        m = np.where(np.isfinite(mass[mrows]), mass[mrows], 0.0)
        total = np.bincount(owner, m, minlength=B.n)
        plain = total <= 0.0  # only immovable members: their plain mean
        weight = np.where(plain[owner], 1.0, m)
        norm = np.bincount(owner, weight, minlength=B.n)
        centroids = np.stack([np.bincount(owner, weight * pos[mrows, k], minlength=B.n) for k in range(dim)],
                             axis=1) / np.where(norm > 0.0, norm, 1.0)[:, None]
        r = pos[mrows] - centroids[owner]
        q = self.members.flat.arrays["rest"][mflat]
        D = np.bincount(owner, q[:, 0] * r[:, 0] + q[:, 1] * r[:, 1], minlength=B.n)
        S = np.bincount(owner, q[:, 0] * r[:, 1] - q[:, 1] * r[:, 0], minlength=B.n)
        return BodyShapes(B.view("entity").copy(), offsets, rows, centroids, areas, np.arctan2(S, D))

    def _outline_edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every outline edge, bodies in row order: its body row, and the particle rows of its
        start and end (each outline closed back to its first particle)."""
        B = self.table
        start, count = B.view("outline_start"), B.view("outline_count")
        body, flat = ranges(start, count, B.n)
        nxt = start[body] + (flat - start[body] + 1) % count[body]
        rows = self.outline.flat.arrays["rows"]
        return body, rows[flat].astype(np.int64), rows[nxt].astype(np.int64)

    def body_at(self, point: Any) -> int | None:
        """The body whose outline encloses ``point`` (even-odd rule; of several, the one
        added last, drawn on top), or None. 2D; closed outlines only."""
        if self.ctx.dim != 2:
            raise ValueError("body_at is 2D for now (this world has dim=3)")
        p = _validate.vector("point", point, self.ctx.dim)
        B = self.table
        if not B.n:
            return None
        pos = self.ctx.store.particles.arrays["pos"]
        closed = (B.view("flags") & CLOSED) != 0
        body, rows, nxt = self._outline_edges()
        a, b = pos[rows], pos[nxt]
        with np.errstate(divide="ignore", invalid="ignore"):  # horizontal edges never cross
            cross = ((a[:, 1] > p[1]) != (b[:, 1] > p[1])) & (
                p[0] < a[:, 0] + (p[1] - a[:, 1]) * (b[:, 0] - a[:, 0]) / (b[:, 1] - a[:, 1]))
        inside = (np.bincount(body[cross], minlength=B.n) % 2 == 1) & closed
        hits = np.flatnonzero(inside)
        if not len(hits):
            return None
        entity = B.view("entity")[hits]
        return int(entity.max())  # entities grow: the last added

    def remove(self, entities: list[int]) -> None:
        B = self.table
        freed: list[int] = []
        for e in entities:
            row = B.row_of[e]
            members = self.members.get(row, "particle").tolist()
            self.incidence.discard(members, e)
            freed.extend(members)
            self.members.release(row)
            self.outline.release(row)
            if self.tets is not None:
                self.tets.release(row)
            self._counts(row)
        _, moved_to = B.remove_rows(B.rows(entities))
        self.ctx.ecs.delete(entities)
        for row in moved_to.tolist():  # their members' owner is a body row: renumber
            freed.extend(self.members.get(row, "particle").tolist())
        self._owners(freed)

    def drop_particles(self, particles: list[int]) -> None:
        doomed = set(particles)
        for body in self.incidence.owners(particles):
            row = self.table.row_of[body]
            gone = [e for e in self.members.get(row, "particle").tolist() if e in doomed]
            if self.tets is not None:  # 3D: the triangles and tetrahedra of a doomed particle go
                self._drop_cells(row, doomed)
            for ragged in (self.outline, self.members):
                names = ragged.get(row, "particle").tolist()
                for i in reversed([i for i, e in enumerate(names) if e in doomed]):
                    ragged.delete(row, i)
            rest = self.members.get(row, "rest")
            if len(rest):  # rest offsets are about the members' centroid: re-centre
                rest -= rest.mean(axis=0)
            self.incidence.discard(gone, body)
            self._counts(row)
            if len(self.outline.get(row, "particle")) < 3:
                self.table.arrays["flags"][row] &= ~CLOSED
                self._counts(row)
            self._owners(self.members.get(row, "particle").tolist())

    def _drop_cells(self, row: int, doomed: set[int]) -> None:
        """3D: drop body ``row``'s surface triangles and tetrahedra that have a corner in
        ``doomed`` (a surface that loses a triangle is open: it holds no gas)."""
        assert self.tets is not None
        for ragged, width in ((self.outline, 3), (self.tets, 4)):
            cells = ragged.get(row, "particle").reshape(-1, width)
            keep = ~np.isin(cells, list(doomed)).any(axis=1)
            if keep.all():
                continue
            values = {f: ragged.get(row, f).reshape(len(cells), -1)[keep].reshape(-1).copy()
                      for f in ragged.flat.arrays}
            ragged.assign(row, **values)
            if ragged is self.outline:
                self.table.arrays["flags"][row] &= ~CLOSED
        self._counts(row)

    def particles_moved(self, entities: np.ndarray, rows: np.ndarray) -> None:
        new_row = dict(zip(entities.tolist(), rows.tolist(), strict=True))
        for body in self.incidence.owners(new_row):
            row = self.table.row_of[body]
            for ragged in (self.members, self.outline):
                names, idx = ragged.get(row, "particle"), ragged.get(row, "rows")
                for i, e in enumerate(names.tolist()):
                    if e in new_row:
                        idx[i] = new_row[e]
