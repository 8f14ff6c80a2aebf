"""What every pysoft environment shares: a world built once, reset by restoring its first
snapshot, one frame a step, and rendering (Pillow for ``"rgb_array"``, a pygame-ce window for
``"human"``).

A step is three parts so that :class:`pysoft.envs.vector.SoftVectorEnv` can step many
environments' worlds in one :func:`pysoft.step_many` call: ``act(action)`` (check the action
and hand it to the world), the world's frame, and ``outcome()`` (observation, reward,
termination, info). The work around the frame is a :class:`Batch`'s, done for many
environments at once (the walkers': one C call for all their muscles, one for all their
observations); an environment alone is a batch of one, so a vector of environments gives
each one exactly what it gives alone, bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, cast

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from pysoft import _validate
from pysoft.draw import Camera, DrawFlags
from pysoft.world import World

Array = NDArray[np.float64]

RENDER_SIZE = (480, 320)  # pixels
RENDER_SCALE = 120.0  # pixels per metre
OBS_LIMIT = 100.0  # every observation is clipped to [-OBS_LIMIT, OBS_LIMIT] (m, m/s, rad/s)



def checked_action(name: str, action: Any, shape: tuple[int, ...] | None, what: str = "") -> Array:
    """``action`` as float64 of ``shape`` (ValueError naming ``name`` otherwise; ``what`` says
    what the shape holds)."""
    try:
        a = np.asarray(action, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name} must be real numbers: {e}") from None
    if a.shape != shape:
        raise ValueError(f"{name} must have shape {shape}{what}, got {a.shape}")
    return a

class Batch:
    """The work around the frame for environments of one class, all at once: hand them their
    actions (``act``), then read their observations, rewards and terminations into arrays of
    one row per environment (``start`` after a reset, ``outcome`` after a frame). A
    :class:`SoftEnv` is a batch of one of its own, a vector environment one batch of all its
    environments: the same arithmetic row by row, so the same bits. A subclass writes ``act``
    and ``observe``. Its arrays are its own (no two batches share one)."""

    bonus = 1.0  # added to the reward on the step that finishes

    def __init__(self, envs: Sequence[SoftEnv]) -> None:
        self.envs = list(envs)
        nb = len(self.envs)
        size = self.envs[0].observation_space.shape[0]  # type: ignore[index]
        if any(env.observation_space.shape != (size,) for env in self.envs):
            raise ValueError("envs must have observations of one shape to be stepped as a batch")
        self.obs = np.zeros((nb, size))  #: the observations, a row per environment
        self.x = np.zeros(nb)  #: the position along the course (m): the reward is its progress
        self.time = np.zeros(nb)  #: each world's time (s)
        self.prev = np.zeros(nb)  # x at the previous step's end
        self.rewards = np.zeros(nb)
        self.finished = np.zeros(nb, dtype=np.bool_)  # reached the goal (the bonus)
        self.terminated = np.zeros(nb, dtype=np.bool_)

    def act(self, actions: Array) -> None:
        """Hand ``actions`` (one finite row per environment, checked by the caller; values
        outside [-1, 1] clipped) to the worlds for their next frame."""
        raise NotImplementedError

    def observe(self) -> None:
        """Fill ``obs``, ``x``, ``time``, ``finished`` and ``terminated`` from the worlds as
        they are."""
        raise NotImplementedError

    def start(self) -> None:
        """After a reset of every environment: observe, and measure progress from here."""
        self.observe()
        np.copyto(self.prev, self.x)

    def observe_frame(self) -> None:
        """``observe`` after the frame that ``act`` handed actions to (a subclass may have read
        it as the frame ended)."""
        self.observe()

    def outcome(self) -> None:
        """After a frame of every environment: observe; ``rewards`` the progress along x
        (+ ``bonus`` where finished)."""
        self.observe_frame()
        np.subtract(self.x, self.prev, out=self.rewards)
        np.add(self.rewards, self.bonus, out=self.rewards, where=self.finished)
        np.copyto(self.prev, self.x)


class SoftEnv(gym.Env[Array, Array]):
    """The base of pysoft's environments (see the module docstring). A subclass builds its
    world in ``__init__`` (then calls ``_ready``), names its ``batch_class`` and writes
    ``_focus`` (and ``_restarted``, if a reset has more to do than restore the world)."""

    metadata = {"render_modes": ["human", "rgb_array"], "render_fps": 60}  # noqa: RUF012 (Env's)

    render_scale = RENDER_SCALE  # pixels per metre
    batch_class: ClassVar[type[Batch]]
    world: World
    _noise_rows: NDArray[np.intp]
    _batch: Batch

    def __init__(self, render_mode: str | None = None, reset_noise_scale: float = 0.01) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, "
                             f"got {render_mode!r}")
        self.render_mode = render_mode
        self.reset_noise_scale = _validate.real("reset_noise_scale", reset_noise_scale)
        if not 0.0 <= self.reset_noise_scale <= 1.0:
            raise ValueError(f"reset_noise_scale must be in [0, 1] m/s, got {reset_noise_scale!r}")
        self._window: Any = None
        self._clock: Any = None

    def _ready(self, noise_rows: NDArray[np.intp]) -> None:
        """Called by a subclass once its world is built: the snapshot every reset restores,
        the rows whose velocities the reset noise perturbs, and its batch of one."""
        self._noise_rows = noise_rows
        self._initial = self.world.snapshot()
        self._batch = self.batch_class([self])

    # -- the gymnasium API ------------------------------------------------------------------

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Array, dict[str, Any]]:
        """Restore the world as built, add the reset noise (uniform in +-reset_noise_scale m/s
        on each particle's velocity, from ``self.np_random``, seeded by ``seed``), and return
        the first observation and info. ``options`` is accepted and unused."""
        self._restart(seed)
        b = self._batch
        b.start()
        obs, info = b.obs[0].copy(), {"x": float(b.x[0]), "time": self.world.time}
        if self.render_mode == "human":
            self.render()
        return obs, info

    def step(self, action: Any) -> tuple[Array, float, bool, bool, dict[str, Any]]:
        """Apply ``action``, advance the world one frame (``world.dt``), and return
        (observation, reward, terminated, truncated, info): see the subclass."""
        self.act(action)
        self.world.step()
        result = self.outcome()
        if self.render_mode == "human":
            self.render()
        return result

    def act(self, action: Any) -> None:
        """Check ``action`` (ValueError naming it for a wrong shape or NaN; values outside
        [-1, 1] are clipped) and hand it to the world for the next frame."""
        a = checked_action("action", action, self.action_space.shape)
        if not np.isfinite(a).all():
            raise ValueError(f"action must be finite, got {a!r}")
        self._batch.act(a.reshape(1, -1))

    def outcome(self) -> tuple[Array, float, bool, bool, dict[str, Any]]:
        """After the frame: (observation, reward, terminated, False, info). Truncation is
        the TimeLimit's (``max_episode_steps`` of the registration)."""
        b = self._batch
        b.outcome()
        x = float(b.x[0])
        return b.obs[0].copy(), float(b.rewards[0]), bool(b.terminated[0]), False, \
            {"x": x, "time": self.world.time}

    def render(self) -> NDArray[np.uint8] | None:
        """``"rgb_array"``: an (H, W, 3) uint8 image (Pillow); ``"human"``: draw the frame in a
        pygame-ce window, at most ``metadata["render_fps"]`` frames a second; None else."""
        if self.render_mode is None:
            return None
        camera = Camera(*RENDER_SIZE, center=self._focus(), scale=self.render_scale)
        if self.render_mode == "rgb_array":
            from pysoft.draw import image

            return np.asarray(image.frame(self.world, camera, flags=DrawFlags.DEFAULT), dtype=np.uint8)
        self._show(camera)
        return None

    def _show(self, camera: Camera) -> None:
        from pysoft.draw import debug_draw
        from pysoft.draw.pygame import BACKGROUND, PygameDrawer, load

        pg = load()
        if self._window is None or pg.display.get_surface() is not self._window:
            # (pygame has one window a process: another env may have closed or taken it)
            pg.display.init()
            pg.font.init()
            pg.display.set_caption(type(self).__name__)
            self._window = pg.display.set_mode(RENDER_SIZE)
            self._clock = pg.time.Clock()
        pg.event.pump()
        self._window.fill(BACKGROUND)
        debug_draw(self.world, PygameDrawer(self._window, camera), DrawFlags.DEFAULT)
        pg.display.flip()
        self._clock.tick(self.metadata["render_fps"])

    def close(self) -> None:
        """Close the window, if one was opened (closing twice is fine)."""
        if self._window is not None:
            from pysoft.draw.pygame import load

            load().display.quit()
            self._window = self._clock = None

    # -- for subclasses and vector environments ---------------------------------------------

    def _restart(self, seed: int | None = None) -> None:
        """A reset but its observation: seed ``np_random`` (Env.reset's), restore the world
        as built, add the reset noise, and ``_restarted``."""
        super().reset(seed=seed)
        self.world.restore(self._initial)
        if self.reset_noise_scale > 0.0:
            s = self.reset_noise_scale
            noise = self.np_random.uniform(-s, s, size=(len(self._noise_rows), 2))
            self.world.velocities[self._noise_rows] += noise
        self._restarted()

    def _restarted(self) -> None:
        """What a reset does after restoring the world (nothing here)."""

    def _focus(self) -> tuple[float, float]:
        """The world point the render centres on."""
        raise NotImplementedError


def clipped(values: Array) -> Array:
    """``values`` clipped in place to [-OBS_LIMIT, OBS_LIMIT] (NaN stays NaN)."""
    np.minimum(values, OBS_LIMIT, out=values)
    np.maximum(values, -OBS_LIMIT, out=values)
    return values


def box(size: int, limit: float = OBS_LIMIT) -> gym.spaces.Space[Array]:
    """A float64 Box of ``size`` values in [-limit, limit]."""
    return cast("gym.spaces.Space[Array]", gym.spaces.Box(-limit, limit, shape=(size,), dtype=np.float64))
