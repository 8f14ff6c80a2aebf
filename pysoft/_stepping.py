"""A World's frames: ``step`` and the systems it runs (a base of World).

``step`` runs a frame's stages (``pysoft._pipeline``: the built-in ones and the user's
systems between them) or, when no system of the user's runs and every term can describe its
calls, the whole frame in one call of the C core (``pysoft._frame``), whose kernels were bound
once to the Store's buffers: a step rebinds nothing, whatever changed since the last. The
work before and after a frame's passes (``_begin``, ``_end``) is shared with
``pysoft.step_many``, which makes the passes of many worlds in one call.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import esper

from pysoft import _replay, _validate
from pysoft._frame import Frame
from pysoft._pipeline import MIN_DT, InstabilityError, Pipeline, Settings, Stage

if TYPE_CHECKING:
    from pysoft._ecs import Ecs
    from pysoft._lifetime import Guard
    from pysoft.features import Features

Systems = tuple[Any, ...]  # a frame's processors, in run order


class StepProcessor(esper.Processor):
    """Runs ``world.step(dt)`` from a game's own ``esper.process(dt)``."""

    def __init__(self, world: Stepping) -> None:
        self.world = world

    def process(self, dt: float | None = None, *args: Any, **kwargs: Any) -> None:
        self.world.step(dt)


class Stepping:
    """Stepping a World (``step``, its systems and its profile)."""

    _settings: Settings
    _guard: Guard
    _ecs: Ecs
    _features: Features
    pipeline: Pipeline
    _frame: Frame | None
    _frame_start: _replay.FrameStart
    _systems: tuple[esper.Processor, ...]
    _stages: tuple[esper.Processor, ...]
    _stepping: bool
    _elapsed: tuple[tuple[Any, ...], Any]

    def add_system(self, processor: esper.Processor, priority: int = 0) -> None:
        """Run ``processor.process(h)`` inside every substep, ordered by priority.

        Built-in stages have the priorities of ``pysoft.Priority`` (higher runs
        first); e.g. ``priority=450`` runs between forces and integration.
        """
        if not callable(getattr(processor, "process", None)):
            raise ValueError("processor must have a process(h) method (an esper.Processor)")
        priority = _validate.integer("priority", priority, -(2**31), 2**31 - 1)
        if processor in self._systems:
            raise ValueError("processor is already a system of this world")
        processor.priority = priority
        # stable: ties keep insertion order
        self._systems = tuple(sorted((*self._systems, processor), key=lambda p: -p.priority))
        if self._frame is not None:  # (its next frame runs the stages: none continues in C)
            self._frame.resumable = False

    def remove_system(self, processor: esper.Processor) -> None:
        """Stop running a processor added with ``add_system``."""
        if isinstance(processor, Stage) or processor not in self._systems:
            raise ValueError("processor is not a user system of this world")
        self._systems = tuple(p for p in self._systems if p is not processor)
        if self._frame is not None:
            self._frame.resumable = False

    @property
    def systems(self) -> list[esper.Processor]:
        """The processors of one substep, in run order."""
        return list(self._systems)

    def processor(self) -> StepProcessor:
        """An esper.Processor that steps this world from a game's ``esper.process(dt)``."""
        return StepProcessor(self)

    def step(self, dt: float | None = None) -> None:
        """Advance one frame of ``dt`` seconds (default ``self.dt``), clamped to ``max_dt``; a frame
        shorter than ``MIN_DT`` (1 µs, or 0) does nothing. Systems added or removed by a system
        during the frame run from the next frame on; calling ``step`` from inside ``step`` raises
        RuntimeError, and from another thread while this world is in use ConcurrentUseError."""
        self._guard.claim("step")
        try:
            self._step(dt)
        finally:
            self._guard.release()

    def _step(self, dt: float | None) -> None:
        begun = self._begin(dt)
        if begun is None:
            return
        dt, h, frame, systems = begun
        try:
            if frame is not None and frame.prepare(h, self._settings._substeps, self._frame_start):
                frame.lib.ps_run_frame(frame.array, len(frame.ops), self._settings._substeps,
                                       len(frame.seconds), frame.seconds, self._settings._threads)
                frame.finish(self._settings._substeps)
                elapsed: Any = frame.seconds  # each stage's seconds
            else:
                elapsed = self._staged(h, systems)
            error = self._diagnose(h, systems)
        finally:
            self._stepping = False
        self._end(dt, error, systems, elapsed)

    def _begin(self, dt: float | None) -> tuple[float, float, Frame | None, Systems] | None:
        """What ``step`` does before a frame's passes: the frame length (None: no frame), the
        esper deletions swept, the frame's start saved where a replay would start; returns
        (dt, h, the one-call Frame if the frame may run in one call, the frame's systems)."""
        if self._stepping:
            raise RuntimeError("step() was called from inside step() (from a system?): a frame "
                               "cannot start before the running one ends")
        s = self._settings
        dt = s._dt if dt is None else _validate.nonnegative("dt", dt)
        if dt < MIN_DT:  # no frame: 0, or shorter than a microsecond
            return None
        self._sweep_ghosts()
        if self._frame is not None:  # (this frame's start is Python's: pysoft.many resumes none)
            self._frame.resumable = False
        dt = min(dt, s._max_dt)
        systems = self._systems
        frame = self._frame if systems == self._stages else None  # (no systems of the user's)
        if s._on_instability in ("raise", "warn"):  # where a replay would start
            self._frame_start.save(frame.kept(s._substeps) if frame is not None else ())
        self.pipeline.unstable, self._stepping = -1, True
        return dt, dt / s._substeps, frame, systems

    def _staged(self, h: float, systems: Systems) -> list[float]:
        """The frame's stages one by one (the user's systems among them see this world's esper
        context); each system's seconds."""
        elapsed = [0.0] * len(systems)
        self._frame_start.keep_only()  # (the fields left to their records: pysoft._replay)
        with contextlib.nullcontext() if systems == self._stages else self._ecs.entered():
            self.pipeline.run(systems, h, elapsed)
        return elapsed

    def _diagnose(self, h: float, systems: Systems) -> InstabilityError | None:
        """Where the instability the frame-end scan found began (the stages replayed: _replay)."""
        if self.pipeline.unstable < 0 or self._settings._on_instability not in ("raise", "warn"):
            return None
        return _replay.diagnose(self.pipeline, self._frame_start, systems, h,
                                self._features.particles.scan)

    def _end(self, dt: float, error: InstabilityError | None, systems: Systems, elapsed: Any) -> None:
        """What ``step`` does after a frame's passes (``_stepping`` already cleared)."""
        self.pipeline.time += dt  # the frame ran to its end, whatever the scan found
        _replay.deliver(error, self._settings._on_instability)  # raise or warn what the scan found
        self._features.after_frame()
        self._elapsed = (systems, elapsed)

    @property
    def profile(self) -> dict[str, float]:
        """Milliseconds each system took in the last step (over its substeps), by name."""
        return {getattr(s, "name", type(s).__name__): 1e3 * t for s, t in zip(*self._elapsed, strict=True)}

    def _sweep_ghosts(self) -> None:
        """Give entities deleted through esper itself the World's cascade."""
        ghosts = self._ecs.ghosts()
        if ghosts:
            self._features.remove(tuple(ghosts))
            self._ecs.intact()  # (the count of removals, the cascade's own among them, found intact)
