"""Many worlds stepped in one call: :func:`step_many`.

A game server with a world per room, a tuning script or a trainer with hundreds of small
worlds steps them all every frame. ``step_many(worlds, frames, threads=...)`` gives each world
exactly what ``frames`` calls of its own ``step()`` would (bit for bit: the same passes in the
same order, and the same Python work around them), but runs the passes of the worlds that
can run a frame in one call of the C core (``pysoft._frame``) in one foreign call for 16 of
them at a time, ``ps_run_worlds``, with the GIL released: each world on one thread, the worlds handed
to up to ``threads`` threads of the core's pool, whichever thread runs a world giving the
same bits. Within that call a world runs all its frames one after another when nothing
needs Python between them (no spring that may tear, no pusher to aim: ``Feature.repeats``),
with the copies and fills its next frame's start makes (``Frame.between``, the
FrameStart's copies) done in C; it stops after a frame whose scan found an unstable
particle, and Python reports it as ``step()`` would. A world whose last frame ran this way
continues from it at the next call (``_resumed``): when neither the plan of its calls
(h, substeps, the rows, the settings), its systems nor esper's entities changed since, the
Python start of its first frame is also the copies and fills C makes between frames, and C
checks that the values that start reads (the colliders' velocities and dampings, the bodies'
flags and rolling resistances) are still those it read; if one changed, the world starts
from Python again. Such worlds with nothing of Python's to do around their frames (the lane,
``_lane``) are checked in C as well, all in one call: the Store's rows and counted edits, the
settings and the count of removals made through esper in the world's own context, as Python
armed them (``Frame.arm``); a call with the worlds of one of the calling
thread's recent calls (ROSTERS lists), in the same order, finds them through what that call
found (``_Roster``). The other worlds (the NumPy backend, or systems of the user's, which run Python
inside the frame) are stepped on the calling thread in list order.
"""

from __future__ import annotations

import functools
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from pysoft import _native, _validate
from pysoft._constants import MAX_THREADS
from pysoft._ecs import intact
from pysoft._pipeline import MIN_DT
from pysoft.world import World

__all__ = ["StepManyError", "step_many"]

R = TypeVar("R")


class StepManyError(RuntimeError):
    """Some worlds of a ``step_many`` call raised; every other world ran all its frames.

    ``errors`` maps each failed world's index in the list to its exception (an
    ``InstabilityError`` names the particle, as ``step()``'s does); a world that raised
    stopped after the frame that raised, as a loop of its own ``step()`` would.
    """

    def __init__(self, errors: dict[int, BaseException]) -> None:
        first = min(errors)
        more = f" (and {len(errors) - 1} more: worlds {sorted(errors)[1:]})" if len(errors) > 1 else ""
        super().__init__(f"worlds[{first}] raised {type(errors[first]).__name__}: {errors[first]}{more}")
        self.errors = errors


def _claimed(worlds: Any) -> tuple[list[World], list[int]]:
    """The worlds as a list, each a distinct open World held for this thread (ValueError naming
    the first that is not one, ConcurrentUseError for one another thread holds: then none is
    held), and the indices of those whose frames the C core runs (the others are the NumPy
    backend's or have systems of the user's). The caller releases them."""
    if isinstance(worlds, (str, bytes)) or not isinstance(worlds, Sequence):
        raise ValueError(f"worlds must be a list of pysoft.World, got {type(worlds).__name__}")
    seen: dict[int, int] = {}
    held: list[World] = []
    batched: list[int] = []
    try:
        for i, w in enumerate(worlds):
            if not isinstance(w, World):
                raise ValueError(f"worlds[{i}] is not a pysoft.World: {w!r}")
            if id(w) in seen:
                raise ValueError(f"worlds[{i}] is worlds[{seen[id(w)]}]: a world may be listed once")
            guard = w._guard
            if guard.closed:
                raise ValueError(f"worlds[{i}] was closed")
            seen[id(w)] = i
            guard.claim("step_many")
            held.append(w)
            if w._frame is not None and w._systems == w._stages:
                batched.append(i)
    except BaseException:
        for w in held:
            w._guard.release()
        raise
    return held, batched


