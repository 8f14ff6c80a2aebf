"""A world's life: its parts made within the address space the process can have, held by one
thread at a time while they change, and freed at once when it closes.

Address space
    The Store's tables reserve their rows once (``pysoft._store``). A World reserves room
    for ``FULL_CAPACITY`` particles (the other tables in proportion) where the process can:
    :func:`make` tries the capacities of :data:`CAPACITIES` in turn, dropping each try that
    fails whole, and under an address-space limit (``ulimit -v``: RLIMIT_AS) takes no more
    than a quarter of what is left (:func:`address_budget`), so that later worlds and the
    process's own allocations fit too. ``World(capacity=n)`` asks for one capacity.

One thread at a time
    :class:`Guard` is a world's re-entrant lock, taken without waiting by each call that
    changes the world: a second thread's call while the first holds it raises
    :class:`ConcurrentUseError` (and changes nothing) rather than corrupting the world.

Closing
    A world's parts refer to each other (the features' context reaches the pipeline, whose
    terms reach the context; a term's closures reach the term), so reference counting alone
    would not free them. ``_teardown`` clears the attributes of each part, and the Store
    lets go of its tables: ``del world``, ``world.close()`` and the end of a ``with`` block
    give the world's address space back at once, without the cyclic garbage collector.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any, TypeVar

import numpy as np

from pysoft._ecs import Ecs
from pysoft._pipeline import Pipeline, Settings
from pysoft._store import FULL_CAPACITY, LEAST_ROWS, OverBudget, Store
from pysoft.features import Features
from pysoft.features._feature import Context

W = TypeVar("W", bound="Lifetime")

# World(capacity=None) tries these capacities in turn (particles; 16,777,216 down to 4,096)
CAPACITIES = tuple(FULL_CAPACITY >> k for k in range(0, 13, 3) if FULL_CAPACITY >> k >= LEAST_ROWS)


class ClosedError(RuntimeError):
    """A World was used after ``close()``."""


class ConcurrentUseError(RuntimeError):
    """A World was changed or stepped from one thread while another thread was using it."""


def address_budget() -> int | None:
    """The address space (bytes) a new World's tables may reserve when the process has a limit
    (``ulimit -v``, RLIMIT_AS): a quarter of what is left under it. None when there is no
    limit, or no way to read it."""
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit == resource.RLIM_INFINITY or limit <= 0:
            return None
        with open("/proc/self/statm") as statm:  # the process's mapped pages now
            used = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (ImportError, OSError, ValueError, IndexError):
        return None
    return max(0, limit - used) // 4


def make(dim: int, capacity: int | None, ecs: Ecs, settings: Settings,
         backend: str) -> tuple[Store, Pipeline, Features]:
    """A world's Store, pipeline and features, for ``capacity`` particles or (None) the largest
    of CAPACITIES whose tables the process can reserve within ``address_budget``. MemoryError
    naming ``capacity`` when none can be."""
    budget = None if capacity is not None else address_budget()
    tries = (capacity,) if capacity is not None else CAPACITIES
    for k, rows in enumerate(tries):
        store = Store(dim, rows, budget)
        try:
            pipeline = Pipeline(settings)
            return store, pipeline, Features(Context(store, ecs, settings, pipeline, backend, dim))
        except (OSError, MemoryError) as exc:  # OverBudget is a MemoryError
            store.release()
            if k + 1 == len(tries):
                need = "" if isinstance(exc, OverBudget) else f" ({exc})"
                raise MemoryError(
                    f"capacity: a World for {rows:,} particles needs more address space than this "
                    f"process can reserve{need}; pass a smaller World(capacity=...) or raise the "
                    "process's address-space limit (ulimit -v)") from exc
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


class Guard:
    """A world's lock: held by the thread that steps or changes it (re-entrantly), refused to
    another thread meanwhile, and to everyone once the world is closed."""

    __slots__ = ("closed", "lock", "name")  # (step_many reads a few hundred of them a call)

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.RLock()
        self.closed = False

    def check(self) -> None:
        """ClosedError if the world was closed."""
        if self.closed:
            raise ClosedError(f"this World was closed ({self.name}); make a new one")

    def claim(self, what: str) -> None:
        """Hold the world for ``what`` (release it with :meth:`release`)."""
        if not self.lock.acquire(blocking=False):
            raise ConcurrentUseError(
                f"{what}: another thread is using this World; a World is used by one thread at "
                "a time (many worlds may run in as many threads)")
        if self.closed:
            self.lock.release()
            self.check()

    def release(self) -> None:
        self.lock.release()

    @contextlib.contextmanager
    def held(self, what: str) -> Iterator[None]:
        """The world held (``claim``) for the block."""
        self.claim(what)
        try:
            yield
        finally:
            self.lock.release()


class Lifetime:
    """What a World does to be held by one thread at a time and closed (a base of World)."""

    _guard: Guard
    _ecs: Ecs
    _features: Features
    _feature: dict[type, Any]
    store: Store
    pipeline: Pipeline

    @contextlib.contextmanager
    def _changing(self, what: str) -> Iterator[None]:
        """Hold the world for a call that adds to it; if the call fails part-way (a
        MemoryError, a bad argument found late), the entities it made go again."""
        self._guard.claim(what)
        try:
            outer = self._ecs.journal is None
            with self._ecs.journaled() as made:
                try:
                    yield
                except BaseException:
                    if outer:
                        self._undo(made)
                    raise
        finally:
            self._guard.release()

    def _undo(self, made: list[np.ndarray]) -> None:
        """Remove the entities of ``made`` that are still alive (their rows with the cascade;
        an entity whose row was never added, from esper only)."""
        ecs = self._ecs
        alive = [int(e) for batch in made for e in batch.tolist() if int(e) in ecs.components]
        rowed = [e for e in alive if e in ecs.components[e].table.row_of]
        if rowed:
            self._features.remove(tuple(rowed))
        ecs.delete([e for e in alive if e in ecs.components])

    def close(self) -> None:
        """Free the world now: its Store's address space is given back (as soon as no array
        view of it is held elsewhere) and its esper entities go (its own context, or its
        entities in a shared one). Any later call raises ClosedError; closing twice does
        nothing. ``del world`` (when nothing else refers to it) and the end of a
        ``with World() as w:`` block close it too."""
        guard = self.__dict__.get("_guard")
        if guard is None or guard.closed:
            return  # closed, or never made
        guard.claim("close")
        try:
            guard.closed, self._feature = True, {}
            parts = self.__dict__
            _teardown(self.store, self._features, self.pipeline, parts["_frame"], parts["_frame_start"])
            for name in ("store", "pipeline", "_frame", "_frame_start", "_features", "_systems", "_stages"):
                del parts[name]
            self._ecs.close()
        finally:
            guard.release()

    def __enter__(self: W) -> W:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # (at interpreter exit, modules may be gone)
            self.close()


def _teardown(store: Store, features: Features, pipeline: Pipeline, *others: Any) -> None:
    """Clear the attributes of a closing world's parts (its features and their context, the
    pipeline and its terms, and ``others``: the frame and its start), then let the Store go of
    its tables (a view a user still holds keeps its own reservation alive, and nothing else)."""
    parts: list[Any] = [features, features.ctx, *features, pipeline, *pipeline.terms(), *others]
    for part in parts:
        if part is not None and hasattr(part, "__dict__"):
            vars(part).clear()
    store.release()
