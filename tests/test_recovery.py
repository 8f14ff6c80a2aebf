"""Recovery scenarios of the robustness matrix: bodies knocked out of shape come back.

Every builder x model cell of ``test_defaults._cells()`` that has an area (the ropes have
none), at the World's defaults (60 Hz, 8 substeps, C backend) on a floor
``Plane((0, 1), 0)`` of friction 0.5:

- mirrored: placed at rest height (lowest point 1 cm above the floor), then turned inside
  out (x -> 2 cx - x for all its particles: its outline's signed area is negative); let go;
- folded: placed at rest height, then folded in half: the members right of its centre
  are reflected over the vertical line through it (x -> 2 cx - x), onto its left half; let go;
- dragged: placed at rest height, 2 s of rest, then its first outline particle is dragged
  at 5 m/s sideways and up (45 degrees) for 0.3 s as a game would (before every frame its
  position on the path and velocity = v; it is not pinned, so its body pulls it back within
  the frame), then released;
- pressed: placed at rest height, 2 s of rest, then a kinematic plate (a ``Box`` twice the
  body's width) from 5 cm above it comes down at 0.5 m/s until its bottom is at 20 % of the
  body's rest height, holds 0.5 s, goes up at 2 m/s (released as it starts up) and is
  removed once 0.3 m clear;
- small disc: dropped (lowest point at 1 m) onto two static 5 cm discs 0.3 m above the
  floor, 0.1 m either side of its centre;
- wall: spawned at rest height overlapping a static wall ``Plane((1, 0), 0)`` by 30 % of its
  width; let go.

Each cell is judged twice. ``SETTLE`` (3 s) after its release, its shape: the outline's area
within 10 % of the built area and positive, no outline self-crossing (the issue's "returns
to its shape within 3 s"). ``SECONDS`` (10 s, the drop test's horizon) after the release:
the same again, no particle faster than 0.05 m/s over the last 0.5 s (at rest), nothing
non-finite and no InstabilityError (it propagates), and nothing on the wrong side of an
obstacle (no member inside the pressed plate at the end of any frame of the press or hold,
none inside the wall, no small disc inside the outline). Rest is judged at 10 s, not 3 s:
a body dragged at 5 m/s and let go is thrown, and what it does then (tumbling, rolling at up to 2 m/s with the
builders' rolling resistance of 0.1) is motion, not a failure to recover. Parametrised so a
failing cell names itself (``mirrored-box-springs``). The cells that do not hold yet are
marked xfail(strict=True) with their cause, so fixing one turns its test red until the mark
goes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest
from test_body_contacts import inside
from test_body_contacts import self_crossings as crossings
from test_defaults import AREA_TOLERANCE, MODELS, REST_SPEED, REST_WINDOW, SECONDS, Maker, _cells, known_marks

import pysoft
from pysoft.shapes import signed_area

SETTLE = 3.0  # seconds after the release to come back to shape (the issue's "within 3 s")
REST = 2.0  # seconds at rest before a drag or a press
GAP = 0.01  # "at rest height": the lowest point this far above the floor
DRAG_VELOCITY = 5.0 * np.array([1.0, 1.0]) / np.sqrt(2.0)  # m/s, sideways and up
DRAG_TIME = 0.3
PRESS_SPEED, LIFT_SPEED, PRESS_TO, HOLD = 0.5, 2.0, 0.2, 0.5  # m/s, m/s, of rest height, s
PLATE = 0.05  # the plate's half thickness (m)
CLEAR = 0.3  # the lifted plate is removed once its bottom is this far above the body's rest top
DISC_RADIUS, DISC_OFFSET, DISC_HEIGHT = 0.05, 0.1, 0.3
WALL_OVERLAP = 0.3  # of the body's width
TOUCH = 1e-3  # m: a particle farther than this inside an obstacle is on its wrong side

SCENARIOS = ("mirrored", "folded", "dragged", "pressed", "small_disc", "wall")


class Outcome(NamedTuple):
    area: float  # the outline's signed area / the built area, at the end
    crossings: int  # pairs of outline edges that cross, at the end
    fastest: float  # the fastest particle over the last REST_WINDOW (m/s)
    shaped: tuple[float, int]  # (area, crossings) as above, SETTLE s after the release
    finite: bool
    misplaced: int  # on the wrong side of an obstacle: see run()


Hook = Callable[[pysoft.World, list[int], float], None]  # (world, outline rows, time since release)


def _floor(backend: str = "c", integrator: str = "symplectic_euler", friction: float = 0.5) -> pysoft.World:
    w = pysoft.World(backend=backend)
    w.integrator = integrator
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=friction)
    return w


def _rows(w: pysoft.World, entities: list[int]) -> list[int]:
    return [w.row(e) for e in entities]


def _move(w: pysoft.World, body: int, dx: float, y_low: float) -> None:
    """Translate the body by dx sideways, its lowest point to ``y_low``."""
    rows = _rows(w, w.body(body).particles)
    w.positions[rows] += (dx, y_low - float(w.positions[rows, 1].min()))


def _frames(seconds: float, w: pysoft.World) -> int:
    return round(seconds / w.dt)


def run(scenario: str, make: Maker, settle: float = SECONDS, hook: Hook | None = None,
        backend: str = "c", integrator: str = "symplectic_euler", friction: float = 0.5,
        hz: float = 60.0) -> Outcome:
    """Play ``scenario`` with the body ``make`` builds; measure it ``settle`` s after release
    (its shape also at SETTLE s, if that comes first).
    ``misplaced`` counts what went where it must not: pressed, the most members inside the
    plate at the end of a frame of the press or hold (it went through instead of squashing); wall, the
    members inside the wall at the end; small disc, the discs' centres inside the outline at
    the end. ``hook`` (for exploring) is called after every frame from the release on.
    ``integrator``, the floor's ``friction`` and the frame rate ``hz`` vary the defaults."""
    w = _floor(backend, integrator, friction)
    w.dt = 1.0 / hz
    body = make(w)
    members = _rows(w, w.body(body).particles)
    outline = _rows(w, w.body(body).outline)
    built = signed_area(w.positions[outline])
    cx = float(w.positions[members, 0].mean())
    discs = [(cx + side * DISC_OFFSET, DISC_HEIGHT) for side in (-1.0, 1.0)]
    if scenario == "small_disc":
        for centre in discs:
            w.add_collider(pysoft.Disc(centre, DISC_RADIUS), friction=0.5)
    elif scenario == "wall":
        width = float(np.ptp(w.positions[members, 0]))
        w.add_collider(pysoft.Plane((1.0, 0.0), 0.0), friction=0.5)
        _move(w, body, -WALL_OVERLAP * width - float(w.positions[members, 0].min()), GAP)
    else:
        _move(w, body, 0.0, GAP)
    if scenario == "mirrored":
        w.positions[members, 0] = 2.0 * cx - w.positions[members, 0]
        assert signed_area(w.positions[outline]) < 0.0
    elif scenario == "folded":
        right = [r for r in members if w.positions[r, 0] > cx]
        w.positions[right, 0] = 2.0 * cx - w.positions[right, 0]
        assert abs(signed_area(w.positions[outline])) < 0.75 * abs(built)
    plate, clear, misplaced = None, 0.0, 0
    if scenario in ("dragged", "pressed"):
        for _ in range(_frames(REST, w)):
            w.step()
        if scenario == "dragged":
            _drag(w, outline[0])
        else:
            plate, clear, misplaced = _press(w, members)
    frames, window = _frames(settle, w), _frames(REST_WINDOW, w)
    fastest, shaped_at = 0.0, min(_frames(SETTLE, w), frames)
    shaped = (float("nan"), 0)
    for f in range(frames):
        w.step()
        if f + 1 == shaped_at:
            ring = w.positions[outline]
            shaped = (signed_area(ring) / built, crossings(ring))
        if plate is not None and w.collider(plate).position[1] - PLATE > clear:
            w.remove(plate)
            plate = None
        if f >= frames - window:
            fastest = max(fastest, float(np.linalg.norm(w.velocities, axis=1).max()))
        if hook is not None:
            hook(w, outline, (f + 1) * w.dt)
    finite = bool(np.isfinite(w.positions).all() and np.isfinite(w.velocities).all())
    ring = w.positions[outline]
    if scenario == "wall":
        misplaced = int((w.positions[members, 0] < -TOUCH).sum())
    elif scenario == "small_disc":
        misplaced = int(inside(ring, np.array(discs)).sum())
    return Outcome(signed_area(ring) / built, crossings(ring), fastest, shaped, finite, misplaced)


