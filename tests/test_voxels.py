"""Voxel robots (``build.voxels``, Evolution Gym's grid convention): shared corners and sides,
muscles driven per actuator voxel, the outline, and refusals."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

import pysoft
from pysoft import build
from pysoft.build.voxels import MUSCLE_GAIN
from pysoft.shapes import signed_area

WALKER = [[3, 3, 3, 3, 3],
          [3, 3, 3, 3, 3],
          [3, 3, 0, 3, 3],
          [3, 3, 0, 3, 3],
          [3, 3, 0, 3, 3]]


def counts(w: pysoft.World) -> tuple[int, int]:
    return w.store.particles.n, w.store.springs.n


@pytest.mark.parametrize(("grid", "particles", "springs"), [
    ([[2]], 4, 6),
    ([[2, 2]], 6, 11),  # the common side once: 7 sides and 4 diagonals
    ([[1], [4]], 6, 11),
    ([[2, 0], [2, 2]], 8, 16),
    (WALKER, 36, 101),  # 22 voxels: 36 corners, 57 sides, 44 diagonals
])
def test_voxels_share_corners_and_sides(grid: list[list[int]], particles: int, springs: int) -> None:
    w = pysoft.World(gravity=(0.0, 0.0))
    robot = build.voxels(w, grid)
    assert counts(w) == (particles, springs)
    assert len(robot.particles) == particles
    assert np.sum(np.asarray(grid) > 0) * 0.1 == pytest.approx(w.store.particles.view("mass").sum())


def test_the_outline_is_the_outer_boundary_counter_clockwise() -> None:
    w = pysoft.World()
    walker = build.voxels(w, WALKER, origin=(1.0, 0.0))
    outline = w.body(walker.body).outline
    assert len(outline) == 26  # 2 (5 + 5) sides and the notch's 2 x 3
    area = signed_area(w.positions[[w.row(p) for p in outline]])
    assert area == pytest.approx(22 * 0.01)
    ring = build.voxels(w, [[2, 2, 2], [2, 0, 2], [2, 2, 2]], origin=(3.0, 0.0))
    outline = w.body(ring.body).outline
    assert len(outline) == 12
    assert signed_area(w.positions[[w.row(p) for p in outline]]) == pytest.approx(0.09)
    box = w.positions[[w.row(p) for p in walker.particles]]
    assert box.min(axis=0).tolist() == pytest.approx([1.0, 0.0])  # origin: the lower-left corner
    assert box.max(axis=0).tolist() == pytest.approx([1.5, 0.5])


def test_a_side_two_actuators_share_follows_their_mean() -> None:
    w = pysoft.World(gravity=(0.0, 0.0))
    robot = build.voxels(w, [[3], [3]])  # two horizontal actuators, one above the other
    assert robot.actuators.tolist() == [[0, 0], [1, 0]]
    robot.drive(np.array([0.6, 1.4]))
    top, bottom = (set(robot.voxel_muscles(r, 0)) for r in (0, 1))
    assert len(top) == len(bottom) == 2 and len(top & bottom) == 1
    by_spring = dict(zip(robot.muscles.springs.tolist(), robot.muscles.activation.tolist(), strict=True))
    assert by_spring[(top & bottom).pop()] == pytest.approx(1.0)
    assert by_spring[(top - bottom).pop()] == 0.6
    assert by_spring[(bottom - top).pop()] == 1.4
    with pytest.raises(ValueError, match=r"row, column: voxel \(0, 1\) is not an actuator"):
        robot.voxel_muscles(0, 1)


def _rest_of_one_actuator(a: float, side: float, k: float) -> tuple[float, float]:
    """A horizontal actuator alone at rest: width w and height h minimise the energy of its
    two muscles (stiffness MUSCLE_GAIN k, rest a side), two vertical sides (k, side) and two
    diagonals (k, side sqrt 2); by Newton's method on the gradient."""
    km, d0 = MUSCLE_GAIN * k, side * math.sqrt(2.0)
    x = np.array([a * side, side])
    for _ in range(50):
        w, h = x
        d = math.hypot(w, h)
        grad = np.array([2 * km * (w - a * side) + 2 * k * (d - d0) * w / d,
                         2 * k * (h - side) + 2 * k * (d - d0) * h / d])
        t = 1.0 - d0 / d  # the diagonal's Hessian: k (t I + (d0 / d) u u^T), twice
        u = np.array([w, h]) / d
        hess = 2 * k * (t * np.eye(2) + (d0 / d) * np.outer(u, u)) + np.diag([2 * km, 2 * k])
        x = x - np.linalg.solve(hess, grad)
    return float(x[0]), float(x[1])


