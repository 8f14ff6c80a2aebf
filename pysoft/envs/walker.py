"""``pysoft/Walker-v0`` and ``pysoft/UpStepper-v0``: a voxel robot
(:func:`pysoft.build.voxels`, Evolution Gym's grids) walks right, on flat ground or up a
staircase."""

from __future__ import annotations

from typing import Any

import numpy as np

from pysoft import _validate, build
from pysoft.build.voxels import WALKER, gait
from pysoft.envs._base import Array, SoftEnv, box, clipped
from pysoft.shapes import Box, Plane
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
        n = len(self._rows)
        mass = w.store.particles.arrays["mass"][self._rows]
        self._weights = mass / mass.sum()  # the centre of mass is weights @ positions
        self._size = 2 + 2 * n
        self.action_space = box(k, 1.0)
        self.observation_space = box(2 + 2 * n)
        self._drive = self._drive_matrix()
        self._action, self._activation = np.zeros(k), np.ones(len(self._drive))
        self._x = 0.0
        self._ready(self._rows)

    def _terrain(self, world: World) -> None:
        world.add_collider(Plane(normal=(0.0, 1.0), offset=0.0), friction=GROUND_FRICTION)

    def _drive_matrix(self) -> Array:
        """(muscles, actuators): muscle m's activation is 1 + (this @ action)[m], the mean of
        1 + 0.5 action over the actuator voxels it belongs to (as ``VoxelRobot.drive``)."""
        index = {int(e): m for m, e in enumerate(self._muscles.springs.tolist())}
        owners = np.zeros((len(index), len(self.robot.actuators)))
        for j, (row, col) in enumerate(self.robot.actuators.tolist()):
            for spring in self.robot.voxel_muscles(row, col):
                owners[index[spring], j] = 1.0
        out: Array = 0.5 * owners / owners.sum(axis=1, keepdims=True)
        return out

    def _act(self, action: Array) -> None:
        a, m = self._action, self._activation
        np.clip(action, -1.0, 1.0, out=a)
        np.matmul(self._drive, a, out=m)
        m += 1.0
        self._muscles.drive(m)  # (one call: a vector env steps many of these a frame)

    def _measure(self) -> tuple[Array, float]:
        """The observation and the centre of mass x."""
        arrays = self.world.store.particles.arrays  # (the Store's own: no view to make)
        p, v = arrays["pos"][self._rows], arrays["vel"][self._rows]
        centre = self._weights @ p
        obs = np.empty(self._size)
        obs[:2] = self._weights @ v
        np.subtract(p, centre, out=obs[2:].reshape(-1, 2))
        return clipped(obs), float(centre[0])

    def _start(self) -> tuple[Array, dict[str, Any]]:
        obs, self._x = self._measure()
        return obs, {"x": self._x, "time": self.world.time}

    def _outcome(self) -> tuple[Array, float, bool, dict[str, Any]]:
        obs, x = self._measure()
        reward, self._x = x - self._x, x
        info = {"x": x, "time": self.world.time}
        if x >= GOAL_X:
            return obs, reward + GOAL_BONUS, True, info
        return obs, reward, False, info

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