class _Roster:
    """A list of worlds as step_many found them (``_claimed``), kept by the calling thread for
    its later calls with the same worlds in the same order: such a call holds them and hands
    the C core the lane (``_lane``) without looking each world up again. Which worlds Python steps
    and which the C core runs is what the first call found; a world changed since is stepped
    right either way (one that gained a system has its lane cleared, and Python begins its
    frames as it finds it). It refers to the worlds weakly: a world let go of is freed at once
    (and the roster knows it is gone before its memory, and so its id, can serve another
    object), and a roster naming one that is gone is made again."""

    __slots__ = ("array", "batched", "contexts", "gone", "guards", "ids", "keep", "python", "refs", "status")

    def __init__(self, held: Sequence[World], batched: list[int]) -> None:
        self.ids = [id(w) for w in held]
        self.gone = False
        self.refs = [weakref.ref(w, self._lost) for w in held]  # (held for their callbacks)
        self.guards = [w._guard for w in held]
        ours = set(batched)
        self.python = [i for i in range(len(held)) if i not in ours]  # (stepped by Python)
        self.batched = batched
        # (C checks the removals made in a world's own esper context; a context shared with
        # the game is looked at in Python: _unarm_ghosts)
        self.contexts = [(k, held[i]._ecs.context, held[i]._ecs.counts)
                         for k, i in enumerate(batched) if held[i]._ecs.shared]
        self.keep = [held[i]._frame.world for i in batched]  # type: ignore[union-attr]
        if batched:
            ffi, _ = _native.require()
            self.array = ffi.new("ps_world *[]", self.keep)
            self.status = ffi.new("int32_t[]", len(batched))

    def _lost(self, ref: Any) -> None:
        """A world of the roster is being freed."""
        self.gone = True

    def worlds(self, worlds: Sequence[World]) -> Sequence[World] | None:
        """``worlds`` if they are this roster's worlds, in its order; else None (by their ids
        alone: the worlds' objects are not read)."""
        if self.gone or len(worlds) != len(self.ids) or list(map(id, worlds)) != self.ids:
            return None
        return worlds

    def claim(self) -> None:
        """Hold every world as ``_claimed`` does (none if one cannot be: ValueError naming a
        world closed since, ConcurrentUseError for one another thread holds)."""
        guards, k = self.guards, 0
        try:
            for k, guard in enumerate(guards):
                if guard.closed:
                    raise ValueError(f"worlds[{k}] was closed")
                if not guard.lock.acquire(False):  # (Guard.claim's, without its call)
                    guard.claim("step_many")  # (ConcurrentUseError, or held after all)
        except BaseException:
            for guard in guards[:k]:
                guard.release()
            raise


ROSTERS = 4  # the lists of worlds a thread's rosters remember (the most recent)


class _Rosters(threading.local):
    """Each calling thread's rosters of its last ROSTERS lists of worlds, by (length, the ids
    of the first and the last world)."""

    def __init__(self) -> None:
        self.rosters: dict[tuple[int, int, int], _Roster] = {}

    def find(self, worlds: Any) -> tuple[_Roster | None, Sequence[World] | None]:
        """The roster of ``worlds`` (a list or tuple) and the worlds, or (None, None)."""
        if type(worlds) not in (list, tuple) or not worlds:
            return None, None
        roster = self.rosters.get((len(worlds), id(worlds[0]), id(worlds[-1])))
        held = roster.worlds(worlds) if roster is not None else None
        return (roster, held) if held is not None else (None, None)

    def keep(self, roster: _Roster, held: Sequence[World]) -> None:
        """Remember ``roster`` for the list ``held`` (forgetting the oldest beyond ROSTERS)."""
        rosters = self.rosters
        if held:
            rosters[(len(held), id(held[0]), id(held[-1]))] = roster
            while len(rosters) > ROSTERS:
                del rosters[next(iter(rosters))]


_ROSTERS = _Rosters()  # (per thread: two threads never share a roster)


