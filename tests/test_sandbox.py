"""The sandbox (``python -m pysoft sandbox``) driven by scripted mouse and key events under
SDL's dummy video driver: no display needed."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
pygame = pytest.importorskip("pygame")

from pysoft import build  # noqa: E402
from pysoft.__main__ import main  # noqa: E402
from pysoft.sandbox import Sandbox  # noqa: E402
from pysoft.scenes import SHOWCASE  # noqa: E402

SCENES = list(SHOWCASE)


def _event(kind: int, **attrs: object) -> object:
    return pygame.event.Event(kind, attrs)


def _box_world(box: Sandbox) -> int:
    """A resting 0.5 m spring box on the demo's floor; returns it."""
    body = build.box(box.world, center=(0.0, 2.5), size=(0.5, 0.5))
    for _ in range(90):
        box.frame()
    return body


def _centre(box: Sandbox, body: int) -> np.ndarray:
    w = box.world
    return w.positions[[w.row(e) for e in w.body(body).particles]].mean(axis=0)


def test_a_left_drag_pulls_a_body_toward_the_cursor() -> None:
    box = Sandbox("boxes", (480, 320))
    body = _box_world(box)
    w = box.world
    corner = w.positions[w.row(w.body(body).outline[0])]
    box.handle(_event(pygame.MOUSEBUTTONDOWN, button=1, pos=tuple(box.camera.to_screen(corner))))
    assert box.hand is not None
    goal = corner + np.array([0.0, 1.0])
    box.handle(_event(pygame.MOUSEMOTION, pos=tuple(box.camera.to_screen(goal)), rel=(0, 0),
                      buttons=(1, 0, 0)))
    start = _centre(box, body)
    for _ in range(60):
        box.frame()
    assert _centre(box, body)[1] - start[1] > 0.3  # lifted toward the cursor
    box.handle(_event(pygame.MOUSEBUTTONUP, button=1, pos=tuple(box.camera.to_screen(goal))))
    assert box.hand is None and w.store.tables["grabs"].n == 0
    pygame.quit()


def test_a_right_drag_pushes_a_resting_body() -> None:
    box = Sandbox("boxes", (480, 320))
    body = _box_world(box)
    start = _centre(box, body)
    left = start + np.array([-0.6, -0.05])
    box.handle(_event(pygame.MOUSEBUTTONDOWN, button=3, pos=tuple(box.camera.to_screen(left))))
    for k in range(60):
        here = left + np.array([1.5 * (k + 1) / 60, 0.0])
        box.handle(_event(pygame.MOUSEMOTION, pos=tuple(box.camera.to_screen(here)), rel=(0, 0),
                          buttons=(0, 0, 1)))
        box.frame()
    assert _centre(box, body)[0] - start[0] > 0.3  # shoved to the right
    box.handle(_event(pygame.MOUSEBUTTONUP, button=3, pos=(0, 0)))
    assert box.pusher is None
    pygame.quit()


def test_keys_spawn_bodies_and_pause_stops_time() -> None:
    box = Sandbox("demo", (480, 320))
    bodies = box.world.store.bodies.n
    for key in (pygame.K_b, pygame.K_c, pygame.K_g, pygame.K_r, pygame.K_p):
        box.handle(_event(pygame.KEYDOWN, key=key, unicode="", mod=0))
    assert box.world.store.bodies.n == bodies + 5
    box.frame()
    box.handle(_event(pygame.KEYDOWN, key=pygame.K_SPACE, unicode=" ", mod=0))
    t = box.world.time
    for _ in range(5):
        box.frame()
    assert box.world.time == t  # paused
    box.handle(_event(pygame.KEYDOWN, key=pygame.K_PERIOD, unicode=".", mod=0))
    box.frame()
    assert box.world.time == pytest.approx(t + box.world.dt)  # one step
    box.handle(_event(pygame.KEYDOWN, key=pygame.K_s, unicode="s", mod=0))
    assert box.world.substeps == 16  # the scene's 8, doubled
    box.handle(_event(pygame.QUIT))
    assert not box.running
    pygame.quit()


