"""Grabbing and picking (``World.grab``, ``nearest_particle``, ``body_at``; ``csrc/src/grab.c``):
a zero-length mouse spring from a particle to a target the game moves, F = k (t - x) - c v."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pysoft
from pysoft import build
from pysoft._ecs import RemovedError

G = 9.81



def test_a_grabbed_particle_swings_at_the_springs_frequency(backend: str) -> None:
    """One free 0.5 kg particle, no gravity, grabbed with k = 50 N/m and no damping, its
    target moved 0.1 m away: it oscillates about the target with period 2 pi sqrt(m / k)
    = 0.628 s (within 0.5 % over 3 s) and keeps its amplitude (1 %)."""
    w = pysoft.World(gravity=(0.0, 0.0), backend=backend, dt=1 / 240)
    p = w.add_particle((0.0, 0.0), mass=0.5)
    g = w.grab(p, stiffness=50.0, damping=0.0)
    g.target = (0.1, 0.0)
    xs = []
    for _ in range(round(3.0 / w.dt)):
        w.step()
        xs.append(float(w.positions[w.row(p), 0]) - 0.1)
    x = np.array(xs)
    up = np.flatnonzero((x[:-1] < 0.0) & (x[1:] >= 0.0))
    times = (up + 1 - x[up + 1] / (x[up + 1] - x[up])) * w.dt
    period = 2.0 * math.pi * math.sqrt(0.5 / 50.0)
    assert abs(float(np.diff(times).mean()) - period) <= 0.005 * period
    assert abs(np.abs(x).max() - 0.1) <= 0.001


def test_a_body_hangs_from_a_grab_at_its_weight_over_k(backend: str) -> None:
    """A 1 kg box held by one corner particle (no floor), k = 50 N/m, damping 2 N s/m. It
    swings about the grab like a pendulum (the damper acts on the held particle only), but
    its vertical momentum stays bounded, so over a long window the spring's mean vertical
    force is the weight: the particle hangs M g / k = 0.196 m below the target on average
    over the last 4 s of 8 (within 1 %)."""
    w = pysoft.World(backend=backend)
    body = build.box(w, center=(0.0, 0.0), size=(0.5, 0.5), mass=1.0)
    corner = w.body(body).outline[0]
    g = w.grab(corner, stiffness=50.0, damping=2.0)
    target = np.array(g.target, dtype=float)
    offsets = []
    for f in range(round(8.0 / w.dt)):
        w.step()
        if f * w.dt >= 4.0:
            offsets.append(target - w.positions[w.row(corner)])
    mean = np.mean(offsets, axis=0)
    assert abs(mean[1] - 1.0 * G / 50.0) <= 0.01 * G / 50.0, mean


def test_grab_a_point_takes_the_nearest_movable_particle(backend: str) -> None:
    w = pysoft.World(backend=backend)
    pinned = w.add_particle((0.0, 0.0), pinned=True)
    near = w.add_particle((0.5, 0.0))
    w.add_particle((2.0, 0.0))
    assert w.nearest_particle((0.1, 0.0)) == pinned
    assert w.nearest_particle((0.1, 0.0), movable=True) == near
    g = w.grab((0.1, 0.0))
    assert g.particle == near
    assert list(g.target) == [0.1, 0.0]  # the target starts at the point
    assert list(w.grab(near).target) == [0.5, 0.0]  # or at a grabbed entity
    with pytest.raises(ValueError, match="what"):
        w.grab((10.0, 10.0), max_distance=1.0)


def test_picking_with_a_reach() -> None:
    w = pysoft.World()
    assert w.nearest_particle((0.0, 0.0)) is None  # an empty world
    a = w.add_particle((1.0, 1.0))
    assert w.nearest_particle((0.0, 0.0)) == a
    assert w.nearest_particle((0.0, 0.0), max_distance=1.0) is None  # sqrt 2 away
    assert w.nearest_particle((0.0, 0.0), max_distance=1.5) == a
    for bad in (-1.0, float("nan"), "x"):
        with pytest.raises(ValueError, match="max_distance"):
            w.nearest_particle((0.0, 0.0), max_distance=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="point"):
        w.nearest_particle((0.0, float("nan")))


def test_release_removal_and_snapshot() -> None:
    w = pysoft.World()
    p, q = w.add_particles([(0.0, 0.0), (1.0, 0.0)])
    g = w.grab(p)
    g.target = (0.0, 1.0)
    blob = w.snapshot()
    g.target = (5.0, 5.0)
    w.restore(blob)
    assert list(g.target) == [0.0, 1.0]
    g.release()
    with pytest.raises(KeyError):
        g.release()
    with pytest.raises(RemovedError):
        _ = g.target
    h = w.grab(q)
    w.remove(q)  # a removed particle takes its grab along
    with pytest.raises(RemovedError):
        _ = h.particle
    assert w.store.tables["grabs"].n == 0


def test_bad_grabs_leave_the_world_unchanged() -> None:
    w = pysoft.World()
    light = w.add_particle((0.0, 0.0), mass=1e-6)
    before = w.snapshot()
    with pytest.raises(ValueError, match="stiffness"):
        w.grab(light, stiffness=50.0)  # k h^2 / m = 217: unstable at 60 Hz x 8 substeps
    with pytest.raises(ValueError, match="stiffness"):
        w.grab(light, stiffness=-1.0)
    with pytest.raises(ValueError, match="damping"):
        w.grab(light, stiffness=1e-8, damping=float("inf"))
    with pytest.raises(KeyError, match="what"):
        w.grab(10**9)
    with pytest.raises(ValueError, match="what"):
        w.grab((0.0,))
    assert w.snapshot() == before


def test_body_at_finds_the_body_under_a_point() -> None:
    """Even-odd point in outline: inside a box; outside; in a concave star's notch (outside);
    on two overlapping boxes the one added last; a rope's open outline encloses nothing."""
    w = pysoft.World()
    box = build.box(w, center=(0.0, 0.0), size=(1.0, 1.0))
    star = build.polygon(w, [(3.0, 0.0), (4.0, 0.4), (5.0, 0.0), (4.4, 1.0), (5.0, 2.0), (3.0, 2.0)])
    top = build.box(w, center=(0.4, 0.0), size=(1.0, 1.0))
    build.rope(w, start=(-3.0, 0.0), end=(-2.0, 0.0), pin=())
    assert w.body_at((-0.3, 0.0)) == box
    assert w.body_at((0.3, 0.0)) == top
    assert w.body_at((3.5, 1.0)) == star
    assert w.body_at((4.7, 1.0)) is None  # the notch
    assert w.body_at((-2.5, 0.0)) is None
    assert w.body_at((9.0, 9.0)) is None
    assert pysoft.World().body_at((0.0, 0.0)) is None