def _drag(w: pysoft.World, row: int) -> None:
    """Drag particle ``row`` at DRAG_VELOCITY for DRAG_TIME as a game would, by writing it
    before every frame (its position on the drag's path, velocity = v; it is not pinned, so
    within the frame it also moves with its velocity and its body pulls on it), then let go.
    The path is absolute: adding v dt to wherever the frame left the particle would drag it
    at up to twice the speed (the frame's own motion plus the write)."""
    start = w.positions[row].copy()
    for k in range(_frames(DRAG_TIME, w)):
        w.positions[row] = start + DRAG_VELOCITY * (k * w.dt)
        w.velocities[row] = DRAG_VELOCITY
        w.step()


def _press(w: pysoft.World, members: list[int]) -> tuple[int, float, int]:
    """Bring a plate down onto the body to PRESS_TO of its rest height, hold, lift it; the
    release is the moment it starts up. Returns the plate, the height its bottom must pass for
    it to be removed, and the most members found inside the plate (deeper than TOUCH) at the
    end of a frame of the press or the hold: a plate that goes through a body has them
    inside it on the way (it is 0.1 m thick). Members squeezed out past the plate's ends may
    rise beside it and fold over it: an incompressible body has to go somewhere."""
    pos = w.positions[members]
    height, width = float(pos[:, 1].max()), float(np.ptp(pos[:, 0]))
    cx = float(pos[:, 0].mean())
    bottom = height + 0.05
    plate = w.add_collider(pysoft.Box((cx, bottom + PLATE), (width, PLATE)), friction=0.5,
                           velocity=(0.0, -PRESS_SPEED))
    c = w.collider(plate)
    goal = PRESS_TO * height
    inside = 0

    def step(speed: float) -> None:
        nonlocal inside
        c.velocity = (0.0, -speed)
        w.step()
        low = float(c.position[1]) - PLATE
        pos = w.positions[members]
        inside = max(inside, int(((np.abs(pos[:, 0] - cx) < width - TOUCH) & (pos[:, 1] > low + TOUCH)
                                  & (pos[:, 1] < low + 2 * PLATE - TOUCH)).sum()))

    while bottom > goal:  # the last frame goes only as far as the goal
        speed = min(PRESS_SPEED, (bottom - goal) / w.dt)
        step(speed)
        bottom -= speed * w.dt
    for _ in range(_frames(HOLD, w)):
        step(0.0)
    c.velocity = (0.0, LIFT_SPEED)
    return plate, height + CLEAR, inside


