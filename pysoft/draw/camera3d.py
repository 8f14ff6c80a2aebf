"""``Camera3D``: how a 3D world is seen (perspective or orthographic; look-at, orbit, zoom,
pan, fit), the box a world fills (``bounds``) and the particle under a pixel (``pick``).

The camera maps world points to its *image plane* (``project``: 2D metres at the target's
distance, x right, y up) and on to pixels (``to_screen``); the 3D debug draw
(``pysoft.draw.view3d``) hands drawers image-plane points, so every 2D backend draws them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pysoft import _validate


def _unit(v: np.ndarray) -> np.ndarray:
    out: np.ndarray = v / np.linalg.norm(v)
    return out


class Camera3D:
    """A camera for 3D worlds on a ``width`` x ``height`` pixel screen, looking at ``target``
    from ``distance`` metres away, turned ``yaw`` radians about the vertical (y) axis and
    raised ``pitch`` radians above the horizontal (yaw 0, pitch 0: looking along -z, x to
    the right, y up, as a 2D world is seen). ``fov`` is the vertical field of view in
    degrees (perspective); ``orthographic=True`` projects in parallel at ``scale`` pixels
    per metre (default: the perspective's scale at the target, so switching keeps the
    target's size).

    ``to_screen`` maps world points (..., 3) to pixels (and image-plane points (..., 2),
    which the 3D draw hands to drawers); ``scale`` is pixels per metre at the target.

    >>> import pysoft
    >>> from pysoft.draw import Camera3D
    >>> from pysoft.draw.image import frame
    >>> w = pysoft.World(dim=3)
    >>> cube = pysoft.build.cube(w, center=(0.0, 0.5, 0.0), size=0.5)
    >>> camera = Camera3D(320, 240, yaw=0.6, pitch=0.4)  # from the front, right and above
    >>> camera.fit_world(w, margin=0.2)
    >>> camera.to_screen((0.0, 0.5, 0.0)).round(6).tolist()  # the box's centre: the screen's
    [160.0, 120.0]
    >>> camera.orbit(0.3)  # a little further round (radians)
    >>> camera.zoom(1.5)  # closer
    >>> frame(w, camera).size  # a Pillow image, the cube shaded and in front
    (320, 240)
    """

    def __init__(self, width: int, height: int, target: Any = (0.0, 0.0, 0.0), distance: float = 5.0,
                 yaw: float = 0.5, pitch: float = 0.45, fov: float = 45.0, orthographic: bool = False,
                 scale: float | None = None) -> None:
        if not (isinstance(width, int) and isinstance(height, int) and width > 0 and height > 0):
            raise ValueError(f"width and height must be positive ints, got {width!r}, {height!r}")
        self.width, self.height = width, height
        self.target = _validate.vector("target", target, 3)
        self.distance = _validate.positive("distance", distance)
        self.yaw = _validate.finite("yaw", yaw)
        self.pitch = 0.0
        self.orbit(0.0, _validate.finite("pitch", pitch))
        self.fov = _validate.finite("fov", fov)
        if not 1.0 <= self.fov <= 170.0:
            raise ValueError(f"fov must be in [1, 170] degrees, got {fov!r}")
        self._ortho_scale = self._perspective_scale() if scale is None else _validate.positive("scale", scale)
        self.orthographic = bool(orthographic)
        # the box ``fit`` was given (planes are drawn as patches over it), or None
        self.extent: tuple[np.ndarray, np.ndarray] | None = None

    # -- the view ------------------------------------------------------------------------

    @property
    def forward(self) -> np.ndarray:
        """Unit vector from the eye toward the target."""
        cp = math.cos(self.pitch)
        return -np.array([cp * math.sin(self.yaw), math.sin(self.pitch), cp * math.cos(self.yaw)])

    @property
    def right(self) -> np.ndarray:
        """Unit vector to the screen's right (horizontal)."""
        return np.array([math.cos(self.yaw), 0.0, -math.sin(self.yaw)])

    @property
    def up(self) -> np.ndarray:
        """Unit vector to the screen's top."""
        return np.cross(self.right, self.forward)

    @property
    def eye(self) -> np.ndarray:
        """Where the camera is (m)."""
        out: np.ndarray = self.target - self.distance * self.forward
        return out

    def _perspective_scale(self) -> float:
        return self.height / 2.0 / (self.distance * math.tan(math.radians(self.fov) / 2.0))

    @property
    def scale(self) -> float:
        """Pixels per metre at the target's distance (everywhere, orthographic)."""
        return self._ortho_scale if self.orthographic else self._perspective_scale()

    @property
    def near(self) -> float:
        """The nearest depth drawn (m): what is closer to the eye, or behind it, is left out."""
        return 1e-3 * self.distance

    def look_at(self, target: Any, eye: Any = None) -> None:
        """Look at ``target`` from ``eye`` (default: from where the camera is now, moved with
        the target); y stays up."""
        target = _validate.vector("target", target, 3)
        eye = self.eye - self.target + target if eye is None else _validate.vector("eye", eye, 3)
        d = eye - target
        r = float(np.linalg.norm(d))
        if not r > 0.0:
            raise ValueError("eye must differ from target")
        self.target, self.distance = target, r
        self.yaw = math.atan2(d[0], d[2])
        self.pitch = 0.0
        self.orbit(0.0, math.asin(max(-1.0, min(1.0, d[1] / r))))

    def orbit(self, yaw: float, pitch: float = 0.0) -> None:
        """Turn about the target by ``yaw`` radians (about y) and ``pitch`` radians (up), the
        pitch kept within 89 degrees of the horizontal."""
        limit = math.radians(89.0)
        self.yaw = (self.yaw + float(yaw)) % (2.0 * math.pi)
        self.pitch = max(-limit, min(limit, self.pitch + float(pitch)))

    def zoom(self, factor: float, about: Any = None) -> None:
        """Magnify by ``factor`` (> 1: closer): perspective moves the eye toward the target,
        orthographic scales. ``about`` (a pixel) stays over the same point of the plane
        through the target facing the camera."""
        f = _validate.positive("factor", factor)
        anchor = None if about is None else self.to_world(about)
        if self.orthographic:
            self._ortho_scale *= f
        else:
            self.distance /= f
        if anchor is not None:
            self.target = self.target + anchor - self.to_world(about)

    def pan(self, pixels: Any) -> None:
        """Move the view by ``pixels`` (dx right, dy down), as a drag would: the world moves
        with the pointer."""
        d = np.asarray(pixels, dtype=float) / self.scale
        self.target = self.target - d[0] * self.right + d[1] * self.up

    def fit(self, lo: Any, hi: Any, margin: float = 0.05) -> None:
        """Look at the centre of the box ``lo``..``hi`` from the present direction, as near
        (perspective) or as magnified (orthographic) as keeps its eight corners on the
        screen less ``margin`` of it at each side."""
        lo, hi = _validate.vector("lo", lo, 3), _validate.vector("hi", hi, 3)
        if not ((hi >= lo).all() and 0.0 <= margin < 0.5):
            raise ValueError(f"lo must be <= hi and margin in [0, 0.5), got {lo}, {hi}, {margin!r}")
        self.target = 0.5 * (lo + hi)
        self.extent = (lo, hi)
        corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1])
                            for z in (lo[2], hi[2])])
        f, r = self.forward, self.right
        rel = corners - self.target
        x, y, z = np.abs(rel @ r), np.abs(rel @ np.cross(r, f)), rel @ f  # z: beyond the target
        room = np.array([self.width, self.height]) / 2.0 * (1.0 - 2.0 * margin)  # pixels
        tiny = 1e-6 * max(float(np.max(hi - lo)), 1e-6)
        self._ortho_scale = min(room[0] / max(float(x.max()), tiny), room[1] / max(float(y.max()), tiny))
        focal = self.height / 2.0 / math.tan(math.radians(self.fov) / 2.0)  # pixels at 1 m depth per m
        # a corner at depth d + z shows |x| focal / (d + z) pixels off the centre: at most room
        need = max(float((x * focal / room[0] - z).max()), float((y * focal / room[1] - z).max()))
        self.distance = max(need, float((-z).max()) + tiny, tiny)

    def fit_world(self, world: Any, margin: float = 0.05) -> None:
        """Fit the world's particles and bounded colliders (planes are unbounded: left out)."""
        lo, hi = bounds(world)
        self.fit(lo, hi, margin)

    # -- points ----------------------------------------------------------------------------

    def view(self, points: Any) -> np.ndarray:
        """World points (..., 3) in camera coordinates (..., 3): right, up, depth (m along
        the view direction from the eye)."""
        f, r = self.forward, self.right
        basis = np.stack([r, np.cross(r, f), f], axis=1)
        out: np.ndarray = (np.asarray(points, dtype=float) - (self.target - self.distance * f)) @ basis
        return out

    def depth(self, points: Any) -> np.ndarray:
        """Distance of world points (..., 3) in front of the eye along the view direction (m)."""
        out: np.ndarray = (np.asarray(points, dtype=float) - self.eye) @ self.forward
        return out

    def project(self, points: Any) -> np.ndarray:
        """World points (..., 3) to the image plane (..., 2): metres at the target's distance,
        x right, y up (nan for points nearer than ``near`` in perspective)."""
        v = self.view(points)
        if self.orthographic:
            return v[..., :2]
        z = v[..., 2:3]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(z >= self.near, v[..., :2] * (self.distance / z), np.nan)

    def to_screen(self, points: Any) -> np.ndarray:
        """World points (..., 3), or image-plane points (..., 2), to pixels (x right, y down)."""
        p = np.asarray(points, dtype=float)
        q = self.project(p) if p.shape[-1] == 3 else p
        s = self.scale
        return np.stack([self.width / 2.0 + q[..., 0] * s, self.height / 2.0 - q[..., 1] * s], axis=-1)

    def ray(self, pixel: Any) -> tuple[np.ndarray, np.ndarray]:
        """The line of sight through ``pixel``: a point on it and its unit direction."""
        q = np.asarray(pixel, dtype=float)
        x, y = (q[0] - self.width / 2.0) / self.scale, (self.height / 2.0 - q[1]) / self.scale
        if self.orthographic:
            return self.eye + x * self.right + y * self.up, self.forward
        return self.eye, _unit(self.forward + (x * self.right + y * self.up) / self.distance)

    def to_world(self, pixel: Any, through: Any = None) -> np.ndarray:
        """The point under ``pixel`` on the plane facing the camera through ``through``
        (default the target): where a drag in the screen's plane moves a grabbed point."""
        through = self.target if through is None else _validate.vector("through", through, 3)
        origin, direction = self.ray(pixel)
        t = float((through - origin) @ self.forward) / float(direction @ self.forward)
        out: np.ndarray = origin + t * direction
        return out


