"""What every pysoft environment shares: a world built once, reset by restoring its first
snapshot, one frame a step, and rendering (Pillow for ``"rgb_array"``, a pygame-ce window for
``"human"``).

A step is three parts so that :class:`pysoft.envs.vector.SoftVectorEnv` can step many
environments' worlds in one :func:`pysoft.step_many` call: ``act(action)`` (check the action
and hand it to the world), the world's frame, and ``outcome()`` (observation, reward,
termination, info). ``step`` is the three in a row, so a vector of environments gives each
one exactly what it gives alone.
"""

from __future__ import annotations

from typing import Any, cast

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

class SoftEnv(gym.Env[Array, Array]):
    """The base of pysoft's environments (see the module docstring). A subclass builds its
    world in ``__init__`` (then calls ``_ready``) and writes ``_act``, ``_start``,
    ``_outcome`` and ``_focus``."""

    metadata = {"render_modes": ["human", "rgb_array"], "render_fps": 60}  # noqa: RUF012 (Env's)

    render_scale = RENDER_SCALE  # pixels per metre
    world: World
    _noise_rows: NDArray[np.intp]

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
        and the rows whose velocities the reset noise perturbs."""
        self._noise_rows = noise_rows
        self._initial = self.world.snapshot()

    # -- the gymnasium API ------------------------------------------------------------------

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Array, dict[str, Any]]:
        """Restore the world as built, add the reset noise (uniform in +-reset_noise_scale m/s
        on each particle's velocity, from ``self.np_random``, seeded by ``seed``), and return
        the first observation and info. ``options`` is accepted and unused."""
        super().reset(seed=seed)
        self.world.restore(self._initial)
        if self.reset_noise_scale > 0.0:
            s = self.reset_noise_scale
            noise = self.np_random.uniform(-s, s, size=(len(self._noise_rows), 2))
            self.world.velocities[self._noise_rows] += noise
        obs, info = self._start()
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
        self._act(a)

    def outcome(self) -> tuple[Array, float, bool, bool, dict[str, Any]]:
        """After the frame: (observation, reward, terminated, False, info). Truncation is
        the TimeLimit's (``max_episode_steps`` of the registration)."""
        obs, reward, terminated, info = self._outcome()
        return obs, reward, terminated, False, info

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

    # -- for subclasses ---------------------------------------------------------------------

    def _act(self, action: Array) -> None:
        raise NotImplementedError

    def _start(self) -> tuple[Array, dict[str, Any]]:
        """After a reset: remember what rewards are measured from; the first observation and info."""
        raise NotImplementedError

    def _outcome(self) -> tuple[Array, float, bool, dict[str, Any]]:
        """(observation, reward, terminated, info) after the frame just run."""
        raise NotImplementedError

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