def step_many(worlds: Sequence[World], frames: int = 1, *, threads: int = 1) -> None:
    """Step every world of ``worlds`` by ``frames`` frames of its own ``dt``, each exactly as
    ``frames`` calls of its ``step()`` would (bit for bit). The C backend's worlds run in
    calls of the C core on up to ``threads`` threads (1 to MAX_THREADS) with the GIL
    released, 16 worlds a call, each world's frames one after another in C where nothing
    needs Python between them (and, from one call to the next, from where its last frame
    ended while nothing its start reads changed); worlds of the NumPy backend or with systems
    of the user's are stepped by their ``step()`` on the calling thread, in list order. Every
    world is checked, and held against use from other threads, before any is stepped (and let
    go as soon as its own frames are done):
    ValueError for a non-world, a world listed twice or a closed world,
    ConcurrentUseError for a world another thread is using. A world whose frame raises (an
    InstabilityError) stops there; the others complete, and then StepManyError says which
    raised what."""
    frames = _validate.integer("frames", frames, 0, 2**31 - 1)
    threads = _validate.integer("threads", threads, 1, MAX_THREADS)
    roster, held = _ROSTERS.find(worlds)
    batched: list[int] = []
    if roster is not None and held is not None:
        roster.claim()
    else:
        held, batched = _claimed(worlds)
    released = _Released(roster.guards if roster is not None else [w._guard for w in held])
    try:
        if roster is None:  # (a list none of the recent calls had: what _claimed found, kept)
            roster = _Roster(held, batched)
            _ROSTERS.keep(roster, held)
        errors = _run(held, roster, frames, threads, released)
    finally:
        released.rest()
    if errors:
        raise StepManyError(errors) from errors[min(errors)]


def _attempt(call: Callable[[], R]) -> tuple[R | None, Exception | None]:
    """``call()``'s result, or the exception it raised."""
    try:
        return call(), None
    except Exception as exc:
        return None, exc


class _Released:
    """Which worlds of a step_many call are let go (each as soon as its frames are done), by
    their guards."""

    def __init__(self, guards: list[Any]) -> None:
        self.guards = guards
        self.done = bytearray(len(guards))

    def __call__(self, i: int) -> None:
        """Let go of worlds[i]."""
        if not self.done[i]:
            self.done[i] = 1
            self.guards[i].release()

    def many(self, indices: list[int]) -> None:
        """Let go of the worlds ``indices``."""
        done, guards = self.done, self.guards
        for i in indices:
            if not done[i]:
                done[i] = 1
                guards[i].lock.release()  # (Guard.release's, without its call)

    def rest(self) -> None:
        """Let go of every world not let go yet."""
        if self.done.find(0) < 0:  # (all of them were: the common case, looked for in C)
            return
        for i, done in enumerate(self.done):
            if not done:
                self(i)


def _steps(w: World, frames: int) -> None:
    for _ in range(frames):
        w._step(None)


# Worlds handed to ps_run_worlds at a time: a chunk's parts are still in the CPU's caches when
# its frames end in Python (the whole list's, a few hundred KiB a world, would not be)
CHUNK = 16


def _run(worlds: Sequence[World], roster: _Roster, frames: int, threads: int,
         release: _Released) -> dict[int, BaseException]:
    """Step the worlds (those of ``roster.batched``, indices, in calls of the C core: first all
    of them in the lane, ``_lane``), letting go of each when its frames are done; the
    exceptions of those that raised, by index."""
    errors: dict[int, BaseException] = {}
    if not frames:
        return errors
    for i in roster.python:  # the worlds Python steps: one after another, in list order
        _, error = _attempt(functools.partial(_steps, worlds[i], frames))
        if error is not None:
            errors[i] = error
        release(i)
    left = _lane(worlds, roster, frames, threads, errors, release) if roster.batched else {}
    batched = list(left)
    if frames == 1 and threads > 1 and len(batched) > CHUNK:
        batched = _run_overlapped(worlds, batched, threads, errors, release)
    for k in range(0, len(batched), CHUNK):
        _run_chunk(worlds, {i: left[i] for i in batched[k:k + CHUNK]}, threads, errors, release)
    return errors


