"""Particles: the particle table, the ``Particle`` component, the integrators and the
instability scan (``csrc/src/integrate.c``, ``csrc/src/finish.c``).

Every other feature names particles; this one owns their rows. Rows are
dense: removing particles moves the last rows into the holes, and the
features whose rows name particles renumber them (``particles_moved``).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from pysoft import _validate
from pysoft._ecs import Bits, Column, RowView, Vector
from pysoft._frame import CONSTRAINTS, FINISH, INTEGRATE, LAST, Op, cached
from pysoft._kernels import Arg, Kernel, register
from pysoft._pipeline import FORCE_STATES, InstabilityError, Pipeline
from pysoft._replay import Origin
from pysoft._store import FULL_CAPACITY, Field, Table
from pysoft.features._feature import PROBE_H, Context, Feature

MAX_PARTICLES = FULL_CAPACITY  # rows reserved per world (address space only until used)

_P = ("n", "dim")  # a per-particle vector array
_S = ("n",)  # a per-particle scalar array
_STEP = (Arg("pos", _P), Arg("vel", _P), Arg("prev_pos", _P), Arg("force", _P), Arg("inv_mass", _S))

register(
    Kernel("symplectic_euler", "integrate", _STEP, ("n", "dim"), ("h",), ("pos", "vel", "prev_pos"),
           rows="void"),
    Kernel("explicit_euler", "integrate", _STEP, ("n", "dim"), ("h",), ("pos", "vel", "prev_pos"),
           rows="void"),
    Kernel("verlet_drift", "integrate",
           (Arg("pos", _P), Arg("vel_pred", _P), Arg("prev_pos", _P), Arg("vel", _P),
            Arg("force", _P), Arg("inv_mass", _S)),
           ("n", "dim"), ("h",), ("pos", "vel_pred", "prev_pos")),
    Kernel("verlet_kick", "integrate",
           (Arg("vel", _P), Arg("force0", _P), Arg("force1", _P), Arg("inv_mass", _S)),
           ("n", "dim"), ("h",), ("vel",)),
    Kernel("rk4_stage", "integrate",
           (Arg("pos_out", _P), Arg("vel_out", _P), Arg("pos", _P), Arg("vel", _P),
            Arg("dpos", _P), Arg("force", _P), Arg("inv_mass", _S)),
           ("n", "dim"), ("c",), ("pos_out", "vel_out")),
    Kernel("rk4_combine", "integrate",
           (Arg("pos", _P), Arg("vel", _P), Arg("prev_pos", _P), Arg("v1", _P), Arg("v2", _P),
            Arg("v3", _P), Arg("v4", _P), Arg("f1", _P), Arg("f2", _P), Arg("f3", _P), Arg("f4", _P),
            Arg("inv_mass", _S)),
           ("n", "dim"), ("h",), ("pos", "vel", "prev_pos")),
    Kernel("xpbd_predict", "integrate",
           (Arg("pos", _P), Arg("prev_pos", _P), Arg("vel", _P), Arg("force", _P),
            Arg("inv_mass", _S)),
           ("n", "dim"), ("h",), ("pos", "prev_pos", "vel")),
    Kernel("xpbd_velocity", "integrate",
           (Arg("vel", _P), Arg("pos", _P), Arg("prev_pos", _P), Arg("withheld", _P),
            Arg("inv_mass", _S)),
           ("n", "dim"), ("h",), ("vel",)),
    Kernel("find_unstable", "finish", (Arg("pos", _P), Arg("vel", _P)), ("n", "dim"),
           ("max_speed",), (), rows="first"),
    Kernel("clamp_speeds", "finish", (Arg("pos", _P), Arg("vel", _P), Arg("prev_pos", _P)),
           ("n", "dim"), ("max_speed",), ("pos", "vel")),
)


class Particle(RowView):
    """A point mass. SI units: m, m/s, kg, m."""

    __slots__ = ()

    position = Vector("pos", "position", "Position (m), a writable view of the Store row.")
    velocity = Vector("vel", "velocity", "Velocity (m/s), a writable view of the Store row.")
    force = Vector("force", "force", "Force of the current substep (N); user systems may add to it.")
    mass = Column("mass", "Mass (kg); ``inf`` for an immovable particle.")
    inv_mass = Column("inv_mass", "1 / mass (1/kg); 0 when pinned or of infinite mass.")
    radius = Column("radius", "Collision radius (m).")
    friction = Column("friction", "Coulomb friction against bodies and particles (a body's members "
                      "use the body's).", _validate.nonnegative)
    restitution = Column("restitution", "Restitution in [0, 1] against bodies and particles (a body's "
                         "members use the body's).", _validate.unit_interval)

    @property
    def pinned(self) -> bool:
        """True if the particle never moves."""
        return bool(self.inv_mass == 0.0)

    category = Bits("category", "Collision category bits (Box2D-style): it meets what both masks accept.")
    mask = Bits("mask", "The categories this particle collides with (bits).")


class Integrators:
    """The integrate.c kernels bound to the particle table, and the integrator switch."""

    def __init__(self, ctx: Context, P: Table) -> None:
        self.ctx, self.P = ctx, P
        a, bind = P.arrays, ctx.bind
        moving = {"pos": a["pos"], "vel": a["vel"], "inv_mass": a["inv_mass"], "prev_pos": a["prev_pos"]}
        self.symplectic_euler = bind("symplectic_euler", force=a["force"], **moving)
        self.explicit_euler = bind("explicit_euler", force=a["force"], **moving)
        self.xpbd_predict = bind("xpbd_predict", force=a["force"], **moving)
        self.xpbd_velocity = bind("xpbd_velocity", withheld=a["withheld"], **moving)
        self.verlet_drift = bind("verlet_drift", vel_pred=a["vel_pred"], force=a["force"], **moving)
        self.verlet_kick = bind("verlet_kick", vel=a["vel"], force0=a["force"], force1=a["force1"],
                                inv_mass=a["inv_mass"])
        stage = {"pos_out": a["stage_pos"], "pos": a["pos"], "vel": a["vel"], "inv_mass": a["inv_mass"]}
        self.rk4_stages = tuple(
            bind("rk4_stage", vel_out=a[v_out], dpos=a[dpos], force=a[force], **stage)
            for v_out, dpos, force in (("v2", "vel", "force"), ("v3", "v2", "f2"), ("v4", "v3", "f3")))
        self.rk4_combine = bind("rk4_combine", v1=a["vel"], v2=a["v2"], v3=a["v3"], v4=a["v4"],
                                f1=a["force"], f2=a["f2"], f3=a["f3"], f4=a["f4"], **moving)

    def after_forces(self) -> None:
        """Keep the built-in forces, so that user forces added after the force stage can be
        separated out and held constant over Verlet's and RK4's extra evaluations."""
        if self.ctx.settings._integrator in ("verlet", "rk4"):
            n = self.P.n
            np.copyto(self.P.arrays["force_builtin"][:n], self.P.arrays["force"][:n])

    def run(self, h: float, pipeline: Pipeline) -> None:
        n, dim, kind = self.P.n, self.ctx.dim, self.ctx.settings._integrator
        if kind == "symplectic_euler":
            self.symplectic_euler(n, dim, h)
        elif kind == "explicit_euler":
            self.explicit_euler(n, dim, h)
        elif kind == "xpbd":
            self.xpbd_predict(n, dim, h)
        elif kind == "verlet":
            ext = self._external()
            self.verlet_drift(n, dim, h)
            pipeline.evaluate_forces(1)
            force1 = self.P.arrays["force1"][:n]
            np.add(force1, ext, out=force1)
            self.verlet_kick(n, dim, h)
        else:
            ext = self._external()
            for state, stage, c in zip((2, 3, 4), self.rk4_stages, (0.5 * h, 0.5 * h, h), strict=True):
                stage(n, dim, c)
                pipeline.evaluate_forces(state)
                out = self.P.arrays[FORCE_STATES[state][2]][:n]
                np.add(out, ext, out=out)
            self.rk4_combine(n, dim, h)

    def _external(self) -> np.ndarray:
        """Forces added after the force stage (user systems), as force - built-in."""
        n = self.P.n
        ext: np.ndarray = self.P.arrays["force_builtin"][:n]
        np.subtract(self.P.arrays["force"][:n], ext, out=ext)
        return ext

    def velocity_from_positions(self, h: float) -> None:
        self.xpbd_velocity(self.P.n, self.ctx.dim, h)

    def ops(self, h: float) -> list[Op] | None:
        kind = self.ctx.settings._integrator
        if kind == "xpbd":
            kind = "xpbd_predict"
        elif kind not in ("symplectic_euler", "explicit_euler"):  # evaluate forces again
            return None
        return [cached(self, kind, getattr(self, kind), INTEGRATE).set(self.P.n, self.ctx.dim, h)]

    def velocity_ops(self, h: float) -> list[Op]:
        """``velocity_from_positions``'s call, under integrator "xpbd" (after the constraints)."""
        if self.ctx.settings._integrator != "xpbd":
            return []
        return [cached(self, "velocity", self.xpbd_velocity, CONSTRAINTS).set(self.P.n, self.ctx.dim, h)]

    def probes(self) -> dict[str, tuple[int, Callable[[], Any]]]:
        n, dim, h = self.P.n, self.ctx.dim, PROBE_H
        out: dict[str, tuple[int, Callable[[], Any]]] = {
            name: (n, functools.partial(getattr(self, name), n, dim, h))
            for name in ("symplectic_euler", "explicit_euler", "xpbd_predict", "xpbd_velocity",
                         "verlet_drift", "verlet_kick", "rk4_combine")}
        out["rk4_stage"] = (n, functools.partial(self.rk4_stages[0], n, dim, 0.5 * h))
        return out


