"""Pillow images of a world: one frame as a PNG, a run as an animated GIF or WebP.

Needs the ``image`` extra (``pip install "pysoft[image]"``: Pillow). ``ImageDrawer`` is a
debug-draw backend (see ``pysoft.draw``): it draws the primitives ``world.debug_draw``
emits through a ``Camera``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pysoft.draw import Camera, Camera3D, debug_draw


def _pil() -> Any:
    try:
        from PIL import Image, ImageDraw
    except ImportError as e:  # pragma: no cover - the extra is installed in the tests
        raise ImportError('pysoft.draw.image needs Pillow: pip install "pysoft[image]"') from e
    return Image, ImageDraw


class ImageDrawer:
    """Draws debug-draw primitives on a Pillow RGB image through ``camera`` (colours with an
    alpha below 255 are blended over what is beneath)."""

    def __init__(self, camera: Camera | Camera3D, background: tuple[int, int, int] = (250, 250, 245)) -> None:
        Image, ImageDraw = _pil()
        self.camera = camera
        self.image = Image.new("RGB", (camera.width, camera.height), background)
        self.draw = ImageDraw.Draw(self.image, "RGBA")

    def polygons(self, offsets: np.ndarray, points: np.ndarray, fill: np.ndarray, edge: np.ndarray) -> None:
        xy = self.camera.to_screen(points)
        for k in range(len(offsets) - 1):
            ring = [tuple(p) for p in xy[offsets[k]:offsets[k + 1]].tolist()]
            if len(ring) >= 3:
                self.draw.polygon(ring, fill=tuple(fill[k].tolist()), outline=tuple(edge[k].tolist()))

    def segments(self, a: np.ndarray, b: np.ndarray, colors: np.ndarray, width: Any = 1.0) -> None:
        pa, pb = self.camera.to_screen(a), self.camera.to_screen(b)
        widths = np.broadcast_to(np.asarray(width, dtype=float), (len(pa),))
        for k in range(len(pa)):
            px = max(1, round(float(widths[k]) * (self.camera.scale if widths[k] < 1.0 else 1.0)))
            self.draw.line([tuple(pa[k]), tuple(pb[k])], fill=tuple(colors[k].tolist()), width=px)

    def circles(self, centers: np.ndarray, radii: np.ndarray, fill: np.ndarray, edge: np.ndarray) -> None:
        xy = self.camera.to_screen(centers)
        r = np.maximum(np.asarray(radii, dtype=float) * self.camera.scale, 1.5)
        for k in range(len(xy)):
            x, y = xy[k]
            self.draw.ellipse([x - r[k], y - r[k], x + r[k], y + r[k]], fill=tuple(fill[k].tolist()),
                              outline=tuple(edge[k].tolist()))

    def lines(self, points: np.ndarray, directions: np.ndarray, colors: np.ndarray) -> None:
        far = 4.0 * (self.camera.width + self.camera.height) / self.camera.scale
        self.segments(points - far * directions, points + far * directions, colors, 2.0)

    def arrows(self, origins: np.ndarray, vectors: np.ndarray, colors: np.ndarray) -> None:
        self.segments(origins, origins + vectors, colors, 1.0)

    def text(self, position: np.ndarray, string: str, color: tuple[int, int, int, int]) -> None:
        x, y = self.camera.to_screen(position)
        self.draw.text((max(2.0, float(x)), max(2.0, float(y))), string, fill=color)


def fit_camera(world: Any, size: tuple[int, int], margin: float = 0.05) -> Camera | Camera3D:
    """A ``Camera`` (2D) or ``Camera3D`` (3D, from the front, above and to the right) of
    ``size`` pixels fitted to the world."""
    camera: Camera | Camera3D = Camera3D(*size) if getattr(world, "dim", 2) == 3 else Camera(*size)
    camera.fit_world(world, margin=margin)
    return camera


def frame(world: Any, camera: Camera | Camera3D | None = None, size: tuple[int, int] = (640, 480),
          flags: int | None = None) -> Any:
    """One Pillow image of ``world`` (the camera fits the world when none is given; a 3D
    world needs a ``Camera3D``); ``flags`` None: ``pysoft.draw.default_flags``."""
    if camera is None:
        camera = fit_camera(world, size)
    drawer = ImageDrawer(camera)
    debug_draw(world, drawer, flags)
    return drawer.image.convert("RGB")


def save_png(world: Any, path: str, **kwargs: Any) -> None:
    """``frame(world, **kwargs)`` written to ``path``."""
    frame(world, **kwargs).save(path)


def record(world: Any, path: str, seconds: float, fps: int = 30, camera: Camera | Camera3D | None = None,
           size: tuple[int, int] = (480, 360), flags: int | None = None,
           progress: Callable[[Sequence[int]], Sequence[int]] | None = None) -> int:
    """Step ``world`` for ``seconds`` and write an animated GIF (or WebP, by the suffix) of
    ``fps`` frames a second to ``path``; the camera is fitted to the first frame when none
    is given. ``progress`` wraps the frame range (e.g. ``tqdm``). Returns the frame count."""
    if not (isinstance(fps, int) and fps > 0):
        raise ValueError(f"fps must be a positive int, got {fps!r}")
    if not seconds > 0:
        raise ValueError(f"seconds must be > 0, got {seconds!r}")
    if camera is None:
        camera = fit_camera(world, size, margin=0.15)
    n = max(1, round(seconds * fps))
    steps = max(1, round(1.0 / (fps * world.dt)))
    frames = []
    indices: Sequence[int] = range(n)
    for _ in progress(indices) if progress else indices:
        for _ in range(steps):
            world.step()
        frames.append(frame(world, camera, flags=flags))
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=round(1000 / fps), loop=0)
    return n
