"""``pysoft/Walker-v0`` and ``pysoft/UpStepper-v0``: a voxel robot
(:func:`pysoft.build.voxels`, Evolution Gym's grids) walks right, on flat ground or up a
staircase."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from pysoft import _native, _validate, build
from pysoft._constants import MUSCLE_RANGE
from pysoft.build.voxels import WALKER, gait
from pysoft.envs._base import OBS_LIMIT, Array, Batch, SoftEnv, box
from pysoft.shapes import Box, Plane
from pysoft.twins import envs as twin
from pysoft.world import World

CELL = 0.1  # m, a voxel's side
VOXEL_MASS = 0.1  # kg
# at 60 Hz, h = 1/480 s: build.voxels' rigid voxels are stable from there, and the default walker
# stays bounded under 20 s of random full-range actions (fewer substeps leave little margin)
SUBSTEPS = 8
GROUND_FRICTION = 1.0
# particles a walker's world holds at least (and room for every corner of a larger grid): a small
# world's tables stay in the CPU's caches when a vector env steps many of them
MIN_CAPACITY = 64
START_X = 0.5  # m: the robot's lower-left corner
GOAL_X = 10.0  # m: the centre of mass x that ends the episode
GOAL_BONUS = 1.0
STEP_RISE, STEP_RUN, STEPS = 0.1, 0.6, 8  # m, m, count: UpStepper's staircase
STAIRS_X = 2.0  # m: where the first step begins


class WalkerBatch(Batch):
    """Walkers' work around the frame, all at once (:class:`~pysoft.envs._base.Batch`): one
    call of ``ps_walkers_drive`` sets every walker's muscles from its action (activation
    1 + 0.5 action, each muscle the mean of its actuator voxels', as ``VoxelRobot.drive``),
    one of ``ps_walkers_observe`` reads every observation, centre of mass x and time (csrc/src/envs.c;
    the NumPy twins of pysoft/twins/envs.py for worlds on the NumPy backend). In a batch of
    several, each world's frame in step_many's lane ends with its walker's observation
    (``ps_walker_observed``, the world's ``after``: read while its arrays are in the caches of
    the CPU that ran it), and a frame of every world that way reads none again. The walkers must
    be of one robot; the rows of each are found again when its world's rows changed."""

    bonus = GOAL_BONUS

    def __init__(self, envs: Sequence[SoftEnv]) -> None:
        super().__init__(envs)
        walkers = [cast(WalkerEnv, env) for env in self.envs]
        first = walkers[0]
        owners = np.ascontiguousarray(first.robot._owners.T, dtype=np.int32)  # (muscles, 2)
        for env in walkers:
            if not (np.array_equal(env.robot._owners.T, owners)
                    and np.array_equal(env._weights, first._weights)):
                raise ValueError("envs must be walkers of one robot to be stepped as a batch")
        nb, n, (m, k) = len(walkers), len(first._weights), (len(owners), len(first.robot.actuators))
        self._walkers, self._owners, self._weights = walkers, owners, np.ascontiguousarray(first._weights)
        self._nb, self._n, self._m, self._k = nb, n, m, k
        self._action = np.zeros((nb, k))
        self._rows = np.zeros((nb, n), dtype=np.int32)
        self._muscle_rows = np.zeros((nb, m), dtype=np.int32)
        stores = [env.world.store for env in walkers]
        self._clocks = [s.clock for s in stores]
        self._versions: list[int] = [-1] * nb
        self._refresh()
        # each world's buffers (they never move; held here, they outlive a closed world's)
        self._pos = [s.particles.arrays["pos"] for s in stores]
        self._vel = [s.particles.arrays["vel"] for s in stores]
        self._act = [s.springs.arrays["activation"] for s in stores]
        self._time = [env.world.pipeline._time for env in walkers]
        self._c = all(env.world.backend == "c" for env in walkers)
        if self._c:
            ffi, self._lib = _native.require()

            def ptr(a: Any) -> Any:  # (an array of int32 or float64, or a world's time: array("d"))
                kind = "int32_t[]" if getattr(a, "dtype", None) == np.int32 else "double[]"
                return ffi.from_buffer(kind, a)

            self._keep = [ptr(a) for a in (*self._pos, *self._vel, *self._act, *self._time)]
            self._ptrs = {name: ffi.new("double *[]", self._keep[i * nb:(i + 1) * nb])
                          for i, name in enumerate(("pos", "vel", "act", "time"))}
            named = (("obs", self.obs), ("x", self.x), ("times", self.time), ("action", self._action),
                     ("rows", self._rows),
                     ("muscle_rows", self._muscle_rows), ("owners", owners), ("weights", self._weights))
            self._p = {name: ptr(a) for name, a in named}
            if nb > 1:
                self._observe_in_lane(ffi, ptr)

    _observed: NDArray[np.int32] | None = None  # which worlds' frames ended with their observation

    def _observe_in_lane(self, ffi: Any, ptr: Callable[[Any], Any]) -> None:
        """Make each world's frame in step_many's lane end with its walker's observation
        (``ps_walker_observed``, flagging ``_observed``), until this batch is let go of."""
        p, ptrs = self._p, self._ptrs
        self._observed = observed = np.zeros(self._nb, dtype=np.int32)
        hook = ffi.new("ps_walkers *")
        hook.obs, hook.x, hook.times = p["obs"], p["x"], p["times"]
        hook.rows, hook.weights = p["rows"], p["weights"]
        hook.pos, hook.vel, hook.time = ptrs["pos"], ptrs["vel"], ptrs["time"]
        hook.n, hook.limit = self._n, OBS_LIMIT
        hook.observed = flags = ptr(observed)
        after = ffi.addressof(self._lib, "ps_walker_observed")
        # what the hook reads but the world's own arrays (which live as long as the world): a
        # world kept does not keep its batch's other worlds' Stores reserved
        kept = (hook, flags, self._p, self._ptrs)
        worlds = []
        for i, env in enumerate(self._walkers):
            frame = env.world._frame
            assert frame is not None  # (the C backend's)
            with env.world._guard.held("a vector environment"):  # (no thread is running it)
                w = frame.world
                w.after, w.after_data, w.after_index = after, hook, i
                frame.after_kept = kept  # (as long as the world: see Frame.after_kept)
            worlds.append(w)
        weakref.finalize(self, _unhook, ffi, worlds, hook)

    def _refresh(self) -> None:
        """Each walker's particle and muscle rows, found again where its world's rows changed
        (the Store's version: one integer a world)."""
        versions = [c.value for c in self._clocks]
        for i, env in enumerate(self._walkers):
            if versions[i] != self._versions[i]:
                row_of = env.world.store.particles.row_of
                rows = [row_of.get(e, -1) for e in env.robot.particles.tolist()]
                if -1 in rows:
                    gone = int(env.robot.particles[rows.index(-1)])
                    raise ValueError(f"particle {gone} of the walker's robot was removed from its world")
                self._rows[i] = rows
                self._muscle_rows[i] = env._muscles._live_rows()  # (ValueError: a muscle removed)
        self._versions = versions

    def act(self, actions: Array) -> None:
        if [c.value for c in self._clocks] != self._versions:
            self._refresh()
        if self._observed is not None:
            self._observed.fill(0)
        np.copyto(self._action, actions)
        low, high = MUSCLE_RANGE
        if self._c:
            p = self._p
            self._lib.ps_walkers_drive(self._ptrs["act"], p["action"], p["muscle_rows"], p["owners"],
                                       self._nb, self._k, self._m, low, high)
        else:
            twin.walkers_drive(self._act, self._action.reshape(-1), self._muscle_rows.reshape(-1),
                               self._owners.reshape(-1), self._nb, self._k, self._m, low, high)

    def observe(self) -> None:
        if [c.value for c in self._clocks] != self._versions:
            self._refresh()
        if self._c:
            p, ptrs = self._p, self._ptrs
            self._lib.ps_walkers_observe(p["obs"], p["x"], p["times"], ptrs["pos"], ptrs["vel"], ptrs["time"],
                                         p["rows"], p["weights"], self._nb, self._n, OBS_LIMIT)
        else:
            twin.walkers_observe(self.obs.reshape(-1), self.x, self.time, [a.reshape(-1) for a in self._pos],
                                 [a.reshape(-1) for a in self._vel], self._time, self._rows.reshape(-1),
                                 self._weights, self._nb, self._n, OBS_LIMIT)
        self._ended()

    def observe_frame(self) -> None:
        """After the frame ``act`` handed actions to: what every world's frame in the lane read
        (all were observed there since ``act``), or ``observe``."""
        if self._observed is not None and self._observed.all():
            self._ended()
        else:
            self.observe()

    def _ended(self) -> None:
        np.greater_equal(self.x, GOAL_X, out=self.finished)
        np.copyto(self.terminated, self.finished)


