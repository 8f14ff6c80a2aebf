"""Seeing the world: a debug-draw protocol, a camera, and backends (the terminal here, Pillow
images in ``pysoft.draw.image``, a pygame-ce window in ``pysoft.draw.pygame``, matplotlib
axes in ``pysoft.draw.matplotlib``).

``world.debug_draw(drawer, flags)`` hands batched primitives (arrays, never one call per
particle) to any object that implements some of these methods, as Box2D's ``b2Draw`` and
pymunk's ``SpaceDebugDrawOptions`` do; a method the drawer lacks is skipped:

- ``polygons(offsets, points, fill, edge)``: closed polygons; polygon k is
  ``points[offsets[k]:offsets[k + 1]]`` (world coordinates), ``fill``/``edge`` (k, 4) RGBA
  in 0..255 (alpha 0: none). Body outlines, boxes and polygon colliders.
- ``segments(a, b, colors, width)``: lines from ``a[i]`` to ``b[i]``, ``colors`` (m, 4).
  Springs (coloured by strain with ``STRAIN``; muscles by activation), capsule colliders'
  axes, open outlines.
- ``circles(centers, radii, fill, edge)``: discs. Particles, disc colliders, capsule ends.
- ``lines(points, directions, colors)``: infinite lines (planes, drawn edge-on).
- ``arrows(origins, vectors, colors)``: contact normals, pressure forces.
- ``text(position, string, color)``: a label at a world position.

``DrawFlags`` selects what is emitted. ``Camera`` maps world to screen (y up in the world,
down on screen), with zoom, pan and fit-to-bounds; every pixel backend uses it (matplotlib's
axes map the world themselves).

A 3D world (``World(dim=3)``) is drawn through a ``Camera3D`` (perspective or orthographic;
look-at, orbit, zoom, pan, fit; ``pysoft.draw.camera3d``) to the same drawers
(``pysoft.draw.view3d``): the primitives come projected to the camera's image plane, body
surfaces shaded and sorted back to front.
A pixel backend takes the ``Camera3D`` as its camera; ``pick`` finds the particle under a
pixel in either dimension.
"""

from __future__ import annotations

from enum import IntFlag
from typing import Any

import numpy as np

from pysoft._constants import MUSCLE_RANGE
from pysoft.draw.camera3d import Camera3D, pick
from pysoft.draw.terminal import render

__all__ = ["Camera", "Camera3D", "DrawFlags", "activation_colors", "debug_draw", "default_flags", "pick",
           "render", "strain_colors"]


class DrawFlags(IntFlag):
    """What ``debug_draw`` emits."""

    PARTICLES = 1
    SPRINGS = 2
    STRAIN = 4  # springs coloured green (at rest length) to red (20 % stretched or squashed)
    OUTLINES = 8  # bodies as filled polygons
    COLLIDERS = 16
    CONTACTS = 32  # collider contacts: points and normals
    PRESSURE = 64  # the gas's push on every outline edge
    TEXT = 128  # time and counts
    DEFAULT = OUTLINES | SPRINGS | STRAIN | COLLIDERS | TEXT
    DEFAULT_3D = OUTLINES | COLLIDERS | TEXT  # shaded surfaces hide a solid's springs: off
    ALL = PARTICLES | SPRINGS | STRAIN | OUTLINES | COLLIDERS | CONTACTS | PRESSURE | TEXT


BODY_FILL = (90, 160, 230, 110)
BODY_EDGE = (40, 90, 160, 255)
COLLIDER_FILL = (150, 150, 150, 255)
COLLIDER_EDGE = (80, 80, 80, 255)
PARTICLE = (30, 30, 30, 255)
SPRING = (60, 60, 60, 255)
CONTACT = (220, 40, 200, 255)
MUSCLE_BLUE, MUSCLE_RED = (40, 90, 230), (230, 50, 40)  # a muscle contracted, extended
PRESSURE_ARROW = (230, 120, 20, 255)
TEXT = (20, 20, 20, 255)


