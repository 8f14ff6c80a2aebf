"""One substep, stage by stage: what ``World.step`` calls, and in which order.

A :class:`Pipeline` holds the terms the features contributed, per stage:

1. ``forces``      -- :class:`ForceTerm`: gravity (sets the force array),
                      wells, springs, pressure, shape matching, in that order;
2. ``integrator``  -- :class:`IntegratorTerm`: the world's integrator (Verlet
                      and RK4 evaluate the force terms again at other states);
3. ``constraints`` -- :class:`SubstepTerm`: XPBD distance, then volume;
4. ``collide``     -- :class:`SubstepTerm`: tangled XPBD bodies put back at
                      their rest shape (2D), particles against colliders, then
                      outline edges (2D) or surface triangles (3D) against
                      colliders, then bodies against bodies;
5. ``finish``      -- :class:`SubstepTerm`: the instability scan.

Each stage is an esper Processor (:class:`Stage`) with a spaced priority, so
a user's processor added with ``World.add_system(p, priority)`` runs between
two stages and may edit the Store's views. Every term holds kernels bound
once to the Store's buffers and passes live counts at each call; no stage
queries esper or loops over entities, so a step costs O(number of terms) in
Python. :class:`Settings` are the world's settings, checked on assignment,
which the terms read.
"""

from __future__ import annotations

from array import array
from enum import IntEnum
from time import perf_counter
from typing import Any, Generic, Protocol, TypeVar

import esper
import numpy as np

from pysoft import _validate
from pysoft._constants import MAX_THREADS

T = TypeVar("T")

INTEGRATORS = ("symplectic_euler", "explicit_euler", "verlet", "rk4", "xpbd")
"""The names ``World(integrator=...)`` takes."""
# Bounds of the step settings: a frame shorter than MIN_DT (s) is no frame (``step`` does
# nothing, as for dt = 0; XPBD's compliance / h^2 overflowed at 1e-300 s); at most
# MAX_SUBSTEPS substeps and MAX_ITERATIONS solver or contact sweeps per substep (beyond
# them a frame takes minutes and the C core's int counts overflow)
MIN_DT = 1e-6
MAX_SUBSTEPS = 1000
MAX_ITERATIONS = 100

# The states a force evaluation reads and writes: (position, velocity, force) fields of
# the particle table. MAIN is the substep's state; Verlet and RK4 evaluate the others.
FORCE_STATES = (("pos", "vel", "force"), ("pos", "vel_pred", "force1"),
                ("stage_pos", "v2", "f2"), ("stage_pos", "v3", "f3"), ("stage_pos", "v4", "f4"))
MAIN, VERLET, RK2, RK3, RK4 = range(len(FORCE_STATES))


class InstabilityError(RuntimeError):
    """A particle's state went non-finite or faster than ``World.max_speed``.

    ``entity`` and ``row`` name the particle where it began: the first one unstable after a
    pass when the frame is replayed pass by pass (see ``pysoft._replay``), and ``pass_name``
    and ``substep`` (0-based) that pass; where the replay could not tell, ``entity`` is the
    first unstable particle at the frame's end and ``pass_name`` is None.
    """

    def __init__(self, message: str, entity: int, row: int, pass_name: str | None = None,
                 substep: int | None = None) -> None:
        super().__init__(message)
        self.entity = entity
        self.row = row
        self.pass_name = pass_name
        self.substep = substep


