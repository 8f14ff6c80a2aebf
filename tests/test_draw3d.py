"""Seeing 3D worlds: ``Camera3D`` and the 3D debug draw, checked on the pixels of Pillow
frames (``pysoft.draw.image``) and on what a drawer is handed."""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import pytest
from PIL import Image

import pysoft
from pysoft import build
from pysoft.__main__ import main
from pysoft.draw import Camera3D, DrawFlags, pick
from pysoft.draw import image as pimage

RED, BLUE = (255, 0, 0), (0, 0, 255)


def _world() -> pysoft.World:
    return pysoft.World(dim=3, gravity=(0.0, 0.0, 0.0))


def _cube(w: pysoft.World, center: Any, color: Any, size: float = 0.5, model: str = "xpbd") -> int:
    body = build.cube(w, center=center, size=size, cells=2, model=model)
    w.body(body).color = color
    return body


def _front(width: int = 200, height: int = 200, **kwargs: Any) -> Camera3D:
    """Looking along -z from 5 m away at the origin: x right, y up."""
    return Camera3D(width, height, **{"target": (0.0, 0.0, 0.0), "distance": 5.0, "yaw": 0.0,
                                      "pitch": 0.0, **kwargs})


def _pixels(w: pysoft.World, camera: Camera3D, flags: int | None = None) -> np.ndarray:
    return np.asarray(pimage.frame(w, camera, flags=flags)).astype(int)


def _mask(img: np.ndarray, rgb: tuple[int, int, int]) -> np.ndarray:
    """Pixels of a shade of ``rgb`` (a primary colour, lit anywhere from dim to full)."""
    k = int(np.argmax(rgb))
    others = [c for c in range(3) if c != k]
    return (img[..., k] > 60) & (img[..., others] < 40).all(axis=-1)


class Recorder:
    def __init__(self, camera: Camera3D | None = None) -> None:
        self.calls: dict[str, list[Any]] = {}
        if camera is not None:
            self.camera = camera

    def __getattr__(self, name: str) -> Any:
        if name in ("polygons", "segments", "circles", "lines", "arrows", "text"):
            return lambda *args: self.calls.setdefault(name, []).append(args)
        raise AttributeError(name)


def test_the_camera_maps_world_to_screen_and_back() -> None:
    cam = _front(200, 100)
    assert np.allclose(cam.eye, (0.0, 0.0, 5.0)) and np.allclose(cam.forward, (0.0, 0.0, -1.0))
    assert cam.to_screen((0.0, 0.0, 0.0)).tolist() == [100.0, 50.0]
    right_up = cam.to_screen((1.0, 1.0, 0.0))
    assert right_up[0] > 100.0 and right_up[1] < 50.0  # right and up: right and up on screen
    p = np.array([0.3, -0.4, 1.2])
    assert np.allclose(cam.to_world(cam.to_screen(p), through=p), p)
    assert cam.depth(p) == pytest.approx(3.8)
    anchor = np.array([30.0, 70.0])
    before = cam.to_world(anchor)
    cam.zoom(2.0, about=anchor)
    assert cam.distance == pytest.approx(2.5) and np.allclose(cam.to_world(anchor), before)
    cam.look_at((1.0, 0.0, 0.0), eye=(1.0, 3.0, 0.001))
    assert cam.to_screen((1.0, 0.0, 0.0)).tolist() == pytest.approx([100.0, 50.0])
    assert cam.pitch == pytest.approx(np.radians(89.0))  # kept off the vertical
    for bad in ({"fov": 0.0}, {"distance": -1.0}, {"target": (0.0, 0.0)}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            _front(**bad)
    with pytest.raises(ValueError, match="width"):
        Camera3D(0, 10)


def test_fit_shows_the_whole_box() -> None:
    for ortho in (False, True):
        cam = Camera3D(320, 200, yaw=0.7, pitch=0.4, orthographic=ortho)
        lo, hi = np.array([-1.0, 0.0, -2.0]), np.array([3.0, 1.0, 0.5])
        cam.fit(lo, hi, margin=0.05)
        corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1])
                            for z in (lo[2], hi[2])])
        px = cam.to_screen(corners)
        assert (px >= 0).all() and (px[:, 0] <= 320).all() and (px[:, 1] <= 200).all(), ortho
        assert np.ptp(px[:, 0]) > 100 or np.ptp(px[:, 1]) > 100  # and fills a good part of it


def test_a_cube_in_front_of_the_camera_covers_the_centre_pixel() -> None:
    w = _world()
    _cube(w, (0.0, 0.0, 0.0), RED, size=1.0)
    img = _pixels(w, _front())
    assert _mask(img, RED)[100, 100]
    assert tuple(img[2, 198]) == (250, 250, 245)  # the corner: background
    away = _front(yaw=np.pi)  # from behind: still the cube
    assert _mask(_pixels(w, away), RED)[100, 100]
    w.positions[:] += (3.0, 0.0, 0.0)  # moved out of the middle: the centre is background
    assert not _mask(_pixels(w, _front()), RED)[100, 100]


