"""Matplotlib axes as a debug-draw backend (the ``matplotlib`` extra: ``pip install
"pysoft[matplotlib]"``). ``MatplotlibDrawer`` adds ``world.debug_draw``'s primitives to an
Axes in world coordinates (the axes map world to screen: no ``Camera``), one collection per
call; ``draw`` shows a world on an Axes and ``save`` writes a PNG, SVG or PDF headless."""

from __future__ import annotations

from typing import Any

import numpy as np

from pysoft.draw import Camera3D, _bounds, debug_draw

DOT = 3.0  # points across: a circle of radius 0 (a particle without one) is drawn as a dot


def load() -> Any:
    """The matplotlib module, or a clear error naming the extra."""
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError('pysoft.draw.matplotlib needs matplotlib: pip install "pysoft[matplotlib]"') from e
    return matplotlib


def _colors(colors: Any) -> np.ndarray:
    """RGBA in 0..255 (one colour or (n, 4)) as (n, 4) floats in 0..1."""
    return np.asarray(colors, dtype=float).reshape(-1, 4) / 255.0


class MatplotlibDrawer:
    """Debug-draw primitives on a matplotlib ``ax`` in world coordinates (y up), batched: a
    PolyCollection of polygons, a LineCollection of segments, an EllipseCollection of circles
    (radii in metres), a quiver of arrows. Calls are stacked in the order they come (back to
    front). A segment ``width`` below 1 is in metres (drawn as a band, as capsules need), else
    in points, as the other backends read it; a colour with alpha 0 is not drawn."""

    def __init__(self, ax: Any, zorder: float = 1.0) -> None:
        load()
        self.ax = ax
        self.zorder = zorder

    def _next(self) -> float:
        """The zorder of the next artist: later calls in front, all below the axes' ticks."""
        self.zorder += 1e-3
        return self.zorder

    def polygons(self, offsets: np.ndarray, points: np.ndarray, fill: np.ndarray, edge: np.ndarray) -> None:
        from matplotlib.collections import PolyCollection

        xy = np.asarray(points, dtype=float)[:, :2]
        keep = [k for k in range(len(offsets) - 1) if offsets[k + 1] - offsets[k] >= 3]
        if keep:
            self.ax.add_collection(PolyCollection(
                [xy[offsets[k]:offsets[k + 1]] for k in keep], facecolors=_colors(fill)[keep],
                edgecolors=_colors(edge)[keep], linewidths=1.0, zorder=self._next()))

    def segments(self, a: np.ndarray, b: np.ndarray, colors: np.ndarray, width: Any = 1.0) -> None:
        from matplotlib.collections import LineCollection, PolyCollection

        pa, pb = np.asarray(a, dtype=float)[:, :2], np.asarray(b, dtype=float)[:, :2]
        rgba = _colors(colors)
        widths = np.broadcast_to(np.asarray(width, dtype=float), (len(pa),))
        shown = rgba[:, 3] > 0
        metres = shown & (widths < 1.0)
        if metres.any():  # bands of the given width: quads around each segment
            d = pb[metres] - pa[metres]
            length = np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-12)
            side = np.stack([-d[:, 1], d[:, 0]], axis=1) / length * (widths[metres, None] / 2)
            quads = np.stack([pa[metres] - side, pb[metres] - side, pb[metres] + side,
                              pa[metres] + side], axis=1)
            self.ax.add_collection(PolyCollection(list(quads), facecolors=rgba[metres], edgecolors="none",
                                                  zorder=self._next()))
        points = shown & ~metres
        if points.any():
            self.ax.add_collection(LineCollection(
                list(np.stack([pa[points], pb[points]], axis=1)), colors=rgba[points],
                linewidths=widths[points], capstyle="round", zorder=self._next()))

    def circles(self, centers: np.ndarray, radii: np.ndarray, fill: np.ndarray, edge: np.ndarray) -> None:
        from matplotlib.collections import EllipseCollection

        xy = np.asarray(centers, dtype=float)[:, :2]
        r = np.broadcast_to(np.asarray(radii, dtype=float), (len(xy),))
        face, line = _colors(fill), _colors(edge)
        sized = r > 0
        if sized.any():
            self.ax.add_collection(EllipseCollection(
                2 * r[sized], 2 * r[sized], np.zeros(int(sized.sum())), units="xy", offsets=xy[sized],
                offset_transform=self.ax.transData, facecolors=face[sized], edgecolors=line[sized],
                linewidths=1.0, zorder=self._next()))
        if (~sized).any():
            self.ax.scatter(xy[~sized, 0], xy[~sized, 1], s=DOT**2, c=face[~sized],
                            edgecolors="none", zorder=self._next())

    def lines(self, points: np.ndarray, directions: np.ndarray, colors: np.ndarray) -> None:
        p, d = np.asarray(points, dtype=float)[:, :2], np.asarray(directions, dtype=float)[:, :2]
        rgba = _colors(colors)
        for k in np.flatnonzero(rgba[:, 3] > 0).tolist():
            self.ax.axline(tuple(p[k]), tuple(p[k] + d[k]), color=tuple(rgba[k]), linewidth=1.5,
                           zorder=self._next())

    def arrows(self, origins: np.ndarray, vectors: np.ndarray, colors: np.ndarray) -> None:
        o, v = np.asarray(origins, dtype=float)[:, :2], np.asarray(vectors, dtype=float)[:, :2]
        rgba = _colors(colors)
        shown = rgba[:, 3] > 0
        if shown.any():
            self.ax.quiver(o[shown, 0], o[shown, 1], v[shown, 0], v[shown, 1], color=rgba[shown],
                           angles="xy", scale_units="xy", scale=1, width=0.003,
                           zorder=self._next())

    def text(self, position: Any, string: str, color: Any) -> None:
        rgba = _colors(color)[0]
        if rgba[3] > 0:
            x, y = np.asarray(position, dtype=float)[:2].tolist()
            self.ax.text(x, y, string, color=tuple(rgba), ha="left", va="top", fontsize=8,
                         zorder=self._next())


