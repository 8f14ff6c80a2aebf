"""Where an instability began: the frame replayed pass by pass.

The scan at the end of a frame sees that some particle is non-finite or faster
than ``max_speed``, but not where that started: by the frame's end a blow-up
has spread over its body. So, while ``on_instability`` is "raise" or "warn",
the World copies at the start of every frame the state a frame changes and the
next one reads (each feature's ``moves`` fields: positions, velocities, the
kinematic colliders' poses) into buffers it keeps, but for the particles' fields a
frame run in one call records itself as it runs (:class:`FrameStart`). When the scan finds an
unstable particle, :func:`replay`:

1. keeps every table as the frame left it;
2. puts the frame-start state back and runs the frame again through pysoft's own
   stages, with a scan after every pass (each force term, the integrator, the
   constraints, each collide term): the first pass after which a particle's
   position or velocity is non-finite or too fast, or a force it was given is
   not finite, is the origin;
3. puts every table back as the first run left it, so the world is exactly as
   if no replay had run.

The frame is deterministic, so without systems of the user's the replay is the
first run again (a test checks it arrives at the same state bit for bit). The
user's systems are not run again (they may have effects outside the world);
when there are some and the replay stays stable, the report says they made the
difference. A frame that changed the world's entities is not replayed.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from pysoft import _native
from pysoft._pipeline import FORCE_STATES, MAIN, InstabilityError, Pipeline, Stage
from pysoft._store import Store, Table


@dataclass(frozen=True)
class Origin:
    """The first pass of a replayed frame after which a particle was unstable."""

    row: int
    substep: int  # 0-based, within the frame; -1: already unstable when the frame began
    name: str  # the pass ("springs", "integrator (symplectic_euler)", ...), or "" at the start
    what: str  # "position" or "velocity" (not finite), "speed" (above max_speed) or "force"
    # the force each force term gave the particle in that substep (N, by size; the
    # substep's own state only), when the pass was the integrator's
    forces: tuple[tuple[str, float], ...] = ()


class FrameStart:
    """Copies of the ``moves`` fields made as a frame starts, in buffers kept between frames.

    A frame that runs in one call may record some of the particles' start fields itself as
    it runs (:meth:`pysoft._frame.Frame.kept`): the velocities in ``start_vel`` (gravity, its
    first pass, copies them there on its first substep: a store beside a load it makes anyway,
    where this copy reads them all again; the canonical scene's step 4 % faster at 10k and
    100k particles), and, with one substep, the positions in ``prev_pos`` (the integration
    records each substep's start there: half the copy's bytes). ``save(kept)`` copies the
    other fields only, and :meth:`load` takes those from their records. If the frame then
    records fewer of them (its calls changed, or it runs stage by stage), :meth:`keep_only`
    copies the rest before it runs."""

    def __init__(self, store: Store, fields: Iterator[tuple[Table, str]]) -> None:
        self.store = store
        self.fields = list(fields)
        self.buffers: list[np.ndarray] = [
            np.empty((0, *table.fields[name].shape), table.fields[name].dtype) for table, name in self.fields]
        self.rows = [0] * len(self.fields)
        self.pairs: list[tuple[np.ndarray, np.ndarray]] = []  # (copy, live rows) per field
        # the same as (destination, source, bytes) for ffi.memmove (a third of np.copyto's
        # time on a small world's rows), when the C core is built
        self.moves: list[tuple[Any, Any, int]] = []
        self.version = -1  # the Store's version when the views of ``pairs`` were made
        self.index: dict[str, int] = {}  # a particles' field's place in ``pairs`` (and ``moves``)
        self.kept: dict[str, str] = {}  # this frame's fields left to their records: field: record
        # which fields to copy, chosen once per change of ``kept`` or of the views: for the
        # kept tuple and version below, the fields left to records and the others' copies
        self.plan_for: tuple[tuple[tuple[str, str], ...] | None, int] = (None, -1)
        self.plan_left: dict[str, str] = {}
        self.plan_moves: list[tuple[Any, Any, int]] = []
        self.plan_pairs: list[tuple[np.ndarray, np.ndarray]] = []

    def save(self, kept: tuple[tuple[str, str], ...] = ()) -> None:
        """Copy the fields, but for the particles' ``kept`` ones (field, record)."""
        if self.version != self.store.version:  # rows changed: new views (the arrays never move)
            self.pairs, self.index = [], {}
            for i, (table, name) in enumerate(self.fields):
                n = self.rows[i] = table.n
                if len(self.buffers[i]) < n:
                    shape = (max(n, 2 * len(self.buffers[i])), *self.buffers[i].shape[1:])
                    self.buffers[i] = np.empty(shape, self.buffers[i].dtype)
                if n:
                    if table is self.store.particles:
                        self.index[name] = len(self.pairs)
                    self.pairs.append((self.buffers[i][:n], table.arrays[name][:n]))
            self.version = self.store.version
            if _native.AVAILABLE:
                ffi = _native.require()[0]
                self.moves = [(ffi.from_buffer(copy), ffi.from_buffer(live), copy.nbytes)
                              for copy, live in self.pairs]
        if self.plan_for[0] != kept or self.plan_for[1] != self.version:
            self.plan_for = (kept, self.version)
            self.plan_left = {field: record for field, record in kept if field in self.index}
            skip = {self.index[field] for field in self.plan_left}
            self.plan_moves = [m for k, m in enumerate(self.moves) if k not in skip]
            self.plan_pairs = [p for k, p in enumerate(self.pairs) if k not in skip]
        self.kept = self.plan_left
        if self.moves:
            memmove = _native.require()[0].memmove
            for to, start, size in self.plan_moves:
                memmove(to, start, size)
        else:
            for copy, live in self.plan_pairs:
                np.copyto(copy, live)

    def keep_only(self, kept: Iterable[tuple[str, str]] = ()) -> None:
        """Copy the fields ``save`` left to their records but for those in ``kept`` (all of them
        by default), before the frame runs."""
        still = dict(kept)
        gone = [field for field, record in self.kept.items() if still.get(field) != record]
        for field in gone:
            copy, live = self.pairs[self.index[field]]
            np.copyto(copy, live)
        if gone:  # (a new dict: plan_left serves the next frame)
            self.kept = {field: record for field, record in self.kept.items() if field not in gone}

    def load(self) -> None:
        for (table, name), buffer, n in zip(self.fields, self.buffers, self.rows, strict=True):
            if table is self.store.particles and name in self.kept:
                buffer = table.arrays[self.kept[name]]
            np.copyto(table.arrays[name][:n], buffer[:n])


