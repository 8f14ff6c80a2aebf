"""Collider shapes and the local geometry the collide kernel reads.

Every shape becomes a pose (centre, rotation) and a local shape of one of two
kinds (see csrc/collide.c):

* a convex polytope, the intersection of half-spaces ``n . y <= o``:
  ``Plane`` (one face), ``Box`` (4 faces in 2D, 6 in 3D), ``Polygon``;
* a capsule, the points within ``radius`` of a segment: ``Disc`` and
  ``Sphere`` (a zero-length segment), ``Segment``.

Shapes are immutable descriptions; a collider's pose can be changed later
(``world.collider(e).position``, ``.angle``, ``.velocity``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pysoft import _validate as validate
from pysoft._constants import CAPSULE, POLYTOPE


@dataclass(frozen=True)
class Geometry:
    """A shape in its own frame plus its initial pose."""

    kind: int
    center: np.ndarray
    rotation: np.ndarray
    face_normal: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    face_offset: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cap_a: np.ndarray | None = None
    cap_b: np.ndarray | None = None
    cap_radius: float = 0.0
    angle: float = 0.0
    outline: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))  # local, for drawing
    bound: float = math.inf  # radius of a sphere around the centre holding the core shape
    grow: float = 1.0  # how far the shape grown by r reaches beyond bound, per unit r


def rotation_2d(angle: float) -> np.ndarray:
    """The 2x2 rotation by ``angle`` radians (counter-clockwise)."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s], [s, c]])


