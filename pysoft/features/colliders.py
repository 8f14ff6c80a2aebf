"""Colliders: static and kinematic shapes that particles meet, with restitution and
friction, and the contact report (``csrc/src/collide.c``). The outline edges of
bodies meet them too, in the pass that follows (``pysoft.features.edges``).

A collider is a pose plus a local shape (``pysoft.shapes``): a polytope,
whose faces are ragged rows of the Store, or a capsule. Colliders with a
velocity are moved by the world every substep (NumPy, shared by both
backends) before the contact search.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from pysoft import _validate
from pysoft._constants import CAPSULE, POLYTOPE
from pysoft._ecs import Column, RowView, Vector
from pysoft._frame import COLLIDE, Op, cached
from pysoft._kernels import Arg, Kernel, register
from pysoft._store import Field, Ragged, Table
from pysoft.features._feature import PROBE_H, Context, Feature
from pysoft.shapes import SHAPES, Disc, Shape, Sphere, rotation_2d

MAX_COLLIDERS = 1 << 20
MAX_FACES = 1 << 22


def _check_collide(arrays: dict[str, np.ndarray], sizes: dict[str, int]) -> None:
    k = sizes["k"]
    kind, start, count = arrays["kind"][:k], arrays["face_start"][:k], arrays["face_count"][:k]
    if ((kind != POLYTOPE) & (kind != CAPSULE)).any():
        raise ValueError(f"collide: kind must be {POLYTOPE} (polytope) or {CAPSULE} (capsule)")
    if (start < 0).any() or (count < 0).any() or (start.astype(np.int64) + count > sizes["nfaces"]).any():
        raise ValueError("collide: face_start/face_count reach outside face_normal")
    if ((kind == POLYTOPE) & (count < 1)).any():  # (a half-space at least: it has no inside else)
        raise ValueError("collide: face_count must be >= 1 for a polytope")


_P, _S, _K = ("n", "dim"), ("n",), ("k",)
COLLIDER_FIELDS = ("kind", "center", "rotation", "velocity", "angular_velocity", "restitution",
                   "friction", "keep", "face_start", "face_count", "cap_a", "cap_b", "cap_radius",
                   "bound", "grow")
register(Kernel(
    "collide", "collide",
    (Arg("pos", _P), Arg("vel", _P), Arg("contact_collider", _S, np.int32),
     Arg("contact_normal", _P), Arg("contact_impulse", _S), Arg("support", _P),
     Arg("stuck", _S, np.int32), Arg("prev_pos", _P),
     Arg("radius", _S), Arg("mass", _S), Arg("inv_mass", _S),
     Arg("kind", _K, np.int32), Arg("center", ("k", "dim")),
     Arg("rotation", ("k", "dim", "dim")), Arg("velocity", ("k", "dim")),
     Arg("angular_velocity", ("k", 3)), Arg("restitution", _K),
     Arg("friction", _K), Arg("keep", _K),
     Arg("face_start", _K, np.int32), Arg("face_count", _K, np.int32),
     Arg("face_normal", ("nfaces", "dim")), Arg("face_offset", ("nfaces",)),
     Arg("cap_a", ("k", "dim")), Arg("cap_b", ("k", "dim")), Arg("cap_radius", _K),
     Arg("bound", _K), Arg("grow", _K)),
    ("n", "k", "nfaces", "dim"), ("iterations", "h", "rest_speed", "threads", "clear"),
    ("pos", "vel", "contact_collider", "contact_normal", "contact_impulse", "support", "stuck"),
    check=_check_collide, rows="sum"))


class Contacts(NamedTuple):
    """Contacts of the last step, one row per particle that touched a collider, itself or
    through an outline edge it ends or a surface triangle it is a corner of
    (``pysoft.features.edges``).

    ``impulses`` is the normal impulse (N s) summed over the step's substeps;
    ``colliders`` and ``normals`` are those of the particle's last contact.
    """

    particles: np.ndarray
    colliders: np.ndarray
    normals: np.ndarray
    impulses: np.ndarray


class Collider(RowView):
    """A collider entity's component: its shape, pose, motion and material (views of the Store).

    Moving a collider: assign ``position`` / ``angle`` (a teleport: contacts
    see no surface motion), or give it a ``velocity`` / ``angular_velocity``
    and the world moves it every substep (a kinematic body: what rests on it
    is carried along by friction).
    """

    __slots__ = ("geometry", "shape")

    def __init__(self, table: Table, shape: Any, geometry: Any) -> None:
        super().__init__(table)
        self.shape = shape
        self.geometry = geometry

    position = Vector("center", "position", "Position of the shape's centre (m).")
    velocity = Vector("velocity", "velocity", "Velocity (m/s); the world moves the collider by it.")
    restitution = Column("restitution", "Coefficient of restitution in [0, 1].", _validate.unit_interval)
    friction = Column("friction", "Coulomb friction coefficient (>= 0).", _validate.nonnegative)
    tangential_damping = Column(
        "tangential_damping", "Exponential damping of sliding (1/s): vt *= exp(-rate h) per contact.",
        _validate.nonnegative)

    @property
    def angle(self) -> float:
        """Rotation (radians, CCW; 2D only)."""
        return float(self.table.arrays["angle"][self.row])

    @angle.setter
    def angle(self, value: float) -> None:
        if self.table.arrays["center"].shape[1] != 2:
            raise ValueError("angle is for 2D colliders; set rotation in 3D")
        angle = _validate.finite("angle", value)
        row = self.row
        self.table.arrays["angle"][row] = angle
        self.table.arrays["rotation"][row] = rotation_2d(angle)

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
            w[self.row] = (0.0, 0.0, _validate.finite("angular_velocity", value))
        else:
            w[self.row] = _validate.vector("angular_velocity", value, 3)


def advance_colliders(C: Table, h: float) -> None:
    """Move kinematic colliders by their velocity and angular velocity over ``h`` seconds."""
    center, rot = C.view("center"), C.view("rotation")
    center += h * C.view("velocity")
    w = C.view("angular_velocity")
    if center.shape[1] == 2:
        angle = C.view("angle")
        angle += h * w[:, 2]
        c, s = np.cos(angle), np.sin(angle)
        rot[:, 0, 0], rot[:, 0, 1], rot[:, 1, 0], rot[:, 1, 1] = c, -s, s, c
        return
    for row in np.flatnonzero(w.any(axis=1)):  # Rodrigues' rotation by |w| h about w
        theta = float(np.linalg.norm(w[row])) * h
        x, y, z = w[row] / np.linalg.norm(w[row])
        K = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
        rot[row] = (np.eye(3) + np.sin(theta) * K + (1.0 - np.cos(theta)) * K @ K) @ rot[row]


class Pusher:
    """A kinematic disc collider that follows ``target``: each frame it moves there at the
    speed that takes it there in one frame (the collide pass sees it move, so it shoves
    particles and bodies aside rather than teleporting through them). ``collider`` is its
    collider entity; ``remove()`` takes it out of the world."""

    __slots__ = ("_dt", "_remove", "_target", "_view", "collider")

    def __init__(self, collider: int, view: Collider, dt: Callable[[], float],
                 remove: Callable[[int], None]) -> None:
        self.collider, self._view, self._dt, self._remove = collider, view, dt, remove
        self._target = np.array(view.position, dtype=float)

    @property
    def target(self) -> np.ndarray:
        """Where the disc is going (m); set it each frame (a mouse position)."""
        return self._target.copy()

    @target.setter
    def target(self, value: Any) -> None:
        self._target = _validate.vector("target", value, len(self._target))
        self.aim()

    def aim(self) -> None:
        """Set the disc's velocity to reach the target in one frame (0 once there)."""
        self._view.velocity = (self._target - np.asarray(self._view.position)) / self._dt()

    def remove(self) -> None:
        """Take the pusher's collider out of its world."""
        self._remove(self.collider)