def _tables(store: Store) -> dict[tuple[str, str], np.ndarray]:
    """A copy of every live row of every field of every table."""
    return {(t, f): table.view(f).copy() for t, table in store.tables.items() for f in table.fields}


def _put_back(store: Store, saved: dict[tuple[str, str], np.ndarray]) -> None:
    for (t, f), arr in saved.items():
        np.copyto(store.tables[t].view(f), arr)


def _same(a: dict[tuple[str, str], np.ndarray], b: dict[tuple[str, str], np.ndarray],
          fields: list[tuple[Table, str]]) -> bool:
    """Whether the ``moves`` fields of two copies are equal bit for bit."""
    keys = [(table.name, name) for table, name in fields]
    return all(a[k].tobytes() == b[k].tobytes() for k in keys)


class _Watch:
    """The scans of a replay: after every pass, the first particle that is unstable."""

    def __init__(self, P: Table, find_unstable: Callable[..., Any], dim: int, top: float) -> None:
        self.P, self.find, self.dim, self.top = P, find_unstable, dim, top
        self.substep = -1
        self.origin: Origin | None = None
        self.parts: list[tuple[str, np.ndarray]] = []  # this substep's force per term (MAIN)

    def check(self, name: str, force: str = "", integrator: bool = False) -> None:
        if self.origin is not None:
            return
        n = self.P.n
        if force:  # a force term: a force it gave that is not finite
            bad = np.flatnonzero(~np.isfinite(self.P.arrays[force][:n]).all(axis=1))
            if len(bad):
                self.origin = Origin(int(bad[0]), self.substep, name, "force")
                return
        row = int(self.find(n, self.dim, self.top))
        if row >= 0:
            a = self.P.arrays
            what = ("position" if not np.isfinite(a["pos"][row]).all() else
                    "velocity" if not np.isfinite(a["vel"][row]).all() else "speed")
            forces = sorted(((term, float(np.linalg.norm(f[row]))) for term, f in self.parts
                             if f[row].any()), key=lambda tf: -tf[1]) if integrator else []
            self.origin = Origin(row, self.substep, name, what, tuple(forces))