def _lane(worlds: Sequence[World], roster: _Roster, frames: int, threads: int,
          errors: dict[int, BaseException], release: _Released) -> dict[int, int]:
    """The worlds of ``roster.batched`` whose last frame ran in C, with nothing of Python's to
    do around their frames (``Frame.arm``), continue from it in one call of the C core
    (``ps_lane_worlds``): C checks what ``_resumed`` checks in Python (their lane, set by Python
    after a frame and cleared by any Python start of one; the Store's rows and edits and the
    settings and the removals made in its own esper context unchanged since it was set) and
    advances their time as ``step()`` would; a context shared with the game is looked at in
    Python (a world with an entity deleted behind pysoft's back leaves the lane).
    Each world that ran its frames is let go; one that tried ends in Python (``_continued``: a
    watched value had changed, or a scan found an unstable particle). Returns the others
    (index: frames to go), for Python to start."""
    ffi, lib = _native.require()
    batched = roster.batched
    if roster.contexts:
        _unarm_ghosts(worlds, batched, roster.contexts)
    runner = _runner() if threads > 1 and len(batched) > CHUNK else None
    if runner is None:
        lib.ps_lane_worlds(roster.array, len(batched), frames, threads, roster.status)
    else:  # (the runner's thread is awake: a pool's may have slept since the last call)
        try:
            lib.ps_runner_post(runner, roster.array, len(batched), threads - 1, frames, roster.status)
        finally:
            lib.ps_runner_wait(runner)
    status = np.frombuffer(ffi.buffer(roster.status), dtype=np.int32)
    if (status == 1).all():  # every world ran its frames in C
        release.many(batched)
        return {}
    release.many([batched[k] for k in np.flatnonzero(status == 1).tolist()])
    left = {batched[k]: frames for k in np.flatnonzero(status != 1).tolist()}
    tried = _Batch()
    for k in np.flatnonzero(status == 2).tolist():
        w = worlds[batched[k]]
        _continuing(w)
        tried.add(batched[k], w, w._frame.world, None)  # type: ignore[union-attr]
    _ended(tried, left, errors, release)
    _drop_done(left, release)
    return left


def _drop_done(left: dict[int, int], release: _Released) -> None:
    """Let go of the worlds of ``left`` (index: frames to go) with none to go."""
    for i in [i for i, n in left.items() if n <= 0]:
        del left[i]
        release(i)


def _unarm_ghosts(worlds: Sequence[World], batched: list[int], contexts: list[tuple[int, str, Any]]) -> None:
    """Clear the lane of each world of ``batched`` in a context shared with the game (``contexts``:
    (k, its context, its counts) for ``batched[k]``) that lost an entity behind pysoft's back
    (Python sweeps them at its frame's start)."""
    for k, context, counts in contexts:
        if not intact(context, counts):
            worlds[batched[k]]._frame.unarm()  # type: ignore[union-attr]


def _run_chunk(worlds: Sequence[World], left: dict[int, int], threads: int,
               errors: dict[int, BaseException], release: _Released) -> None:
    """Step the worlds of ``left`` (index: frames to go), their passes in ps_run_worlds calls."""
    while left:
        batch = _started(worlds, left, errors, release)
        if batch.runs:
            ffi, lib = _native.require()
            lib.ps_run_worlds(ffi.new("ps_world *[]", batch.runs), len(batch.runs), threads)
        _ended(batch, left, errors, release)
        _drop_done(left, release)


class _Runners(threading.local):
    """Each calling thread's ps_runner (made on its first step_many with threads, freed when
    the thread ends), with the process it was made in: a child forked since has no runner
    thread, and makes its own."""
    runner: Any = None
    pid = -1


_RUNNERS = _Runners()  # (per thread: two threads never share a runner)


def _runner() -> Any:
    """This thread's ps_runner (None where the core has no threads)."""
    mine = _RUNNERS
    if mine.runner is None or mine.pid != os.getpid():
        ffi, lib = _native.require()
        if mine.runner is not None:  # made before a fork: its thread is the parent's
            ffi.gc(mine.runner, None)
            mine.runner = None
        made = lib.ps_runner_new()
        if made == ffi.NULL:
            return None
        mine.runner, mine.pid = ffi.gc(made, lib.ps_runner_free), os.getpid()
    return mine.runner


