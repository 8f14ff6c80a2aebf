"""A frame's passes in one call of the C core (``ps_run_frame``, ``csrc/src/frame.c``).

``World.step`` runs a frame stage by stage: each stage's terms call their kernels, one
foreign call per pass per substep. When the frame needs nothing but those calls (the C
backend, no systems of the user's, integrator "symplectic_euler", "explicit_euler" or "xpbd",
``on_instability`` not "clamp", and every term able to say what it would call: no kinematic
collider moving), the terms describe their calls as :class:`Op`
(``term.ops(h)``), and one call runs every substep of the frame: the same kernels, in the
same order, with the same arguments, so the same bits (``tests/test_frame.py`` compares both
ways frame by frame). A term that cannot (its ``ops`` returns None) sends the frame down the
stages. A call that runs only where an earlier one of its substep returned nonzero waits on it
(``after``, or ``also`` on either of two): the particles against the colliders again where
the edges' contacts or the constraints' settle moved particles, the settle's solve where its
inverse masses found a particle static friction holds. The terms that do a first substep's
work each frame and decide from the arrays' values whether they call (the colliders, the body
contacts, rolling resistance) do it in ``frame_start(h)``, every frame; the others are asked
for their ops again only when h, the tables' rows or the settings changed, or a
``frame_start`` answered otherwise: in between,
the frame reuses the calls it made (a 100-particle world's step 5.0 µs against 9.3 when
every term was asked each frame). With several threads, the ops whose kernels treat each
particle row on its own (``Kernel.rows``) and follow each other form a group that each
thread takes a range of rows through (``_group``; ``csrc/src/frame.c``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pysoft import _kernels, _native

EVERY, ONCE, LAST = 0, 1, 2  # Op.when: every substep, only the first one, or only the last one
ROWS_COMBINE = {"void": 0, "sum": 1, "first": 2}  # Kernel.rows, as ps_op's combine
GROUP_MAX = 16  # the most ops in a row group (frame.c's PS_GROUP_MAX)
FIRST, PARITY = 0, 1  # Op's varying scalar: 1 on the first substep (else 0), or substep % 2


@functools.cache
def _table() -> dict[str, tuple[int, str]]:
    """Each kernel of ps_run_frame's dispatch: its index and its scalars' kinds ("i", "d")."""
    ffi, lib = _native.require()
    return {ffi.string(lib.ps_op_names[k]).decode(): (k, ffi.string(lib.ps_op_scalars[k]).decode())
            for k in range(lib.ps_op_count)}


class Op:
    """One kernel call of every substep of a frame: a bound kernel's array pointers (the
    C backend's ``Bound.call``), its counts and scalars (``set``), and when it runs."""

    __slots__ = ("after", "also", "c", "calls", "counter", "kinds", "name", "rows", "values")

    def __init__(self, call: Any, stage: int, when: int = EVERY, vary: int = -1,
                 vary_kind: int = FIRST, after: Op | None = None) -> None:
        """``vary``: the position (among the counts and scalars) of the one set at every
        substep, per ``vary_kind``; ``after``: an earlier op of the frame whose nonzero
        result this one waits on within a substep."""
        ffi, _ = _native.require()
        self.name: str = call.kernel
        index, self.kinds = _table()[self.name]
        self.c = c = ffi.new("ps_op *")
        c.kernel, c.stage, c.when, c.after, c.also = index, stage, when, -1, -1
        for k, pointer in enumerate(call.args):
            c.p[k] = pointer
        c.nptr = len(call.args)
        c.vary = -1 if vary < 0 else self.kinds[:vary].count("i")
        c.vary_kind = vary_kind
        kernel = _kernels.REGISTRY[self.name]
        c.group, c.combine, c.threads_slot = -1, ROWS_COMBINE.get(kernel.rows, 0), -1
        self.rows = bool(kernel.rows) and after is None  # may run range by range of rows
        if self.rows:
            names = [*kernel.counts, *kernel.scalars]  # the counts come first, all ints
            c.rows_slot = kernel.counts.index("n")
            if "threads" in kernel.scalars:
                c.threads_slot = self.kinds[:names.index("threads")].count("i")
            for k, size in enumerate(call.row_bytes):
                c.row_bytes[k] = size
        self.values: tuple[Any, ...] | None = None
        self.counter = call.counter  # _kernels.counting(), when it was bound inside one
        self.after = after
        self.also: Op | None = None  # or this other earlier op (frame.c's ``also``)
        self.calls = 0  # c.calls when last looked at

    def set(self, *values: Any) -> Op:
        """The counts and scalars, in the kernel's order (as a call of the bound kernel)."""
        if values != self.values:
            c, i, d = self.c, 0, 0
            for kind, value in zip(self.kinds, values, strict=True):
                if kind == "i":
                    c.i[i] = value
                    i += 1
                else:
                    c.d[d] = value
                    d += 1
            self.values = values
        return self

    def ran(self) -> int:
        """How many times it ran since last asked (and counted, under ``counting()``)."""
        now = self.c.calls
        ran, self.calls = now - self.calls, now
        if self.counter is not None and ran:
            self.counter[self.name] += ran
        return int(ran)


