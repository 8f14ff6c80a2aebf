"""The esper seam: a world's context, entity creation and deletion, and row views.

esper 3 keeps its state in named module-level contexts. :class:`Ecs` owns
one (or shares the game's), writes its entities into that context's own
tables without making it esper's current one (so worlds in several threads
never meet in esper's globals), makes it current only while the user's
systems run (:meth:`Ecs.entered`, under one process-wide lock), and keeps a
registry entity -> component so the World never queries esper in a step.

Components are views, not copies (:class:`RowView`): a component knows its
table and its entity and finds its row through the table's ``row_of`` on
every access, so it follows its row when rows move, and a component of a
removed entity raises :class:`RemovedError` instead of reaching another
entity's row.

An entity deleted through esper itself (``esper.delete_entity``) is found
by :meth:`Ecs.ghosts` at the World's next call, in O(number of component
kinds) when there are none, and removed with the World's cascade.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import esper
import numpy as np

from pysoft import _validate
from pysoft._store import RemovedError, Table

_contexts = itertools.count(1)
ID_RANGE = 1 << 32  # entity ids of the k-th world of its own context: k * ID_RANGE + 1, ...


class RowView:
    """Base of the view components: a table and the entity whose row to read."""

    __slots__ = ("entity", "table")

    def __init__(self, table: Table, entity: int = -1) -> None:
        self.table = table
        self.entity = entity

    @property
    def row(self) -> int:
        """The entity's current row in its table."""
        try:
            return self.table.row_of[self.entity]
        except KeyError:
            raise RemovedError(f"{type(self).__name__} of entity {self.entity} was removed "
                               "from its world") from None

    def __repr__(self) -> str:
        alive = self.entity in self.table.row_of
        return f"<{type(self).__name__} entity={self.entity}{'' if alive else ' (removed)'}>"


V = TypeVar("V", bound=RowView)


class Column:
    """A scalar field of a row view: reads the Store; writes it through ``check`` (None: read-only)."""

    def __init__(self, field: str, doc: str, check: Callable[[str, Any], float] | None = None) -> None:
        self.field, self.check, self.__doc__ = field, check, doc

    def __get__(self, view: RowView | None, owner: Any = None) -> Any:
        return self if view is None else float(view.table.arrays[self.field][view.row])

    def __set__(self, view: RowView, value: Any) -> None:
        if self.check is None:
            raise AttributeError(f"{self.field} is read-only")
        view.table.arrays[self.field][view.row] = self.check(self.field, value)


class Bits:
    """A 32-bit mask field of a row view (collision category or mask): an unsigned int."""

    def __init__(self, field: str, doc: str) -> None:
        self.field, self.__doc__ = field, doc

    def __get__(self, view: RowView | None, owner: Any = None) -> Any:
        return self if view is None else int(view.table.arrays[self.field][view.row]) & 0xFFFFFFFF

    def __set__(self, view: RowView, value: Any) -> None:
        view.table.arrays[self.field][view.row] = _validate.bits(self.field, value)


class Vector:
    """A vector field of a row view: a writable view of the Store row; assignment is checked."""

    def __init__(self, field: str, name: str, doc: str) -> None:
        self.field, self.name, self.__doc__ = field, name, doc

    def __get__(self, view: RowView | None, owner: Any = None) -> Any:
        return self if view is None else view.table.arrays[self.field][view.row]

    def __set__(self, view: RowView, value: Any) -> None:
        arr = view.table.arrays[self.field]
        arr[view.row] = _validate.vector(self.name, value, arr.shape[1])


# esper 3 keeps each context as a tuple in ``esper._context_map``: (entity counter,
# components by kind, entities, deferred deletions, two query caches, processors, ...). Its
# dicts and sets are the module globals of whichever context is current (``switch_world``
# loads them, not copies), so a context's tables can be read and written through its tuple
# whether it is current or not, without a switch (indices below).
_COUNT, _KINDS, _ENTITIES, _DEAD, _CACHE, _CACHES = range(6)

# Held around every switch of esper's current context that pysoft makes (a frame that runs
# systems of the user's, which expect their world's context to be current) and around
# pysoft's writes to a context shared with the game: one thread at a time, and the previous
# context is restored before the lock is released. Nothing else in pysoft switches contexts.
_SWITCH = threading.RLock()


def _new_context(count: itertools.count[int], removals: np.ndarray | None = None) -> tuple[Any, ...]:
    """An empty esper 3 context tuple (as ``esper.switch_world`` makes one); with ``removals``
    (a context of pysoft's own), one whose components by kind and deferred deletions count
    every removal made through them in ``removals[0]`` (``_Kinds``)."""
    if removals is None:
        return (count, {}, {}, set(), {}, {}, [], {}, False, {}, {})
    return (count, _Kinds(removals), {}, _Dead(removals), {}, {}, [], {}, False, {}, {})


# A world's own context counts the removals made in it (each function of esper's that removes
# a component, deletes an entity, at once or deferred, or clears the database goes through one
# of the methods ``_counting`` wraps), so step_many's lane needs no look at esper's tables: C
# compares the count with the one the last look found intact (``Ecs.checked``). A context
# shared with the game may have been made by esper, with plain dicts and sets: its tables are
# looked at.
class _Kind(set):  # type: ignore[type-arg]
    """The entities of one component kind in a context of pysoft's own: removals counted."""

    __slots__ = ("removals",)
    removals: np.ndarray