def strain_colors(strain: np.ndarray, full: float = 0.2) -> np.ndarray:
    """RGBA per spring: green at strain 1 (rest length) to red at |strain - 1| >= ``full``."""
    t = np.clip(np.abs(np.nan_to_num(strain, nan=1.0, posinf=1.0 + full) - 1.0) / full, 0.0, 1.0)
    out = np.empty((len(t), 4), dtype=np.uint8)
    out[:, 0] = np.round(40 + 200 * t)
    out[:, 1] = np.round(180 - 150 * t)
    out[:, 2] = 40
    out[:, 3] = 255
    return out


def activation_colors(activation: np.ndarray) -> np.ndarray:
    """RGBA per muscle: blue when contracted (the low end of MUSCLE_RANGE) through grey (1)
    to red when extended (the high end)."""
    low, high = MUSCLE_RANGE
    a = np.asarray(activation, dtype=np.float64)
    t = np.clip(np.where(a < 1.0, (a - 1.0) / (1.0 - low), (a - 1.0) / (high - 1.0)), -1.0, 1.0)
    grey, end = np.array([110.0, 110.0, 110.0]), np.where(t[:, None] < 0.0, MUSCLE_BLUE, MUSCLE_RED)
    out = np.empty((len(t), 4), dtype=np.uint8)
    out[:, :3] = np.round(grey + np.abs(t)[:, None] * (end - grey))
    out[:, 3] = 255
    return out


class Camera:
    """World <-> screen for a ``width`` x ``height`` pixel screen: ``scale`` pixels per metre,
    ``center`` the world point at the screen's centre; y points up in the world and down
    on the screen."""

    def __init__(self, width: int, height: int, center: Any = (0.0, 0.0), scale: float = 100.0) -> None:
        if not (isinstance(width, int) and isinstance(height, int) and width > 0 and height > 0):
            raise ValueError(f"width and height must be positive ints, got {width!r}, {height!r}")
        if not (np.isfinite(scale) and scale > 0):
            raise ValueError(f"scale must be > 0, got {scale!r}")
        self.width, self.height = width, height
        self.center = np.array(center, dtype=float)[:2]
        self.scale = float(scale)

    def to_screen(self, points: Any) -> np.ndarray:
        """(..., 2) world points to pixel coordinates (x right, y down)."""
        p = np.asarray(points, dtype=float)[..., :2]
        x = (p[..., 0] - self.center[0]) * self.scale + self.width / 2
        y = self.height / 2 - (p[..., 1] - self.center[1]) * self.scale
        return np.stack([x, y], axis=-1)

    def to_world(self, pixels: Any) -> np.ndarray:
        """(..., 2) pixel coordinates to world points."""
        q = np.asarray(pixels, dtype=float)
        x = (q[..., 0] - self.width / 2) / self.scale + self.center[0]
        y = (self.height / 2 - q[..., 1]) / self.scale + self.center[1]
        return np.stack([x, y], axis=-1)

    def zoom(self, factor: float, about: Any = None) -> None:
        """Scale by ``factor``, keeping the world point under pixel ``about`` (default the
        screen's centre) where it is."""
        anchor = self.to_world(about if about is not None else (self.width / 2, self.height / 2))
        self.scale *= float(factor)
        self.center = self.center + (anchor - self.to_world(about if about is not None
                                                          else (self.width / 2, self.height / 2)))

    def pan(self, pixels: Any) -> None:
        """Move the view by ``pixels`` (dx right, dy down), as a drag would."""
        d = np.asarray(pixels, dtype=float)
        self.center = self.center + np.array([-d[0], d[1]]) / self.scale

    def fit(self, lo: Any, hi: Any, margin: float = 0.05) -> None:
        """Show the world box ``lo``..``hi`` whole, centred, with a ``margin`` (of the screen)."""
        lo, hi = np.asarray(lo, dtype=float)[:2], np.asarray(hi, dtype=float)[:2]
        span = np.maximum(hi - lo, 1e-9)
        self.center = (lo + hi) / 2
        self.scale = float(min(self.width / span[0], self.height / span[1]) * (1 - 2 * margin))

    def fit_world(self, world: Any, margin: float = 0.05) -> None:
        """Fit the world's particles and bounded colliders (planes are unbounded: left out)."""
        lo, hi = _bounds(world)
        self.fit(lo, hi, margin)


