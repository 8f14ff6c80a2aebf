"""Muscles: springs whose rest lengths follow activations set in bulk (``World.add_muscles``).

A muscle's rest length is its muscle length times its activation, clamped to MUSCLE_RANGE, at
every substep, on both backends; ``drive`` sets all activations from one array without
allocating; snapshots keep them.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import pysoft
from pysoft._constants import MUSCLE_RANGE

BACKENDS = ("c", "python")
G = 9.81


def hanging(backend: str, stiffness: float = 400.0, mass: float = 0.5) -> tuple[pysoft.World, int, int]:
    """A particle of ``mass`` hanging from a pinned one by a 1 m muscle."""
    w = pysoft.World(backend=backend, gravity=(0.0, -G))
    top = w.add_particle((0.0, 2.0), pinned=True)
    bob = w.add_particle((0.0, 1.0), mass=mass)
    spring = w.add_spring(top, bob, stiffness=stiffness, damping=4.0, rest_length=1.0)
    return w, spring, bob


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("activation", [0.6, 1.0, 1.3])
def test_a_hanging_muscle_rests_at_its_driven_length_plus_the_sag(backend: str, activation: float) -> None:
    """Equilibrium: k (L - a L0) = m g, so L = a L0 + m g / k (within 1e-6 m)."""
    w, spring, bob = hanging(backend)
    muscles = w.add_muscles([spring])
    muscles.drive(np.array([activation]))
    for _ in range(600):  # 10 s: the damped bob settles
        w.step()
    length = 2.0 - w.positions[w.row(bob), 1]
    expected = activation * 1.0 + 0.5 * G / 400.0
    assert length == pytest.approx(expected, abs=1e-6)
    assert w.spring(spring).rest_length == pytest.approx(activation, abs=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_activations_are_clamped_to_the_range_and_nan_is_refused(backend: str) -> None:
    w, spring, _ = hanging(backend)
    other = w.add_spring(*(w.add_particle((x, 0.0)) for x in (0.0, 0.5)))
    muscles = w.add_muscles([spring, other], activation=[1.2, 0.9])
    assert muscles.activation.tolist() == [1.2, 0.9]
    assert muscles.rest_lengths.tolist() == [1.0, 0.5]
    muscles.drive([5.0, -3.0])
    assert muscles.activation.tolist() == [MUSCLE_RANGE[1], MUSCLE_RANGE[0]]
    before = w.snapshot()
    for bad, match in (([np.nan, 1.0], "activation is NaN for muscle 0"), ([1.0], "one per muscle"),
                       (["a", "b"], "activation must be real"), (float("nan"), "activation")):
        with pytest.raises(ValueError, match=match):
            muscles.drive(bad)
        assert w.snapshot() == before
    w.step()
    assert w.spring(other).rest_length == pytest.approx(0.5 * MUSCLE_RANGE[0])


def test_drive_allocates_nothing() -> None:
    """Driving 2,000 muscles (16 KB a float64 array) allocates less than an eighth of one
    such array: the Python objects of the calls only."""
    w = pysoft.World()
    ends = w.add_particles(np.stack([np.arange(2001) * 0.01, np.zeros(2001)], axis=1))
    springs = w.add_springs(np.stack([ends[:-1], ends[1:]], axis=1))
    muscles = w.add_muscles(springs)
    values = np.linspace(0.4, 1.6, len(springs))
    tracemalloc.start()
    try:
        for _ in range(50):  # (the interpreter's first runs of a function allocate its caches)
            muscles.drive(values)
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        for k in range(200):
            values[k] = 1.0
            muscles.drive(values)
        grown = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    assert grown < 2048, f"drive allocated {grown} bytes over 200 calls"


@pytest.mark.parametrize("backend", BACKENDS)
def test_snapshots_keep_the_activations(backend: str) -> None:
    w, spring, _ = hanging(backend)
    muscles = w.add_muscles([spring])
    muscles.drive(0.7)
    w.step()
    blob = w.snapshot()
    for _ in range(30):
        w.step()
    after = w.positions.copy()
    muscles.drive(1.4)
    w.step()
    w.restore(blob)
    assert muscles.activation.tolist() == [0.7]
    for _ in range(30):
        w.step()
    assert np.array_equal(w.positions, after)


def test_both_backends_drive_a_box_to_the_same_bits() -> None:
    """A spring box whose springs pulse as muscles, frame after frame, C against the twins."""
    worlds = []
    for backend in BACKENDS:
        w = pysoft.World(backend=backend)
        w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.8)
        pysoft.build.box(w, center=(0.0, 0.3), size=(0.4, 0.4), cells=(3, 3))
        worlds.append((w, w.add_muscles(w.store.springs.view("entity")[::2])))
    still = pysoft.World()
    still.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.8)
    pysoft.build.box(still, center=(0.0, 0.3), size=(0.4, 0.4), cells=(3, 3))
    for frame in range(90):
        for w, muscles in worlds:
            muscles.drive(1.0 + 0.3 * np.sin(0.2 * frame + np.arange(len(muscles))))
            w.step()
        still.step()
    (a, _), (b, _) = worlds
    assert np.array_equal(a.positions, b.positions)
    assert np.array_equal(a.velocities, b.velocities)
    assert np.abs(a.positions - still.positions).max() > 0.01  # (the muscles moved it)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_springs_are_refused_naming_them_and_removed_ones_stop_drive(backend: str) -> None:
    w, spring, bob = hanging(backend)
    before = w.snapshot()
    for springs, match in (([spring, bob], r"springs\[1\] = .* is not a live spring"),
                           ([spring, spring], "lists a spring twice"), ([], "non-empty"),
                           ([[spring]], "1-D"), ([1.5], "spring entities")):
        with pytest.raises(ValueError, match=match):
            w.add_muscles(springs)
        assert w.snapshot() == before
    muscles = w.add_muscles([spring])
    w.remove(spring)
    with pytest.raises(ValueError, match=f"spring {spring} of these muscles was removed"):
        muscles.drive(1.0)


def test_debug_draw_colours_muscles_by_activation() -> None:
    w, spring, _ = hanging("c")
    plain = w.add_spring(*(w.add_particle((x, 0.0)) for x in (0.0, 0.5)))
    muscles = w.add_muscles([spring])

    class Drawer:
        def segments(self, a: np.ndarray, b: np.ndarray, colors: np.ndarray, width: float) -> None:
            self.colors = colors.copy()

    drawer = Drawer()
    rows = [w.spring(e).row for e in (spring, plain)]
    seen = []
    for activation in (0.5, 1.0, 1.5):
        muscles.drive(activation)
        w.debug_draw(drawer)
        seen.append(drawer.colors[rows[0], :3].tolist())
        assert drawer.colors[rows[1], :3].tolist() == pysoft.draw.strain_colors(
            np.array([w.spring_strain(plain)]))[0, :3].tolist()  # a plain spring: by strain
    assert seen == [[40, 90, 230], [110, 110, 110], [230, 50, 40]]