class _Dead(set):  # type: ignore[type-arg]
    """The deferred deletions of a context of pysoft's own: each one counted."""

    __slots__ = ("removals",)

    def __init__(self, removals: np.ndarray) -> None:
        super().__init__()
        self.removals = removals


class _Kinds(dict):  # type: ignore[type-arg]
    """The components by kind of a context of pysoft's own: every kind's set is a ``_Kind``
    (one esper makes, ``_components[kind] = set()``, included), and dropping a kind counts."""

    __slots__ = ("removals",)

    def __init__(self, removals: np.ndarray) -> None:
        super().__init__()
        self.removals = removals

    def _counted(self, entities: Any) -> _Kind:
        kind = _Kind(entities)
        kind.removals = self.removals
        return kind

    def __setitem__(self, kind: Any, entities: Any) -> None:
        dict.__setitem__(self, kind, self._counted(entities))

    def setdefault(self, kind: Any, default: Any = None) -> Any:
        if kind not in self:
            dict.__setitem__(self, kind, self._counted(() if default is None else default))
        return dict.__getitem__(self, kind)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for kind, entities in dict(*args, **kwargs).items():
            self[kind] = entities


def _counting(cls: type, base: type, names: tuple[str, ...]) -> None:
    """Make each method ``names`` of ``cls`` its ``base``'s, after counting one removal in
    ``self.removals[0]``."""
    for name in names:
        method = getattr(base, name)

        def counted(self: Any, *args: Any, _method: Any = method) -> Any:
            self.removals[0] += 1
            return _method(self, *args)

        counted.__name__ = name
        counted.__qualname__ = f"{cls.__name__}.{name}"
        setattr(cls, name, counted)


_counting(_Kind, set, ("discard", "remove", "pop", "clear"))
_counting(_Dead, set, ("add",))
_counting(_Kinds, dict, ("__delitem__", "pop", "popitem", "clear"))


def _drop_context(name: str) -> None:
    """Forget a world's own context (its finaliser: the context is never current then)."""
    if esper._current_world != name:
        esper._context_map.pop(name, None)


def intact(context: str, counts: dict[type, int]) -> bool:
    """``Ecs.intact`` of the Ecs of ``context`` whose components number ``counts`` (by kind)."""
    tables = esper._context_map[context]
    if tables[3]:  # (esper's entities to delete)
        return False
    kinds = tables[1]
    for kind, count in counts.items():  # noqa: SIM110 (no generator made: this runs per world per step)
        if len(kinds.get(kind, ())) != count:
            return False
    return True