def bounds(world: Any) -> tuple[np.ndarray, np.ndarray]:
    """The box holding the world's particles and bounded colliders (planes left out)."""
    dim = world.dim
    pts = [world.positions]
    C = world.store.colliders
    bound = C.view("bound")
    finite = np.isfinite(bound)
    if finite.any():
        c, r = C.view("center")[finite], bound[finite, None]
        pts += [c - r, c + r]
    allp = np.concatenate(pts) if sum(len(p) for p in pts) else np.zeros((1, dim))
    return allp.min(axis=0), allp.max(axis=0)


def pick(world: Any, camera: Any, pixel: Any, max_pixels: float = 40.0, movable: bool = True) -> int | None:
    """The particle entity under ``pixel``: of the particles within ``max_pixels`` of it on the
    screen, the nearest the camera among those about as near the pointer as the nearest
    (within 6 pixels of it, or over their own drawn radius); None if there is none.
    ``movable`` skips immovable particles. Works with a 2D ``Camera`` too."""
    P = world.store.particles
    if not P.n:
        return None
    pos = world.positions
    at = camera.to_screen(pos)
    off = np.linalg.norm(at - np.asarray(pixel, dtype=float), axis=1)
    off = np.where(np.isfinite(off), off, np.inf)
    if movable:
        off = np.where(P.view("inv_mass") > 0.0, off, np.inf)
    best = float(off.min())
    if not best <= max_pixels:
        return None
    near = off <= max(best + 6.0, min(max_pixels, 8.0))
    if world.dim == 3:
        depth = np.where(near, camera.depth(pos), np.inf)
        i = int(np.argmin(depth))
    else:
        i = int(np.argmin(off))
    return int(P.view("entity")[i])
