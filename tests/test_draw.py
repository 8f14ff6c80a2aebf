"""Seeing it: the debug-draw protocol (``World.debug_draw``), the camera, and the Pillow
backend (``pysoft.draw.image``), checked on the pixels of real frames."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from PIL import Image

import pysoft
from pysoft import build
from pysoft.draw import BODY_FILL, Camera, DrawFlags, strain_colors
from pysoft.draw import image as pimage


class Recorder:
    """A drawer that keeps what it is given (and implements no ``text``: skipped)."""

    def __init__(self) -> None:
        self.calls: dict[str, list[Any]] = {}

    def __getattr__(self, name: str) -> Any:
        if name in ("polygons", "segments", "circles", "lines", "arrows"):
            return lambda *args: self.calls.setdefault(name, []).append(args)
        raise AttributeError(name)


def _scene() -> pysoft.World:
    w = pysoft.World()
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0))
    w.add_collider(pysoft.Box((3.0, 0.5), (0.5, 0.2)))
    w.add_collider(pysoft.Disc((-3.0, 0.5), 0.3))
    build.box(w, center=(0.0, 1.0))
    build.ball(w, center=(1.5, 1.0), radius=0.4)
    return w


def test_debug_draw_emits_batched_primitives() -> None:
    """One call per kind of primitive, arrays for every item: the two body outlines as one
    polygons call (ragged offsets), every spring in one segments call, the floor as a line;
    a drawer without a method (here ``text``) is skipped, and one with none is fine."""
    w = _scene()
    rec = Recorder()
    w.debug_draw(rec, DrawFlags.ALL)
    bodies = [c for c in rec.calls["polygons"] if len(c[0]) == 3]  # 2 bodies: 3 offsets
    assert len(bodies) == 1 and bodies[0][0][-1] == 16 + 20  # the box's and the ball's outlines
    springs = rec.calls["segments"][-1]
    assert len(springs[0]) == w.store.springs.n
    assert len(rec.calls["lines"]) == 1  # the floor
    assert len(rec.calls["circles"][-1][0]) == w.store.particles.n  # PARTICLES
    w.debug_draw(object())


def test_strain_colours_go_from_green_to_red() -> None:
    c = strain_colors(np.array([1.0, 1.1, 1.2, 0.8, 2.0, np.inf]))
    assert tuple(c[0][:3]) == (40, 180, 40)  # at rest: green
    assert tuple(c[2][:3]) == (240, 30, 40) == tuple(c[3][:3]) == tuple(c[4][:3])  # 20 %: red
    assert c[0][0] < c[1][0] < c[2][0] and c[0][1] > c[1][1] > c[2][1]


def test_camera_maps_both_ways_with_y_up() -> None:
    cam = Camera(200, 100, center=(1.0, 2.0), scale=50.0)
    assert cam.to_screen((1.0, 2.0)).tolist() == [100.0, 50.0]
    assert cam.to_screen((2.0, 3.0)).tolist() == [150.0, 0.0]  # right and up: right and up on screen
    pts = np.array([[0.3, -1.2], [5.0, 4.0]])
    assert np.allclose(cam.to_world(cam.to_screen(pts)), pts)
    anchor = np.array([30.0, 70.0])
    before = cam.to_world(anchor)
    cam.zoom(2.5, about=anchor)
    assert cam.scale == 125.0 and np.allclose(cam.to_world(anchor), before)
    cam.pan((10.0, 0.0))  # dragged right: the world moves right under it
    assert np.allclose(cam.to_world(anchor + np.array([10.0, 0.0])), before)
    cam.fit((-1.0, -1.0), (3.0, 1.0), margin=0.0)
    assert np.allclose(cam.to_screen([(-1.0, 0.0), (3.0, 0.0)]), [(0.0, 50.0), (200.0, 50.0)])
    with pytest.raises(ValueError, match="scale"):
        Camera(10, 10, scale=0.0)


def test_a_png_shows_each_body_where_it_is_in_its_colour(tmp_path: Any) -> None:
    """A frame through a known camera: the pixel at the box's centre is the body fill blended
    on the background, one at the ball's centre too, empty sky is background, and the floor
    line is dark."""
    w = _scene()
    cam = Camera(400, 200, center=(0.0, 1.0), scale=50.0)
    path = tmp_path / "frame.png"
    pimage.save_png(w, str(path), camera=cam, flags=DrawFlags.OUTLINES | DrawFlags.COLLIDERS)
    img = np.asarray(Image.open(path).convert("RGB")).astype(int)
    background = np.array([250, 250, 245])
    alpha = BODY_FILL[3] / 255
    fill = np.round(np.array(BODY_FILL[:3]) * alpha + background * (1 - alpha))
    for centre in ((0.0, 1.0), (1.5, 1.0)):
        x, y = cam.to_screen(centre).round().astype(int)
        assert np.abs(img[y, x] - fill).max() <= 2, (centre, img[y, x])
    x, y = cam.to_screen((-1.5, 2.5)).round().astype(int)
    assert img[y, x].tolist() == background.tolist()
    x, y = cam.to_screen((-1.5, 0.0)).round().astype(int)
    assert img[y - 1 : y + 2, x].min() < 120  # the floor


def test_a_stretched_spring_is_drawn_red(tmp_path: Any) -> None:
    w = pysoft.World(gravity=(0.0, 0.0))
    a, b, c, d = w.add_particles([(-1.0, 0.5), (1.0, 0.5), (-1.0, -0.5), (1.0, -0.5)])
    w.add_spring(a, b, rest_length=1.5)  # 33 % stretched: red
    w.add_spring(c, d)  # at rest: green
    cam = Camera(200, 200, scale=80.0)
    img = np.asarray(pimage.frame(w, cam, flags=DrawFlags.SPRINGS | DrawFlags.STRAIN)).astype(int)
    x, y = cam.to_screen((0.0, 0.5)).round().astype(int)
    red = img[y - 1 : y + 2, x]
    assert (red[:, 0] > 200).any() and (red[:, 1] < 60).any()
    x, y = cam.to_screen((0.0, -0.5)).round().astype(int)
    green = img[y - 1 : y + 2, x]
    assert (green[:, 1] > 150).any() and (green[:, 0] < 80).any()


def test_a_gif_has_the_frames_asked_for(tmp_path: Any) -> None:
    w = _scene()
    path = tmp_path / "run.gif"
    n = pimage.record(w, str(path), seconds=0.5, fps=10, size=(160, 120))
    assert n == 5
    gif = Image.open(path)
    assert gif.n_frames == 5 and gif.size == (160, 120)
    assert w.time == pytest.approx(0.5)  # 5 frames of 0.1 s: 6 world frames each
    with pytest.raises(ValueError, match="fps"):
        pimage.record(w, str(path), seconds=0.5, fps=0)
