"""The esper seam: a world's context, entity creation and deletion, and row views.

esper 3 keeps its state in named module-level contexts. :class:`Ecs` owns
one (or shares the game's), switches to it for every call that touches
esper (:meth:`Ecs.entered`) and keeps a registry entity -> component so the
World never queries esper in a step.

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

import itertools
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import esper
import numpy as np

from pysoft import _validate
from pysoft._store import Table

_contexts = itertools.count(1)
ID_RANGE = 1 << 32  # entity ids of the k-th world of its own context: k * ID_RANGE + 1, ...


class RemovedError(KeyError):
    """A component or entity was used after it was removed from its world."""


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


def _drop_context(name: str) -> None:
    if name in esper.list_worlds() and esper.current_world != name:
        esper.delete_world(name)


class Ecs:
    """One world's esper context and its registry of pysoft components."""

    def __init__(self, context: str | None) -> None:
        if context is not None and not isinstance(context, str):
            raise ValueError(f"context must be a string or None, got {context!r}")
        number = next(_contexts)
        self.context = context if context is not None else f"pysoft.world.{number}"
        self.components: dict[int, RowView] = {}
        self.counts: dict[type, int] = {}
        if context is None:
            weakref.finalize(self, _drop_context, self.context)
        # the first entity id of this world's own range (0 in a game's context); snapshots save
        # ids relative to it, so a blob restores into a world built the same way
        self.base = number * ID_RANGE if context is None else 0
        with self.entered():  # creates the esper context now
            if context is None:
                # A context of our own numbers its entities from number * ID_RANGE: an id
                # from another pysoft world is never alive in this one (a game's context, shared
                # with its own entities, keeps esper's numbering)
                esper._entity_count = itertools.count(start=self.base + 1)

    @contextmanager
    def entered(self) -> Iterator[None]:
        """Switch esper to this world's context and back."""
        previous = esper.current_world
        if previous == self.context:
            yield
            return
        esper.switch_world(self.context)
        try:
            yield
        finally:
            esper.switch_world(previous)

    def create(self, count: int, make: Callable[[], RowView]) -> np.ndarray:
        """``count`` esper entities, each with a new component ``make()``; returns their ids."""
        entities = np.empty(count, dtype=np.int64)
        registry = self.components
        with self.entered():
            create = esper.create_entity
            for i in range(count):
                component = make()
                component.entity = entities[i] = create(component)
                registry[component.entity] = component
        if count:
            kind = type(registry[int(entities[0])])
            self.counts[kind] = self.counts.get(kind, 0) + count
        return entities

    def add_component(self, entity: int, component: Any) -> None:
        """Attach a further component (a body model) to an entity."""
        with self.entered():
            esper.add_component(entity, component)

    def delete(self, entities: Iterable[int]) -> None:
        """Forget ``entities`` and delete them from esper now (also if esper had them pending)."""
        with self.entered():
            dead = esper._dead_entities  # esper 3's deferred deletions (see ghosts())
            for e in entities:
                component = self.components.pop(e)
                self.counts[type(component)] -= 1
                dead.discard(e)
                # An entity whose pysoft component was removed through esper keeps the rest.
                if esper.entity_exists(e) and esper.has_component(e, type(component)):
                    esper.delete_entity(e, immediate=True)

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

    def ghosts(self) -> list[int]:
        """Entities of ours that esper deleted (``esper.delete_entity``, pending or done) or
        whose pysoft component was removed through esper, ascending.

        Reads esper 3's per-context tables (``_components``, ``_dead_entities``: the module's
        while this context is esper's current one, else those ``_context_map`` keeps for it,
        so no switch): O(number of component kinds) when nothing was deleted behind our back.
        """
        if esper.current_world == self.context:
            kinds, dead = esper._components, esper._dead_entities
        else:
            saved = esper._context_map[self.context]  # (count, components, entities, dead, ...)
            kinds, dead = saved[1], saved[3]
        found = {e for e in dead if e in self.components} if dead else set()
        for kind, count in self.counts.items():
            have = kinds.get(kind, ())
            if len(have) != count:
                found.update(e for e, c in self.components.items() if type(c) is kind and e not in have)
        return sorted(found)
