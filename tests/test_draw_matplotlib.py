"""The matplotlib backend (``pysoft.draw.matplotlib``): the same debug-draw primitives on an
Axes in world coordinates, checked on the pixels of PNGs saved headless (Agg) and on the
artists it adds; and the clear error when the extra is missing."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from matplotlib.collections import EllipseCollection, LineCollection, PolyCollection
from matplotlib.figure import Figure
from matplotlib.quiver import Quiver
from PIL import Image
from test_draw import Recorder, _scene

import pysoft
from pysoft.draw import BODY_FILL, COLLIDER_EDGE, COLLIDER_FILL, DrawFlags, _bounds, strain_colors
from pysoft.draw import matplotlib as pmpl

MESSAGE = 'pysoft.draw.matplotlib needs matplotlib: pip install "pysoft[matplotlib]"'


def _pixels(path: Any) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB")).astype(int)


def _at(ax: Any, img: np.ndarray, point: tuple[float, float]) -> np.ndarray:
    """The PNG's pixel under a world point (display y counts up from the bottom)."""
    x, y = ax.transData.transform(point)
    return img[img.shape[0] - 1 - int(np.floor(y)), int(np.floor(x))]


def _background(ax: Any) -> np.ndarray:
    return np.round(np.array(ax.get_facecolor()[:3]) * 255)


def _blend(color: tuple[int, int, int, int], under: np.ndarray) -> np.ndarray:
    alpha = color[3] / 255
    return np.round(np.array(color[:3]) * alpha + under * (1 - alpha))


def test_a_png_shows_each_body_where_it_is_in_its_colour(tmp_path: Any) -> None:
    """Saved through Agg: the pixels at the box's and the ball's centres are the body fill
    blended on the background, just beside the box is background, so is empty sky; a
    capsule's middle is the collider fill across its width (a width in metres is a band)
    and the floor is a dark line."""
    w = _scene()
    w.add_collider(pysoft.Segment((-2.5, 1.3), (-1.0, 1.3), radius=0.1))
    path = tmp_path / "frame.png"
    ax = pmpl.save(w, str(path), flags=DrawFlags.OUTLINES | DrawFlags.COLLIDERS, size=(8, 4), dpi=100)
    img = _pixels(path)
    assert img.shape[:2] == (400, 800)
    background = _background(ax)
    fill = _blend(BODY_FILL, background)
    for centre in ((0.0, 1.0), (1.5, 1.0)):
        assert np.abs(_at(ax, img, centre) - fill).max() <= 2, (centre, _at(ax, img, centre))
    for empty in ((-0.75, 1.0), (-1.5, 0.8), (2.5, 1.4)):
        assert _at(ax, img, empty).tolist() == background.tolist(), empty
    for across in (-0.07, 0.0, 0.07):  # inside the 0.1 m capsule, above and below its axis
        assert _at(ax, img, (-1.75, 1.3 + across)).tolist() == list(COLLIDER_FILL[:3]), across
    floor = np.array([_at(ax, img, (-1.5, y)) for y in np.linspace(-0.02, 0.02, 9)])
    assert floor.min() < 120


def test_a_stretched_spring_is_drawn_red_one_at_rest_green(tmp_path: Any) -> None:
    """Strain colours reach the pixels, and change with strain: the same spring, stretched
    33 %, turns from green to red."""
    w = pysoft.World(gravity=(0.0, 0.0))
    a, b, c, d = w.add_particles([(-1.0, 0.5), (1.0, 0.5), (-1.0, -0.5), (1.0, -0.5)])
    w.add_spring(a, b, rest_length=1.5)  # 33 % stretched: red
    w.add_spring(c, d)  # at rest: green
    path = tmp_path / "springs.png"
    ax = pmpl.save(w, str(path), flags=DrawFlags.SPRINGS | DrawFlags.STRAIN, size=(3, 3), dpi=200)
    img = _pixels(path)

    def column(y: float) -> np.ndarray:
        return np.array([_at(ax, img, (0.0, y + dy)) for dy in np.linspace(-0.01, 0.01, 5)])

    red, green = column(0.5), column(-0.5)
    assert (red[:, 0] > 200).any() and (red[:, 1] < 60).any(), red
    assert (green[:, 1] > 150).any() and (green[:, 0] < 80).any(), green
    lines = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(lines) == 1  # both springs in one collection, in strain's colours
    assert np.allclose(lines[0].get_colors(), strain_colors(w.spring_strain()) / 255)