class Settings:
    """A world's settings; each assignment is checked, and the terms read ``_<name>``."""

    _gravity: np.ndarray
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
    _particle_collisions: bool
    _body_collisions: bool
    _body_contact_iterations: int
    _threads: int
    dim: int

    def __init__(self) -> None:
        self._shared = array("q", [0])  # _changes, where C reads it (step_many's lane)

    @property
    def _changes(self) -> int:
        """The checked assignments so far (pysoft._validate.Checked counts them)."""
        return self._shared[0]

    @_changes.setter
    def _changes(self, value: int) -> None:
        self._shared[0] = value

    dt = _validate.Checked(lambda n, v: _validate.at_least(n, v, MIN_DT),
                           "Default frame length (s) of ``step()``, at least MIN_DT.")
    substeps = _validate.Checked(lambda n, v: _validate.integer(n, v, 1, MAX_SUBSTEPS),
                                 "Substeps per frame (1 to MAX_SUBSTEPS).")
    max_dt = _validate.Checked(lambda n, v: _validate.at_least(n, v, MIN_DT),
                               "Frame length cap (s): a longer frame is clamped to it.")
    drag = _validate.Checked(_validate.nonnegative, "Linear air resistance (1/s).")
    integrator = _validate.Checked(_validate.choice(INTEGRATORS), "One of ``INTEGRATORS``.")
    restitution_threshold = _validate.Checked(
        _validate.nonnegative, "Approach speed (m/s) below which a contact does not bounce.")
    max_speed = _validate.Checked(_validate.positive,
                                  "Speed (m/s) above which a particle counts as unstable.")
    contact_iterations = _validate.Checked(
        lambda n, v: _validate.integer(n, v, 1, MAX_ITERATIONS),
        "Contact searches per particle and substep (default dim): settles corners of several shapes.")
    constraint_iterations = _validate.Checked(
        lambda n, v: _validate.integer(n, v, 1, MAX_ITERATIONS),
        "XPBD solver sweeps per substep (default 2; more substeps converge better than more sweeps).")
    body_contact_iterations = _validate.Checked(
        lambda n, v: _validate.integer(n, v, 1, MAX_ITERATIONS),
        "Body-contact sweeps per substep (default 1: more substeps converge better).")
    threads = _validate.Checked(
        lambda n, v: _validate.integer(n, v, 1, MAX_THREADS),
        """Threads the C core's spring and collide passes may split their loops over (1 to
        MAX_THREADS; default 1; a frame in one call also splits gravity, the integration and the
        scan): springs, then particles, in fixed parts, so the results are the
        same bit for bit whatever the count. The workers are shared by the process's worlds.""")
    body_collisions = _validate.Checked(
        _validate.flag, "Whether bodies collide with each other (on by default).")
    particle_collisions = _validate.Checked(
        _validate.flag, "Whether free particles with a radius collide with bodies and each other.")
    on_instability = _validate.Checked(
        _validate.choice(("raise", "warn", "clamp", "ignore")),
        '''What a particle that goes non-finite or faster than ``max_speed`` does: "raise"
        (InstabilityError at the frame's end), "warn" (RuntimeWarning), "clamp" (at the end of
        every substep it is slowed to max_speed, or put back at rest at its substep's start if
        not finite; the step completes and a RuntimeWarning counts them) or "ignore".''')

    @property
    def gravity(self) -> np.ndarray:
        """Uniform gravity (m/s^2); a copy, assign to change it."""
        return self._gravity.copy()

    @gravity.setter
    def gravity(self, value: Any) -> None:
        self._gravity[:] = _validate.vector("gravity", value, self.dim)  # kernels hold this array


class Forwarded(Generic[T]):
    """An attribute of a World that reads and assigns its Settings (``obj._settings``, where
    each assignment is checked)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.__doc__ = getattr(Settings, name).__doc__

    def __get__(self, obj: Any, owner: Any = None) -> T:
        if obj is None:
            return self  # type: ignore[return-value]  # the descriptor, for help()
        value: T = getattr(obj._settings, self.name)
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        setattr(obj._settings, self.name, value)


class WorldSettings:
    """A World's settings as its attributes (``world.dt = ...``, checked by its Settings)."""

    _settings: Settings
    gravity = Forwarded[np.ndarray]("gravity")
    dt = Forwarded[float]("dt")
    substeps = Forwarded[int]("substeps")
    max_dt = Forwarded[float]("max_dt")
    drag = Forwarded[float]("drag")
    integrator = Forwarded[str]("integrator")
    restitution_threshold = Forwarded[float]("restitution_threshold")
    max_speed = Forwarded[float]("max_speed")
    on_instability = Forwarded[str]("on_instability")
    contact_iterations = Forwarded[int]("contact_iterations")
    constraint_iterations = Forwarded[int]("constraint_iterations")
    body_contact_iterations = Forwarded[int]("body_contact_iterations")
    threads = Forwarded[int]("threads")
    body_collisions = Forwarded[bool]("body_collisions")
    particle_collisions = Forwarded[bool]("particle_collisions")

    def _configure(self, dim: int, **values: Any) -> Settings:
        """A new Settings of ``dim`` dimensions given ``values`` (each checked, in order)."""
        settings = self._settings = Settings()
        settings.dim = dim
        settings._gravity = np.zeros(dim)
        for name, value in values.items():
            setattr(self, name, value)
        return settings


class ForceTerm(Protocol):
    """Adds (or, for gravity, sets) forces at one of the FORCE_STATES."""

    def evaluate(self, state: int) -> None: ...


class SubstepTerm(Protocol):
    """A pass of one substep of length ``h`` seconds."""

    def run(self, h: float) -> None: ...


class IntegratorTerm(Protocol):
    """The integrators: advance the substep; the XPBD velocity update."""

    def after_forces(self) -> None: ...

    def run(self, h: float, pipeline: Pipeline) -> None: ...

    def velocity_from_positions(self, h: float) -> None: ...

    def velocity_ops(self, h: float) -> list[Any]: ...