def test_the_sandbox_command_runs_frames_and_exits(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sandbox", "--scene", "balls", "--frames", "5", "--size", "320x240"]) == 0
    assert "sandbox: 5 frames" in capsys.readouterr().out


# -- the showcase scenes and the live controls ------------------------------------------------

def _key(box: Sandbox, key: int, text: str = "", kind: int | None = None) -> None:
    box.handle(_event(pygame.KEYDOWN if kind is None else kind, key=key, unicode=text, mod=0))


def test_one_registry_names_the_scenes_of_render_and_sandbox() -> None:
    from pysoft import scenes
    from pysoft.__main__ import RENDER_SCENES

    assert tuple(scenes.SHOWCASE) == RENDER_SCENES
    assert {"demo", "course", "planets", "bridge", "balls", "cloth", "pile", "boxes", "jelly3d",
            "drape3d"} <= set(RENDER_SCENES)
    assert all(maker.__doc__ for maker in scenes.SHOWCASE.values())
    with pytest.raises(SystemExit):
        main(["sandbox", "--scene", "no-such-scene", "--frames", "1"])


@pytest.mark.parametrize("scene", SCENES)
def test_every_scene_runs_in_the_sandbox(scene: str) -> None:
    box = Sandbox(scene, (320, 240))
    n = box.world.store.particles.n
    assert box.run(30) == 30
    w = box.world
    assert w.time == pytest.approx(30 * w.dt)
    assert w.store.particles.n == n > 0 and np.isfinite(w.positions).all()


def _view(world: object, size: tuple[int, int] = (960, 640)) -> tuple[np.ndarray, np.ndarray]:
    """The world rectangle the sandbox's window shows at the start (3D: the box its camera was
    fitted to, grown by half its size each way)."""
    from pysoft.draw import Camera
    from pysoft.draw.camera3d import bounds

    if world.dim == 3:  # type: ignore[attr-defined]
        lo, hi = bounds(world)
        return lo - 0.5 * (hi - lo), hi + 0.5 * (hi - lo)
    camera = Camera(*size)
    camera.fit_world(world, margin=0.1)
    corners = camera.to_world(np.array([[0.0, size[1]], [size[0], 0.0]]))
    return corners[0], corners[1]


@pytest.mark.parametrize("scene", SCENES)
def test_every_scene_is_stable_for_ten_seconds(scene: str) -> None:
    """Its defaults (60 Hz, 8 substeps) for 10 s: no InstabilityError (the world raises), and
    every particle stays inside the window's first view and on or above the ground."""
    from pysoft import scenes

    w = scenes.SHOWCASE[scene]()
    lo, hi = _view(w)
    floor = -1e-3 if scene != "planets" else -np.inf  # (a contact leaves at most a mm)
    for _ in range(600):
        w.step()
        assert (w.positions >= lo).all() and (w.positions <= hi).all(), scene
        assert w.positions[:, 1].min() >= floor
    assert np.abs(w.velocities).max() < 3.0  # settled, or the car still rolling


def test_the_stiffness_keys_scale_every_spring_by_their_factor() -> None:
    from pysoft.sandbox import STIFFNESS_LIMIT, stiffness_loads

    box = Sandbox("demo", (320, 240))
    w = box.world
    springs, areas = w.store.springs, w.store.tables["area_springs"]
    built_k, built_a = springs.view("stiffness").copy(), areas.view("stiffness").copy()
    assert areas.n > 0 and stiffness_loads(w).max() * 1.25 < STIFFNESS_LIMIT  # one K is not capped
    _key(box, pygame.K_k, "k")
    assert box.stiffness == pytest.approx(1.25) and box.capped == 0
    np.testing.assert_allclose(springs.view("stiffness"), 1.25 * built_k, rtol=1e-12)
    np.testing.assert_allclose(areas.view("stiffness"), 1.25 * built_a, rtol=1e-12)
    _key(box, pygame.K_j, "j")
    _key(box, pygame.K_j, "j")
    assert box.stiffness == pytest.approx(0.8)
    np.testing.assert_allclose(springs.view("stiffness"), 0.8 * built_k, rtol=1e-12)
    for _ in range(20):  # far beyond what the substep keeps stable: each spring stops at the cap
        _key(box, pygame.K_k, "k")
    assert box.stiffness == 10.0 and box.capped > 0
    ratio = springs.view("stiffness") / built_k
    assert ratio.max() == pytest.approx(10.0) and 1.0 <= ratio.min() < 10.0
    assert stiffness_loads(w).max() <= STIFFNESS_LIMIT * (1 + 1e-9)
    for _ in range(120):  # and it holds
        box.frame()
    assert np.isfinite(w.positions).all()
    for _ in range(11):  # back down: from the built values, not from the capped ones
        _key(box, pygame.K_j, "j")
    assert box.stiffness == pytest.approx(10.0 * 0.8**11) and box.capped == 0
    np.testing.assert_allclose(springs.view("stiffness"), box.stiffness * built_k, rtol=1e-9)
    _key(box, pygame.K_g, "g")  # a new body gets the factor too
    assert springs.view("stiffness")[-1] == pytest.approx(box.stiffness * box._built["springs"][
        int(springs.view("entity")[-1])])
    pygame.quit()


def test_the_substep_key_never_goes_below_the_built_substep_and_recaps_stiffness() -> None:
    from pysoft.sandbox import STIFFNESS_LIMIT, stiffness_loads

    box = Sandbox("balls", (320, 240))
    w = box.world
    for _ in range(12):
        _key(box, pygame.K_k, "k")
    capped_at_8 = w.store.springs.view("stiffness").copy()
    seen = []
    for _ in range(3):
        _key(box, pygame.K_s, "s")
        seen.append(w.substeps)
        assert stiffness_loads(w).max() <= STIFFNESS_LIMIT * (1 + 1e-9)
    assert seen == [16, 32, 8]
    np.testing.assert_allclose(w.store.springs.view("stiffness"), capped_at_8, rtol=1e-12)
    _key(box, pygame.K_s, "s")  # at 16 substeps the springs may be stiffer
    assert (w.store.springs.view("stiffness") > 1.5 * capped_at_8).all()
    pygame.quit()


def test_the_gas_keys_scale_every_pressure_body_by_their_factor() -> None:
    box = Sandbox("balls", (320, 240))
    w = box.world
    bodies = w.store.bodies.view("entity").tolist()
    built = {b: w.body(b).pressure.amount for b in bodies}  # type: ignore[union-attr]
    assert len(built) == 12 and all(a > 0 for a in built.values())
    _key(box, pygame.K_o, "o")
    _key(box, pygame.K_o, "o")
    assert box.gas == pytest.approx(1.5625)
    for b in bodies:
        assert w.body(b).pressure.amount == pytest.approx(1.5625 * built[b], rel=1e-12)  # type: ignore[union-attr]
    _key(box, pygame.K_l, "l")
    assert box.gas == pytest.approx(1.25)
    for b in bodies:
        assert w.body(b).pressure.amount == pytest.approx(1.25 * built[b], rel=1e-12)  # type: ignore[union-attr]
    plain = SHOWCASE["balls"]()  # the same scene with its built gas
    for _ in range(360):
        box.frame()
        plain.step()
    # at rest, more gas stretches the skins further: 1.25x the gas, 4 % more area (measured)
    assert w.body_shapes().areas.sum() > 1.02 * plain.body_shapes().areas.sum()
    box.pointer = np.array([160.0, 20.0])
    _key(box, pygame.K_g, "g")  # a new ball gets the factor too
    fresh = build.ball(w, center=(0.0, 9.0), radius=0.3)  # the same ball, built outside the sandbox
    assert w.body(box.spawned[-1]).pressure.amount == pytest.approx(  # type: ignore[union-attr]
        1.25 * w.body(fresh).pressure.amount)  # type: ignore[union-attr]
    pygame.quit()


def test_the_arrow_keys_drive_the_car_on_the_course() -> None:
    box = Sandbox("course", (480, 240))
    motor = box.motor
    assert motor is not None and motor.throttle == 0.0  # the keys drive in the sandbox
    w = box.world

    def wheels_x() -> float:
        shapes = w.body_shapes()
        rows = [list(shapes.entities).index(b) for b in motor.wheels]
        return float(shapes.centroids[rows, 0].mean())

    for _ in range(30):
        box.frame()
    parked = wheels_x()
    for _ in range(30):  # no throttle: it stays
        box.frame()
    assert abs(wheels_x() - parked) < 0.05
    _key(box, pygame.K_RIGHT)
    assert motor.throttle == 1.0
    for _ in range(60):
        box.frame()
    ahead = wheels_x()
    assert ahead - parked > 0.5  # drove to the right
    _key(box, pygame.K_RIGHT, kind=pygame.KEYUP)
    assert motor.throttle == 0.0
    _key(box, pygame.K_LEFT)
    assert motor.throttle == -1.0
    for _ in range(90):
        box.frame()
    assert wheels_x() < ahead - 0.3  # and back
    _key(box, pygame.K_RIGHT, kind=pygame.KEYUP)  # letting go of the other key changes nothing
    assert motor.throttle == -1.0
    _key(box, pygame.K_LEFT, kind=pygame.KEYUP)
    assert motor.throttle == 0.0
    pygame.quit()


def test_a_world_that_blows_up_pauses_the_sandbox_and_backspace_reloads_it() -> None:
    """The explicit Euler integrator (key I) blows the demo up within a second: the window
    used to die with InstabilityError; it now pauses with the error on screen, and
    BACKSPACE starts the scene afresh."""
    box = Sandbox("demo", (480, 320))
    box.world.integrator = "explicit_euler"
    for _ in range(120):
        box.frame()
        if box.paused:
            break
    assert box.paused and "unstable" in box.trouble
    t = box.world.time
    box.frame()  # paused: time stands still, nothing raises
    assert box.world.time == t
    box.handle(_event(pygame.KEYDOWN, key=pygame.K_BACKSPACE, unicode=""))
    assert not box.paused and box.trouble == "" and box.world.time == 0.0
    assert box.world.integrator == "symplectic_euler"
    box.frame()
    assert box.world.time > 0.0
    pygame.quit()


# -- 3D scenes ------------------------------------------------------------------------------

def _shot(box: Sandbox) -> np.ndarray:
    return pygame.surfarray.array3d(box.screen).astype(int)


def test_3d_right_drag_orbits_and_the_wheel_zooms() -> None:
    box = Sandbox("drape3d", (320, 240))
    cam = box.camera
    box.frame()
    before, yaw, pitch = _shot(box), cam.yaw, cam.pitch  # type: ignore[union-attr]
    box.handle(_event(pygame.MOUSEBUTTONDOWN, button=3, pos=(100, 100)))
    box.handle(_event(pygame.MOUSEMOTION, pos=(160, 80), rel=(60, -20), buttons=(0, 0, 1)))
    box.handle(_event(pygame.MOUSEBUTTONUP, button=3, pos=(160, 80)))
    assert cam.yaw == pytest.approx((yaw - 0.6) % (2 * np.pi))  # type: ignore[union-attr]
    assert cam.pitch == pytest.approx(pitch - 0.2)  # type: ignore[union-attr]
    assert box.pusher is None and box.world.store.colliders.n == 2  # no pusher in 3D
    box.handle(_event(pygame.MOUSEMOTION, pos=(200, 80), rel=(40, 0), buttons=(0, 0, 0)))
    assert cam.yaw == pytest.approx((yaw - 0.6) % (2 * np.pi))  # type: ignore[union-attr]  # let go
    box.paused = True
    box.frame()
    orbited = _shot(box)
    assert (np.abs(orbited - before).sum(axis=2) > 30).mean() > 0.05  # the picture moved
    distance = cam.distance  # type: ignore[union-attr]
    box.handle(_event(pygame.MOUSEWHEEL, x=0, y=2, pos=(160, 120)))
    assert cam.distance == pytest.approx(distance / 1.15**2)  # type: ignore[union-attr]
    box.handle(_event(pygame.MOUSEWHEEL, x=0, y=-2, pos=(160, 120)))
    assert cam.distance == pytest.approx(distance)  # type: ignore[union-attr]
    pygame.quit()


def test_3d_left_drag_grabs_the_particle_under_the_cursor_and_moves_it_facing_the_camera() -> None:
    from pysoft.draw import Camera3D

    box = Sandbox("jelly3d", (480, 320))
    for _ in range(60):  # landed
        box.frame()
    w, cam = box.world, box.camera
    assert isinstance(cam, Camera3D)
    body = int(w.store.bodies.view("entity")[0])  # the XPBD cube
    top = w.body(body).particles[-1]  # its last particle: a top corner
    start = w.positions[w.row(top)].copy()
    pixel = cam.to_screen(start)
    box.handle(_event(pygame.MOUSEBUTTONDOWN, button=1, pos=tuple(pixel)))
    assert box.hand is not None and box.grip is not None
    grabbed = w.positions[w.row(box.hand.particle)].copy()
    assert np.linalg.norm(cam.to_screen(grabbed) - pixel) < 10.0  # the one under the cursor
    goal = pixel - np.array([0.0, 60.0])  # 60 pixels up the screen
    box.handle(_event(pygame.MOUSEMOTION, pos=tuple(goal), rel=(0, -60), buttons=(1, 0, 0)))
    target = cam.to_world(goal, through=grabbed)
    assert abs(float((target - grabbed) @ cam.forward)) < 1e-9  # in the plane facing the camera
    for _ in range(60):
        box.frame()
    moved = w.positions[w.row(box.hand.particle)]
    assert moved[1] - grabbed[1] > 0.2  # lifted toward the cursor
    assert np.linalg.norm(cam.to_screen(moved) - goal) < np.linalg.norm(pixel - goal) / 2
    box.handle(_event(pygame.MOUSEBUTTONUP, button=1, pos=tuple(goal)))
    assert box.hand is None and box.grip is None and w.store.tables["grabs"].n == 0
    pygame.quit()


def test_3d_keys_spawn_3d_bodies() -> None:
    box = Sandbox("drape3d", (320, 240))
    w = box.world
    bodies = w.store.bodies.n
    for key in (pygame.K_b, pygame.K_c, pygame.K_g, pygame.K_r, pygame.K_p):
        box.handle(_event(pygame.KEYDOWN, key=key, unicode="", mod=0))
    assert box.note == "" and w.store.bodies.n == bodies + 5
    assert all(w.body(b).dim == 3 for b in box.spawned)
    assert len(w.body(box.spawned[0]).tetrahedra) > 0  # B: a cube of tetrahedra (model "springs")
    spawned = [w.positions[w.store.particles.rows(w.body(b).particles)] for b in box.spawned]
    assert all(p[:, 1].min() > 0.0 for p in spawned)  # above the floor
    from pysoft.sandbox import STIFFNESS_LIMIT, stiffness_loads

    for _ in range(12):  # the stiffness key in 3D: capped by the loads of springs and tetrahedra
        _key(box, pygame.K_k, "k")
    assert box.capped > 0 and stiffness_loads(w).max() <= STIFFNESS_LIMIT * (1 + 1e-9)
    pygame.quit()


def _spawned_into_each_other() -> tuple[Sandbox, dict[int, float]]:
    """The 3D sandbox with a cube, a ball, a gas ball, a rope and a torus spawned at one point
    (the cursor's), in the sandbox's model (springs), and each body's built volume."""
    box = Sandbox("drape3d", (320, 240))
    for key in (pygame.K_b, pygame.K_c, pygame.K_g, pygame.K_r, pygame.K_p):
        box.handle(_event(pygame.KEYDOWN, key=key, unicode="", mod=0))
    return box, {b: box.world.body(b).volume for b in box.spawned}


def test_3d_bodies_spawned_into_each_other_stay_stable() -> None:
    """Bodies spawned into each other run 2 s without an instability: the crushed ball of
    springs, whose volume springs stiffen with their faces up to three times their rest pull,
    no longer blows up in its first frames."""
    box, built = _spawned_into_each_other()
    w = box.world
    try:
        for _ in range(120):
            box.frame()
        # the sandbox pauses a world that went unstable, often before its positions go
        # non-finite: both are checked
        assert box.trouble == "" and not box.paused
        assert np.isfinite(w.positions).all() and np.isfinite(w.velocities).all()
        assert len([b for b in box.spawned if built[b] > 0.0]) >= 4
    finally:
        pygame.quit()


@pytest.mark.xfail(strict=True, reason="3D bodies spawned into each other at one point stay "
                   "entangled: after 4 s the cube, the ball and the gas ball hold 21-29 % of their "
                   "built volumes, steady (the torus 84 %); particles inside another body are "
                   "pushed out through whichever of its faces is nearest, which for bodies "
                   "spawned at one centre need not be the side their own body lies on")
def test_3d_bodies_spawned_into_each_other_come_apart() -> None:
    box, built = _spawned_into_each_other()
    w = box.world
    try:
        for _ in range(240):
            box.frame()
        for b in [b for b in box.spawned if built[b] > 0.0]:
            assert w.body(b).volume > 0.8 * built[b], (b, w.body(b).volume / built[b])
    finally:
        pygame.quit()