def unit_rows(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row of ``v`` (non-zero) scaled to unit length: divided by its largest |component|
    first, then normalised, so that no square overflows (a normal of 1e200) or underflows
    (1e-200) and the direction is the one given. Also each row's length divided by that
    largest component (in [1, sqrt(dim)]): |v| = max|v_i| x it, a product that may overflow."""
    big = np.abs(v).max(axis=-1, keepdims=True)
    scaled = v / big
    norm = np.sqrt((scaled * scaled).sum(axis=-1, keepdims=True))
    return scaled / norm, norm[..., 0]


def _rotation_3d(rotation: Any, angle: float) -> np.ndarray:
    if rotation is None:
        out = np.eye(3)
        out[:2, :2] = rotation_2d(angle)
        return out
    rot = validate.array("rotation", rotation, (3, 3))
    if not np.allclose(rot @ rot.T, np.eye(3), atol=1e-9) or np.linalg.det(rot) < 0:
        raise ValueError("rotation must be a proper rotation matrix (orthonormal, det +1)")
    return rot


def _polytope(center: np.ndarray, rotation: np.ndarray, normals: np.ndarray,
              offsets: np.ndarray, angle: float = 0.0, outline: np.ndarray | None = None,
              bound: float = math.inf, grow: float = 1.0) -> Geometry:
    return Geometry(POLYTOPE, center, rotation, np.ascontiguousarray(normals, dtype=np.float64),
                    np.ascontiguousarray(offsets, dtype=np.float64), angle=angle,
                    outline=np.zeros((0, 2)) if outline is None else outline, bound=bound,
                    grow=grow)


def _capsule(center: np.ndarray, a: np.ndarray, b: np.ndarray, radius: float) -> Geometry:
    dim = len(center)
    if dim == 2:  # a stadium: the segment's two sides and round ends, for drawing
        axis = b - a
        along = math.atan2(axis[1], axis[0]) if axis.any() else 0.0
        t = np.linspace(-0.5 * math.pi, 0.5 * math.pi, 9)
        cap = radius * np.stack([np.cos(t), np.sin(t)], axis=1)
        outline = np.concatenate([b + cap @ rotation_2d(along).T, a - cap @ rotation_2d(along).T])
    else:
        outline = np.zeros((0, 2))
    bound = max(float(np.linalg.norm(a)), float(np.linalg.norm(b))) + radius
    return Geometry(CAPSULE, center, np.eye(dim), np.zeros((0, dim)), np.zeros(0), cap_a=a, cap_b=b,
                    cap_radius=radius, outline=outline, bound=bound * (1.0 + 1e-9))


@dataclass(frozen=True)
class Plane:
    """A half-space: solid where ``dot(normal, x) < offset`` (in 2D, a line with a facing side).

    ``normal`` need not be unit length: it is normalised (in a scaled way: any finite
    non-zero normal, 1e200 or 1e-300 long, keeps its direction), and ``offset`` is divided by
    its length (so ``Plane((0, 2), 2)`` is the line y = 1); ValueError if that quotient is
    beyond the float range.
    """

    normal: Any
    offset: float = 0.0

    def geometry(self, dim: int) -> Geometry:
        """This shape checked for a ``dim``-dimensional world, in the form the collide kernels
        take (ValueError naming the field that is wrong, or a shape of the other dimension)."""
        normal = validate.vector("normal", self.normal, dim)
        if not normal.any():
            raise ValueError("normal must be a non-zero vector")
        offset = validate.finite("offset", self.offset)
        big = float(np.abs(normal).max())
        unit, norm = unit_rows(normal[None])
        distance = offset / big / float(norm[0])  # offset / |normal|, without its square
        if not math.isfinite(distance):
            raise ValueError(f"offset: {offset:g} / |normal| is beyond the float range (the normal is "
                             f"{big:.3g} long): give a longer normal or a smaller offset")
        return _polytope(np.zeros(dim), np.eye(dim), unit, np.array([distance]))


@dataclass(frozen=True)
class Disc:
    """A solid disc (2D): ``center`` (m), ``radius`` > 0 (m)."""

    center: Any
    radius: float

    def geometry(self, dim: int) -> Geometry:
        """This shape checked for a ``dim``-dimensional world, in the form the collide kernels
        take (ValueError naming the field that is wrong, or a shape of the other dimension)."""
        if dim != 2:
            raise ValueError("shape: Disc is a 2D shape; use Sphere in a 3D world")
        return _ball(self.center, self.radius, dim)


@dataclass(frozen=True)
class Sphere:
    """A solid sphere (3D): ``center`` (m), ``radius`` > 0 (m)."""

    center: Any
    radius: float

    def geometry(self, dim: int) -> Geometry:
        """This shape checked for a ``dim``-dimensional world, in the form the collide kernels
        take (ValueError naming the field that is wrong, or a shape of the other dimension)."""
        if dim != 3:
            raise ValueError("shape: Sphere is a 3D shape; use Disc in a 2D world")
        return _ball(self.center, self.radius, dim)


def _ball(center: Any, radius: float, dim: int) -> Geometry:
    c = validate.vector("center", center, dim)
    r = validate.size("radius", radius)
    validate.extent("radius", np.array([[-r], [r]]))
    return _capsule(c, np.zeros(dim), np.zeros(dim), r)


@dataclass(frozen=True)
class Segment:
    """A two-sided capsule from ``a`` to ``b`` with ``radius`` > 0: terrain pieces, ramps."""

    a: Any
    b: Any
    radius: float = 0.01

    def geometry(self, dim: int) -> Geometry:
        """This shape checked for a ``dim``-dimensional world, in the form the collide kernels
        take (ValueError naming the field that is wrong, or a shape of the other dimension)."""
        a = validate.vector("a", self.a, dim)
        b = validate.vector("b", self.b, dim)
        r = validate.size("radius", self.radius)
        validate.extent("a, b, radius", np.stack([a - r, a + r, b - r, b + r]))
        apart = float(np.abs(b - a).max())  # (|b - a|^2 >= apart^2: no underflow from MIN_SIZE on)
        if 0.0 < apart < validate.MIN_SIZE:
            raise ValueError(f"a, b: the segment is {apart:.3g} m long, so short that its square "
                             f"underflows: make a and b equal (a disc) or at least "
                             f"{validate.MIN_SIZE:.3g} m apart")
        mid = 0.5 * (a + b)
        return _capsule(mid, a - mid, b - mid, r)


@dataclass(frozen=True)
class Box:
    """A box: ``center``, ``half_extents`` > 0, turned by ``angle`` (radians, CCW; about z in 3D).

    In 3D a full ``rotation`` matrix may be given instead of ``angle``.
    """

    center: Any
    half_extents: Any
    angle: float = 0.0
    rotation: Any = None

    def geometry(self, dim: int) -> Geometry:
        """This shape checked for a ``dim``-dimensional world, in the form the collide kernels
        take (ValueError naming the field that is wrong, or a shape of the other dimension)."""
        c = validate.vector("center", self.center, dim)
        half = validate.vector("half_extents", self.half_extents, dim)
        if not (half >= validate.MIN_SIZE).all():
            raise ValueError(f"half_extents must be >= {validate.MIN_SIZE:.3g} m (> 0, and their squares "
                             f"must not underflow), got {half.tolist()}")
        validate.extent("half_extents", np.stack([-half, half]))
        angle = validate.finite("angle", self.angle)
        if dim == 2:
            if self.rotation is not None:
                raise ValueError("rotation is for 3D boxes; use angle in 2D")
            rot = rotation_2d(angle)
        else:
            rot = _rotation_3d(self.rotation, angle)
        eye = np.eye(dim)
        normals = np.concatenate([eye, -eye])
        corners = np.array([[1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]]) * half[:2]
        return _polytope(c, rot, normals, np.concatenate([half, half]), angle=angle,
                         outline=corners if dim == 2 else None,
                         bound=float(np.linalg.norm(half)) * (1.0 + 1e-9),
                         grow=math.sqrt(dim) * (1.0 + 1e-9))  # a corner moves by r (1, 1[, 1])


@dataclass(frozen=True)
class Polygon:
    """A convex polygon (2D) from 3 or more ``vertices`` (m).

    Either winding, from any first vertex: the polygon is kept counter-clockwise from its
    lowest vertex (least y, then least x), so a clockwise list, or one that starts
    elsewhere, gives the same collider bit for bit. Repeated vertices, collinear-only
    (zero area), non-convex and self-intersecting outlines are rejected with ValueError.
    """

    vertices: Any

    def geometry(self, dim: int) -> Geometry:
        """This shape checked for a ``dim``-dimensional world, in the form the collide kernels
        take (ValueError naming the field that is wrong, or a shape of the other dimension)."""
        if dim != 2:
            raise ValueError("shape: Polygon is a 2D shape; use Box (or several Planes) in 3D")
        v = validate.array("vertices", self.vertices, (None, 2))
        if len(v) < 3:
            raise ValueError(f"vertices must have at least 3 points, got {len(v)}")
        v = convex_ccw(v)
        with np.errstate(over="ignore"):
            center = v.mean(axis=0)
        if not np.isfinite(center).all():
            raise ValueError("vertices: the polygon is too far from the origin (their mean overflows)")
        local = v - center
        edges = np.roll(local, -1, axis=0) - local
        normals, _ = unit_rows(np.stack([edges[:, 1], -edges[:, 0]], axis=1))
        offsets = (normals * local).sum(axis=1)
        bound = float(np.hypot(local[:, 0], local[:, 1]).max()) * (1.0 + 1e-9)
        # Pushing both faces at a vertex of interior angle alpha out by r moves the
        # vertex by r / sin(alpha / 2) along its bisector.
        cos_turn = (normals * np.roll(normals, 1, axis=0)).sum(axis=1).clip(-1.0, 1.0)
        half_alpha = 0.5 * (math.pi - np.arccos(cos_turn))
        grow = float((1.0 / np.sin(half_alpha)).max()) * (1.0 + 1e-9)
        return _polytope(center, np.eye(2), normals, offsets, outline=local, bound=bound, grow=grow)


def signed_area(v: np.ndarray) -> float:
    """Shoelace area of the closed outline ``v`` (n, 2): positive when counter-clockwise."""
    return 0.5 * float((v[:, 0] * np.roll(v[:, 1], -1) - np.roll(v[:, 0], -1) * v[:, 1]).sum())


# a positively oriented tetrahedron (a, b, c, d)'s faces, counter-clockwise seen from outside;
# face j is opposite corner j
TET_FACES = np.array([[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]])


def signed_volumes(points: np.ndarray, tets: np.ndarray) -> np.ndarray:
    """Each tetrahedron's signed volume (K,): (b - a) . ((c - a) x (d - a)) / 6, positive when
    its corners ``tets`` (K, 4), rows of ``points``, are right-handed."""
    p = points[tets]
    a, b, c = p[:, 1] - p[:, 0], p[:, 2] - p[:, 0], p[:, 3] - p[:, 0]
    return np.asarray(np.einsum("ij,ij->i", a, np.cross(b, c)) / 6.0)


def oriented(points: np.ndarray, tets: np.ndarray) -> np.ndarray:
    """``tets`` (K, 4) with each negatively oriented one's last two corners swapped (a copy)."""
    out = np.array(tets)
    flip = signed_volumes(points, out) < 0.0
    out[flip] = out[flip][:, [0, 1, 3, 2]]
    return out


def tet_boundary(tets: np.ndarray) -> np.ndarray:
    """The faces of positively oriented tetrahedra (K, 4) that belong to one of them only:
    their surface, (T, 3), counter-clockwise seen from outside, in the order of their
    tetrahedra."""
    faces = tets[:, TET_FACES].reshape(-1, 3)
    _, inverse, count = np.unique(np.sort(faces, axis=1), axis=0, return_inverse=True,
                                  return_counts=True)
    return np.asarray(faces[count[inverse.ravel()] == 1])


def enclosed_volume(corners: np.ndarray) -> float:
    """The volume a closed surface of triangles (T, 3, 3 corner positions, counter-clockwise
    seen from outside) encloses: 1/6 sum a . (b x c) (divergence theorem)."""
    a, b, c = corners[:, 0], corners[:, 1], corners[:, 2]
    return float(np.einsum("ij,ij->", a, np.cross(b, c))) / 6.0


def convex_ccw(v: np.ndarray) -> np.ndarray:
    """``v`` as a counter-clockwise convex outline from its lowest vertex (least y, then least
    x): either winding and any first vertex give the same array. ValueError if it is not
    convex and simple. The checks run on ``v`` moved to its first vertex and scaled to unit
    size, so no square in them overflows (a polygon 1e154 m across, or far from the origin)."""
    validate.extent("vertices", v)
    u = v - v[0]
    scale = float(np.abs(u).max())
    if not scale > 0.0:
        raise ValueError("vertices must not repeat (they are all the same point)")
    u = u / scale
    edges = np.roll(u, -1, axis=0) - u
    lengths = np.hypot(edges[:, 0], edges[:, 1])
    if not (lengths * scale > 1e-12 * max(1.0, float(np.abs(v).max()))).all():
        raise ValueError("vertices must not repeat (an edge is shorter than 1e-12 m, or than 1e-12 "
                         "of the vertices' distance from the origin)")
    area2 = 2.0 * signed_area(u)
    if abs(area2) <= 1e-12 * float(lengths.max()) ** 2:
        raise ValueError("vertices enclose no area")
    if area2 < 0.0:  # clockwise: reverse into counter-clockwise order
        return convex_ccw(v[::-1].copy())
    nxt = np.roll(edges, -1, axis=0)
    cross = edges[:, 0] * nxt[:, 1] - edges[:, 1] * nxt[:, 0]
    turning = np.arctan2(cross, (edges * nxt).sum(axis=1)).sum()
    if (cross < -1e-12 * lengths.max() ** 2).any() or not math.isclose(turning, 2 * math.pi,
                                                                          rel_tol=1e-6):
        raise ValueError("vertices must form a convex, non-self-intersecting polygon "
                         "(split concave shapes into several colliders)")
    first = int(np.lexsort((v[:, 0], v[:, 1]))[0])  # least y, then least x
    return np.roll(v, -first, axis=0)


Shape = Plane | Disc | Sphere | Segment | Box | Polygon
SHAPES = (Plane, Disc, Sphere, Segment, Box, Polygon)
