"""A frame in one call of the C core (``pysoft._frame``, ``csrc/src/frame.c``) is the frame
the stages run, bit for bit, with the same kernel calls; and worlds that need the stages
(a system of the user's, a moving collider, integrators that evaluate the forces again,
``on_instability="clamp"``) still get them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import pysoft
from pysoft import _kernels, build, scenes

FIELDS = ("pos", "vel", "force", "prev_pos", "contact_collider", "contact_normal", "contact_impulse",
          "touch_body", "touch_impulse", "support")


class _Noop:
    """A system of the user's that does nothing: its world's frames run stage by stage."""

    def process(self, h: float) -> None:
        pass


def _state(w: pysoft.World) -> dict[str, bytes]:
    P = w.store.particles
    out = {name: P.view(name).tobytes() for name in FIELDS}
    B = w.store.bodies
    out["rolled"] = B.view("rolled").tobytes()
    out["amount"] = B.view("amount").tobytes()
    return out


def _rolling_box(w: pysoft.World) -> None:
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.8)
    w.add_collider(pysoft.Box((1.5, 0.3), (0.4, 0.1), angle=0.2))
    w.add_collider(pysoft.Segment((-2.0, 0.4), (-1.0, 0.2), 0.03))
    body = build.circle(w, center=(0.0, 0.5), radius=0.3, rings=1)
    w.body(body).rolling_resistance = 0.3
    w.grab(w.body(body).particles[0], stiffness=50.0).target = (0.5, 1.0)
    w.add_gravity_well((0.0, -5.0), strength=2.0)


SCENES: dict[str, Callable[[], pysoft.World]] = {
    "canonical boxes": lambda: scenes.boxes(1000),
    "pressure balls": lambda: scenes.pressure_balls(8),
    "shape-matched boxes": lambda: scenes.matched_boxes(8),
    "pile (body contacts)": lambda: scenes.pile(bodies=12, width=3.0),
    "bridge (edges against corners)": scenes.bridge,
    "planets (a well)": scenes.planets,
    "rolling, grabbed, a well, corners": lambda: _world(_rolling_box),
    "XPBD box (the settle)": lambda: _world(_xpbd),
    "XPBD box on corners (edges and settle move)": lambda: _world(_xpbd_corners),
    "XPBD boxes, integrator xpbd": lambda: _world(_xpbd_corners, integrator="xpbd"),
    "XPBD box mirrored (untangle, spin)": lambda: _world(_xpbd_mirrored),
    "XPBD cloth": lambda: scenes.xpbd_cloth(12),
    "3D tet cubes (integrator xpbd)": lambda: scenes.tet_cubes(4),
    "3D material and XPBD cubes, mirrored": lambda: _world(_cubes3d, dim=3, integrator="xpbd"),
    "3D cloth draped, self-colliding (contacts after the settle)": scenes.drape3d,
}


def _xpbd(w: pysoft.World) -> None:
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.8)
    build.box(w, center=(0.0, 0.3), size=(0.5, 0.5), model="xpbd")


def _xpbd_corners(w: pysoft.World) -> None:
    """XPBD boxes and a disc falling on a floor and onto a tilted box's corner, beside a spring
    box: the outline edges' contacts and the settle both move particles."""
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.6)
    w.add_collider(pysoft.Box((0.4, 0.15), (0.3, 0.15), angle=0.6), friction=0.4)
    build.box(w, center=(0.3, 0.8), size=(0.4, 0.4), model="xpbd")
    build.circle(w, center=(-0.6, 0.5), radius=0.2, model="xpbd")
    build.box(w, center=(1.2, 0.5), size=(0.4, 0.4), model="springs")


def _xpbd_mirrored(w: pysoft.World) -> None:
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.5)
    b = build.box(w, center=(0.0, 0.6), size=(0.5, 0.5), model="xpbd")
    rows = w.store.particles.rows(w.body(b).particles)
    w.store.particles.view("pos")[rows, 0] *= -1.0  # mirrored: inside out