def _unhook(ffi: Any, worlds: list[Any], hook: Any) -> None:
    """Clear each world's ``after`` that names ``hook`` (a batch let go of: its worlds stop
    observing for it; what the hook reads stays with each world, Frame.after_kept)."""
    named = int(ffi.cast("uintptr_t", hook))
    for w in worlds:
        if int(ffi.cast("uintptr_t", w.after_data)) == named:
            w.after, w.after_data = ffi.NULL, ffi.NULL


class WalkerEnv(SoftEnv):
    """A voxel robot walks right on flat ground (Evolution Gym's Walker-v0, in pysoft).

    ``robot`` is the grid (a 2D int array, Evolution Gym's convention; default
    :data:`WALKER`, 5 x 5); voxels are ``CELL`` = 0.1 m, 0.1 kg each; the robot starts with
    its lower-left corner at (0.5, 0). The world runs at 60 Hz with ``substeps`` substeps (8
    by default); one step is one frame.

    **Action** (k,) in [-1, 1], one per actuator voxel (row-major, as
    ``VoxelRobot.actuators``): the voxel's muscle activation is ``1 + 0.5 * action`` (0.5
    contracted to 1.5 extended; values outside [-1, 1] are clipped).

    **Observation** (2 + 2 n,) float64 for n robot particles, each clipped to [-100, 100]:
    the centre of mass velocity (vx, vy, m/s), then every particle's position relative to the
    centre of mass (x0, y0, x1, y1, ... m, in the robot's particle order).

    **Reward**: the centre of mass's progress along x in the step (m); +1 on the step that
    reaches the goal. **Termination**: the centre of mass reaches x = 10 m. **Truncation**: the
    registration's TimeLimit, 1000 steps (16.7 s).

    **Reset**: the robot as built, at rest, every robot particle's velocity perturbed by
    uniform noise of +-``reset_noise_scale`` m/s from the seeded ``np_random``.

    **Info**: ``{"x": centre of mass x, "time": world time}``.

    ValueError for an empty or disconnected ``robot``, or one with no actuator voxel.
    """

    render_scale = 200.0  # pixels per metre
    batch_class = WalkerBatch

    def __init__(self, robot: Any = None, render_mode: str | None = None, reset_noise_scale: float = 0.01,
                 substeps: int = SUBSTEPS) -> None:
        super().__init__(render_mode, reset_noise_scale)
        grid = WALKER if robot is None else np.asarray(robot)
        rows, cols = np.shape(grid) if np.ndim(grid) == 2 else (0, 0)  # (voxels names a bad grid)
        capacity = max(MIN_CAPACITY, (rows + 1) * (cols + 1))
        self.world = World(dim=2, dt=1.0 / 60.0, substeps=substeps, capacity=capacity)
        self._terrain(self.world)
        try:
            self.robot = build.voxels(self.world, grid, origin=(START_X, 0.0), cell=CELL, mass=VOXEL_MASS)
        except ValueError as e:  # (the builder names its own argument, grid: this one is robot)
            raise ValueError(f"robot: {e}") from None
        k = len(self.robot.actuators)
        muscles = self.robot.muscles
        if k == 0 or muscles is None:
            raise ValueError("robot has no actuator voxel (3 or 4): nothing to drive")
        self._muscles = muscles
        w = self.world
        self._rows = np.array([w.row(e) for e in self.robot.particles], dtype=np.intp)
        mass = w.store.particles.arrays["mass"][self._rows]
        self._weights = mass / mass.sum()  # the centre of mass is the weights' sum of positions
        self.action_space = box(k, 1.0)
        self.observation_space = box(2 + 2 * len(self._rows))
        self._ready(self._rows)

    def _terrain(self, world: World) -> None:
        world.add_collider(Plane(normal=(0.0, 1.0), offset=0.0), friction=GROUND_FRICTION)

    def _focus(self) -> tuple[float, float]:
        c = self.robot.center()
        return float(c[0]), 0.6


