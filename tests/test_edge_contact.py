"""Outline edges against colliders (csrc/src/edges.c), on both backends.

The scenes: ``build.box(w, center=(0, 1), size=(1, 1), cells=(4, 4))``, a 1 m
spring box of 5 x 5 particles of radius 0 (outline particles 0.25 m apart, the
bottom ones at x = 0, +-0.25, +-0.5 m), dropped from rest (bottom at 0.5 m) in
``World()`` (60 Hz, 8 substeps) with a floor ``Plane((0, 1), 0)``, onto
obstacles smaller than the particle spacing, centred between two bottom
particles at x = 0.1 m (or at x = -0.1 and 0.1 m):

* ``disc``: ``Disc((x, 0.3), 0.05)``;
* ``diamond``: ``Box((x, 0.3), (0.04, 0.04), angle=pi / 4)``, its upward corner at
  0.3 + 0.04 sqrt 2 = 0.357 m;
* ``segment``: a vertical ``Segment((x, 0), (x, 0.3), radius=0.01)``, its upper end
  at 0.3 m.

Before outline edges met colliders each obstacle went through the box's bottom
edge and ended 0.31-0.36 m inside the outline, with the box on the floor
(``test_the_scenes_fail_without_the_edge_pass`` keeps that so). An obstacle's
clearance is the signed distance of its feature point (disc centre, diamond
corner, segment end) from the outline polygon, positive outside, minus the
feature's radius: 0 when touching.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import pysoft
from pysoft import _kernels, build, scenes
from pysoft.features import edges

BACKENDS = ("c", "python")
OBSTACLES = ("disc", "diamond", "segment")
TOL = 1e-6  # m: how far a feature may be inside the outline (measured: below 1e-13 m)



def clearance(outline: np.ndarray, q: np.ndarray, radius: float) -> float:
    """Signed distance of ``q`` from the closed polygon ``outline`` (positive outside), minus
    ``radius``."""
    a, b = outline, np.roll(outline, -1, axis=0)
    e = b - a
    t = np.clip(((q - a) * e).sum(axis=1) / np.maximum((e * e).sum(axis=1), 1e-300), 0.0, 1.0)
    d = float(np.linalg.norm(q - (a + t[:, None] * e), axis=1).min())
    straddle = (a[:, 1] > q[1]) != (b[:, 1] > q[1])
    x_cross = a[:, 0] + (q[1] - a[:, 1]) * e[:, 0] / np.where(straddle, e[:, 1], 1.0)
    inside = int(np.count_nonzero(straddle & (q[0] < x_cross))) % 2 == 1
    return (-d if inside else d) - radius


def obstacle(w: pysoft.World, kind: str, x: float) -> tuple[int, list[tuple[np.ndarray, float]]]:
    """Add obstacle ``kind`` at ``x``; its collider and its feature points with their radii."""
    if kind == "disc":
        return w.add_collider(pysoft.Disc((x, 0.3), 0.05), friction=0.5), [(np.array([x, 0.3]), 0.05)]
    if kind == "diamond":
        d = 0.04 * math.sqrt(2.0)
        corners = [np.array([x, 0.3]) + v for v in ((0.0, d), (d, 0.0), (0.0, -d), (-d, 0.0))]
        box = pysoft.Box((x, 0.3), (0.04, 0.04), angle=math.pi / 4)
        return w.add_collider(box, friction=0.5), [(c, 0.0) for c in corners]
    seg = pysoft.Segment((x, 0.0), (x, 0.3), radius=0.01)
    return w.add_collider(seg, friction=0.5), [(np.array([x, 0.3]), 0.01)]


def scene(backend: str, kind: str, xs: tuple[float, ...]) -> tuple[pysoft.World, list[int], list[int],
                                                                  list[tuple[np.ndarray, float]]]:
    w = pysoft.World(backend=backend)
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.6)
    colliders, features = [], []
    for x in xs:
        c, f = obstacle(w, kind, x)
        colliders.append(c)
        features += f
    box = build.box(w, center=(0.0, 1.0), size=(1.0, 1.0), cells=(4, 4))
    rows = [w.row(e) for e in w.body(box).outline]
    return w, rows, colliders, features


def run(w: pysoft.World, rows: list[int], features: list[tuple[np.ndarray, float]], frames: int,
        colliders: list[int] | None = None) -> dict[str, Any]:
    """Step ``frames`` frames; the worst clearance and the lowest particle over the frame ends,
    and whether any of ``colliders`` was reported touched."""
    worst, lowest, touched = math.inf, math.inf, False
    for frame in range(frames):
        w.step()
        assert np.isfinite(w.positions).all() and np.isfinite(w.velocities).all(), frame
        outline = w.positions[rows]
        worst = min(worst, *(clearance(outline, q, r) for q, r in features))
        lowest = min(lowest, float(w.positions[:, 1].min()))
        if colliders:
            touched = touched or bool(np.isin(w.contacts.colliders, colliders).any())
    return {"worst": worst, "lowest": lowest, "touched": touched}


# -- scenes --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", OBSTACLES)
def test_a_small_obstacle_between_two_outline_particles_stays_outside(backend: str, kind: str) -> None:
    """The box dropped onto one obstacle at x = 0.1 m (right of its centre: it lands on it,
    tips over to the left and falls to the floor). At every frame end for 1.5 s: the
    obstacle's clearance >= -TOL (1e-6 m), no particle below the floor by more than TOL,
    positions and velocities finite; the box's edge ends reported the obstacle as touched."""
    w, rows, colliders, features = scene(backend, kind, (0.1,))
    r = run(w, rows, features, 90, colliders)
    assert r["worst"] >= -TOL, f"{kind}: {-r['worst']:.3g} m inside the box"
    assert r["lowest"] >= -TOL
    assert r["touched"]