@pytest.mark.parametrize("backend", ["c", "python"])
@pytest.mark.parametrize("activation", [0.6, 1.0, 1.4])
def test_an_actuator_rests_where_its_springs_balance(backend: str, activation: float) -> None:
    w = pysoft.World(backend=backend, gravity=(0.0, 0.0))
    robot = build.voxels(w, [[3]], stiffness=100.0, damping=2.0)
    robot.drive(activation)
    for _ in range(900):
        w.step()
    p = w.positions[[w.row(e) for e in robot.particles]]  # top-left, top-right, bottom-right, -left
    width = 0.5 * (np.linalg.norm(p[1] - p[0]) + np.linalg.norm(p[2] - p[3]))
    height = 0.5 * (np.linalg.norm(p[3] - p[0]) + np.linalg.norm(p[2] - p[1]))
    expected = _rest_of_one_actuator(activation, 0.1, 100.0)
    assert (width, height) == pytest.approx(expected, abs=1e-6)


def test_a_walker_driven_by_a_gait_moves_and_stays_up() -> None:
    """The 5 x 5 walker with its columns in antiphase (0.2 about 1, 2 Hz) walks: its centre
    moves more than 5 cm in 10 s, and it stays more than 80 % as tall."""
    w = pysoft.World()
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=1.0)
    robot = build.voxels(w, WALKER)
    start = robot.center()
    phase = np.where(robot.actuators[:, 1] < 2, 0.0, np.pi)
    gait = np.empty(len(robot.actuators))
    for frame in range(600):
        np.sin(2 * np.pi * 2.0 * frame / 60 + phase, out=gait)
        gait *= 0.2
        gait += 1.0
        robot.drive(gait)
        w.step()
    assert abs(robot.center()[0] - start[0]) > 0.05
    assert w.positions[:, 1].max() > 0.8 * 0.5
    assert np.abs(robot.velocity()).max() < 2.0


def test_drive_allocates_nothing() -> None:
    """Driving 400 actuators (610 muscles: 4.9 KB a float64 array) allocates less than half
    of one such array: the Python objects of the calls only."""
    w = pysoft.World()
    grid = np.full((20, 20), 3)
    grid[::2, 1::2] = 4  # both kinds of actuator
    robot = build.voxels(w, grid)
    values = np.linspace(0.5, 1.5, len(robot.actuators))
    tracemalloc.start()
    try:
        for _ in range(50):  # (the interpreter's first runs of a function allocate its caches)
            robot.drive(values)
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        for k in range(200):
            values[k % len(values)] = 1.0
            robot.drive(values)
        grown = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    assert grown < 2048, f"drive allocated {grown} bytes over 200 calls"


@pytest.mark.parametrize(("grid", "match"), [
    ([[0, 0], [0, 0]], "grid has no voxel"),
    ([[2, 0, 2]], r"do not all connect side to side \(voxel \[0, 2\]"),
    ([[2, 0], [0, 2]], "do not all connect"),
    ([[2, 5]], r"grid\[0, 1\] = 5"),
    ([[-1]], r"grid\[0, 0\] = -1"),
    ([2, 2], "2D array"),
    ([[2.5]], "integer voxel kinds"),
    ([["a"]], "integer voxel kinds"),
])
def test_bad_grids_are_refused_naming_grid_and_add_nothing(grid: object, match: str) -> None:
    w = pysoft.World()
    with pytest.raises(ValueError, match=match):
        build.voxels(w, grid)
    assert counts(w) == (0, 0) and w.store.bodies.n == 0


def test_bad_arguments_and_a_3d_world_are_refused() -> None:
    w = pysoft.World()
    for kwargs, match in (({"cell": 0.0}, "cell"), ({"mass": -1.0}, "mass"), ({"origin": (0.0,)}, "origin"),
                          ({"friction": -1.0}, "friction"), ({"activation": float("nan")}, "activation")):
        with pytest.raises(ValueError, match=match):
            build.voxels(w, WALKER, **kwargs)
        assert counts(w) == (0, 0)
    robot = build.voxels(w, [[2, 3]])
    for bad, match in ((np.array([1.0, 1.0]), "1 numbers"), (float("nan"), "activation"),
                       (np.array([np.nan]), "NaN")):
        with pytest.raises(ValueError, match=match):
            robot.drive(bad)
    rigid = build.voxels(w, [[1]], origin=(2.0, 0.0))
    with pytest.raises(ValueError, match="no actuator voxels"):
        rigid.drive(1.0)
    with pytest.raises(ValueError, match=r"world: build\.voxels makes a 2D robot"):
        build.voxels(pysoft.World(dim=3), WALKER)