def test_every_primitive_on_a_scene_with_each_collider_kind() -> None:
    """A plane, a box, a disc, a polygon and a capsule, two bodies in contact, ``ALL`` flags:
    each primitive ``debug_draw`` emits (recorded first) becomes one batched artist with as
    many items: polygons in PolyCollections, circles in EllipseCollections (radius-0
    particles as a scatter of dots), the plane an infinite line, contacts and pressure
    quivers, the text; limits fit the scene with equal aspect."""
    w = _scene()
    w.add_collider(pysoft.Polygon([(-1.6, 0.0), (-1.0, 0.0), (-1.3, 0.4)]))
    w.add_collider(pysoft.Segment((2.0, 1.8), (3.5, 2.2), radius=0.05))
    for _ in range(30):
        w.step()
    assert len(w.contacts.particles) > 0
    rec = Recorder()
    w.debug_draw(rec, DrawFlags.ALL)
    assert set(rec.calls) == {"polygons", "segments", "circles", "lines", "arrows"}

    fig = Figure()
    ax = pmpl.draw(w, fig.add_subplot(), DrawFlags.ALL)
    polys = [c for c in ax.collections if type(c) is PolyCollection]
    n_polygons = sum(len(call[0]) - 1 for call in rec.calls["polygons"])
    widths = np.concatenate([np.broadcast_to(call[3], (len(call[0]),)) for call in rec.calls["segments"]])
    n_bands = int((widths < 1.0).sum())  # capsules: widths in metres
    assert sum(len(p.get_paths()) for p in polys) == n_polygons + n_bands
    circles = [c for c in ax.collections if isinstance(c, EllipseCollection)]
    n_sized = sum(int((np.asarray(call[1]) > 0).sum()) for call in rec.calls["circles"])
    assert sum(len(c.get_offsets()) for c in circles) == n_sized
    dots = sum(int((np.asarray(call[1]) <= 0).sum()) for call in rec.calls["circles"])
    assert dots == w.store.particles.n  # every particle has radius 0 here: dots
    lines = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert sum(len(c.get_segments()) for c in lines) == int((widths >= 1.0).sum()) == w.store.springs.n
    assert len(ax.lines) == len(rec.calls["lines"][0][0]) == 1  # the floor, infinite
    assert np.allclose(ax.lines[0].get_color(), np.array(COLLIDER_EDGE) / 255)
    quivers = [c for c in ax.collections if isinstance(c, Quiver)]
    assert [q.N for q in quivers] == [len(call[0]) for call in rec.calls["arrows"]]
    assert len(ax.texts) == 1 and ax.texts[0].get_text().startswith("t 0.50 s")
    zorders = [a.get_zorder() for a in (*ax.collections, *ax.lines, *ax.texts)]
    assert len(set(zorders)) == len(zorders)  # every call stacked on the one before
    lo, hi = _bounds(w)
    pad = 0.05 * (hi - lo).max()  # the default margin, of the larger span
    assert np.allclose([ax.get_xlim(), ax.get_ylim()], np.stack([lo - pad, hi + pad], axis=1))
    assert ax.get_aspect() == 1.0
    fig.savefig(io.BytesIO(), format="png")  # and it renders


def test_draw_without_axes_makes_a_figure_and_colours_with_alpha_0_are_skipped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MPLBACKEND", "Agg")
    import matplotlib.pyplot as plt

    w = _scene()
    ax = pmpl.draw(w, flags=DrawFlags.OUTLINES)
    try:
        assert ax.figure.number in plt.get_fignums()
        assert len(ax.collections) == 1
    finally:
        plt.close(ax.figure)
    ax = Figure().add_subplot()
    drawer = pmpl.MatplotlibDrawer(ax)
    seen, hidden = np.array([[255, 0, 0, 255]], np.uint8), np.array([[255, 0, 0, 0]], np.uint8)
    o, v = np.zeros((1, 2)), np.ones((1, 2))
    for colors in (hidden, seen):
        drawer.segments(o, v, colors, 1.0)
        drawer.lines(o, v, colors)
        drawer.arrows(o, v, colors)
        drawer.text(o[0], "label", tuple(colors[0]))
    assert len(ax.collections) == 2 and len(ax.lines) == 1 and len(ax.texts) == 1
    assert np.allclose(ax.texts[0].get_color(), (1.0, 0.0, 0.0, 1.0))


def test_save_writes_svg_and_pdf_too(tmp_path: Any) -> None:
    w = _scene()
    for name, magic in (("frame.svg", b"<?xml"), ("frame.pdf", b"%PDF")):
        pmpl.save(w, str(tmp_path / name))
        assert (tmp_path / name).read_bytes().startswith(magic)


def test_without_matplotlib_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib: ImportError
    with pytest.raises(ImportError, match=re.escape(MESSAGE)):
        pmpl.load()
    with pytest.raises(ImportError, match=re.escape(MESSAGE)):
        pmpl.save(_scene(), "never.png")
    with pytest.raises(ImportError, match=re.escape(MESSAGE)):
        pmpl.MatplotlibDrawer(None)


def test_the_module_imports_without_matplotlib() -> None:
    """Matplotlib is imported only when drawing: pysoft.draw.matplotlib imports alone (and
    names the extra) where matplotlib cannot be imported."""
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "import pysoft.draw.matplotlib as m\n"
            "try:\n    m.load()\nexcept ImportError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == MESSAGE