# Cells that do not hold yet, each with what is wrong and its figures (none now: the mirrored
# gas discs, which came back with a fold of the outline, are pulled toward their rotated rest
# shape while mirrored, UNMIRROR_STIFFNESS; the pressed XPBD disc, which rocked at 0.08 m/s
# at 10 s, rests since; at 27 sizes, see test_pressed_xpbd_bodies_of_every_size_come_to_rest)
KNOWN: dict[str, str] = {}


def _area_cells() -> list[tuple[str, Maker]]:
    return [(name, make) for name, make in _cells() if not name.startswith("rope")]


def _params() -> list[object]:
    out: list[object] = []
    for scenario in SCENARIOS:
        for name, make in _area_cells():
            cell = f"{scenario}-{name}"
            out.append(pytest.param(scenario, make, id=cell, marks=known_marks(KNOWN, cell)))
    return out


def failure(out: Outcome) -> str | None:
    """What makes ``out`` fail as a matrix cell, or None if it holds."""
    if not out.finite:
        return "non-finite positions or velocities"
    if out.misplaced:
        return f"{out.misplaced} on the wrong side of an obstacle"
    for when, (area, crossed) in ((f"{SETTLE:g} s", out.shaped), ("the end", (out.area, out.crossings))):
        if not (area > 0.0 and abs(area - 1.0) <= AREA_TOLERANCE):
            return f"area {area:.3f} of built at {when}"
        if crossed:
            return f"{crossed} outline crossings at {when}"
    if not out.fastest < REST_SPEED:
        return f"still moving at {out.fastest:.3f} m/s"
    return None


@pytest.mark.parametrize(("scenario", "make"), _params())
def test_it_recovers_its_shape(scenario: str, make: Maker) -> None:
    wrong = failure(run(scenario, make))
    assert wrong is None, wrong


# One cell per scenario, each of another model, also on the NumPy backend
BOTH_BACKENDS = ("mirrored-box-pressure", "dragged-hexagon-springs", "pressed-circle-xpbd",
                 "small_disc-box-shape_matching", "wall-disc-springs+pressure")


@pytest.mark.parametrize("cell", BOTH_BACKENDS)
def test_a_cell_plays_the_same_on_both_backends(cell: str) -> None:
    """The NumPy backend plays a matrix cell bit for bit as the C core does (every kernel's
    twin matches it), so it recovers too."""
    scenario, name = cell.split("-", 1)
    make = dict(_area_cells())[name]
    c, python = run(scenario, make), run(scenario, make, backend="python")
    assert failure(python) is None, failure(python)
    assert python == c


def _press_params() -> list[object]:
    return [pytest.param(model, integrator, id=f"{model}-{integrator}")
            for model in MODELS for integrator in pysoft.INTEGRATORS]