class Frame:
    """Runs a frame through ``ps_run_frame`` when every term can describe its calls."""

    def __init__(self, pipeline: Any, clock: Any, ecs: Any) -> None:
        self.pipeline = pipeline
        self.clock = clock  # the Store's: it advances with any change of any table's rows
        self.ecs = ecs  # the world's Ecs: the removals made in its esper context
        # what the ops were last made for: (h, substeps, the clock, the settings' changes)
        self.plan: tuple[Any, ...] = ()
        self.asked: list[Any] = []  # the terms with a ``frame_start``, asked every frame
        self.marks: list[Any] = []  # what their ``frame_start`` said when the ops were made
        self.movers: list[Op] = []  # pipeline.movers as the ops were last made
        self.settler: Op | None = None  # and pipeline.settler
        ffi, self.lib = _native.require()
        self.ffi = ffi
        self.seconds = ffi.new("double[]", FINISH + 1)
        self.terms: tuple[Any, ...] = ()  # the pipeline's, once its features have added them
        self.array: Any = None
        self.ops: list[Op] = []
        self.counted: list[Op] = []  # the ops bound inside _kernels.counting()
        self.done: list[Callable[[], None]] = []
        # of RECORDS, those ``ops`` make: (field, record) in a frame of one substep, of more
        self.records: tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]] = ((), ())
        # the frame as ps_run_worlds runs it (``runs``), what it was made for, and the arrays
        # its pointers reach
        self.world = ffi.new("ps_world *")
        self.runs_key: tuple[Any, ...] = ()
        self.repeats = False
        self.kept_alive: Any = None
        # what the world's `after` (pysoft.h) reads, held as long as the world: its owner may be
        # let go of while another thread runs the world (pysoft.envs' walkers)
        self.after_kept: Any = None
        # what the asked terms' ``frame_start`` read beyond h, the rows and the settings (their
        # ``watched`` views: live, and their bytes when the calls were last made), and whether
        # the world's next frame may resume from its last one in C (``resumed``)
        self.watch: list[tuple[Any, Any]] = []
        self.resumes = False  # whether the calls can be continued from a later call
        self._resumable = False  # whether the last frame ran them and nothing ran since
        self._lane = False  # whether ``arm`` set the world's lane (C may have cleared it since)
        w, settings = self.world, pipeline.settings
        self.shared = (ffi.from_buffer("int64_t[]", clock.shared),
                       ffi.from_buffer("int64_t[]", settings._shared),
                       ffi.from_buffer("double[]", pipeline._time),
                       ffi.from_buffer("int64_t[]", ecs.removals))
        w.versions[0], w.versions[1], w.versions[2] = self.shared[0], self.shared[0] + 1, self.shared[1]
        w.versions[3] = self.shared[3]
        w.time = self.shared[2]

    @property
    def resumable(self) -> bool:
        """Whether the last frame ran the calls in C and nothing ran since (set False, it
        clears the world's lane)."""
        return self._resumable

    @resumable.setter
    def resumable(self, value: bool) -> None:
        self._resumable = value
        if not value and self._lane:
            self.unarm()

    def arm(self, features: Any, dt: float) -> None:
        """After a frame ``resumable`` of length ``dt``: set the world's lane
        (``ps_lane_worlds``, pysoft.many) when nothing of Python's runs after its frames
        (``features.repeats()``) and no kernel call is counted, armed with the versions of the
        plan its calls were made for (the Store's rows and edits, the settings' changes), the
        count of esper removals last found intact (at the frame's start) and that length."""
        w = self.world
        if not self._resumable or self.counted or not features.repeats():
            self.unarm()
            return
        w.armed[0], w.armed[1], w.armed[2] = self.plan[2], self.clock.edits, self.plan[3]
        w.armed[3] = self.ecs.checked  # (found intact at the frame's start: none since)
        w.dt = dt
        w.lane, self._lane = 1, True

    def unarm(self) -> None:
        """Clear the world's lane (Python starts its next frame)."""
        if self._lane:
            self.world.lane, self._lane = 0, False

    def kept(self, substeps: int) -> tuple[tuple[str, str], ...]:
        """The particles' fields (field, record) whose start a frame of ``substeps`` records as
        it runs, as its calls were last made (for pysoft._replay.FrameStart)."""
        return self.records[substeps != 1]

    def make(self, h: float, substeps: int, start: Any) -> bool:
        """Ask every term for its ops; False if one cannot describe its calls."""
        ops: list[Op] = []
        for term in self.terms:
            got = term.ops(h)
            if got is None:
                return False
            ops += got
        if ops != self.ops:  # another list (Ops compare by identity): new pointers to them
            for op in ops:
                op.c.after = -1 if op.after is None else ops.index(op.after)
                op.c.also = -1 if op.also is None else ops.index(op.also)
            _group(ops)
            self.array = self.ffi.new("ps_op *[]", [op.c for op in ops])
            self.ops = ops
            self.counted = [op for op in ops if op.counter is not None]
            self.records = _records(ops)
            if start is not None:
                start.keep_only(self.kept(substeps))
        return True

    def run(self, h: float, substeps: int, start: Any = None) -> bool:
        """Run the frame (each stage's seconds in ``seconds``); False (nothing ran) if a
        term cannot describe its calls. ``start``: the FrameStart, whose fields left to their
        records (``kept``) are copied first when the calls changed so that they are not."""
        if not self.prepare(h, substeps, start):
            return False
        self.lib.ps_run_frame(self.array, len(self.ops), substeps, len(self.seconds), self.seconds,
                              self.pipeline.settings._threads)
        self.finish(substeps)
        return True

    def prepare(self, h: float, substeps: int, start: Any = None) -> bool:
        """What ``run`` does before its call: the first substep's work of the terms that have a
        ``frame_start``, and the calls (the last ones, or asked for again); False if a term
        cannot describe its calls (nothing was called then, but ``frame_start``).

        A term's ops depend on h, the tables' rows and the settings, and on what the
        ``frame_start`` of the terms that have one said (it does a first substep's work and
        reads the arrays' values; None: the frame runs the stages): while all of them stay,
        the frame makes the calls it made last time without asking the terms again."""
        self.resumable = False  # (Python did the frame's start: nothing ran to resume from)
        if not self.terms:
            self.terms = tuple(self.pipeline.terms())
            self.done = [t.done for t in self.terms if hasattr(t, "done")]
            self.asked = [t for t in self.terms if hasattr(t, "frame_start")]
        pipeline = self.pipeline
        pipeline.substep, pipeline.movers, pipeline.settler = 0, [], None
        marks = []
        for term in self.asked:
            mark = term.frame_start(h)
            if mark is None:
                return False
            marks.append(mark)
        plan = (h, substeps, self.clock.value, pipeline.settings._changes)
        if plan == self.plan and marks == self.marks:
            pipeline.movers, pipeline.settler = self.movers, self.settler
        elif self.make(h, substeps, start):
            self.plan, self.marks = plan, marks
            self.movers, self.settler = pipeline.movers, pipeline.settler
        else:
            self.plan = ()  # no calls kept: the next frame asks every term again
            return False
        return True

    def finish(self, substeps: int) -> None:
        """What ``run`` does after its call (also after several frames run in one call)."""
        for done in self.done:
            done()
        for op in self.counted:  # each kernel call counts as if the stages had made it
            op.ran()
        if self.counted:  # and the frame's one foreign call as itself
            self.counted[0].counter["run_frame"] += 1
        self.pipeline.substep = substeps - 1

    def between(self) -> list[tuple[Any, int]] | None:
        """What a later frame's ``frame_start`` of the asked terms does to the arrays when h,
        the rows, the settings and the values they read stay as they were for this one: fills,
        as (array, byte); None if a term cannot say (then each frame starts from Python)."""
        fills: list[tuple[Any, int]] = []
        for term in self.asked:
            between = getattr(term, "between", None)
            if between is None:
                return None
            fills += between()
        return fills

    def runs(self, frames: int, start: Any, watched: bool) -> Any:
        """After ``prepare``: this frame's calls as a ``ps_world`` for ``ps_run_worlds``
        (pysoft._many), to run up to ``frames`` frames, or one if ``between`` cannot say what
        happens between them. Before each later frame it makes the FrameStart's copies (when
        the world is ``watched``: its frames' starts are saved for a replay) and the fills of
        ``between``; it stops after a frame whose scan found an unstable particle. Made again
        only when the calls, the terms' answers or the FrameStart's plan change."""
        key = (self.plan, tuple(self.marks), start.plan_for if watched else None)
        if key != self.runs_key:
            between = self.between()
            watched_views = self.watched() if between is not None else None
            self.repeats = between is not None
            self.resumes = watched_views is not None
            moves = list(start.plan_moves) if watched and self.repeats else []
            fills = [(self.ffi.from_buffer(view), view.nbytes, byte) for view, byte in between or []]
            copies = self.ffi.new("ps_copy[]", max(1, len(moves) + len(fills)))
            for k, (to, source, size) in enumerate(moves):
                copies[k].to, copies[k].source, copies[k].bytes = to, source, size
            for k, (to, size, byte) in enumerate(fills, len(moves)):
                c = copies[k]
                c.to, c.source, c.bytes, c.fill = to, self.ffi.NULL, size, byte
            self.watch = [(view, view.copy()) for view in watched_views or []]
            watch = self.ffi.new("ps_copy[]", max(1, len(self.watch)))
            for k, (view, copy) in enumerate(self.watch):
                c = watch[k]
                c.to, c.source, c.bytes = self.ffi.from_buffer(view), self.ffi.from_buffer(copy), view.nbytes
            w = self.world
            w.ops, w.nops, w.nstages, w.seconds = self.array, len(self.ops), len(self.seconds), self.seconds
            w.between, w.nbetween = copies, len(moves) + len(fills)
            w.watch, w.nwatch = watch, len(self.watch)
            w.scan = next((k for k, op in enumerate(self.ops) if op.name == "find_unstable"), -1)
            self.runs_key, self.kept_alive = key, (copies, moves, fills, watch)
        else:
            for view, copy in self.watch:  # what this frame's start read
                copy[...] = view
        w = self.world
        w.substeps, w.frames, w.resume = self.plan[1], frames if self.repeats else 1, 0
        return w

    def watched(self) -> list[Any] | None:
        """The views whose values the asked terms' ``frame_start`` reads besides h, the rows
        and the settings (None if a term cannot say)."""
        views: list[Any] = []
        for term in self.asked:
            watched = getattr(term, "watched", None)
            if watched is None:
                return None
            views += watched()
        return views

    def resumed(self, frames: int, plan: tuple[Any, ...]) -> Any:
        """This world's ``ps_world`` continuing from its last frame (``resume``: C makes the
        copies and fills of ``between`` before the first frame too, in place of the Python
        start), or None if that frame cannot be continued: it did not run in one call with
        calls that can be repeated, or ``plan`` (h, substeps, the clock, the settings'
        changes) is not the one its calls were made for. C still checks the ``watched``
        views, which the user may have written since: ``ran`` -1 if one changed."""
        if not (self.resumable and self.resumes) or plan != self.plan or self.counted:
            return None
        w = self.world
        w.frames, w.resume = frames, 1
        return w