def test_the_near_body_hides_the_far_one_from_either_side() -> None:
    """Painter's order: a red cube nearer the camera than a blue one hides it, however they
    were added; seen from the other side, the blue one hides the red."""
    for order in ((RED, 1.0), (BLUE, -1.0)), ((BLUE, -1.0), (RED, 1.0)):
        w = _world()
        for color, z in order:
            _cube(w, (0.0, 0.0, z), color)
        front = _pixels(w, _front())
        assert _mask(front, RED)[100, 100] and not _mask(front, BLUE).any()
        back = _pixels(w, _front(yaw=np.pi))
        assert _mask(back, BLUE)[100, 100] and not _mask(back, RED).any()


def test_orbit_moves_the_picture() -> None:
    w = _world()
    _cube(w, (1.0, 0.0, 0.0), RED)
    cam = _front()
    before = _mask(_pixels(w, cam), RED)
    cols = np.flatnonzero(before.any(axis=0))
    assert cols.min() > 100  # right of the centre (x right)
    cam.orbit(np.pi / 2)  # a quarter turn about the vertical: the cube comes in front
    during = _mask(_pixels(w, cam), RED)
    assert during[100, 100] and not np.array_equal(before, during)
    cam.orbit(np.pi / 2)  # half a turn: left of the centre
    after = _mask(_pixels(w, cam), RED)
    assert np.flatnonzero(after.any(axis=0)).max() < 100
    cam.orbit(-np.pi / 2, 0.5)  # the cube in front again, looked at from above: lower on screen
    assert np.flatnonzero(_mask(_pixels(w, cam), RED).any(axis=1)).mean() > np.flatnonzero(
        during.any(axis=1)).mean() + 5


def test_perspective_shrinks_far_bodies_orthographic_does_not() -> None:
    w = _world()
    _cube(w, (-0.8, 0.0, 2.0), RED)  # 3 m from the eye
    _cube(w, (0.8, 0.0, -2.0), BLUE)  # 7 m from the eye
    persp = _front(300, 200)
    near, far = (int(_mask(_pixels(w, persp), c).sum()) for c in (RED, BLUE))
    assert near > 3.0 * far  # areas go as 1 / depth^2: (7 / 3)^2 = 5.4, less the sides seen
    ortho = _front(300, 200, orthographic=True)
    assert ortho.scale == pytest.approx(persp.scale)  # the target's size kept
    near, far = (int(_mask(_pixels(w, ortho), c).sum()) for c in (RED, BLUE))
    assert abs(near - far) <= 0.05 * far
    ortho.zoom(2.0)
    assert int(_mask(_pixels(w, ortho), RED).sum()) > 3.0 * near


def test_faces_are_lit_by_the_light_from_above() -> None:
    w = _world()
    _cube(w, (0.0, 0.0, 0.0), (200, 200, 200), size=1.0)
    cam = _front(pitch=0.6, yaw=0.6)  # from above, in front and to the right: three faces
    img = _pixels(w, cam)
    top = img[tuple(cam.to_screen((0.0, 0.5, 0.0)).round().astype(int)[::-1])]
    side = img[tuple(cam.to_screen((0.0, 0.0, 0.5)).round().astype(int)[::-1])]
    assert top.sum() > side.sum() + 30  # the top faces the light more


def test_one_batched_polygons_call_and_flags() -> None:
    """Everything opaque in one polygons call, far first; strained springs red; particles
    with PARTICLES; a plane's patch unless the eye is in its solid side."""
    w = _world()
    w.add_collider(pysoft.Plane((0.0, 1.0, 0.0), -1.0))
    w.add_collider(pysoft.Sphere((2.0, 0.0, 0.0), 0.3))
    w.add_collider(pysoft.Box((-2.0, 0.0, 0.0), (0.2, 0.3, 0.2)))
    w.add_collider(pysoft.Segment((0.0, 0.0, -2.0), (1.0, 0.0, -2.0), 0.1))
    cube = _cube(w, (0.0, 0.0, 0.0), RED, model="springs")
    rec = Recorder(Camera3D(320, 240, pitch=0.3))
    w.debug_draw(rec, DrawFlags.ALL)
    (offsets, points, fill, edge), = rec.calls["polygons"]
    assert points.shape[1] == 2 and len(fill) == len(edge) == len(offsets) - 1
    sizes = np.diff(offsets)
    assert (sizes == 8).sum() >= w.store.particles.n  # the particles' octagons
    assert (sizes == 4).sum() >= w.store.springs.n  # springs as bands
    assert "text" in rec.calls and "lines" not in rec.calls
    # without the plane's patch when the eye is below the floor (in its solid side)
    plain = Recorder(Camera3D(320, 240, pitch=-0.3))
    w.debug_draw(plain, DrawFlags.OUTLINES)
    shown = Recorder(Camera3D(320, 240, pitch=0.3))
    w.debug_draw(shown, DrawFlags.COLLIDERS)
    below = Recorder(Camera3D(320, 240, pitch=-0.3))
    w.debug_draw(below, DrawFlags.COLLIDERS)
    assert len(shown.calls["polygons"][0][2]) > len(below.calls["polygons"][0][2]) + 20  # tiles
    # a stretched spring is drawn red
    stretched = _world()
    a = stretched.add_particle((-1.0, 0.0, 0.0))
    b = stretched.add_particle((1.0, 0.0, 0.0))
    stretched.add_spring(a, b, rest_length=1.0)
    img = _pixels(stretched, _front(), DrawFlags.SPRINGS | DrawFlags.STRAIN)
    assert (img[99:102, 80:120, 0] > 200).any() and (img[99:102, 80:120, 1] < 60).any()
    del cube