class _Term:
    """A term of the pipeline whose every call is followed by a scan."""

    def __init__(self, term: Any, watch: _Watch, first: bool = False) -> None:
        self.term, self.watch, self.first = term, watch, first
        self.name = getattr(term, "label", type(term).__name__)

    def evaluate(self, state: int) -> None:
        watch, force = self.watch, self.watch.P.arrays["force"]
        n = watch.P.n
        if state == MAIN:  # what this term adds (the first one sets the forces)
            if self.first:
                watch.parts = []
            before = np.zeros_like(force[:n]) if self.first else force[:n].copy()
        self.term.evaluate(state)
        if state == MAIN:
            watch.parts.append((self.name, force[:n] - before))
        watch.check(self.name, FORCE_STATES[state][2])

    def run(self, h: float) -> None:
        self.term.run(h)
        self.watch.check(self.name)


class _Integrator:
    """The pipeline's integrator, with a scan after it advances and after XPBD's velocity update."""

    def __init__(self, integrator: Any, watch: _Watch, kind: str) -> None:
        self.integrator, self.watch, self.kind = integrator, watch, kind

    def after_forces(self) -> None:
        self.integrator.after_forces()

    def run(self, h: float, pipeline: Pipeline) -> None:
        self.integrator.run(h, pipeline)
        self.watch.check(f"integrator ({self.kind})", integrator=True)

    def velocity_from_positions(self, h: float) -> None:
        self.integrator.velocity_from_positions(h)
        self.watch.check("XPBD velocity update")

    def velocity_ops(self, h: float) -> list[Any]:
        return list(self.integrator.velocity_ops(h))


TERM_LISTS = ("forces", "constraints", "collide", "settle", "resettle")


def replay(pipeline: Pipeline, start: FrameStart, systems: tuple[Any, ...], h: float,
           find_unstable: Callable[..., Any], P: Table) -> tuple[Origin | None, bool]:
    """Replay the frame that just ended from ``start``; the origin of its instability (None
    if the replay stayed stable) and whether the replay arrived where the frame did. The
    world is left as the frame left it."""
    settings = pipeline.settings
    watch = _Watch(P, find_unstable, settings.dim, settings._max_speed)
    end = _tables(start.store)
    start.load()
    watch.check("")  # unstable before any pass: set between frames
    if watch.origin is not None:
        _put_back(start.store, end)
        return watch.origin, True
    lists = {name: getattr(pipeline, name) for name in (*TERM_LISTS, "finish")}
    integrator, substep = pipeline.integrator, pipeline.substep
    try:
        for name in TERM_LISTS:
            setattr(pipeline, name, [_Term(t, watch, i == 0) for i, t in enumerate(lists[name])])
        pipeline.finish = []  # the scan that raised: not again
        pipeline.integrator = _Integrator(integrator, watch, settings._integrator)
        stages = [s for s in systems if isinstance(s, Stage)]
        for k in range(settings._substeps):
            pipeline.substep = watch.substep = k
            for stage in stages:
                stage.process(h)
        faithful = _same(_tables(start.store), end, start.fields)
    finally:
        for name, terms in lists.items():
            setattr(pipeline, name, terms)
        pipeline.integrator, pipeline.substep = integrator, substep
        _put_back(start.store, end)
    return watch.origin, faithful


def diagnose(pipeline: Pipeline, start: FrameStart, systems: tuple[Any, ...], h: float,
             scan: Any) -> InstabilityError:
    """The InstabilityError for the frame that just ended, made by ``scan`` (the particles'
    InstabilityScan) from a replay of the frame, unless its entities changed."""
    replayed = start.version == start.store.version
    origin, faithful = (replay(pipeline, start, systems, h, scan.find_unstable, scan.P)
                        if replayed else (None, False))
    others = [getattr(s, "name", type(s).__name__) for s in systems if not isinstance(s, Stage)]
    error: InstabilityError = scan.report(origin, faithful, replayed, others, h)
    return error


def deliver(error: InstabilityError | None, policy: str) -> None:
    """Raise the error (policy "raise") or warn with its message ("warn")."""
    if error is not None:
        if policy == "raise":
            raise error
        warnings.warn(str(error), RuntimeWarning, stacklevel=3)