def _cubes3d(w: pysoft.World) -> None:
    w.add_collider(pysoft.Plane((0.0, 1.0, 0.0), 0.0), friction=0.6)
    for k, model in enumerate(("xpbd", "material")):
        b = build.cube(w, center=(0.6 * k, 0.4, 0.0), size=0.3, cells=2, model=model)
        if k == 0:
            rows = w.store.particles.rows(w.body(b).particles)
            w.store.particles.view("pos")[rows, 0] *= -1.0  # mirrored: inside out


def _world(fill: Callable[[pysoft.World], Any], **args: Any) -> pysoft.World:
    w = pysoft.World(**args)
    fill(w)
    return w


def _fused_and_staged(make: Callable[[], pysoft.World], frames: int,
                      change: Callable[[pysoft.World], Any] | None = None) -> int:
    """Two copies of a scene, the second with a system of the user's (so the stages run it),
    ``change`` (if any) made to both after 10 frames: every particle and body field the passes
    write is equal bit for bit after every frame, and both made the same kernel calls (the
    one-call frame counts each kernel its ops ran), the second none in one call. Returns the
    frames the first ran in one foreign call."""
    with _kernels.counting() as one:
        fused = make()
    with _kernels.counting() as staged_calls:
        staged = make()
    staged.add_system(_Noop(), priority=50)
    dt = None
    for frame in range(frames):
        if frame == 10 and change is not None:
            dt = change(fused)
            change(staged)
        fused.step(dt)
        staged.step(dt)
        assert _state(fused) == _state(staged), f"frame {frame}"
    calls = {k: v for k, v in one.items() if not k.startswith("bind:") and k != "run_frame"}
    assert calls == {k: v for k, v in staged_calls.items() if not k.startswith("bind:")}
    assert "run_frame" not in staged_calls
    return one["run_frame"]


@pytest.mark.parametrize("name", list(SCENES))
def test_a_frame_in_one_call_is_the_frame_of_the_stages(name: str) -> None:
    """120 frames of each scene both ways are the same; the one-call world made one foreign
    call a frame."""
    assert _fused_and_staged(SCENES[name], 120) == 120


def _moving(w: pysoft.World) -> None:
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0))
    w.add_collider(pysoft.Box((0.0, 1.5), (1.0, 0.1)), velocity=(0.0, -0.5))
    build.box(w, center=(0.0, 0.3), size=(0.5, 0.5))


STAGED: dict[str, Callable[[], pysoft.World]] = {
    "a moving collider": lambda: _world(_moving),
    "integrator verlet": lambda: _world(_moving, integrator="verlet"),
    "integrator rk4": lambda: scenes.boxes(100, integrator="rk4"),
    "on_instability clamp": lambda: scenes.boxes(100, on_instability="clamp"),
    "the NumPy backend": lambda: scenes.boxes(100, backend="python"),
}


@pytest.mark.parametrize("name", list(STAGED))
def test_what_needs_the_stages_gets_them(name: str) -> None:
    with _kernels.counting() as counter:
        w = STAGED[name]()
        for _ in range(5):
            w.step()
    assert "run_frame" not in counter


def test_a_world_changes_between_one_call_frames() -> None:
    """Spawning, removing and retuning between frames: the next one-call frame sees it, as
    the stages do (the ops are described again after a change)."""
    worlds = [scenes.boxes(200), scenes.boxes(200)]
    worlds[1].add_system(_Noop(), priority=50)
    for w in worlds:
        for _ in range(30):
            w.step()
        ball = build.ball(w, center=(0.0, 3.0), radius=0.3)
        w.substeps, w.contact_iterations, w.drag = 5, 3, 0.2
        for _ in range(30):
            w.step()
        w.remove(ball)
        w.collider(w.store.colliders.view("entity")[0]).friction = 0.1
        w.threads = 2
        for _ in range(30):
            w.step()
    assert _state(worlds[0]) == _state(worlds[1])


def _two_bodies(w: pysoft.World) -> None:
    _rolling_box(w)
    build.box(w, center=(-0.8, 0.4), size=(0.4, 0.3))


def _first_body(w: pysoft.World) -> Any:
    return w.body(int(w.store.bodies.view("entity")[0]))