class Ecs:
    """One world's esper context and its registry of pysoft components.

    Entities are created and deleted in the context's own tables (see ``_COUNT``), never by
    switching esper to it, so two worlds built or stepped in two threads never touch each
    other's context or esper's current one; only :meth:`entered` switches (for the user's
    systems), under the process-wide ``_SWITCH`` lock.
    """

    def __init__(self, context: str | None) -> None:
        if context is not None and not isinstance(context, str):
            raise ValueError(f"context must be a string or None, got {context!r}")
        number = next(_contexts)
        self.context = context if context is not None else f"pysoft.world.{number}"
        self.shared = context is not None
        self.components: dict[int, RowView] = {}
        self.counts: dict[type, int] = {}
        self.journal: list[np.ndarray] | None = None  # what create() made, while one is kept
        # the first entity id of this world's own range (0 in a game's context); snapshots save
        # ids relative to it, so a blob restores into a world built the same way
        self.base = number * ID_RANGE if context is None else 0
        # the removals made in a context of our own (``_Kinds``; always 0 in a shared one), and
        # their count when the context was last found intact (``intact``)
        self.removals = np.zeros(1, dtype=np.int64)
        self.checked = 0
        if context is None:
            # A context of our own numbers its entities from number * ID_RANGE: an id from
            # another pysoft world is never alive in this one (a game's context, shared with
            # its own entities, keeps esper's numbering)
            esper._context_map[self.context] = _new_context(itertools.count(start=self.base + 1),
                                                            self.removals)
            self._finalizer = weakref.finalize(self, _drop_context, self.context)
        else:
            with _SWITCH:
                esper._context_map.setdefault(self.context, _new_context(itertools.count(start=1)))

    def _tables(self) -> tuple[Any, ...]:
        """The context's (counter, components by kind, entities, deferred deletions, caches).

        A shared context that is current may have had its counter replaced by the game
        (``esper.clear_database``): the module's is the live one then."""
        tables = esper._context_map[self.context]
        if self.shared and esper._current_world == self.context:
            return (esper._entity_count, *tables[1:6])
        return tables[:6]

    @contextmanager
    def entered(self) -> Iterator[None]:
        """Make this world's context esper's current one (for the user's systems) and restore
        the previous one, holding ``_SWITCH`` throughout."""
        with _SWITCH:
            previous = esper._current_world
            if previous == self.context:
                yield
                return
            esper.switch_world(self.context)
            try:
                yield
            finally:
                esper.switch_world(previous)

    def create(self, count: int, make: Callable[[], RowView]) -> np.ndarray:
        """``count`` esper entities, each with a new component ``make()``; returns their ids.
        If it fails part-way (``make`` raising, MemoryError), none is left behind."""
        entities = np.empty(count, dtype=np.int64)
        registry = self.components
        made = 0
        lock = _SWITCH if self.shared else contextlib.nullcontext()
        with lock:
            counter, kinds, table, _, cache, caches = self._tables()
            try:
                for i in range(count):
                    component = make()
                    e = next(counter)
                    kind = type(component)
                    table[e] = {kind: component}
                    have = kinds.get(kind)  # (setdefault made every time costs a build)
                    if have is None:
                        have = kinds.setdefault(kind, set())
                    have.add(e)
                    component.entity = entities[i] = e
                    registry[e] = component
                    made += 1
            except BaseException:
                self._forget(entities[:made].tolist(), kinds, table)
                raise
            finally:
                cache.clear()
                caches.clear()
        if count:
            kind = type(registry[int(entities[0])])
            self.counts[kind] = self.counts.get(kind, 0) + count
            if self.journal is not None:
                self.journal.append(entities)
        return entities

    @contextmanager
    def journaled(self) -> Iterator[list[np.ndarray]]:
        """Keep, in the list it yields, the entity arrays create() makes within the block
        (the outermost block's list when blocks nest)."""
        if self.journal is not None:
            yield self.journal
            return
        self.journal = []
        try:
            yield self.journal
        finally:
            self.journal = None

    def add_component(self, entity: int, component: Any) -> None:
        """Attach a further component (a body model) to an entity."""
        lock = _SWITCH if self.shared else contextlib.nullcontext()
        with lock:
            _, kinds, table, _, cache, caches = self._tables()
            kind = type(component)
            table[entity][kind] = component
            kinds.setdefault(kind, set()).add(entity)
            cache.clear()
            caches.clear()

    def delete(self, entities: Iterable[int]) -> None:
        """Forget ``entities`` and delete them from esper now (also if esper had them pending).
        An entity whose pysoft component was removed through esper keeps the rest."""
        lock = _SWITCH if self.shared else contextlib.nullcontext()
        with lock:
            _, kinds, table, dead, cache, caches = self._tables()
            gone = []
            for e in entities:
                component = self.components.pop(e)
                self.counts[type(component)] -= 1
                dead.discard(e)
                if type(component) in table.get(e, ()):
                    gone.append(e)
            self._forget(gone, kinds, table)
            cache.clear()
            caches.clear()

    def _forget(self, entities: list[int], kinds: dict[type, set[int]],
                table: dict[int, dict[type, Any]]) -> None:
        """Delete ``entities`` from the context's tables (as esper's immediate deletion) and
        from the registry."""
        for e in entities:
            self.components.pop(e, None)
            for kind in table.pop(e, {}):
                have = kinds.get(kind)
                if have is not None:
                    have.discard(e)
                    if not have:
                        del kinds[kind]

    def close(self) -> None:
        """Delete this world's entities from a shared context, or drop its own context."""
        if self.shared:
            kinds = {type(c) for c in self.components.values()}
            self.delete(list(self.components))
            self.counts = dict.fromkeys(kinds, 0)
        else:
            self._finalizer()
            self.components.clear()

    def get(self, entity: Any, kind: type[V], what: str, name: str = "entity") -> V:
        """The ``kind`` component of ``entity``; KeyError naming the argument otherwise."""
        e = self.entity_id(name, entity)
        component = self.components.get(e)
        if not isinstance(component, kind):
            raise KeyError(f"{name}: entity {e} is not a live {what} of this world")
        return component

    @staticmethod
    def entity_id(name: str, entity: Any) -> int:
        if isinstance(entity, bool) or not isinstance(entity, (int, np.integer)):
            raise KeyError(f"{name} must be an entity id (int), got {entity!r}")
        return int(entity)

    def intact(self) -> bool:
        """Whether esper has no entity to delete and holds as many of each pysoft component as
        we made: then ``ghosts`` is empty (a quick test that allocates nothing; O(number of
        component kinds)). Found intact, the count of removals is kept (``checked``)."""
        seen = int(self.removals[0])
        if intact(self.context, self.counts):
            self.checked = seen
            return True
        return False

    def ghosts(self) -> list[int]:
        """Entities of ours that esper deleted (``esper.delete_entity``, pending or done) or
        whose pysoft component was removed through esper, ascending.

        Reads the context's tables (no switch): O(number of component kinds) when nothing was
        deleted behind our back.
        """
        if self.intact():
            return []
        tables = esper._context_map[self.context]  # (what _tables gives but the counter)
        kinds, dead = tables[1], tables[3]
        found = {e for e in dead if e in self.components} if dead else set()
        for kind, count in self.counts.items():
            have = kinds.get(kind, ())
            if len(have) != count:
                found.update(e for e, c in self.components.items() if type(c) is kind and e not in have)
        return sorted(found)
