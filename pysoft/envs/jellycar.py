"""``pysoft/JellyCar-v0``: drive the jelly car of :func:`pysoft.scenes.course` to the end of
the course with a continuous throttle."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np

from pysoft import scenes
from pysoft.envs._base import Array, Batch, SoftEnv, box, clipped

FINISH_X = 3.0  # m: the chassis centre past the foot of the plank down from the plateau
FLIPPED_COS = 0.0  # the chassis is on its roof when cos(angle) < this


class JellyCarBatch(Batch):
    """Jelly cars' work around the frame (:class:`~pysoft.envs._base.Batch`), car by car: the
    motor is a Python system, a car's throttle one attribute."""

    def __init__(self, envs: Sequence[SoftEnv]) -> None:
        super().__init__(envs)
        self._cars = [cast(JellyCarEnv, env) for env in self.envs]

    def act(self, actions: Array) -> None:
        for env, action in zip(self._cars, actions.tolist(), strict=True):
            env.car.motor.throttle = min(1.0, max(-1.0, action[0]))

    def observe(self) -> None:
        for i, env in enumerate(self._cars):
            self.obs[i] = env._observe()
            self.time[i] = env.world.time
        np.copyto(self.x, self.obs[:, 0])
        np.greater_equal(self.x, FINISH_X, out=self.finished)
        np.logical_or(self.finished, self.obs[:, 4] < FLIPPED_COS, out=self.terminated)


class JellyCarEnv(SoftEnv):
    """Drive the course's jelly car (:func:`pysoft.scenes.course`: a bump, a plank up to a
    plateau, a plank down, a ball and a crate in a dip, a bank) to the right. The world runs
    at 60 Hz with ``substeps`` substeps; one step is one frame.

    **Action** (1,) in [-1, 1]: the motor's throttle (1 full torque forward, -1 backward;
    values outside are clipped). The motor's cruise control keeps the wheels' spin under
    ``max_spin`` (6 rad/s).

    **Observation** (7,) float64, each clipped to [-100, 100]: the chassis centre x, y (m),
    its velocity vx, vy (m/s), cos and sin of its angle (0 as built; the best-fit rotation of
    its particles about their centre), and its spin (rad/s, anticlockwise).

    **Reward**: the chassis centre's progress along x in the step (m); +1 more on the step
    that reaches the finish.

    **Termination**: the chassis centre passes x = 3 m (the finish, in the dip after the
    plateau), or the car is on its roof (cos(angle) < 0). **Truncation**: the registration's
    TimeLimit, 1200 steps (20 s).

    **Reset**: the course as built, the throttle 0, every particle's velocity perturbed by
    uniform noise of +-``reset_noise_scale`` m/s from the seeded ``np_random``.

    **Info**: ``{"x": chassis centre x, "time": world time}``.
    """

    batch_class = JellyCarBatch

    def __init__(self, render_mode: str | None = None, reset_noise_scale: float = 0.01,
                 substeps: int = 8) -> None:
        super().__init__(render_mode, reset_noise_scale)
        self.world, self.car = scenes.course_and_car(throttle=0.0, substeps=substeps)
        w = self.world
        self._rows = np.array([w.row(e) for e in w.body(self.car.chassis).particles], dtype=np.intp)
        p = w.positions[self._rows]
        self._rest = p - p.mean(axis=0)  # the chassis as built, about its centre
        self.action_space = box(1, 1.0)
        self.observation_space = box(7)
        self._ready(np.arange(w.positions.shape[0], dtype=np.intp))

    def _restarted(self) -> None:
        self.car.motor.throttle = 0.0

    def _centre(self) -> tuple[float, float]:
        c = self.world.positions[self._rows].mean(axis=0)
        return float(c[0]), float(c[1])

    def _observe(self) -> Array:
        w = self.world
        p, v = w.positions[self._rows], w.velocities[self._rows]
        c, u = p.mean(axis=0), v.mean(axis=0)
        r, dv = p - c, v - u
        q = self._rest
        angle = float(np.arctan2((q[:, 0] * r[:, 1] - q[:, 1] * r[:, 0]).sum(), (q * r).sum()))
        spin = float((r[:, 0] * dv[:, 1] - r[:, 1] * dv[:, 0]).sum() / (r * r).sum())
        obs = np.array([c[0], c[1], u[0], u[1], np.cos(angle), np.sin(angle), spin], dtype=np.float64)
        return clipped(obs)

    def _focus(self) -> tuple[float, float]:
        x, _ = self._centre()
        return x, 1.0