class InstabilityScan:
    """At the end of a frame, report the first particle that went non-finite or too fast; with
    ``on_instability="clamp"``, at the end of every substep, repair what it finds."""

    def __init__(self, ctx: Context, P: Table) -> None:
        self.ctx, self.P = ctx, P
        a = P.arrays
        self.find_unstable = ctx.bind("find_unstable", pos=a["pos"], vel=a["vel"])
        self.clamp_speeds = ctx.bind("clamp_speeds", pos=a["pos"], vel=a["vel"], prev_pos=a["prev_pos"])
        self.clamped = 0  # particles clamped so far this frame
        self.first = -1  # the entity of the first of them

    def probes(self) -> dict[str, tuple[int, Callable[[], Any]]]:
        n, dim, top = self.P.n, self.ctx.dim, self.ctx.settings._max_speed
        return {"find_unstable": (n, functools.partial(self.find_unstable, n, dim, top)),
                "clamp_speeds": (n, functools.partial(self.clamp_speeds, n, dim, top))}

    def run(self, h: float) -> None:
        s, pipeline = self.ctx.settings, self.ctx.pipeline
        clamp = s._on_instability == "clamp"
        if s._on_instability == "ignore" or not (clamp or pipeline.last_substep):
            return
        row = int(self.find_unstable(self.P.n, self.ctx.dim, s._max_speed))
        if clamp:
            end = pipeline.time + (pipeline.substep + 1) * h  # this substep's end
            if row >= 0:
                self.first = int(self.P.arrays["entity"][row]) if self.clamped == 0 else self.first
                self.clamped += int(self.clamp_speeds(self.P.n, self.ctx.dim, s._max_speed))
            if pipeline.last_substep and self.clamped:
                message = (f"clamped {self.clamped} particle-substeps to max_speed {s._max_speed:g} m/s "
                           f"this frame (the first: particle {self.first}) by t={end:.6g} s")
                self.clamped, self.first = 0, -1
                warnings.warn(message, RuntimeWarning, stacklevel=6)
            return
        if row >= 0:
            pipeline.unstable = row  # World.step replays the frame to find where it began

    def ops(self, h: float) -> list[Op] | None:
        s = self.ctx.settings
        if s._on_instability == "clamp":  # repairs and warns from Python
            return None
        if s._on_instability == "ignore":
            return []
        return [cached(self, "scan", self.find_unstable, FINISH, when=LAST).set(self.P.n, self.ctx.dim,
                                                                                 s._max_speed)]

    def done(self) -> None:
        """After a frame ran in one call: what the last substep's scan found."""
        op = self.__dict__.get("_op_scan")
        if op is not None and op.c.result >= 0 and op.values is not None:
            self.ctx.pipeline.unstable = int(op.c.result)

    def report(self, origin: Origin | None, faithful: bool, replayed: bool, others: list[str],
               h: float) -> InstabilityError:
        """The error for the frame that just ended (``pipeline.time`` is its start), from the
        frame-end scan and the replay's ``origin``; ``others`` names the user's systems."""
        s, pipeline, a = self.ctx.settings, self.ctx.pipeline, self.P.arrays
        t0 = pipeline.time
        end = t0 + s._substeps * h
        row = pipeline.unstable if origin is None else origin.row
        entity = int(a["entity"][row])
        state = f"position {a['pos'][row].tolist()}, velocity {a['vel'][row].tolist()}"
        theirs = f"your systems ({', '.join(others)})"
        if origin is None:
            why = ("the frame added or removed entities, so it was not replayed" if not replayed
                   else f"a replay of the frame through pysoft's passes alone, without {theirs}, "
                        "stayed stable: one of them made the difference" if others
                   else "a replay of the frame did not reproduce it")
            message = f"particle {entity} (row {row}) went unstable by t={end:.6g} s: {state}; {why}"
            return InstabilityError(message, entity, row)
        bad = {"position": "its position went non-finite", "velocity": "its velocity went non-finite",
               "speed": f"its velocity went faster than max_speed {s._max_speed:g} m/s",
               "force": "its force was not finite"}[origin.what]
        if origin.substep < 0:
            message = (f"particle {entity} (row {row}) was already unstable when the frame began "
                       f"at t={t0:.6g} s ({bad} in an earlier frame, or was set so between frames); "
                       f"by t={end:.6g} s: {state}")
            return InstabilityError(message, entity, row)
        k = origin.substep
        message = (f"particle {entity} (row {row}) went unstable in substep {k + 1} of "
                   f"{s._substeps} (t={t0 + k * h:.6g} to {t0 + (k + 1) * h:.6g} s): {bad} in "
                   f"the {origin.name} pass")
        if origin.forces:
            message += " under the forces of " + ", ".join(f"{term} ({f:.3g} N)" for term, f in origin.forces)
        message += f"; by t={end:.6g} s: {state}"
        if not faithful:
            message += f" (replayed without {theirs})"
        return InstabilityError(message, entity, row, origin.name, k)