@pytest.mark.parametrize("kind", OBSTACLES)
def test_a_box_rests_on_two_small_obstacles(backend: str, kind: str) -> None:
    """The box dropped onto two obstacles at x = -0.1 and 0.1 m rests on them. At every frame
    end for 2.5 s: both obstacles' clearance >= -TOL and the lowest particle above 0.15 m
    (it never reaches the floor; the soft box's corners sag about 3 cm below the
    obstacles' tops, 0.31-0.36 m). Over the last 0.5 s it rests centred on them: its
    outline's centroid above 0.7 m (0.78-0.84 m on the obstacles, 0.49 m on the floor),
    within 2 cm of x = 0, and moving by less than 2 cm (the spring box still bobs by
    about 1 cm)."""
    w, rows, _, features = scene(backend, kind, (-0.1, 0.1))
    r = run(w, rows, features, 120)
    assert r["worst"] >= -TOL, f"{kind}: {-r['worst']:.3g} m inside the box"
    centres = []
    for _ in range(30):
        r2 = run(w, rows, features, 1)
        assert r2["worst"] >= -TOL
        centres.append(w.positions[rows].mean(axis=0))
    assert min(r["lowest"], r2["lowest"]) > 0.15, f"{kind}: the box came down to {r['lowest']:.3f} m"
    c = np.array(centres)
    assert (c[:, 1] > 0.7).all() and (np.abs(c[:, 0]) < 0.02).all(), c[-1]
    assert float(np.abs(c - c[-1]).max()) < 0.02


