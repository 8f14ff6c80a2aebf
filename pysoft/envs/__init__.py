"""Gymnasium environments of soft robots and the jelly car (the ``rl`` extra:
``pip install "pysoft[rl]"``), registered when this package is imported:

- ``pysoft/Walker-v0``: a voxel robot (:func:`pysoft.build.voxels`, Evolution Gym's grids;
  the ``robot`` argument, a 5 x 5 walker by default) walks right on flat ground
  (:class:`~pysoft.envs.walker.WalkerEnv`);
- ``pysoft/UpStepper-v0``: the same robot walks right and up a staircase of 0.1 m steps
  (:class:`~pysoft.envs.walker.UpStepperEnv`);
- ``pysoft/JellyCar-v0``: drive the jelly car of :func:`pysoft.scenes.course` with a
  continuous throttle (:class:`~pysoft.envs.jellycar.JellyCarEnv`).

``gymnasium.make(id, render_mode=...)`` makes one (``"rgb_array"``: Pillow images; ``"human"``:
a pygame-ce window, the ``pygame`` extra); ``gymnasium.make_vec(id, num_envs=N, threads=T)``
makes a vector environment stepping all its worlds in one :func:`pysoft.step_many` call
(:mod:`pysoft.envs.vector`; ``vectorization_mode="sync"`` or ``"async"`` give Gymnasium's own).
The same seed and actions give bit-identical episodes.
"""

from __future__ import annotations

try:
    import gymnasium
except ImportError as e:  # pragma: no cover - the extra is installed in the tests
    raise ImportError('pysoft.envs needs gymnasium: pip install "pysoft[rl]"') from e

from pysoft.build.voxels import WALKER
from pysoft.envs.jellycar import JellyCarEnv
from pysoft.envs.vector import JellyCarVectorEnv, SoftVectorEnv, UpStepperVectorEnv, WalkerVectorEnv
from pysoft.envs.walker import UpStepperEnv, WalkerEnv

__all__ = ["ENVS", "WALKER", "JellyCarEnv", "JellyCarVectorEnv", "SoftVectorEnv", "UpStepperEnv",
           "UpStepperVectorEnv", "WalkerEnv", "WalkerVectorEnv"]

# (id, environment, vector environment, TimeLimit's max_episode_steps)
ENVS: tuple[tuple[str, str, str, int], ...] = (
    ("pysoft/Walker-v0", "WalkerEnv", "WalkerVectorEnv", 1000),
    ("pysoft/UpStepper-v0", "UpStepperEnv", "UpStepperVectorEnv", 1000),
    ("pysoft/JellyCar-v0", "JellyCarEnv", "JellyCarVectorEnv", 1200),
)


def _register() -> None:
    for env_id, single, vector, steps in ENVS:
        if env_id not in gymnasium.registry:  # (a reload registers nothing twice)
            gymnasium.register(env_id, entry_point=f"pysoft.envs:{single}",
                               vector_entry_point=f"pysoft.envs:{vector}", max_episode_steps=steps)


_register()