class Pipeline:
    """The terms of one substep, per stage, and where in the frame the step is."""

    integrator: IntegratorTerm  # set by the particle feature

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.forces: list[ForceTerm] = []
        self.constraints: list[SubstepTerm] = []
        self.collide: list[SubstepTerm] = []
        self.settle: list[SubstepTerm] = []  # after every collide term (the constraints' settle)
        # after the settle terms, in a substep where the outline edges' contacts or a settle term
        # moved particles (``moved``): the particles against the colliders again
        self.resettle: list[SubstepTerm] = []
        self.moved = False
        self.settled = False  # whether a settle term solved in the running substep
        # in a frame run in one call: the ops whose nonzero result means "moved" (the edges'
        # contacts, the settle), and the settle's (``settled``)
        self.movers: list[Any] = []
        self.settler: Any = None
        self.velocity = _VelocityUpdate(self)
        self.finish: list[SubstepTerm] = []
        self.substep = 0  # index of the running substep within the frame
        self.unstable = -1  # the row the frame-end scan found unstable (-1: none)
        self._time = array("d", [0.0])  # ``time``, where C advances it (step_many's lane)

    @property
    def time(self) -> float:
        """Simulated seconds before this frame."""
        return self._time[0]

    @time.setter
    def time(self, value: float) -> None:
        self._time[0] = value

    @property
    def last_substep(self) -> bool:
        return self.substep == self.settings._substeps - 1

    def run(self, systems: tuple[Any, ...], h: float, elapsed: list[float]) -> None:
        """Every substep of a frame, ``systems`` in turn (their seconds added to ``elapsed``)."""
        for substep in range(self.settings._substeps):
            self.substep = substep
            for i, system in enumerate(systems):
                t0 = perf_counter()
                system.process(h)
                elapsed[i] += perf_counter() - t0

    def terms(self) -> list[Any]:
        """Every term of a substep, in run order (for ``pysoft._frame.Frame``)."""
        return [*self.forces, self.integrator, *self.constraints, self.velocity, *self.collide,
                *self.settle, *self.resettle, *self.finish]

    def evaluate_forces(self, state: int) -> None:
        for term in self.forces:
            term.evaluate(state)


class _VelocityUpdate:
    """Integrator "xpbd"'s velocity update after the constraint terms, as the Constraints stage
    makes it, as a term of ``Pipeline.terms``."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline

    def ops(self, h: float) -> list[Any]:
        return self.pipeline.integrator.velocity_ops(h)


class Priority(IntEnum):
    """Priorities of the built-in stages (esper runs higher first); give yours one in between."""

    FORCES = 500
    INTEGRATE = 400
    CONSTRAINTS = 300
    COLLIDE = 200
    FINISH = 100


class Stage(esper.Processor):
    """A built-in stage: runs its pipeline's terms for one substep."""

    name = "stage"
    default_priority = 0

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self.priority = self.default_priority

    def process(self, *args: Any, **kwargs: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class Forces(Stage):
    """Every force term at the substep's state (gravity first: it resets the forces)."""

    name = "forces"
    default_priority = Priority.FORCES

    def process(self, h: float) -> None:
        self.pipeline.evaluate_forces(MAIN)
        self.pipeline.integrator.after_forces()


class Integrate(Stage):
    """Advance positions and velocities with the world's integrator."""

    name = "integrate"
    default_priority = Priority.INTEGRATE

    def process(self, h: float) -> None:
        self.pipeline.integrator.run(h, self.pipeline)


class Constraints(Stage):
    """XPBD constraints (velocities follow the corrections); with the "xpbd" integrator, then
    the velocity update v = (x - p) / h, less the velocity the corrections' caps withheld.

    The velocity update runs here, before collisions, so that the collide
    stage's restitution and friction act on the final velocities.
    """

    name = "constraints"
    default_priority = Priority.CONSTRAINTS

    def process(self, h: float) -> None:
        p = self.pipeline
        for term in p.constraints:
            term.run(h)
        if p.settings._integrator == "xpbd":
            p.integrator.velocity_from_positions(h)


class Collide(Stage):
    """Particles, then outline edges, against colliders (push-out, restitution, Coulomb
    friction); then bodies against bodies; then the settle terms (the constraints solved
    again around the particles colliders hold; rolling resistance) and, if the edges' contacts
    or the settle moved particles, the particles against the colliders once more: what they
    moved is kept out (an edge pushed off a corner, or a constraint pulled, into a collider);
    and, after a settle in a 3D world with a self-colliding body, bodies against bodies once
    more (the settle pulled a cloth's folds back into each other)."""

    name = "collide"
    default_priority = Priority.COLLIDE

    def process(self, h: float) -> None:
        p = self.pipeline
        p.moved = p.settled = False
        for term in p.collide:
            term.run(h)
        for term in p.settle:
            term.run(h)
        if p.moved:
            for term in p.resettle:
                term.run(h)


class Finish(Stage):
    """Diagnostics at the end of a frame: report the first unstable particle."""

    name = "finish"
    default_priority = Priority.FINISH

    def process(self, h: float) -> None:
        for term in self.pipeline.finish:
            term.run(h)


STAGES = (Forces, Integrate, Constraints, Collide, Finish)