def test_bad_input_is_refused_naming_it() -> None:
    w = _world()
    body = _cube(w, (0.0, 0.0, 0.0), RED)
    with pytest.raises(ValueError, match="camera"):
        w.debug_draw(Recorder())  # no camera for a 3D world
    for bad in ((1, 2), (0, 0, 300), "red", (1, 2, np.nan)):
        with pytest.raises(ValueError, match="color"):
            w.body(body).color = bad
    w.body(body).color = (10, 20, 30)
    assert w.body(body).color == (10, 20, 30, 255)
    w.body(body).color = None
    assert w.body(body).color is None


def test_pick_finds_the_nearest_particle_under_the_pointer() -> None:
    w = _world()
    near = w.add_particle((0.0, 0.0, 1.0))
    w.add_particle((0.0, 0.0, -1.0))  # behind it, on the same line of sight
    w.add_particle((0.0, 0.0, 2.0), pinned=True)  # nearer still, but immovable
    cam = _front()
    assert pick(w, cam, (100.0, 100.0)) == near
    assert pick(w, cam, (100.0, 170.0), max_pixels=20.0) is None


def test_the_render_command_draws_3d_scenes(tmp_path: pathlib.Path) -> None:
    png, gif = tmp_path / "drape.png", tmp_path / "drape.gif"
    assert main(["render", "drape3d", "--out", str(png), "--seconds", "0.2", "--size", "160x120"]) == 0
    img = np.asarray(Image.open(png).convert("RGB")).astype(int)
    assert img.shape == (120, 160, 3) and len(np.unique(img.reshape(-1, 3), axis=0)) > 10  # shaded
    assert main(["render", "jelly3d", "--out", str(gif), "--seconds", "0.3", "--fps", "10",
                 "--size", "160x120"]) == 0
    frames = Image.open(gif)
    assert frames.n_frames == 3 and frames.size == (160, 120)


def test_matplotlib_draws_the_3d_view_headless(tmp_path: pathlib.Path) -> None:
    from pysoft.draw import matplotlib as pmpl

    w = _world()
    _cube(w, (0.0, 0.0, 0.0), RED, size=1.0)
    out = tmp_path / "cube.png"
    ax = pmpl.save(w, str(out), camera=_front(300, 200), size=(3, 2), dpi=100)
    img = np.asarray(Image.open(out).convert("RGB")).astype(int)
    x, y = ax.transData.transform((0.0, 0.0))  # the image plane's origin: the cube's centre
    assert _mask(img, RED)[img.shape[0] - round(y), round(x)]
    assert not _mask(img, RED)[2, 2]


def test_contacts_and_the_gas_push_are_arrows() -> None:
    w = pysoft.World(dim=3)
    w.add_collider(pysoft.Plane((0.0, 1.0, 0.0), 0.0))
    ball = build.ball(w, center=(0.0, 0.3, 0.0), radius=0.3, subdivisions=1)
    for _ in range(30):
        w.step()
    rec = Recorder(Camera3D(320, 240))
    w.debug_draw(rec, DrawFlags.CONTACTS)
    (origins, vectors, _), = rec.calls["arrows"]
    assert len(origins) == len(w.contacts.particles) > 0
    assert (vectors[:, 1] > 0).all()  # the floor pushes up: up the screen
    rec = Recorder(Camera3D(320, 240))
    w.debug_draw(rec, DrawFlags.PRESSURE)
    (origins, vectors, _), = rec.calls["arrows"]
    assert len(origins) == len(w.body(ball).surface)  # one a surface triangle
    centre = Camera3D(320, 240).project(w.positions.mean(axis=0))
    assert ((origins - centre) * vectors).sum(axis=1).mean() > 0  # outward, mostly