class UpStepperEnv(WalkerEnv):
    """The walker of :class:`WalkerEnv` walks right and up a staircase (Evolution Gym's
    UpStepper-v0): 8 steps of 0.1 m rise (one voxel) and 0.6 m run, the first at x = 2 m,
    then a flat top. Action, observation, reward (progress along x), termination (x = 10 m),
    truncation (1000 steps) and reset as :class:`WalkerEnv`'s."""

    def _terrain(self, world: World) -> None:
        super()._terrain(world)
        end = GOAL_X + 2.0
        for i in range(STEPS):  # step i: a box from the ground to its tread, on to the end
            x0, top = STAIRS_X + STEP_RUN * i, STEP_RISE * (i + 1)
            world.add_collider(Box(((x0 + end) / 2, top / 2), ((end - x0) / 2, top / 2)),
                               friction=GROUND_FRICTION)


def gait_distance(robot: Any, seconds: float = 4.0, substeps: int = SUBSTEPS) -> float:
    """How far (m, along x) the centre of mass of the voxel robot ``robot`` (a grid) moves in
    ``seconds`` of :func:`gait` on flat ground: ``WalkerEnv(robot, reset_noise_scale=0)``
    stepped from ``reset(seed=0)``. Deterministic: the same number on every run and process of
    the same build (the fitness of examples/evolve_walkers.py). ValueError naming ``robot``
    for a grid build.voxels refuses or with no actuator."""
    frames = _validate.integer("frames", round(_validate.positive("seconds", seconds) * 60.0), 1)
    env = WalkerEnv(robot, reset_noise_scale=0.0, substeps=substeps)
    env.reset(seed=0)
    start = env.robot.center()[0]
    action = np.empty(len(env.robot.actuators))
    for frame in range(frames):
        env.step(gait(env.robot.actuators, frame, action))
    return float(env.robot.center()[0] - start)