def test_a_pusher_shoves_a_box_and_never_overlaps_it(backend: str) -> None:
    """A 0.2 m pusher swept at 2 m/s through a resting 0.5 m box along the floor: the box is
    shoved ahead (its centroid moves over 1 m), and at every frame's end no particle of it
    is inside the disc (1e-6 m). Then the target stays: the disc stops exactly on it."""
    w = pysoft.World(backend=backend)
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.5)
    box = build.box(w, center=(0.0, 0.26), size=(0.5, 0.5))
    rows = [w.row(e) for e in w.body(box).particles]
    for _ in range(60):
        w.step()
    start = w.positions[rows].mean(axis=0)
    pusher = w.add_pusher(0.2, position=(-1.0, 0.25))
    disc = w.collider(pusher.collider)
    closest = np.inf
    for f in range(60):
        pusher.target = (-1.0 + 2.0 * (f + 1) / 60, 0.25)
        w.step()
        gap = np.linalg.norm(w.positions[rows] - disc.position, axis=1).min() - 0.2
        closest = min(closest, float(gap))
    assert closest > -1e-6
    for _ in range(30):
        w.step()
    assert w.positions[rows].mean(axis=0)[0] - start[0] > 1.0
    assert list(disc.position) == [1.0, 0.25] and list(disc.velocity) == [0.0, 0.0]


def test_pusher_removal_and_bad_arguments() -> None:
    w = pysoft.World()
    before = w.snapshot()
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="radius"):
            w.add_pusher(bad)
    with pytest.raises(ValueError, match="position"):
        w.add_pusher(0.1, position=(0.0,))
    assert w.snapshot() == before
    pusher = w.add_pusher(0.1, position=(1.0, 1.0))
    with pytest.raises(ValueError, match="target"):
        pusher.target = (0.0, float("inf"))
    pusher.remove()
    assert w.store.colliders.n == 0
    w.step()  # a removed pusher is forgotten
    w.add_pusher(0.1)
    w.remove(int(w.store.colliders.view("entity")[0]))
    w.step()