# Changes made between frames that leave every table's rows as they were: while h, the tables
# and the settings stay as they were, a one-call frame asks only the terms with a
# ``frame_start`` (which read the arrays' values) again, so each of these must still reach it
# (a change that returns a number: the frame length passed to step() from then on).
CHANGES: dict[str, Callable[[pysoft.World], Any]] = {
    "drag": lambda w: setattr(w, "drag", 0.5),
    "dt (h)": lambda w: setattr(w, "dt", 1.0 / 90.0),
    "a frame's length (h)": lambda w: 1.0 / 75.0,  # passed to step() from then on
    "substeps": lambda w: setattr(w, "substeps", 12),
    "threads": lambda w: setattr(w, "threads", 2),
    "integrator": lambda w: setattr(w, "integrator", "explicit_euler"),
    "contact iterations": lambda w: setattr(w, "contact_iterations", 1),
    "restitution threshold": lambda w: setattr(w, "restitution_threshold", 3.0),
    "body contact iterations": lambda w: setattr(w, "body_contact_iterations", 3),
    "body collisions off": lambda w: setattr(w, "body_collisions", False),
    "particle collisions on": lambda w: setattr(w, "particle_collisions", True),
    "on_instability ignore": lambda w: setattr(w, "on_instability", "ignore"),
    "gravity": lambda w: setattr(w, "gravity", (1.0, -3.0)),
    "no rolling resistance": lambda w: w.store.bodies.view("rolling_resistance").fill(0.0),
    "a collider's damping": lambda w: setattr(
        w.collider(int(w.store.colliders.view("entity")[0])), "tangential_damping", 40.0),
    "a collider starts moving": lambda w: setattr(  # from then on, frames of the stages
        w.collider(int(w.store.colliders.view("entity")[1])), "velocity", (0.0, 0.2)),
}


def _lone_body(w: pysoft.World) -> None:
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0))
    build.ball(w, center=(0.0, 0.5), radius=0.3)


@pytest.mark.parametrize("name", list(CHANGES))
def test_a_change_of_values_reaches_the_next_one_call_frame(name: str) -> None:
    """A scene of bodies touching each other, colliders with corners, rolling resistance, a
    grab and a well, changed after 10 frames: the frames in one call are those of the stages,
    and every frame runs in one call (until a collider moves)."""
    frames = _fused_and_staged(lambda: _world(_two_bodies), 40, CHANGES[name])
    assert frames == (10 if name == "a collider starts moving" else 40)


def test_muscles_set_their_rest_lengths_once_a_frame_in_one_call() -> None:
    """A voxel walker driven by its gait, a new activation every frame: the one-call frame sets
    the muscles' rest lengths on its first substep only (nothing else in its calls writes an
    activation or a rest length), the stages on every substep, and the frames are the same bit
    for bit; the other kernels are called as often both ways."""
    from pysoft.build.voxels import WALKER, gait

    def walker() -> tuple[pysoft.World, Any]:
        w = pysoft.World(substeps=8)
        w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=1.0)
        return w, build.voxels(w, WALKER, origin=(0.5, 0.0))

    with _kernels.counting() as one:
        fused, robot_f = walker()
    with _kernels.counting() as staged_calls:
        staged, robot_s = walker()
    staged.add_system(_Noop(), priority=50)
    action = np.empty(len(robot_f.actuators))
    frames = 60
    for frame in range(frames):
        gait(robot_f.actuators, frame, action)
        robot_f.drive(1.0 + 0.5 * action)
        robot_s.drive(1.0 + 0.5 * action)
        fused.step()
        staged.step()
        assert _state(fused) == _state(staged), f"frame {frame}"
        assert fused.store.springs.view("rest_length").tobytes() == \
            staged.store.springs.view("rest_length").tobytes(), f"frame {frame}"
    assert one["run_frame"] == frames and one["muscles"] == frames
    assert staged_calls["muscles"] == frames * 8
    calls = {k: v for k, v in one.items() if not k.startswith("bind:") and k not in ("run_frame", "muscles")}
    assert calls == {k: v for k, v in staged_calls.items() if not k.startswith("bind:") and k != "muscles"}


def test_a_lone_body_that_starts_colliding_with_itself_calls_the_contacts() -> None:
    """The body-contact pass runs for a lone body only when it collides with itself, a flag
    in the bodies' array (written without a change of rows)."""
    def collide_with_itself(w: pysoft.World) -> None:
        _first_body(w).self_collision = True

    assert _fused_and_staged(lambda: _world(_lone_body), 40, collide_with_itself) == 40


