"""A pygame-ce window as a debug-draw backend (the ``pygame`` extra: ``pip install
"pysoft[pygame]"``). ``PygameDrawer`` draws ``world.debug_draw``'s primitives on a surface
through a ``Camera`` (a ``Camera3D`` for a 3D world); colours with alpha below 255 are
blended over the background."""

from __future__ import annotations

from typing import Any

import numpy as np

from pysoft.draw import Camera, Camera3D

BACKGROUND = (250, 250, 245)


def load() -> Any:
    """The pygame module, or a clear error naming the extra."""
    try:
        import pygame
    except ImportError as e:  # pragma: no cover - the extra is installed in the tests
        raise ImportError('pysoft.draw.pygame needs pygame-ce: pip install "pysoft[pygame]"') from e
    return pygame


def _solid(color: Any) -> tuple[int, int, int]:
    """An RGBA colour blended over the background, as an opaque RGB."""
    r, g, b, a = (int(c) for c in color)
    t = a / 255.0
    return tuple(round(c * t + bg * (1.0 - t)) for c, bg in zip((r, g, b), BACKGROUND, strict=True))  # type: ignore[return-value]


class PygameDrawer:
    """Debug-draw primitives on a pygame surface through ``camera``."""

    def __init__(self, surface: Any, camera: Camera | Camera3D) -> None:
        self.pg = load()
        self.surface, self.camera = surface, camera
        self.font = self.pg.font.Font(None, 18)

    def polygons(self, offsets: np.ndarray, points: np.ndarray, fill: np.ndarray, edge: np.ndarray) -> None:
        xy = self.camera.to_screen(points)
        for k in range(len(offsets) - 1):
            ring = xy[offsets[k]:offsets[k + 1]].tolist()
            if len(ring) >= 3:
                self.pg.draw.polygon(self.surface, _solid(fill[k]), ring)
                self.pg.draw.polygon(self.surface, _solid(edge[k]), ring, 1)

    def segments(self, a: np.ndarray, b: np.ndarray, colors: np.ndarray, width: Any = 1.0) -> None:
        pa, pb = self.camera.to_screen(a).tolist(), self.camera.to_screen(b).tolist()
        widths = np.broadcast_to(np.asarray(width, dtype=float), (len(pa),))
        for k in range(len(pa)):
            px = max(1, round(float(widths[k]) * (self.camera.scale if widths[k] < 1.0 else 1.0)))
            self.pg.draw.line(self.surface, _solid(colors[k]), pa[k], pb[k], px)

    def circles(self, centers: np.ndarray, radii: np.ndarray, fill: np.ndarray, edge: np.ndarray) -> None:
        xy = self.camera.to_screen(centers).tolist()
        r = np.maximum(np.asarray(radii, dtype=float) * self.camera.scale, 2.0)
        for k in range(len(xy)):
            self.pg.draw.circle(self.surface, _solid(fill[k]), xy[k], float(r[k]))

    def lines(self, points: np.ndarray, directions: np.ndarray, colors: np.ndarray) -> None:
        far = 4.0 * (self.camera.width + self.camera.height) / self.camera.scale
        self.segments(points - far * directions, points + far * directions, colors, 2.0)

    def arrows(self, origins: np.ndarray, vectors: np.ndarray, colors: np.ndarray) -> None:
        self.segments(origins, origins + vectors, colors, 1.0)

    def text(self, position: Any, string: str, color: Any) -> None:
        x, y = self.camera.to_screen(position)
        self.label((max(4.0, float(x)), max(4.0, float(y))), string, color)

    def label(self, pixel: Any, string: str, color: Any = (20, 20, 20, 255)) -> None:
        """Text at a pixel position (the sandbox's overlay)."""
        self.surface.blit(self.font.render(string, True, _solid(color)), pixel)
