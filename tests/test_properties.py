"""Property tests (Hypothesis, derandomised: the same examples every run, bounded time).

- Random spring scenes on both backends: C and NumPy agree bit for bit, everything stays
  finite, pinned particles stay where they are; with no pins, gravity, drag or colliders the
  total momentum is conserved (springs act in equal and opposite pairs).
- Hostile arrays (NaN, +-1e308, wrong shapes and dtypes, bad indices) are refused with
  ValueError, TypeError or KeyError, and the world is left exactly as it was.
- A state machine that adds and removes particles, springs and bodies, steps, snapshots and
  restores in any order keeps the C world and the NumPy world bit for bit equal.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from test_bad_input import fingerprint

import pysoft

pytestmark = pytest.mark.skipif(not pysoft.C_AVAILABLE, reason="compares the C core with its twin")

FAST = settings(derandomize=True, deadline=None, max_examples=25,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def spring_scenes(draw: Any) -> dict[str, Any]:
    """2 to 12 particles within a 2 m square, up to 20 springs between distinct ones."""
    n = draw(st.integers(2, 12))
    coord = st.floats(-1.0, 1.0, allow_nan=False, width=64)
    pos = np.array(draw(st.lists(st.tuples(coord, coord), min_size=n, max_size=n)))
    vel = np.array(draw(st.lists(st.tuples(coord, coord), min_size=n, max_size=n)))
    mass = np.array(draw(st.lists(st.floats(0.5, 2.0), min_size=n, max_size=n)))
    pinned = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    pair = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda p: p[0] != p[1])
    pairs = draw(st.lists(pair, max_size=20))
    stiffness = draw(st.floats(0.0, 200.0))  # k h^2 / m < 0.001: stable at 480 Hz
    damping = draw(st.floats(0.0, 2.0))
    return {"pos": pos, "vel": vel, "mass": mass, "pinned": pinned, "pairs": pairs,
            "stiffness": stiffness, "damping": damping}


def _world(scene: dict[str, Any], backend: str, pins: bool) -> tuple[pysoft.World, list[int]]:
    w = pysoft.World(backend=backend, gravity=(0.0, 0.0))
    entities = w.add_particles(scene["pos"], velocities=scene["vel"], masses=scene["mass"],
                               pinned=scene["pinned"] if pins else False)
    if scene["pairs"]:
        w.add_springs([[entities[a], entities[b]] for a, b in scene["pairs"]],
                      stiffness=scene["stiffness"], damping=scene["damping"])
    return w, entities


@FAST
@given(spring_scenes())
def test_random_spring_scenes_agree_stay_finite_and_keep_pins(scene: dict[str, Any]) -> None:
    c, _ = _world(scene, "c", pins=True)
    py, _ = _world(scene, "python", pins=True)
    start = c.positions.copy()
    for _ in range(5):
        c.step()
        py.step()
    assert c.positions.tobytes() == py.positions.tobytes()
    assert c.velocities.tobytes() == py.velocities.tobytes()
    assert np.isfinite(c.positions).all() and np.isfinite(c.velocities).all()
    pinned = scene["pinned"]
    assert c.positions[pinned].tobytes() == start[pinned].tobytes()


@FAST
@given(spring_scenes())
def test_springs_conserve_momentum(scene: dict[str, Any]) -> None:
    """No pins, no gravity, drag or colliders: springs act in equal and opposite pairs, so the
    total momentum stays what it was (to rounding, relative to the momenta involved)."""
    w, _ = _world(scene, "c", pins=False)
    mass = scene["mass"][:, None]
    before = (mass * w.velocities).sum(axis=0)
    scale = float((mass * np.abs(w.velocities)).sum()) + 1.0
    for _ in range(5):
        w.step()
    after = (mass * w.velocities).sum(axis=0)
    assert np.abs(after - before).max() <= 1e-12 * scale * 50


HOSTILE_ROWS = [
    np.array([[np.nan, 0.0]]), np.array([[0.0, np.inf]]), np.array([[-np.inf, 1.0]]),
    np.array([0.0, 1.0]), np.array([[0.0, 1.0, 2.0]]), np.array([["a", "b"]]),
    np.zeros((0, 3)), [[0.0, None]], "positions", None, 3.0,
]


def _base() -> tuple[pysoft.World, list[int]]:
    w = pysoft.World()
    entities = w.add_particles([[0.0, 1.0], [1.0, 1.0], [2.0, 1.0]])
    w.add_spring(entities[0], entities[1])
    return w, entities


@pytest.mark.parametrize("value", HOSTILE_ROWS, ids=range(len(HOSTILE_ROWS)))
def test_hostile_positions_are_refused_and_change_nothing(value: Any) -> None:
    w, _ = _base()
    before = fingerprint(w)
    with pytest.raises((ValueError, TypeError, KeyError)):
        w.add_particles(value)
    assert fingerprint(w) == before


@FAST
@given(st.one_of(
    st.lists(st.tuples(st.integers(-5, 2**40), st.integers(-5, 2**40)), min_size=1, max_size=4),
    st.just([[0.5, 1.5]]), st.just([[1, 2, 3]]), st.just("pairs"), st.just([[np.nan, 1.0]])))
def test_hostile_spring_endpoints_are_refused_and_change_nothing(pairs: Any) -> None:
    w, entities = _base()
    live = set(entities)
    if isinstance(pairs, list) and all(isinstance(p, tuple) and len(p) == 2 and {*p} <= live
                                       and p[0] != p[1] for p in pairs):
        return  # valid by chance
    before = fingerprint(w)
    with pytest.raises((ValueError, TypeError, KeyError)):
        w.add_springs(pairs)
    assert fingerprint(w) == before


class TwinWorlds(RuleBasedStateMachine):
    """The same calls on a C world and a NumPy world, in any order: always bitwise equal."""

    def __init__(self) -> None:
        super().__init__()
        self.worlds = [pysoft.World(backend=b) for b in ("c", "python")]
        for w in self.worlds:
            w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.5, restitution=0.2)
        self.particles: list[list[int]] = []  # per particle: its entity in each world
        self.springs: list[list[int]] = []
        self.bodies: list[list[int]] = []
        self.snap: list[bytes] | None = None
        self.topology = 0  # bumped whenever entities come or go: a snapshot needs the same

    @rule(x=st.floats(-1.0, 1.0), y=st.floats(0.1, 2.0))
    def add_particle(self, x: float, y: float) -> None:
        self.particles.append([w.add_particle((x, y)) for w in self.worlds])
        self.topology += 1

    @precondition(lambda self: len(self.particles) >= 2)
    @rule(data=st.data())
    def add_spring(self, data: Any) -> None:
        a, b = data.draw(st.lists(st.integers(0, len(self.particles) - 1), min_size=2, max_size=2,
                                  unique=True))
        self.springs.append([w.add_spring(self.particles[a][k], self.particles[b][k], stiffness=50.0,
                                          damping=0.5) for k, w in enumerate(self.worlds)])
        self.topology += 1

    @rule(x=st.floats(-1.0, 1.0), model=st.sampled_from(["springs", "pressure", "xpbd"]))
    def add_box(self, x: float, model: str) -> None:
        self.bodies.append([pysoft.build.box(w, center=(x, 1.5), size=(0.4, 0.4), model=model)
                            for w in self.worlds])
        self.topology += 1

    def _remove(self, items: list[list[int]], data: Any, body: bool) -> None:
        """Remove one of ``items`` (drawn) from both worlds; a body with its particles."""
        ids = items.pop(data.draw(st.integers(0, len(items) - 1)))
        for w, entity in zip(self.worlds, ids, strict=True):
            w.remove(entity, *(w.body(entity).particles if body else ()))
        self.topology += 1

    @precondition(lambda self: bool(self.bodies))
    @rule(data=st.data())
    def remove_box(self, data: Any) -> None:
        self._remove(self.bodies, data, body=True)

    @precondition(lambda self: bool(self.springs))
    @rule(data=st.data())
    def remove_spring(self, data: Any) -> None:
        self._remove(self.springs, data, body=False)

    @rule(frames=st.integers(1, 3))
    def step(self, frames: int) -> None:
        for _ in range(frames):
            for w in self.worlds:
                w.step()

    @rule()
    def snapshot(self) -> None:
        self.snap = [w.snapshot() for w in self.worlds]
        self.snap_topology = self.topology

    @precondition(lambda self: self.snap is not None and self.snap_topology == self.topology)
    @rule()
    def restore(self) -> None:
        assert self.snap is not None
        for w, blob in zip(self.worlds, self.snap, strict=True):
            w.restore(blob)

    @invariant()
    def the_backends_agree(self) -> None:
        c, py = self.worlds
        assert c.positions.tobytes() == py.positions.tobytes()
        assert c.velocities.tobytes() == py.velocities.tobytes()
        assert c.time == py.time
        assert np.isfinite(c.positions).all()


TwinWorlds.TestCase.settings = settings(derandomize=True, deadline=None, max_examples=12,
                                        stateful_step_count=15,
                                        suppress_health_check=[HealthCheck.too_slow])
test_twin_worlds_stay_bitwise_equal = TwinWorlds.TestCase