# The particles' fields a frame's calls may record as they run, where an instability replay
# finds their start: the field, its record, and whether the record holds the frame's start only
# in a frame of one substep (the integration writes each substep's start positions to
# prev_pos; gravity copies the velocities to start_vel on the first substep only: its op's
# ``record``, set by ``vary``).
RECORDS = (("pos", "prev_pos", True), ("vel", "start_vel", False))


def _records(ops: list[Op]) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """Those of RECORDS that a call in ``ops`` records (writes the record) before any call
    writes the field (a call writing both records first): in a frame of one substep, and of
    more."""
    made = []
    for field, record, one in RECORDS:
        for op in ops:
            writes = _kernels.REGISTRY[op.name].writes
            if record in writes:
                made.append((field, record, one))
                break
            if field in writes:
                break
    return (tuple((f, r) for f, r, _ in made), tuple((f, r) for f, r, one in made if not one))


def _group(ops: list[Op]) -> None:
    """Give each run of consecutive ops that treat rows on their own a group of its own:
    with several threads, frame.c has each thread take its range of the rows through all of
    the group's ops, with one wait for the group instead of one per op."""
    for op in ops:
        op.c.group = -1
    runs: list[list[Op]] = [[]]
    for op in ops:
        if op.rows and len(runs[-1]) < GROUP_MAX:
            runs[-1].append(op)
        else:
            runs.append([op] if op.rows else [])
    for group, run in enumerate(r for r in runs if r):
        for member in run:
            member.c.group = group


FORCES, INTEGRATE, CONSTRAINTS, COLLIDE, FINISH = range(5)  # the stages, as _pipeline.STAGES


def cached(owner: Any, key: str, call: Any, stage: int, also: Op | None = None, **how: Any) -> Op:
    """``owner``'s Op ``key`` for the bound kernel ``call``, made on first use (kept as the
    attribute ``_op_<key>``), waiting on the ops asked for now (``after``, ``also``)."""
    name = "_op_" + key
    op: Op | None = owner.__dict__.get(name)
    if op is None:
        op = Op(call, stage, **how)
        setattr(owner, name, op)
    op.after, op.also = how.get("after"), also
    return op