def _blow_up(w: pysoft.World, system: _Noop | None) -> pysoft.InstabilityError:
    """Step ``w`` (with ``system`` added, so that the stages run it) until it raises."""
    if system is not None:
        w.add_system(system, priority=50)
    with pytest.raises(pysoft.InstabilityError) as caught:
        for _ in range(10):
            w.step()
    return caught.value


def test_an_instability_in_a_one_call_frame_is_reported_where_it_began() -> None:
    """The scan of the one-call frame's last substep finds the blow-up, and the replay (by the
    stages) names where it began, as for a frame the stages ran."""
    reports = []
    for system in (None, _Noop()):
        w = pysoft.World()
        a, b = w.add_particles([[0.0, 1.0], [0.5, 1.0]])
        w.add_spring(a, b, stiffness=1e9, rest_length=0.1)
        error = _blow_up(w, system)
        message = str(error).replace(str(error.entity), "<entity>")  # worlds number them apart
        reports.append((message, error.row, error.pass_name, error.substep, w.time))
    assert reports[0] == reports[1]
    assert reports[0][2] is not None


def test_the_profile_names_each_stage_of_a_one_call_frame() -> None:
    w = scenes.boxes(1000)
    w.step()
    assert set(w.profile) == {"forces", "integrate", "constraints", "collide", "finish"}
    assert all(ms >= 0.0 for ms in w.profile.values()) and w.profile["forces"] > 0.0
    assert np.isfinite(list(w.profile.values())).all()


@pytest.mark.parametrize("threads", [2, 3])
def test_threads_take_ranges_of_rows_through_the_row_kernels(threads: int) -> None:
    """With several threads the one-call frame has each take its range of the particle rows
    through the integration, the collide pass and the scan (one wait for the three): the
    frame of the stages on as many threads, bit for bit, with the same kernel calls."""
    with _kernels.counting() as one:
        fused = scenes.boxes(6400)
    with _kernels.counting() as staged_calls:
        staged = scenes.boxes(6400)
    staged.add_system(_Noop(), priority=50)
    for w in (fused, staged):
        w.threads = threads
    fused.step()
    staged.step()
    groups = {op.name: op.c.group for op in fused._frame.ops}
    assert groups["symplectic_euler"] == groups["collide"] == groups["find_unstable"] >= 0
    assert groups["springs"] == -1 and groups["gravity_drag"] not in (-1, groups["collide"])
    for frame in range(1, 60):
        fused.step()
        staged.step()
        assert _state(fused) == _state(staged), f"frame {frame}"
    calls = {k: v for k, v in one.items() if not k.startswith("bind:") and k != "run_frame"}
    assert calls == {k: v for k, v in staged_calls.items() if not k.startswith("bind:")}


@pytest.mark.parametrize("pairs", [((10, 11), (4500, 4501)), ((4500, 4501),)])
def test_the_scan_on_threads_reports_the_first_unstable_row(pairs: tuple[tuple[int, int], ...]) -> None:
    """Springs too stiff for the substep blow up in the first thread's rows and the second's,
    or the second's alone: the one-call frame on two threads reports the row, pass and
    substep the stages do (the first unstable row, counted from the first row)."""
    reports = []
    for system in (None, _Noop()):
        w = pysoft.World(threads=2)
        rows = w.add_particles(np.column_stack([np.arange(5000) * 0.1, np.full(5000, 10.0)]))
        for a, b in pairs:
            w.add_spring(rows[a], rows[b], stiffness=1e9, rest_length=0.01)
        error = _blow_up(w, system)
        reports.append((error.row, error.pass_name, error.substep, w.time))
        if system is None:  # the scan's own finding: the first unstable row of them all
            P = w.store.particles
            first = _kernels.call("find_unstable", "c", w.max_speed, pos=P.view("pos"),
                                  vel=P.view("vel"))
            assert w._frame.ops[-1].name == "find_unstable"
            assert w._frame.ops[-1].c.result == first == w.pipeline.unstable >= 0
    assert reports[0] == reports[1]
    assert reports[0][0] in {r for pair in pairs for r in pair}