@pytest.mark.parametrize("kind", OBSTACLES)
def test_the_scenes_fail_without_the_edge_pass(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """With the edge pass switched off (particles alone meet colliders, as before), the same
    drop onto two obstacles ends with them more than 0.2 m inside the box and the box on
    the floor (lowest particle below 1 mm): the tests above can fail."""
    monkeypatch.setattr(edges._EdgeTerm, "needed", lambda self: False)
    w, rows, _, features = scene("c", kind, (-0.1, 0.1))
    r = run(w, rows, features, 120)
    assert r["worst"] < -0.2
    assert r["lowest"] < 1e-3


def test_backends_agree_bitwise_with_edge_contacts() -> None:
    """One second of the box on two diamonds, next to a kinematic segment (moving at 0.2 m/s
    and turning at 0.5 rad/s) that a second box lands on: positions and velocities of the C
    core and the NumPy twins are bitwise equal at every frame end, and the edges met the
    colliders (both diamonds and the segment reported touched)."""
    worlds = []
    for be in BACKENDS:
        w, _, colliders, _ = scene(be, "diamond", (-0.1, 0.1))
        seg = w.add_collider(pysoft.Segment((2.0, 0.0), (2.0, 0.4), radius=0.01), velocity=(0.2, 0.0),
                             angular_velocity=0.5, friction=0.8, restitution=0.5)
        build.box(w, center=(2.05, 1.0), size=(0.6, 0.6), cells=(3, 3), model="xpbd")
        worlds.append((w, set(colliders) | {seg}))
    touched: set[int] = set()
    for frame in range(60):
        for w, _ in worlds:
            w.step()
        (c, wanted), (py, _) = worlds
        assert c.positions.tobytes() == py.positions.tobytes(), f"positions differ at frame {frame + 1}"
        assert c.velocities.tobytes() == py.velocities.tobytes(), f"velocities differ at frame {frame + 1}"
        touched |= set(c.contacts.colliders.tolist()) & wanted
    assert touched == worlds[0][1]


def _pile_on_obstacles(backend: str) -> pysoft.World:
    """``scenes.pile(100, width=15)`` (0.5 m spring boxes of 5 x 5 particles, rows 0.6 m
    apart from 0.35 m up) with ten small obstacles on the floor under its first row, 1.45 m
    apart: discs, diamonds and posts as above but 0.05 m up (posts 0.15 m high), so the
    boxes start with some poking into them."""
    w = scenes.pile(100, width=15.0, backend=backend)
    for k in range(10):
        x = -6.5 + 1.45 * k
        shape = (pysoft.Disc((x, 0.05), 0.05), pysoft.Box((x, 0.05), (0.04, 0.04), angle=math.pi / 4),
                 pysoft.Segment((x, 0.0), (x, 0.15), 0.01))[k % 3]
        w.add_collider(shape, friction=0.5)
    return w


def test_a_pile_on_small_obstacles_stays_calm() -> None:
    """The pile on obstacles for 2 s (C core): no particle ever faster than 15 m/s (the top
    boxes fall 3 m: 7.7 m/s) and the world raises no InstabilityError. Without the lever cap
    (EDGE_LEVER), a box corner held on one obstacle's face next to its corner flung the
    edge's other end: 114 m/s within 8 frames here, 490 m/s in the 400-box pile."""
    w = _pile_on_obstacles("c")
    fastest = 0.0
    for _ in range(120):
        w.step()
        fastest = max(fastest, float(np.abs(w.velocities).max()))
    assert fastest < 15.0


def test_the_pile_on_obstacles_is_bitwise_equal_on_both_backends() -> None:
    """Its first 8 frames, while the boxes land on the obstacles: the C core and the NumPy
    twins give the same bits."""
    c, py = _pile_on_obstacles("c"), _pile_on_obstacles("python")
    for frame in range(8):
        c.step()
        py.step()
        assert c.positions.tobytes() == py.positions.tobytes(), f"frame {frame + 1}"
        assert c.velocities.tobytes() == py.velocities.tobytes(), f"frame {frame + 1}"


# -- the kernel against the formulas ---------------------------------------------------------


def _one_edge(pos: list[list[float]], prev: list[list[float]], inv_mass: list[float],
              vel: list[list[float]], collider: pysoft.Disc, friction: float = 0.0,
              restitution: float = 0.0) -> dict[str, Any]:
    """A triangle body (0.5, 0) -> (-0.5, 0) -> (0, -1), counter-clockwise, so its top edge
    runs from particle 0 to 1 with outward normal (0, 1); one disc collider."""
    from samplers import collider_arrays

    geo = collider.geometry(2)
    arrays = collider_arrays([geo], 2)
    del arrays["grow"]
    inv = np.array(inv_mass)
    mass = np.where(inv > 0.0, 1.0 / np.where(inv > 0.0, inv, 1.0), np.inf)
    return {"pos": np.array(pos, dtype=float), "vel": np.array(vel, dtype=float),
            "contact_collider": np.full(3, -1, dtype=np.int32), "contact_normal": np.zeros((3, 2)),
            "contact_impulse": np.zeros(3), "support": np.zeros((3, 2)),
            "stuck": np.zeros(3, dtype=np.int32),
            "edge_near": np.zeros(3, dtype=np.int32), "prev_pos": np.array(prev, dtype=float),
            "radius": np.zeros(3), "mass": mass, "inv_mass": inv,
            "outline": np.array([0, 1, 2], dtype=np.int32), "outline_start": np.zeros(1, np.int32),
            "outline_count": np.full(1, 3, np.int32), "body_flags": np.ones(1, np.int32), **arrays,
            "velocity": np.zeros((1, 2)), "angular_velocity": np.zeros((1, 3)),
            "restitution": np.array([restitution]), "friction": np.array([friction]),
            "keep": np.ones(1)}


def _call(backend: str, args: dict[str, Any], iterations: int = 1) -> int:
    """One sweep (iterations = 1), h = 1/480 s, rest_speed 0.25 m/s."""
    arrays = {k: v for k, v in args.items() if isinstance(v, np.ndarray)}
    out: int = _kernels.call("edge_collide", backend, iterations, 0, 1.0 / 480.0, 0.25, **arrays)
    return out


TRIANGLE = [[0.5, 0.0], [-0.5, 0.0], [0.0, -1.0]]


@pytest.mark.parametrize(("inv_mass", "share"), [([1.0, 2.0, 1.0], 1.0), ([1.0, 0.0, 1.0], 1.0),
                                                 ([0.0, 2.0, 1.0], 0.6)])
def test_the_edge_point_moves_by_the_depth_and_bounces(backend: str, inv_mass: list[float],
                                                        share: float) -> None:
    """Disc R = 0.05 at (0.2, 0.03): on the top edge at t = 0.3 (from particle 0 at x = 0.5),
    s = 0.03 above it, depth 0.02; the edge moves up at 1 m/s (approach 1 m/s > 0.25),
    restitution 0.5, friction 0, one sweep; the ends' inverse masses 1 and 2, or one of them
    pinned. The edge point (1 - t) x_0 + t x_1 moves down by exactly share x 0.02 m (1e-12 m)
    and its velocity changes by share x -1.5 m/s (to -0.5 m/s; 1e-12 m/s): share is 1 but
    when end 0 is pinned, the contact 0.3 of the edge from it: end 1 would have to move by
    depth / t = 3.3 depth, and the lever cap (EDGE_LEVER = 2) gives share = 2 t = 0.6. A
    pinned end does not move; when both move, the impulses on the ends, m dv, are in the
    ratio (1 - t) : t (no moment about the point); they sum to the reported impulse."""
    t = 0.3
    args = _one_edge(TRIANGLE, TRIANGLE, inv_mass, [[0.0, 1.0], [0.0, 1.0], [0.0, 0.0]],
                     pysoft.Disc((0.2, 0.03), 0.05), restitution=0.5)
    before = args["pos"].copy()
    assert _call(backend, args) == 1
    x, v = args["pos"], args["vel"]
    point = (1 - t) * x[0] + t * x[1]
    moved = point - ((1 - t) * before[0] + t * before[1])
    assert np.allclose(moved, [0.0, -0.02 * share], rtol=0, atol=1e-12)
    assert abs(float(((1 - t) * v[0] + t * v[1])[1]) - (1.0 - 1.5 * share)) < 1e-12
    dv = v[:2] - np.array([[0.0, 1.0], [0.0, 1.0]])
    for i in (0, 1):
        if inv_mass[i] == 0.0:
            assert np.array_equal(x[i], before[i]) and np.array_equal(dv[i], [0.0, 0.0])
    moving = [i for i in (0, 1) if inv_mass[i] > 0.0]
    impulse = dv[moving, 1] / np.array(inv_mass)[moving]
    if len(moving) == 2:
        assert impulse[0] * t == pytest.approx(impulse[1] * (1 - t), rel=1e-12)
    assert float(impulse.sum()) == pytest.approx(-float(args["contact_impulse"].sum()), rel=1e-12)
    assert (args["contact_collider"][:2] == [0 if m else -1 for m in inv_mass[:2]]).all()


def test_kinetic_friction_slows_the_edge_point(backend: str) -> None:
    """As above (equal masses, restitution 0) with the edge also sliding at 1 m/s along x and
    friction mu = 0.2: dvn = 1 m/s, so the point's tangential speed drops by mu dvn to
    0.8 m/s (1e-12) and its normal velocity to 0."""
    t = 0.3
    args = _one_edge(TRIANGLE, TRIANGLE, [1.0, 1.0, 1.0], [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]],
                     pysoft.Disc((0.2, 0.03), 0.05), friction=0.2)
    _call(backend, args)
    point = (1 - t) * args["vel"][0] + t * args["vel"][1]
    assert np.allclose(point, [0.8, 0.0], rtol=0, atol=1e-12)
    assert args["stuck"].tolist() == [0, 0, 0]  # sliding: static friction holds neither end