class _CollideTerm:
    """Particles against colliders. On a frame's first substep it clears the contact report
    and refreshes ``keep = exp(-tangential_damping h)``; moving colliders advance first."""
    label = "particles against colliders"  # its name in an InstabilityError

    def __init__(self, ctx: Context, C: Table, faces: Table) -> None:
        self.ctx, self.C, self.faces, self.P = ctx, C, faces, ctx.store.particles
        a = self.P.arrays
        self.collide = ctx.bind(
            "collide", **{name: a[name] for name in (
                "pos", "vel", "contact_collider", "contact_normal", "contact_impulse", "support", "stuck",
                "prev_pos",
                "radius", "mass", "inv_mass")},
            **{name: C.arrays[name] for name in COLLIDER_FIELDS},
            face_normal=faces.arrays["normal"], face_offset=faces.arrays["offset"])
        self.moving = False
        self._keep_for: tuple[float, bytes] | None = None  # (h, damping) keep was computed for
        self._views: tuple[Any, ...] = (-1,)  # (rows, damping, velocity, angular velocity)

    def first_substep(self, h: float) -> None:
        """What a frame's first substep does before the sweep: ``keep = exp(-damping h)``
        (again only if h or a damping changed), and whether any collider moves."""
        C = self.C
        if self._views[0] != C.n:  # (the arrays never move: views of the live rows, per count)
            self._views = (C.n, C.view("tangential_damping"), C.view("velocity"),
                           C.view("angular_velocity"))
        _, damping, v, w = self._views
        key = (h, damping.tobytes())
        if key != self._keep_for:
            np.exp(-h * damping, out=C.view("keep"))
            self._keep_for = key
        raw = v.tobytes() + w.tobytes()  # all zero bytes: still, without asking NumPy
        self.moving = raw.count(0) != len(raw) and bool(v.any() or w.any())

    def run(self, h: float) -> None:
        C = self.C
        if not C.n:
            return
        first = self.ctx.pipeline.substep == 0
        if first:
            self.first_substep(h)
        if self.moving:
            advance_colliders(C, h)
        self.sweep(h, clear=first)

    def frame_start(self, h: float) -> bool | None:
        """A one-call frame's first substep before the sweep (``first_substep``); None while
        a collider moves (it advances from Python: the frame runs the stages)."""
        if not self.C.n:
            return False
        self.first_substep(h)
        return None if self.moving else True

    def watched(self) -> list[np.ndarray]:
        """What ``frame_start`` reads besides h and the rows: the dampings and the velocities."""
        C, names = self.C, ("tangential_damping", "velocity", "angular_velocity")
        return [C.view(name) for name in names] if C.n else []

    def between(self) -> list[tuple[np.ndarray, int]]:
        """What ``frame_start`` does to the arrays at a later frame of the same plan (see
        pysoft._frame.Frame.between): nothing (``keep`` stays for the same h and dampings;
        the report is cleared by the sweep's first substep)."""
        return []

    def ops(self, h: float) -> list[Op]:
        """The call of every substep (a new contact report on the first), after
        ``frame_start``."""
        return [self.op(h)] if self.C.n else []

    def op(self, h: float, key: str = "collide", after: Op | None = None, also: Op | None = None) -> Op:
        """The sweep as an op: on a frame's first substep a new contact report (``clear``,
        the 9th of its counts and scalars), or (``after``) only when that op (or ``also``)
        moved something."""
        s = self.ctx.settings
        op = cached(self, key, self.collide, COLLIDE, also, vary=8 if after is None else -1, after=after)
        return op.set(self.P.n, self.C.n, self.faces.n, self.ctx.dim, s._contact_iterations, h,
                      s._restitution_threshold, s._threads, 0)

    def sweep(self, h: float, clear: bool = False) -> None:
        """The collide kernel over every particle and collider, as they are now (``clear``: a
        new contact report first, on a frame's first substep)."""
        s = self.ctx.settings
        self.collide(self.P.n, self.C.n, self.faces.n, self.ctx.dim, s._contact_iterations, h,
                     s._restitution_threshold, s._threads, int(clear))