class Particles(Feature):
    """Point masses: adding, looking up, bulk views, removal, integration."""

    kinds = (Particle,)
    snapshot = (("particles", ("pos", "vel", "mass", "inv_mass", "radius", "friction", "restitution",
                               "category", "mask")),)
    moves = (("particles", ("pos", "vel")),)

    @staticmethod
    def particle_fields(dim: int) -> dict[str, Field]:
        vec = Field((dim,), np.float64)
        scratch = ("prev_pos", "start_vel", "vel_pred", "force1", "force_builtin",
                   "stage_pos", "v2", "v3", "v4", "f2", "f3", "f4")
        return {"pos": vec, "vel": vec, "force": vec,
                "mass": Field((), np.float64, 1.0), "inv_mass": Field((), np.float64, 1.0),
                "radius": Field((), np.float64), "entity": Field((), np.int64, -1),
                # material and filter against bodies and other particles (members use their body's)
                "friction": Field((), np.float64, 0.5), "restitution": Field((), np.float64),
                "category": Field((), np.int32, 1), "mask": Field((), np.int32, -1),
                # the spring pass's workspace: where each particle's list of springs ends
                "spring_end": Field((), np.int32),
                **{name: vec for name in scratch}}

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.table = P = ctx.store.particles
        self.integrators = Integrators(ctx, P)
        self.scan = InstabilityScan(ctx, P)
        ctx.pipeline.integrator = self.integrators
        ctx.pipeline.finish.append(self.scan)

    def probes(self) -> dict[str, tuple[int, Callable[[], Any]]]:
        return {**self.integrators.probes(), **self.scan.probes()}

    # -- public API -----------------------------------------------------------

    def add_particle(self, position: Sequence[float], velocity: Sequence[float] | None = None,
                     mass: float = 1.0, radius: float = 0.0, pinned: bool = False, *,
                     category: int = 1, mask: int = 0xFFFFFFFF) -> int:
        """Add one particle; returns its entity. ``mass=inf`` or ``pinned=True``: immovable.

        A free particle with a radius collides with bodies and other particles when the
        world's ``particle_collisions`` is on, filtered by ``category`` and ``mask`` bits.
        """
        dim = self.ctx.dim
        pos = _validate.vector("position", position, dim)
        vel = np.zeros(dim) if velocity is None else _validate.vector("velocity", velocity, dim)
        return int(self.add(pos[None], vel[None], np.array([_validate.mass("mass", mass)]),
                            _validate.radius_rows("radius", radius, 1),
                            np.array([_validate.flag("pinned", pinned)]),
                            _validate.bits_rows("category", category, 1),
                            _validate.bits_rows("mask", mask, 1))[0])

    def add_particles(self, positions: Any, velocities: Any = None, masses: Any = 1.0,
                      radii: Any = 0.0, pinned: Any = False, *, category: Any = 1,
                      mask: Any = 0xFFFFFFFF) -> list[int]:
        """Add particles in bulk; ``positions`` is (N, dim). Returns their entities."""
        dim = self.ctx.dim
        pos = _validate.array("positions", positions, (None, dim))
        n = len(pos)
        vel = (np.zeros_like(pos) if velocities is None
               else _validate.array("velocities", velocities, (n, dim)))
        m = _validate.per_row("masses", masses, n)
        if np.isnan(m).any() or (m < _validate.MIN_MASS).any():
            raise ValueError(f"masses must be >= {_validate.MIN_MASS:g} kg (inf for immovable)")
        r = _validate.radius_rows("radii", radii, n)
        pin = np.asarray(pinned)
        if pin.dtype != bool or pin.ndim > 1 or (pin.ndim == 1 and len(pin) != n):
            raise ValueError(f"pinned must be a bool or {n} bools")
        cat, msk = _validate.bits_rows("category", category, n), _validate.bits_rows("mask", mask, n)
        return cast(list[int], self.add(pos, vel, m, r, np.broadcast_to(pin, (n,)), cat, msk).tolist())

    def add(self, pos: np.ndarray, vel: np.ndarray, mass: np.ndarray, radius: np.ndarray,
            pinned: np.ndarray, category: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Particles from validated arrays; returns their entities."""
        P = self.table
        P.room(len(pos), "add_particles")
        inv = np.where(pinned | np.isinf(mass), 0.0, 1.0 / mass)
        vel = np.where(inv[:, None] == 0.0, 0.0, vel)
        entities = self.ctx.ecs.create(len(pos), lambda: Particle(P))
        # prev_pos = pos: a particle added inside a substep is not swept from elsewhere.
        P.add(len(pos), pos=pos, prev_pos=pos, vel=vel, mass=mass, inv_mass=inv, radius=radius,
              category=category, mask=mask, entity=entities)
        return entities

    def particle(self, entity: int) -> Particle:
        """The Particle component of ``entity`` (KeyError if it is not a live particle)."""
        return self.ctx.ecs.get(entity, Particle, "particle")

    def row(self, entity: int) -> int:
        """The particle's row in the Store arrays (``positions[row]``)."""
        return self.particle(entity).row

    @property
    def positions(self) -> np.ndarray:
        """(N, dim) positions (m): a writable view of the live rows."""
        return self.table.view("pos")

    @property
    def velocities(self) -> np.ndarray:
        """(N, dim) velocities (m/s): a writable view of the live rows."""
        return self.table.view("vel")

    @property
    def forces(self) -> np.ndarray:
        """(N, dim) forces (N) of the current substep; a user system may add to them."""
        return self.table.view("force")

    @property
    def particles(self) -> np.ndarray:
        """Particle entities in row order (a copy)."""
        return self.table.view("entity").copy()

    # -- removal ----------------------------------------------------------------

    def remove(self, entities: list[int]) -> None:
        raise NotImplementedError("particles are removed through remove_rows (it reports moves)")

    def remove_rows(self, entities: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Remove particles (their links are gone already); returns the particles whose rows
        moved and their new rows."""
        P = self.table
        _, moved_to = P.remove_rows(P.rows(entities))
        self.ctx.ecs.delete(entities)
        return P.arrays["entity"][moved_to].copy(), moved_to