def draw(world: Any, ax: Any = None, flags: int | None = None, margin: float = 0.05,
         camera: Camera3D | None = None) -> Any:
    """Draw ``world`` on ``ax`` (a new pyplot figure's when None, so ``plt.show()`` shows it)
    with equal aspect, the limits fitted to its particles and bounded colliders (planes are
    unbounded: left out) plus ``margin`` of the larger span. A 3D world is drawn through
    ``camera`` (default: a ``Camera3D`` fitted to it), in its image plane, the limits its
    view. ``flags`` None: ``pysoft.draw.default_flags``. Returns the Axes."""
    if ax is None:
        load()
        import matplotlib.pyplot as plt

        _, ax = plt.subplots()
    if world.dim == 3:
        if camera is None:
            camera = Camera3D(640, 480)
            camera.fit_world(world, margin)
        debug_draw(world, MatplotlibDrawer(ax), flags, camera)
        half = np.array([camera.width, camera.height]) / 2.0 / camera.scale
        ax.set_xlim(-half[0], half[0])
        ax.set_ylim(-half[1], half[1])
        ax.set_aspect("equal")
        ax.set_axis_off()
        return ax
    debug_draw(world, MatplotlibDrawer(ax), flags)
    lo, hi = _bounds(world)
    span = float((hi - lo).max())
    pad = margin * span if span > 0 else 1.0
    ax.set_xlim(lo[0] - pad, hi[0] + pad)
    ax.set_ylim(lo[1] - pad, hi[1] + pad)
    ax.set_aspect("equal")
    return ax


def save(world: Any, path: str, flags: int | None = None, size: tuple[float, float] = (6, 4),
         dpi: float = 100, camera: Camera3D | None = None) -> Any:
    """``draw(world)`` on a figure of ``size`` inches written to ``path`` (PNG, SVG or PDF, by
    the suffix) at ``dpi``, headless: a ``Figure`` on the Agg canvas, not pyplot, so no window
    and no global state. Returns the Axes (``ax.transData`` maps world to the PNG's pixels,
    y up from the bottom)."""
    load()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=dpi)
    FigureCanvasAgg(fig)
    ax = draw(world, fig.add_subplot(), flags, camera=camera)
    fig.savefig(path, dpi=dpi)
    return ax