def _bounds(world: Any) -> tuple[np.ndarray, np.ndarray]:
    pts = [world.positions[:, :2]]
    C = world.store.colliders
    bound = C.view("bound")
    finite = np.isfinite(bound)
    if finite.any():
        c, r = C.view("center")[finite, :2], bound[finite, None]
        pts += [c - r, c + r]
    allp = np.concatenate(pts) if sum(len(p) for p in pts) else np.zeros((1, 2))
    return allp.min(axis=0), allp.max(axis=0)


def _call(drawer: Any, name: str, *args: Any) -> None:
    method = getattr(drawer, name, None)
    if method is not None:
        method(*args)


def _rgba(color: tuple[int, int, int, int], n: int) -> np.ndarray:
    return np.tile(np.array(color, dtype=np.uint8), (n, 1))


def default_flags(world: Any) -> DrawFlags:
    """``DrawFlags.DEFAULT`` for a 2D world, ``DrawFlags.DEFAULT_3D`` for a 3D one."""
    return DrawFlags.DEFAULT_3D if getattr(world, "dim", 2) == 3 else DrawFlags.DEFAULT


def debug_draw(world: Any, drawer: Any, flags: int | None = None, camera: Any = None) -> None:
    """Emit the world's primitives to ``drawer`` (see the module's docstring), back to front:
    colliders, bodies, springs, particles, contacts, pressure, text. ``flags`` None: the
    world's ``default_flags``. A 3D world is drawn through ``camera`` (a ``Camera3D``;
    default ``drawer.camera``), see ``pysoft.draw.view3d``."""
    if flags is None:
        flags = default_flags(world)
    if getattr(world, "dim", 2) == 3:
        from pysoft.draw import view3d

        view3d.debug_draw(world, drawer, flags, camera)
        return
    flags = DrawFlags(flags)
    pos = world.positions[:, :2]
    if DrawFlags.COLLIDERS in flags:
        _colliders(world, drawer)
    if DrawFlags.OUTLINES in flags and world.store.bodies.n:
        s = world.body_shapes()
        closed = (world.store.bodies.view("flags") & 1) != 0
        if closed.any():
            counts = np.diff(s.offsets)
            rows = s.rows[np.repeat(closed, counts)]
            k = int(closed.sum())
            _call(drawer, "polygons", np.concatenate([[0], np.cumsum(counts[closed])]), pos[rows],
                  _rgba(BODY_FILL, k), _rgba(BODY_EDGE, k))
    if DrawFlags.SPRINGS in flags and world.store.springs.n:
        pairs = world.spring_pairs()
        colors = (strain_colors(world.spring_strain()) if DrawFlags.STRAIN in flags
                  else _rgba(SPRING, len(pairs)))
        S = world.store.springs
        muscle = S.view("muscle_length") >= 0.0
        if muscle.any():  # muscles by activation, whatever STRAIN says
            colors[muscle] = activation_colors(S.view("activation")[muscle])
        _call(drawer, "segments", pos[pairs[:, 0]], pos[pairs[:, 1]], colors, 1.0)
    if DrawFlags.PARTICLES in flags and len(pos):
        radii = np.maximum(world.store.particles.view("radius"), 0.0)
        _call(drawer, "circles", pos, radii, _rgba(PARTICLE, len(pos)), _rgba(PARTICLE, len(pos)))
    if DrawFlags.CONTACTS in flags:
        c = world.contacts
        if len(c.particles):
            at = pos[[world.row(int(e)) for e in c.particles]]
            _call(drawer, "arrows", at, c.normals[:, :2] * 0.1, _rgba(CONTACT, len(at)))
    if DrawFlags.PRESSURE in flags:
        _pressure(world, drawer, pos)
    if DrawFlags.TEXT in flags:
        lo, hi = _bounds(world)
        _call(drawer, "text", np.array([lo[0], hi[1]]),
              f"t {world.time:.2f} s  particles {world.store.particles.n}  springs {world.store.springs.n}"
              f"  bodies {world.store.bodies.n}", TEXT)


