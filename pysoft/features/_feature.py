"""What a feature is: its tables, components, kernels and the stage each runs in, its
snapshot fields and its share of a removal cascade (DESIGN.md, "Layout").

A feature depends on the Store, the esper seam, the kernel registry and the
pipeline, never on the World: the World makes a :class:`Context` and hands
it to every feature in ``pysoft.features.FEATURES``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from pysoft import _kernels
from pysoft._ecs import Ecs, RowView
from pysoft._pipeline import FORCE_STATES, MAIN, Pipeline, Settings
from pysoft._store import Field, Store


@dataclass
class Context:
    """Everything a feature may use."""

    store: Store
    ecs: Ecs
    settings: Settings
    pipeline: Pipeline
    backend: str
    dim: int
    # particle entity pairs whose link tore in the last frame (springs fills it first in
    # after_frame; bodies reads it: a pressure body whose outline tore loses its gas)
    torn: list[tuple[int, int]] = field(default_factory=list)

    def bind(self, name: str, **arrays: np.ndarray) -> Callable[..., Any]:
        """Kernel ``name`` bound to ``arrays`` once; call it with the live counts, then scalars."""
        return _kernels.Bound(name, self.backend, **arrays).call


PROBE_H = 1.0 / 480.0  # s: the substep the probes use (60 Hz, 8 substeps)


class PerState:
    """A force kernel bound for each of the pipeline's FORCE_STATES: the substep's state at
    once, the states only Verlet and RK4 evaluate on first use.

    ``make(pos, vel, force)`` binds the kernel to those particle fields.
    """

    def __init__(self, make: Callable[[str, str, str], Callable[..., Any]]) -> None:
        self._make = make
        self._calls: list[Callable[..., Any] | None] = [None] * len(FORCE_STATES)
        self[MAIN]

    def __getitem__(self, state: int) -> Callable[..., Any]:
        call = self._calls[state]
        if call is None:
            call = self._calls[state] = self._make(*FORCE_STATES[state])
        return call


class Feature:
    """Base of the features. Subclasses set ``kinds`` (the component types of the entities
    they own), ``snapshot`` ((table, fields) pairs: what a snapshot saves and restores) and
    ``moves`` (those of them a frame changes: what a replay of the frame starts from)."""

    kinds: ClassVar[tuple[type[RowView], ...]] = ()
    snapshot: ClassVar[tuple[tuple[str, tuple[str, ...]], ...]] = ()
    moves: ClassVar[tuple[tuple[str, tuple[str, ...]], ...]] = ()

    @staticmethod
    def particle_fields(dim: int) -> dict[str, Field]:
        """Per-particle columns this feature adds to the particle table."""
        return {}

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def remove(self, entities: list[int]) -> None:
        """Remove entities of this feature's kinds (validated, distinct)."""
        raise NotImplementedError

    def links_of(self, particles: list[int]) -> list[int]:
        """This feature's entities that name any of ``particles`` and go with them."""
        return []

    def drop_particles(self, particles: list[int]) -> None:
        """Forget ``particles`` where they are only members (bodies), before they go."""

    def particles_moved(self, entities: np.ndarray, rows: np.ndarray) -> None:
        """Particles ``entities`` now live in ``rows`` (a removal filled holes)."""

    def after_frame(self) -> None:
        """Run once after every frame (e.g. tearing)."""

    def repeats(self) -> bool:
        """Whether ``after_frame`` would do nothing after a frame but the last of several run
        in one call (pysoft.step_many): what it does is the same once at the end."""
        return True

    def probes(self) -> dict[str, tuple[int, Callable[[], Any]]]:
        """For the benchmark: each of this feature's kernels as ``(rows, call)``, a call over
        its live rows with representative scalars (``PROBE_H`` for a substep)."""
        return {}