@pytest.mark.parametrize(("friction", "slide", "stuck"), [(0.5, 0.1, 1), (0.2, 1.0, 0), (0.0, 0.0, 0)])
def test_static_friction_marks_the_edge_ends_stuck(backend: str, friction: float, slide: float,
                                                   stuck: int) -> None:
    """As above, the edge sliding at ``slide`` m/s: static friction (0.1 <= 0.5 x 1 m/s) marks
    both ends stuck (the XPBD settle holds them along the surface); sliding past it (1 > 0.2)
    marks neither, and neither does a frictionless disc, even where the slip is exactly 0."""
    args = _one_edge(TRIANGLE, TRIANGLE, [1.0, 1.0, 1.0], [[slide, 1.0], [slide, 1.0], [0.0, 0.0]],
                     pysoft.Disc((0.2, 0.03), 0.05), friction=friction)
    assert _call(backend, args) == 1
    assert args["stuck"].tolist() == [stuck, stuck, 0]


@pytest.mark.parametrize("start_y", [-0.1, 0.1, 0.2])
def test_a_point_inside_is_a_contact_only_if_it_came_through_the_edge(backend: str,
                                                                        start_y: float) -> None:
    """The top edge is now at y = 0.2, above the disc's centre (0.2, 0.03): s = -0.17, the
    centre is on its inner side. If the edge started the substep at y = -0.1 (the centre
    outside) or at y = 0.1 (0.07 inside, within EDGE_SLACK x 1 m = 0.1 m) it came through
    and is pushed back to s = R = 0.05 (the edge point to y = 0.03 - 0.05 = -0.02, 1e-12);
    started at y = 0.2 (0.17 inside), the centre was already deep inside: no contact,
    nothing moves."""
    now = [[0.5, 0.2], [-0.5, 0.2], [0.0, -1.0]]
    prev = [[0.5, start_y], [-0.5, start_y], [0.0, -1.0]]
    args = _one_edge(now, prev, [1.0, 1.0, 1.0], [[0.0, 0.0]] * 3, pysoft.Disc((0.2, 0.03), 0.05))
    before = args["pos"].copy()
    contacts = _call(backend, args)
    if start_y < 0.2:
        assert contacts >= 1
        point = 0.7 * args["pos"][0] + 0.3 * args["pos"][1]
        assert abs(float(point[1]) - -0.02) < 1e-12
    else:
        assert contacts == 0 and np.array_equal(args["pos"], before)


