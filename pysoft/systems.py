"""The built-in passes of one substep, as esper Processors.

Each pass calls kernels that the World bound to the Store's arrays when the
topology last changed; none of them queries esper or loops over entities, so
a step costs O(number of systems) in Python. ``process(h)`` receives the
substep length in seconds.

Priorities are spaced (esper runs higher first) so that a user's processor
added with ``World.add_system(p, priority=...)`` runs between two passes and
may read or edit the Store's views (``world.positions``, ``world.forces``).
"""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING, Any

import esper
import numpy as np

from pysoft.store import Table

if TYPE_CHECKING:
    from pysoft.world import World


class Priority(IntEnum):
    """Priorities of the built-in passes; give yours one in between."""

    FORCES = 500
    INTEGRATE = 400
    CONSTRAINTS = 300
    COLLIDE = 200
    FINISH = 100


class Pass(esper.Processor):
    """A built-in pass: holds its World, reads the World's bound kernels."""

    name = "pass"
    default_priority = 0

    def __init__(self, world: World) -> None:
        self.world = world
        self.priority = self.default_priority

    def process(self, *args: Any, **kwargs: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class Forces(Pass):
    """Gravity and drag (which reset the force array), then springs."""

    name = "forces"
    default_priority = Priority.FORCES

    def process(self, h: float) -> None:
        w = self.world
        w._bound.forces()
        if w._integrator in ("verlet", "rk4"):
            # Keep the built-in forces so user forces added after this pass can be
            # separated out and held constant over the substep's extra evaluations.
            np.copyto(w._bound.force_builtin, w._bound.force)


class Integrate(Pass):
    """Advance positions and velocities with the World's integrator."""

    name = "integrate"
    default_priority = Priority.INTEGRATE

    def process(self, h: float) -> None:
        b = self.world._bound
        kind = self.world._integrator
        if kind == "symplectic_euler":
            b.symplectic_euler(h)
        elif kind == "explicit_euler":
            b.explicit_euler(h)
        elif kind == "xpbd":
            b.xpbd_predict(h)
        elif kind == "verlet":
            self._verlet(h)
        else:
            self._rk4(h)

    def _external(self) -> np.ndarray:
        """Forces added after the force pass (user systems), as force - built-in."""
        b = self.world._bound
        ext: np.ndarray = b.force_builtin
        np.subtract(b.force, ext, out=ext)
        return ext

    def _verlet(self, h: float) -> None:
        b = self.world._bound
        ext = self._external()
        b.verlet_drift(h)
        b.forces_verlet()
        np.add(b.force1, ext, out=b.force1)
        b.verlet_kick(h)

    def _rk4(self, h: float) -> None:
        b = self.world._bound
        ext = self._external()
        for stage, forces, out, c in ((b.rk4_stage2, b.forces_f2, b.f2, 0.5 * h),
                                      (b.rk4_stage3, b.forces_f3, b.f3, 0.5 * h),
                                      (b.rk4_stage4, b.forces_f4, b.f4, h)):
            stage(c)
            forces()
            np.add(out, ext, out=out)
        b.rk4_combine(h)


class Constraints(Pass):
    """XPBD distance, then volume constraints (velocities follow the corrections); with the
    "xpbd" integrator, then the velocity update v = (x - p) / h.

    The velocity update runs here, before collisions, so that the collide
    pass's restitution and friction act on the final velocities (DESIGN.md
    lists it under "finish"; see docs in README "Design notes").
    """

    name = "constraints"
    default_priority = Priority.CONSTRAINTS

    def process(self, h: float) -> None:
        b = self.world._bound
        distances, volumes = b.constraints
        if distances or volumes:
            for lam in b.lambdas:  # multipliers accumulate over one substep's iterations
                lam[:] = 0.0
        for _ in range(self.world._constraint_iterations if distances or volumes else 0):
            if distances:
                b.xpbd_distance(h)
            if volumes:
                b.xpbd_volume(h)
        if self.world._integrator == "xpbd":
            b.xpbd_velocity(h)


class Collide(Pass):
    """Particles against colliders: push-out, restitution, Coulomb friction; moving colliders.

    On a frame's first substep it clears the contact report and refreshes
    ``keep = exp(-tangential_damping h)``; colliders with a velocity are moved
    (numpy, shared by both backends) before every contact search.
    """

    name = "collide"
    default_priority = Priority.COLLIDE

    def __init__(self, world: World) -> None:
        super().__init__(world)
        self._moving = False

    def process(self, h: float) -> None:
        w = self.world
        C = w.store.colliders
        if not C.n:
            return
        if w._substep == 0:
            P = w.store.particles
            P.view("contact_collider")[:] = -1
            P.view("contact_impulse")[:] = 0.0
            np.exp(-h * C.view("tangential_damping"), out=C.view("keep"))
            self._moving = bool(C.view("velocity").any() or C.view("angular_velocity").any())
        if self._moving:
            advance_colliders(C, h)
        w._bound.collide(w._contact_iterations, h, w._restitution_threshold)


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


class Finish(Pass):
    """Diagnostics at the end of a frame: report the first unstable particle."""

    name = "finish"
    default_priority = Priority.FINISH

    def process(self, h: float) -> None:
        w = self.world
        if w._last_substep and w.on_instability != "ignore":
            row = w._bound.find_unstable(w.max_speed)
            if row >= 0:
                w._report_instability(int(row))


BUILT_IN = (Forces, Integrate, Constraints, Collide, Finish)
