"""Vector environments: ``gymnasium.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point",
threads=T)`` (the default mode for pysoft's ids) gives a :class:`SoftVectorEnv` that steps all
its worlds in one :func:`pysoft.step_many` call per step, on ``threads`` threads.

``threads`` is this mode's argument (``"sync"`` and ``"async"`` make Gymnasium's own vector
environments of single environments, which take no ``threads``).

Auto-reset is Gymnasium's default, next-step (``AutoresetMode.NEXT_STEP``, in
``metadata["autoreset_mode"]``): the step after a sub-environment terminates or truncates
resets it (its action is ignored; reward 0, terminated and truncated False) and returns its
first observation. Sub-environment i is seeded ``seed + i`` by ``reset(seed=seed)`` (or by
a list of seeds), and auto-resets continue its own random generator, as
``gymnasium.vector.SyncVectorEnv`` does: the same seeds and actions give the sub-environments
what the single environments give, bit for bit.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from numpy.typing import NDArray

from pysoft import _validate
from pysoft.envs._base import Array, SoftEnv, checked_action
from pysoft.envs.jellycar import JellyCarEnv
from pysoft.envs.walker import UpStepperEnv, WalkerEnv
from pysoft.many import step_many

__all__ = ["JellyCarVectorEnv", "SoftVectorEnv", "UpStepperVectorEnv", "WalkerVectorEnv"]


class SoftVectorEnv(VectorEnv[Array, Array, Array]):
    """``num_envs`` environments of ``env_class`` (each made with ``env_kwargs``), stepped
    together: each step hands every action to its environment, runs one frame of every world
    in one :func:`pysoft.step_many` call on ``threads`` threads (1 to 16), then reads every
    outcome. ``max_episode_steps`` truncates as Gymnasium's TimeLimit does (None: never).
    ``render_mode`` None or ``"rgb_array"`` (``render()`` gives one image per environment).
    A world that goes unstable raises ``pysoft.StepManyError`` naming it (the others have
    run their frame). A subclass names ``env_class``."""

    env_class: ClassVar[type[SoftEnv]]
    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP,  # noqa: RUF012 (VectorEnv's)
                "render_modes": ["rgb_array"], "render_fps": 60}

    def __init__(self, num_envs: int = 1, *, threads: int = 1, max_episode_steps: int | None = None,
                 render_mode: str | None = None, **env_kwargs: Any) -> None:
        self.num_envs = _validate.integer("num_envs", num_envs, 1)
        self.threads = _validate.integer("threads", threads, 1, 16)
        self.max_episode_steps = (None if max_episode_steps is None
                                  else _validate.integer("max_episode_steps", max_episode_steps, 1))
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array' for a vector env, got {render_mode!r}")
        self.render_mode = render_mode
        self.envs = [self.env_class(render_mode=render_mode, **env_kwargs) for _ in range(self.num_envs)]
        self._worlds = [env.world for env in self.envs]
        first = self.envs[0]
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(first.observation_space, self.num_envs)
        self.action_space = batch_space(first.action_space, self.num_envs)
        n = self.num_envs
        self._batch = self.env_class.batch_class(self.envs)  # (act, observe, reward: all at once)
        self._terminations = np.zeros(n, dtype=np.bool_)
        self._truncations = np.zeros(n, dtype=np.bool_)
        self._autoreset = np.zeros(n, dtype=np.bool_)
        self._elapsed = np.zeros(n, dtype=np.int64)

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[Array, dict[str, Any]]:
        """Reset every sub-environment: ``seed`` None (fresh entropy), an int (environment i
        gets ``seed + i``) or a list of one seed (or None) per environment."""
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"seed must be None, an int or {self.num_envs} seeds, got {len(seeds)}")
        if isinstance(seed, (int, np.integer)):
            self._np_random, self._np_random_seed = gym.utils.seeding.np_random(int(seed))
        for i, env in enumerate(self.envs):
            env._restart(seeds[i])  # (Env.reset's seeding, the world as built, the noise)
        b = self._batch
        b.start()
        self._terminations[:] = self._truncations[:] = self._autoreset[:] = False
        self._elapsed[:] = 0
        return b.obs.copy(), self._infos()

    # (VectorEnv's step says its flags are ArrayType; they are bool arrays here, as Gymnasium's own)
    def step(  # type: ignore[override]
            self, actions: Any) -> tuple[Array, Array, NDArray[np.bool_], NDArray[np.bool_], dict[str, Any]]:
        """One frame of every sub-environment not being auto-reset (see the module docstring):
        every action handed over at once (``Batch.act``), one :func:`pysoft.step_many` call,
        every outcome read at once (``Batch.outcome``)."""
        a = checked_action("actions", actions, self.action_space.shape, " (one action per environment)")
        if not np.isfinite(a.sum()):
            bad = int(np.flatnonzero(~np.isfinite(a).all(axis=1))[0])
            raise ValueError(f"actions must be finite: row {bad} is not")
        b, resetting = self._batch, self._autoreset
        b.act(a)  # (a sub-environment being reset gets its action, then the reset restores its world)
        if resetting.any():
            reset = np.flatnonzero(resetting).tolist()
            for i in reset:
                self.envs[i]._restart()
            step_many([w for w, r in zip(self._worlds, resetting.tolist(), strict=True) if not r], 1,
                      threads=self.threads)
        else:
            reset = []
            step_many(self._worlds, 1, threads=self.threads)
        b.outcome()
        self._elapsed += 1
        if reset:
            b.rewards[reset] = 0.0
            b.terminated[reset] = False
            self._elapsed[reset] = 0
        np.copyto(self._terminations, b.terminated)
        if self.max_episode_steps is not None:
            np.greater_equal(self._elapsed, self.max_episode_steps, out=self._truncations)
        np.logical_or(self._terminations, self._truncations, out=self._autoreset)
        return (b.obs.copy(), b.rewards.copy(), self._terminations.copy(), self._truncations.copy(),
                self._infos())

    def _infos(self) -> dict[str, Any]:
        """The sub-environments' infos (each ``{"x": ..., "time": ...}``) batched as Gymnasium's
        ``_add_info`` batches them: a key's values in an array, ``_key`` which environments
        gave one (all)."""
        every = np.ones(self.num_envs, dtype=np.bool_)
        b = self._batch
        return {"x": b.x.copy(), "_x": every, "time": b.time.copy(), "_time": every.copy()}

    def render(self) -> tuple[NDArray[np.uint8], ...] | None:
        """One (H, W, 3) image per sub-environment with ``render_mode="rgb_array"``; None else."""
        if self.render_mode is None:
            return None
        return tuple(env.render() for env in self.envs)  # type: ignore[misc]

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.envs:
            env.close()


class WalkerVectorEnv(SoftVectorEnv):
    """Vector ``pysoft/Walker-v0`` (see :class:`SoftVectorEnv`)."""

    env_class = WalkerEnv


class UpStepperVectorEnv(SoftVectorEnv):
    """Vector ``pysoft/UpStepper-v0`` (see :class:`SoftVectorEnv`)."""

    env_class = UpStepperEnv


class JellyCarVectorEnv(SoftVectorEnv):
    """Vector ``pysoft/JellyCar-v0`` (see :class:`SoftVectorEnv`; the car's motor is a Python
    system, so ``step_many`` steps these worlds one after another on the calling thread)."""

    env_class = JellyCarEnv