@pytest.mark.parametrize(("model", "integrator"), _press_params())
def test_a_pressing_plate_pushes_every_model_under_every_integrator(model: str, integrator: str) -> None:
    """A kinematic plate pressing a 0.5 m box of each model to 20 % of its height at
    0.5 m/s: no member is inside the plate (deeper than 1 mm) at the end of any frame, under
    every integrator. (An XPBD box with shape matching under integrator "xpbd" raised
    InstabilityError 0.8 s into the press, its fastest member at 0.65, 4.6, 9.9, 26, 59,
    93 m/s every 6 frames: v = (x - p) / h turned the conflicting constraints' corrections
    into velocity without the cap each correction's own velocity change has; now the
    velocity update keeps that cap.)"""
    w = _floor(integrator=integrator)
    body = pysoft.build.box(w, center=(0.0, 0.26), size=(0.5, 0.5), model=model)
    members = _rows(w, w.body(body).particles)
    for _ in range(_frames(REST, w)):
        w.step()
    _, _, inside = _press(w, members)
    assert inside == 0


@pytest.mark.parametrize("friction", [1.0, 2.0])
@pytest.mark.parametrize("rings", [0, 2])
def test_an_xpbd_ring_settles_on_a_high_friction_floor(rings: int, friction: float) -> None:
    """The issue's known limitation: an XPBD ring (or filled disc) dropped 1 m on a floor of
    friction 1 or 2 comes to rest (below REST_SPEED over the last 0.5 s of 10 s) at its
    built area within 10 %, unfolded."""
    w = _floor(friction=friction)
    body = pysoft.build.circle(w, center=(0.0, 1.3), radius=0.3, rings=rings, model="xpbd")
    outline = _rows(w, w.body(body).outline)
    built = signed_area(w.positions[outline])
    fastest, frames, window = 0.0, _frames(SECONDS, w), _frames(REST_WINDOW, w)
    for f in range(frames):
        w.step()
        if f >= frames - window:
            fastest = max(fastest, float(np.linalg.norm(w.velocities, axis=1).max()))
    ring = w.positions[outline]
    assert abs(signed_area(ring) / built - 1.0) <= AREA_TOLERANCE and crossings(ring) == 0
    assert fastest < REST_SPEED, f"still moving at {fastest:.3f} m/s"


@pytest.mark.parametrize("backend", ["c", "python"])
def test_a_plate_pressing_an_xpbd_box_does_not_pass_through_it(backend: str) -> None:
    """The issue's case: a kinematic plate pressing down at 0.5 m/s on build.box(model="xpbd")
    (incompressible) to 20 % of its height. Constraints solved after the collide pass (the
    settle) pushed members back into the plate, and 15 of 25 ended above it; now the
    particles meet the colliders again after the settle, and no member is ever inside the
    plate (the most found at a frame's end is 0)."""
    w = pysoft.World(backend=backend)
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.5)
    body = pysoft.build.box(w, center=(0.0, 0.26), size=(0.5, 0.5), model="xpbd")
    members = _rows(w, w.body(body).particles)
    for _ in range(_frames(REST, w)):
        w.step()
    _, _, inside = _press(w, members)
    assert inside == 0


@pytest.mark.parametrize(("scenario", "model", "before"), [
    ("mirrored", "springs+shape_matching", "stayed inverted, area -0.78 after 10 s"),
    ("mirrored", "pressure", "raised InstabilityError within a frame"),
    ("mirrored", "springs", "rested mirrored"),
    ("dragged", "springs", "stayed folded at 55 % of its area"),
])
def test_the_issues_one_metre_boxes_recover(scenario: str, model: str, before: str) -> None:
    """The issue's cases, a 1 x 1 m box of the builder's defaults (``before``: what it did
    when the issue was filed), judged as a matrix cell."""
    out = run(scenario, lambda w: pysoft.build.box(w, center=(0.0, 0.6), size=(1.0, 1.0), model=model))
    for area, crossed in (out.shaped, (out.area, out.crossings)):
        assert area > 0.0 and abs(area - 1.0) <= AREA_TOLERANCE and crossed == 0, before
    assert out.fastest < REST_SPEED