def _colliders(world: Any, drawer: Any) -> None:
    C = world.store.colliders
    polys: list[np.ndarray] = []
    discs: list[tuple[np.ndarray, np.ndarray, float]] = []
    caps: list[tuple[np.ndarray, np.ndarray, float]] = []
    lines: list[tuple[np.ndarray, np.ndarray]] = []
    for row, entity in enumerate(C.view("entity").tolist()):
        geo = world.collider(int(entity)).geometry
        center, rot = C.view("center")[row, :2], C.view("rotation")[row][:2, :2]
        if geo.cap_a is not None:  # a disc or a segment (its outline: a polygon for the terminal)
            a = C.view("cap_a")[row, :2] @ rot.T + center
            b = C.view("cap_b")[row, :2] @ rot.T + center
            r = float(C.view("cap_radius")[row])
            (discs if np.allclose(a, b) else caps).append((a, b, r))
        elif len(geo.outline) >= 3:
            polys.append(geo.outline[:, :2] @ rot.T + center)
        elif geo.kind == 0 and len(geo.face_offset) == 1:  # a plane
            n = rot @ geo.face_normal[0][:2]
            lines.append((center + n * geo.face_offset[0], np.array([-n[1], n[0]])))
    if polys:
        offsets = np.concatenate([[0], np.cumsum([len(p) for p in polys])])
        _call(drawer, "polygons", offsets, np.concatenate(polys), _rgba(COLLIDER_FILL, len(polys)),
              _rgba(COLLIDER_EDGE, len(polys)))
    for group, ends in ((discs, False), (caps, True)):
        if group:
            a = np.array([g[0] for g in group])
            b = np.array([g[1] for g in group])
            radius = np.array([g[2] for g in group])
            centers, radii = ((np.concatenate([a, b]), np.concatenate([radius, radius])) if ends
                              else (a, radius))
            _call(drawer, "circles", centers, radii, _rgba(COLLIDER_FILL, len(centers)),
                  _rgba(COLLIDER_EDGE, len(centers)))
            if ends:
                _call(drawer, "segments", a, b, _rgba(COLLIDER_FILL, len(a)), 2.0 * radius)
    if lines:
        _call(drawer, "lines", np.array([p for p, _ in lines]), np.array([d for _, d in lines]),
              _rgba(COLLIDER_EDGE, len(lines)))


def _pressure(world: Any, drawer: Any, pos: np.ndarray) -> None:
    """Arrows of the gas's push on each outline edge's midpoint, along the outward normal,
    0.1 m per newton."""
    B = world.store.bodies
    if not B.n:
        return
    s = world.body_shapes()
    counts = B.view("pressure_count")
    origins, vectors = [], []
    for k in np.flatnonzero(counts > 0).tolist():
        ring = pos[s.rows[s.offsets[k]:s.offsets[k + 1]]]
        nxt = np.roll(ring, -1, axis=0)
        e = nxt - ring
        amount, floor = float(B.view("amount")[k]), float(B.view("min_area")[k])
        push = amount / max(float(s.areas[k]), floor) if amount else 0.0
        origins.append((ring + nxt) / 2)
        vectors.append(push * np.stack([e[:, 1], -e[:, 0]], axis=1) * 0.1)
    if origins:
        o = np.concatenate(origins)
        _call(drawer, "arrows", o, np.concatenate(vectors), _rgba(PRESSURE_ARROW, len(o)))
