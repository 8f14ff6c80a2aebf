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
    assert box.world.substeps == 16
    box.handle(_event(pygame.QUIT))
    assert not box.running
    pygame.quit()


def test_the_sandbox_command_runs_frames_and_exits(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sandbox", "--scene", "balls", "--frames", "5", "--size", "320x240"]) == 0
    assert "sandbox: 5 frames" in capsys.readouterr().out