def _run_overlapped(worlds: Sequence[World], batched: list[int], threads: int,
                    errors: dict[int, BaseException], release: _Released) -> list[int]:
    """One frame of each world of ``batched`` (indices), CHUNK worlds at a time, their passes
    on a thread of the C core's own (this thread's ps_runner, with ``threads`` - 1 threads)
    while this thread begins the next chunk's frames and ends the last one's in Python, then
    runs what the runner has not taken of that chunk (``ps_runner_wait``); returns the worlds
    whose frame did not run (a world continued from its last frame whose watched values had
    changed: the caller starts it from Python)."""
    runner = _runner()
    if runner is None:  # (no threads here)
        return batched
    ffi, lib = _native.require()
    again: list[int] = []
    running: tuple[_Batch, dict[int, int], Any] | None = None

    def end_running() -> None:
        if running is not None:
            _ended(running[0], running[1], errors, release)
            for i, n in running[1].items():
                if n > 0:
                    again.append(i)
                else:
                    release(i)

    try:
        for k in range(0, len(batched), CHUNK):
            left = dict.fromkeys(batched[k:k + CHUNK], 1)
            batch = _started(worlds, left, errors, release)
            array = ffi.new("ps_world *[]", batch.runs) if batch.runs else None
            lib.ps_runner_wait(runner)
            if batch.runs:
                lib.ps_runner_post(runner, array, len(batch.runs), threads - 1, 0, ffi.NULL)
            end_running()
            running = (batch, left, array)
    finally:
        lib.ps_runner_wait(runner)  # (the arrays of its run are alive until it ends)
    end_running()
    return again


class _Batch:
    """The worlds of a chunk begun in Python for one ``ps_run_worlds`` call: their indices,
    their ps_worlds and, for each, its _Pending (None: a world continued from its last frame,
    ``_resumed``)."""

    def __init__(self) -> None:
        self.order: list[int] = []
        self.worlds: list[World] = []
        self.runs: list[Any] = []
        self.pending: list[_Pending | None] = []

    def add(self, i: int, w: World, runs: Any, pending: _Pending | None) -> None:
        self.order.append(i)
        self.worlds.append(w)
        self.runs.append(runs)
        self.pending.append(pending)


def _started(worlds: Sequence[World], left: dict[int, int], errors: dict[int, BaseException],
             release: _Released) -> _Batch:
    """Begin the frames of the worlds ``left`` (index: frames to go) in Python: those to run
    in C; a world whose start raised leaves ``left`` for ``errors``, and one that ran its
    frame stage by stage has a frame less to go."""
    batch = _Batch()
    for i, frames in left.items():
        w = worlds[i]
        runs = _resumed(w, frames)
        if runs is not None:
            batch.add(i, w, runs, None)
            continue
        try:
            pending = _Pending.start(w, frames)
        except Exception as exc:
            errors[i] = exc
            left[i] = -1  # (out of left, and let go, once the loop is over)
            continue
        if pending.runs is None:  # it ran its frame stage by stage (a term asked for that)
            left[i] -= 1
        else:
            batch.add(i, w, pending.runs, pending)
    for i in [i for i, n in left.items() if n < 0]:
        del left[i]
        release(i)
    return batch


def _ended(batch: _Batch, left: dict[int, int], errors: dict[int, BaseException],
           release: _Released) -> None:
    """After their C run: end the frames of ``batch`` in Python (``_Pending.end``, or
    ``_continued`` for the worlds that continued their last frame)."""
    for i, w, runs, pending in zip(batch.order, batch.worlds, batch.runs, batch.pending, strict=True):
        try:
            ran = _continued(w, runs) if pending is None else pending.end()
        except Exception as exc:  # noqa: PERF203 (a try costs next to nothing until it catches)
            errors[i] = exc
            del left[i]
            release(i)
        else:
            left[i] -= ran