def _pressed_sizes() -> list[tuple[str, Maker]]:
    """XPBD bodies of the matrix's builders at other sizes: discs (rings=2) and rings of radius
    0.25/0.3/0.35 m with 12/16/20 segments, boxes 0.3/0.5/0.7 m wide and 0.3/0.5/0.8 m tall."""
    circles = [(f"{'disc' if rings else 'circle'} {r}/{s}", lambda w, r=r, s=s, rings=rings:
                pysoft.build.circle(w, center=(0.0, 1.3), radius=r, segments=s, rings=rings, model="xpbd"))
               for r in (0.25, 0.3, 0.35) for s in (12, 16, 20) for rings in (2, 0)]
    boxes = [(f"box {a}x{b}", lambda w, a=a, b=b:
              pysoft.build.box(w, center=(0.0, 1.5), size=(a, b), model="xpbd"))
             for a in (0.3, 0.5, 0.7) for b in (0.3, 0.5, 0.8)]
    return circles + boxes


# Sizes that do not hold yet. Approaches tried for the pressed XPBD bodies and not kept (7 of 27
# failed before the settle solve left bodies held from opposite sides alone, constraints.c):
# a volume correction taking the speed it opposes, as distance corrections do (18 of 27 failed);
# velocities following each substep's net correction instead of each correction (6); the stiff
# distance constraints' relative velocity removed after the settle (2, but an XPBD disc dropped
# on the floor no longer came to rest); held particles immovable in the first solve too (8); an
# area compliance above 0 (boxes stayed crushed or inverted); velocities following only the
# share of each correction that is the substep's own motion, split-impulse style (20; in the
# first solve only, 16); the settle's velocity change kept to 0.2-0.3 m/s per particle (2, but
# the matrix's mirrored XPBD disc and shape-matched XPBD box then rocked at 0.14 m/s); no settle
# at all (the matrix's pressed XPBD boxes stayed crushed, 0.82 of their area at 3 s); the
# settle's velocity change dropped, positions kept (15 matrix cells rocking at 0.09-0.42 m/s);
# velocities of particles left in an unmet constraint reset after the settle (InstabilityError);
# particles held by a moving collider movable in the settle (5 of 27); a squeezed body's
# members all movable in the settle (boxes at 30-41 m/s). With the squeezed body left alone by
# the settle, as now: its velocities not following the first solve's corrections either (3
# of 27 failed); a correction's velocity cap of 1 m/s instead of 3 (4 of 27); the first
# solve's velocity change kept to 3 or 6 m/s per particle (bodies still moving at 0.2-40 m/s);
# an inverted triangle's area correction given no velocity at all (4 more of 27 failed; this
# one still did).
# (none from the untangle pass until the spin pass: disc 0.3/12 was thrown at 5.2 m/s as the
# plate lifted, rolled 15 m and still rocked at 0.26 m/s 10 s after the release)
PRESSED_KNOWN: dict[str, str] = {
    "disc 0.35/16": "released, it settles balanced on one vertex of its outline (one particle "
                    "on the floor: an unstable equilibrium); with its angular momentum kept through "
                    "the constraint solve (the spin pass) it tips over from 6.5 s on, as an "
                    "inverted pendulum does, and is still rocking at 0.24 m/s at 10 s (the "
                    "solve's loss of angular momentum had held it balanced)",
}


# Other settings for the pressed sizes (without the untangle pass 14 of the 81 failed: 9
# under integrator "xpbd", 4 on a floor of friction 1, 1 at 120 Hz)
PRESSED_SETTINGS: dict[str, dict[str, Any]] = {
    "integrator xpbd": {"integrator": "xpbd"}, "friction 1": {"friction": 1.0}, "120 Hz": {"hz": 120.0}}


def _pressed_params() -> list[object]:
    return [pytest.param(make, id=name, marks=known_marks(PRESSED_KNOWN, name))
            for name, make in _pressed_sizes()]


@pytest.mark.parametrize("make", _pressed_params())
def test_pressed_xpbd_bodies_of_every_size_come_to_rest(make: Maker) -> None:
    """The "pressed" scenario for the matrix's XPBD bodies at 27 sizes, each judged as a matrix
    cell. Before the settle solve left a body held from opposite sides alone, 7 failed: discs
    squeezed out from under the plate at up to 10 m/s (one flew 3.7 m high) and still rolling
    at 10 s, a 0.7 x 0.8 m box tangled."""
    wrong = failure(run("pressed", make))
    assert wrong is None, wrong


@pytest.mark.parametrize("make", [pytest.param(make, id=name) for name, make in _pressed_sizes()])
@pytest.mark.parametrize("setting", PRESSED_SETTINGS)
def test_pressed_xpbd_bodies_come_to_rest_under_other_settings(setting: str, make: Maker) -> None:
    """The pressed sizes again under integrator "xpbd", on a floor of friction 1, and at
    120 Hz: the same test, so what holds them is not tuned to the defaults."""
    wrong = failure(run("pressed", make, **PRESSED_SETTINGS[setting]))
    assert wrong is None, wrong