class _RecollideTerm:
    """The particles against the colliders once more, after a settle solve moved some (it
    holds the particles a collider holds, and may push the others into one: a plate
    pressing an incompressible XPBD body had members pushed up through it). The colliders
    do not advance again; the contact report goes on accumulating."""
    label = "particles against colliders (again)"  # its name in an InstabilityError

    def __init__(self, term: _CollideTerm) -> None:
        self.term = term
        self.staged = 0  # substeps in which the stages ran it

    @property
    def runs(self) -> int:
        """Substeps in which it ran, in the stages or in a frame's one call (for the
        kernel-call accounting in the tests)."""
        op = self.term.__dict__.get("_op_again")
        return self.staged + (0 if op is None else int(op.c.calls))

    def run(self, h: float) -> None:
        self.staged += 1
        self.term.sweep(h)

    def ops(self, h: float) -> list[Op]:
        """The sweep, in the substeps where the edges' contacts or the settle moved particles
        (``pipeline.movers``: one or both)."""
        movers = self.term.ctx.pipeline.movers
        if not movers:
            return []
        return [self.term.op(h, "again", after=movers[0], also=movers[1] if len(movers) > 1 else None)]


class Colliders(Feature):
    """Colliders and the contact report."""

    kinds = (Collider,)
    snapshot = (("colliders", ("center", "rotation", "angle", "velocity", "angular_velocity",
                               "restitution", "friction", "tangential_damping")),)
    moves = (("colliders", ("center", "rotation", "angle")),)  # kinematic colliders advance

    @staticmethod
    def particle_fields(dim: int) -> dict[str, Field]:
        # support: the normal of each particle's collider contact in the running substep
        # (zero if none); the body contacts after never push a particle into its collider;
        # stuck: 1 where static friction undid the particle's slip in the running substep
        return {"contact_collider": Field((), np.int32, -1), "contact_normal": Field((dim,), np.float64),
                "contact_impulse": Field((), np.float64), "support": Field((dim,), np.float64),
                "stuck": Field((), np.int32)}

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        dim, f64, vec = ctx.dim, Field((), np.float64), Field((ctx.dim,), np.float64)
        self.table = C = ctx.store.table("colliders", {
            "kind": Field((), np.int32), "center": vec, "rotation": Field((dim, dim), np.float64),
            "angle": f64, "velocity": vec, "angular_velocity": Field((3,), np.float64),
            "restitution": f64, "friction": f64, "tangential_damping": f64,
            "keep": Field((), np.float64, 1.0), "face_start": Field((), np.int32),
            "face_count": Field((), np.int32), "cap_a": vec, "cap_b": vec, "cap_radius": f64,
            "bound": f64, "grow": Field((), np.float64, 1.0), "entity": Field((), np.int64, -1),
        }, MAX_COLLIDERS)
        faces = ctx.store.table("collider_faces", {"normal": vec, "offset": f64}, MAX_FACES)
        self.faces = Ragged(C, "face", faces)
        self.reported = np.zeros(0, dtype=np.int64)  # collider entities by row, as of the last step
        self._reported_version = -1
        self.term = _CollideTerm(ctx, C, faces)
        self.pushers: list[Pusher] = []
        ctx.pipeline.collide.append(self.term)
        ctx.pipeline.resettle.append(_RecollideTerm(self.term))

    def add_collider(self, shape: Shape, restitution: float = 0.3, friction: float = 0.5,
                     tangential_damping: float = 0.0, velocity: Sequence[float] | None = None,
                     angular_velocity: Any = None) -> int:
        """A collider: ``Plane``, ``Disc``/``Sphere``, ``Box``, ``Polygon`` or ``Segment``.

        ``restitution`` in [0, 1]; ``friction`` is Coulomb's coefficient;
        ``tangential_damping`` (1/s) damps sliding exponentially. A collider
        with a ``velocity`` / ``angular_velocity`` (rad/s; a 3-vector in 3D)
        is moved by the world every substep and carries what rests on it.
        """
        dim = self.ctx.dim
        if not isinstance(shape, SHAPES):
            names = ", ".join(cls.__name__ for cls in SHAPES)
            raise ValueError(f"shape must be one of pysoft's shapes ({names}), got {type(shape).__name__}")
        geo = shape.geometry(dim)
        values = {
            "kind": geo.kind, "center": geo.center, "rotation": geo.rotation, "angle": geo.angle,
            "restitution": _validate.unit_interval("restitution", restitution),
            "friction": _validate.nonnegative("friction", friction),
            "tangential_damping": _validate.nonnegative("tangential_damping", tangential_damping),
            "velocity": np.zeros(dim) if velocity is None else _validate.vector(
                "velocity", velocity, dim),
            "cap_radius": geo.cap_radius, "bound": geo.bound, "grow": geo.grow,
        }
        if angular_velocity is not None:
            values["angular_velocity"] = (
                (0.0, 0.0, _validate.finite("angular_velocity", angular_velocity)) if dim == 2
                else _validate.vector("angular_velocity", angular_velocity, 3))
        if geo.cap_a is not None:
            values["cap_a"], values["cap_b"] = geo.cap_a, geo.cap_b
        C = self.table
        C.room(1, "add_collider")
        self.faces.flat.room(len(geo.face_offset), "add_collider")
        entity = self.ctx.ecs.create(1, lambda: Collider(C, shape, geo))
        row = C.add(1, entity=entity, **values)
        self.faces.assign(row, normal=geo.face_normal.reshape(-1, dim), offset=geo.face_offset)
        return int(entity[0])

    def probes(self) -> dict[str, tuple[int, Callable[[], Any]]]:
        P, s = self.ctx.store.particles, self.ctx.settings
        return {"collide": (P.n * self.table.n, functools.partial(
            self.term.collide, P.n, self.table.n, self.faces.flat.n, self.ctx.dim,
            s._contact_iterations, PROBE_H, s._restitution_threshold, s._threads, 0))}

    def collider(self, entity: int) -> Collider:
        """The Collider component of ``entity``."""
        return self.ctx.ecs.get(entity, Collider, "collider")

    def remove(self, entities: list[int]) -> None:
        C = self.table
        for e in entities:
            self.faces.release(C.row_of[e])
        C.remove_rows(C.rows(entities))
        self.ctx.ecs.delete(entities)

    def add_pusher(self, radius: float, position: Sequence[float] | None = None,
                   friction: float = 0.5) -> Pusher:
        """A kinematic disc (a sphere in 3D) of ``radius`` (m) at ``position`` (default the
        origin) that follows its handle's ``target`` (set it each frame, as a mouse moves) and
        shoves particles and bodies aside as a moving collider does (no restitution). Remove
        it with ``pusher.remove()`` or ``world.remove(pusher.collider)``."""
        r = _validate.positive("radius", radius)
        mu = _validate.nonnegative("friction", friction)
        dim = self.ctx.dim
        centre = np.zeros(dim) if position is None else _validate.vector("position", position, dim)
        shape = Disc(centre, r) if dim == 2 else Sphere(centre, r)
        entity = self.add_collider(shape, restitution=0.0, friction=mu)
        pusher = Pusher(entity, self.collider(entity), lambda: self.ctx.settings._dt,
                        lambda e: self.remove([e]))
        self.pushers.append(pusher)
        return pusher

    def repeats(self) -> bool:
        """No pusher to aim (pushers are aimed after every frame)."""
        return not self.pushers

    def after_frame(self) -> None:
        # The report names colliders by row: keep the rows' entities as they were in this step.
        if self._reported_version != self.table.version:
            self.reported = self.table.view("entity").copy()
            self._reported_version = self.table.version
        if self.pushers:  # aim every live pusher at its target for the next frame
            live = self.table.row_of
            self.pushers = [p for p in self.pushers if p.collider in live]
            for p in self.pushers:
                p.aim()

    @property
    def contacts(self) -> Contacts:
        """Contacts of the last step as arrays (entities, normals, impulses); those with a
        collider removed since are left out (it is no longer there to name)."""
        P = self.ctx.store.particles
        which = P.view("contact_collider")
        rows = np.flatnonzero(which >= 0)
        colliders = self.reported[which[rows]]
        if self._reported_version != self.table.version:  # colliders came or went since the step
            live = np.isin(colliders, self.table.view("entity"))
            rows, colliders = rows[live], colliders[live]
        return Contacts(P.view("entity")[rows].copy(), colliders,
                        P.view("contact_normal")[rows].copy(), P.view("contact_impulse")[rows].copy())