class _Pending:
    """A world's frames, begun in Python, waiting for ``ps_run_worlds``."""

    def __init__(self, world: World, dt: float, h: float, systems: tuple[Any, ...]) -> None:
        self.world, self.dt, self.h, self.systems = world, dt, h, systems
        self.runs: Any = None  # the world's ps_world (None: the frame ran stage by stage)

    @classmethod
    def start(cls, w: World, frames: int) -> _Pending:
        """Begin ``w``'s next frame as its ``step()`` would, and describe up to ``frames`` of
        them (one unless nothing needs Python between them) for ps_run_worlds."""
        begun = w._begin(None)
        if begun is None:  # (no frame: a world's own dt is at least MIN_DT)
            return cls(w, 0.0, 0.0, ())
        dt, h, frame, systems = begun
        self = cls(w, dt, h, systems)
        try:
            if frame is not None and frame.prepare(h, w._settings._substeps, w._frame_start):
                repeats = frames > 1 and w._features.repeats()
                self.runs = frame.runs(frames if repeats else 1, w._frame_start,
                                       w._settings._on_instability in ("raise", "warn"))
                return self
            elapsed = w._staged(h, systems)
            error = w._diagnose(h, systems)
        finally:
            if self.runs is None:
                w._stepping = False
        w._end(dt, error, systems, elapsed)
        return self

    def end(self) -> int:
        """After ps_run_worlds: what ``step()`` does after each frame that ran (the frames but
        the last had nothing to do but their time); how many ran (0 when a resumed world's
        watched values had changed: its next start is Python's)."""
        w, frame, runs = self.world, self.world._frame, self.runs
        assert frame is not None
        ran = int(runs.ran)
        if ran < 0:
            frame.resumable = w._stepping = False
            return 0
        try:
            frame.finish(w._settings._substeps)
            _advance(w.pipeline, self.dt, ran - 1)
            error = w._diagnose(self.h, self.systems)
            frame.resumable = frame.resumes and w.pipeline.unstable < 0
            frame.arm(w._features, self.dt)
        finally:
            w._stepping = False
        w._end(self.dt, error, self.systems, frame.seconds)
        return ran


def _advance(pipeline: Any, dt: float, frames: int) -> None:
    """The pipeline's time ``frames`` frames of ``dt`` on, added frame by frame as ``step()``
    adds them (the same rounding)."""
    t = pipeline.time
    for _ in range(frames):
        t += dt
    pipeline.time = t


def _resumed(w: World, frames: int) -> Any:
    """``w``'s ps_world to run up to ``frames`` frames (one unless nothing needs Python
    between them: ``Features.repeats``) continuing from its last frame in C, when that frame
    ran its calls in one call of the C core and since then neither the plan of the calls (h,
    substeps, the tables' rows, the settings), the systems, nor esper's entities changed:
    then the Python start of a frame (the FrameStart's copies, the asked terms'
    ``frame_start``) is the copies and fills that ``ps_run_worlds`` makes before a later
    frame (``Frame.between``); C checks the values those terms read (``Frame.watched``).
    None otherwise (the world's frames start from Python: ``_Pending.start``)."""
    frame, s = w._frame, w._settings
    if frame is None or not frame.resumable or w._stepping or s._dt < MIN_DT or (
            not w._ecs.intact() and w._ecs.ghosts()):
        return None
    repeats = frames > 1 and w._features.repeats()
    runs = frame.resumed(frames if repeats else 1,
                         (min(s._dt, s._max_dt) / s._substeps, s._substeps, frame.clock.value, s._changes))
    if runs is not None:
        _continuing(w)
    return runs


def _continuing(w: World) -> None:
    """``w``'s state while C continues its last frame (``_continued`` ends it)."""
    w.pipeline.unstable, w._stepping = -1, True


def _continued(w: World, runs: Any) -> int:
    """After ps_run_worlds, for a world ``_resumed``: what ``step()`` does after each frame
    that ran; how many ran (0 when its watched values had changed: its next start is
    Python's)."""
    ran = int(runs.ran)
    if ran < 0:
        w._frame.resumable = w._stepping = False  # type: ignore[union-attr]
        return 0
    s = w._settings
    dt = min(s._dt, s._max_dt)
    if runs.found < 0 and w._features.repeats():
        # What _end would do but the time is nothing: its after_frame ran after the last
        # frame, nothing it reads changed since (_resumed), and it is the same done once after
        # several frames as after each (repeats); no error to deliver; the profile is the same
        # arrays. Nor has finish anything to do: no scan found a particle, no kernel call is
        # counted (resumed), and the substep is the last one's already
        _advance(w.pipeline, dt, ran)
        w._stepping = False
        return ran
    pending = _Pending(w, dt, dt / s._substeps, w._systems)
    pending.runs = runs
    return pending.end()