def test_no_edge_pass_without_a_body_a_featured_collider_or_in_3d() -> None:
    """The edge kernel runs once per substep in a world with a closed body and a collider with
    a corner or a capsule end; not at all with only planes, without bodies, or in 3D."""

    with _kernels.counting() as counter:  # kernels bound in the block are counted
        w = pysoft.World()
        w.add_collider(pysoft.Plane((0.0, 1.0), 0.0))
        build.box(w, center=(0.0, 1.0))
        free = pysoft.World()
        free.add_collider(pysoft.Disc((0.0, 0.0), 0.1))
        free.add_particles([[0.0, 1.0], [0.5, 1.0]])
        space = pysoft.World(dim=3, gravity=(0.0, -9.81, 0.0))
        space.add_collider(pysoft.Sphere((0.0, 0.0, 0.0), 0.5))
        space.add_collider(pysoft.Box((0.0, -1.0, 0.0), (2.0, 0.1, 2.0)))
        space.add_particles([[0.0, 1.0, 0.0], [0.1, 1.0, 0.0]])

        def calls(world: pysoft.World) -> int:
            before = counter["edge_collide"]
            world.step()
            return counter["edge_collide"] - before

        assert calls(w) == 0
        w.add_collider(pysoft.Disc((3.0, 0.0), 0.1))
        assert calls(w) == w.substeps
        assert calls(free) == 0
        assert calls(space) == 0


def test_the_kernel_does_nothing_in_3d(backend: str) -> None:
    """Called on 3D arrays (the parity sampler's 3D case), it returns 0 and writes nothing."""
    from samplers import SAMPLERS, arrays_of, scalars_of

    args = SAMPLERS["edge_collide"](np.random.default_rng(5), 200, 3)
    before = {k: v.copy() for k, v in args.items() if isinstance(v, np.ndarray)}
    assert _kernels.call("edge_collide", backend, *scalars_of("edge_collide", args),
                         **arrays_of("edge_collide", args)) == 0
    for name in ("pos", "vel", "contact_collider", "contact_normal", "contact_impulse", "support", "stuck"):
        assert np.array_equal(args[name], before[name])
