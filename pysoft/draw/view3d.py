"""Seeing a 3D world: the 3D half of ``world.debug_draw``, through a ``Camera3D``
(``pysoft.draw.camera3d``: perspective or orthographic; look-at, orbit, zoom, pan, fit).

The 3D draw hands the same primitives as 2D to the same drawers, already projected: every
point is in the camera's *image plane*, 2D metres at the target's distance, x right and y
up. A pixel backend's camera is the ``Camera3D`` itself (``to_screen`` maps image-plane
points, and world points, to pixels); a drawer without a camera (matplotlib's axes) draws
the image plane as it would a 2D world.

Everything opaque (body surfaces, colliders, springs, rope bodies, particles) becomes
polygons in the image plane, sorted back to front by their depth and handed over in one
``polygons`` call (the painter's algorithm): surface triangles shaded flat by ``LIGHT``
(closed surfaces seen from behind are culled; an open sheet shows both sides), springs
and ropes as thin bands facing the camera, particles as octagons, spheres, capsules and
boxes as shaded meshes, and planes as a finite chequered patch, cut where other planes
bound it and left out when the camera is on its solid side (a bin's front wall does not
hide what is in the bin). Contacts are arrows drawn over everything, as is the text.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pysoft.draw.camera3d import Camera3D, bounds, pick

__all__ = ["Camera3D", "bounds", "debug_draw", "pick"]

LIGHT = np.array([0.35, 1.0, 0.55]) / np.linalg.norm([0.35, 1.0, 0.55])  # toward the light
AMBIENT = 0.35  # the shade of a face turned away from the light; 1 is full colour
PALETTE = ((228, 87, 46), (76, 155, 232), (118, 176, 65), (243, 167, 18), (160, 94, 196),
           (41, 191, 159), (232, 93, 140), (110, 120, 200))
COLLIDER = (175, 175, 170)
TILES = ((228, 228, 222), (208, 208, 200))  # a plane's chequered patch
ROPE_WIDTH = 0.03  # m, a rope body's band (or twice its particles' radius, if larger)
SPRING_PIXELS = 1.5  # a spring's band across, in pixels
DOT_PIXELS = 2.0  # a particle without a radius: its dot's radius in pixels
_OCTAGON = np.stack([np.cos(np.arange(8) * np.pi / 4), np.sin(np.arange(8) * np.pi / 4)], axis=1)


# -- the 3D draw ----------------------------------------------------------------------------


class _Items:
    """Polygons in the image plane with a depth and colours, gathered then sorted."""

    def __init__(self) -> None:
        self.groups: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, corners: np.ndarray, depth: np.ndarray, fill: np.ndarray,
            edge: np.ndarray | None = None) -> None:
        """``corners`` (k, m, 2) image-plane polygons of m corners each, ``depth`` (k,),
        ``fill`` (k, 4) RGBA (``edge`` default: the fill)."""
        keep = np.isfinite(corners).all(axis=(1, 2)) & np.isfinite(depth)
        if keep.any():
            fill = fill[keep]
            self.groups.append((corners[keep], depth[keep], fill, fill if edge is None else edge[keep]))

    def emit(self, drawer: Any) -> None:
        if not self.groups:
            return
        sizes = np.concatenate([np.full(len(g[0]), g[0].shape[1]) for g in self.groups])
        depth = np.concatenate([g[1] for g in self.groups])
        fill = np.concatenate([g[2] for g in self.groups])
        edge = np.concatenate([g[3] for g in self.groups])
        flat = [g[0].reshape(len(g[0]), -1) for g in self.groups]
        order = np.argsort(-depth, kind="stable")  # far first
        offsets = np.concatenate([[0], np.cumsum(sizes[order])])
        # corners of every polygon in the sorted order, from each group's flat rows
        start = np.concatenate([[0], np.cumsum([len(f) for f in flat])])
        points = np.empty((int(offsets[-1]), 2))
        for g, f in enumerate(flat):
            rows = np.flatnonzero((order >= start[g]) & (order < start[g + 1]))
            if len(rows):
                m = f.shape[1] // 2
                at = offsets[rows][:, None] + np.arange(m)
                points[at.reshape(-1)] = f[order[rows] - start[g]].reshape(-1, 2)
        _call(drawer, "polygons", offsets, points, fill[order], edge[order])


def _call(drawer: Any, name: str, *args: Any) -> None:
    method = getattr(drawer, name, None)
    if method is not None:
        method(*args)


def _shade(rgb: Any, normals: np.ndarray, alpha: int = 255) -> np.ndarray:
    """(k, 4) RGBA: ``rgb`` lit by LIGHT on faces of unit ``normals`` (k, 3)."""
    t = AMBIENT + (1.0 - AMBIENT) * np.clip(normals @ LIGHT, 0.0, 1.0)
    base = np.broadcast_to(np.asarray(rgb, dtype=float)[..., :3], (len(normals), 3))
    out = np.empty((len(normals), 4), dtype=np.uint8)
    out[:, :3] = np.clip(np.round(base * t[:, None]), 0, 255)
    out[:, 3] = alpha
    return out


def _faces(items: _Items, camera: Camera3D, tris: np.ndarray, rgb: Any, two_sided: bool,
           alpha: int = 255) -> None:
    """World triangles (k, 3, 3), counter-clockwise from outside, shaded and culled."""
    if not len(tris):
        return
    n = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    length = np.linalg.norm(n, axis=1)
    ok = length > 0.0
    tris, n = tris[ok], n[ok] / length[ok, None]
    centre = tris.mean(axis=1)
    sight = centre - camera.eye if not camera.orthographic else np.broadcast_to(camera.forward, centre.shape)
    facing = (n * sight).sum(axis=1) < 0.0
    if two_sided:
        n = np.where(facing[:, None], n, -n)
    else:
        tris, n, centre = tris[facing], n[facing], centre[facing]
    depth = camera.depth(centre)
    near = camera.depth(tris).min(axis=1) >= camera.near
    colour = _shade(rgb, n[near], alpha)
    items.add(camera.project(tris[near]), depth[near], colour)


def _bands(items: _Items, camera: Camera3D, a: np.ndarray, b: np.ndarray, colours: np.ndarray,
           width: np.ndarray, bias: float = 0.0) -> None:
    """Segments a -> b as bands ``width`` image-plane metres across, facing the camera."""
    pa, pb = camera.project(a), camera.project(b)
    d = pb - pa
    length = np.linalg.norm(d, axis=1, keepdims=True)
    side = np.stack([-d[:, 1], d[:, 0]], axis=1) / np.where(length > 0, length, 1.0)
    side = np.where(length > 0, side, np.array([0.0, 1.0])) * (width[:, None] / 2.0)
    quads = np.stack([pa - side, pb - side, pb + side, pa + side], axis=1)
    items.add(quads, camera.depth(0.5 * (a + b)) - bias, colours)


def _dots(items: _Items, camera: Camera3D, centres: np.ndarray, radii: np.ndarray, colours: np.ndarray,
          bias: float = 0.0) -> None:
    """Discs of world ``radii`` (at least DOT_PIXELS across on screen) as octagons."""
    q = camera.project(centres)
    depth = camera.depth(centres)
    grow = camera.distance / np.maximum(depth, camera.near) if not camera.orthographic else 1.0
    r = np.maximum(radii * grow, DOT_PIXELS / camera.scale)
    items.add(q[:, None, :] + r[:, None, None] * _OCTAGON[None], depth - bias, colours)


def _rgba(color: Any, n: int) -> np.ndarray:
    return np.tile(np.array(color, dtype=np.uint8), (n, 1))


def body_color(world: Any, entity: int, row: int) -> tuple[int, int, int, int]:
    """A body's colour: its own (``body.color``) or the palette's by its row."""
    own = world.body(entity).color
    return own if own is not None else (*PALETTE[row % len(PALETTE)], 255)


def _bodies(world: Any, camera: Camera3D, items: _Items) -> None:
    from pysoft.features.bodies import CLOSED

    B = world.store.bodies
    pos = world.positions
    flat = world.store.body_outlines.arrays["rows"]
    members = world.store.body_members.arrays["rows"]
    radius = world.store.particles.view("radius")
    entities = B.view("entity").tolist()
    for row, entity in enumerate(entities):
        colour = body_color(world, entity, row)
        body = world.body(entity)
        start, count = int(B.view("outline_start")[row]), int(B.view("outline_count")[row])
        closed = bool(B.view("flags")[row] & CLOSED)
        if count >= 3:
            try:
                x, faces = body.render_mesh()
                tris = x[faces]
            except ValueError:
                tris = pos[flat[start:start + count].astype(np.int64)].reshape(-1, 3, 3)
            _faces(items, camera, tris, colour, two_sided=not closed, alpha=colour[3])
            continue
        ms, mc = int(B.view("member_start")[row]), int(B.view("member_count")[row])
        chain = members[ms:ms + mc].astype(np.int64)  # a rope: its members in order
        if len(chain) >= 2:
            w = np.maximum(2.0 * np.maximum(radius[chain[:-1]], radius[chain[1:]]), ROPE_WIDTH)
            _bands(items, camera, pos[chain[:-1]], pos[chain[1:]], _rgba(colour, len(chain) - 1), w)


def _box_mesh(half: np.ndarray) -> np.ndarray:
    """A box's 12 triangles (local, counter-clockwise from outside)."""
    corners = np.array([[x, y, z] for z in (-1, 1) for y in (-1, 1) for x in (-1, 1)], dtype=float) * half
    quads = np.array([[0, 2, 3, 1], [4, 5, 7, 6], [0, 1, 5, 4], [2, 6, 7, 3], [0, 4, 6, 2], [1, 3, 7, 5]])
    tris = np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])
    out: np.ndarray = corners[tris]
    return out


def _capsule_mesh(a: np.ndarray, b: np.ndarray, radius: float, rings: int = 8, sides: int = 16) -> np.ndarray:
    """Triangles of the points within ``radius`` of segment a-b (a sphere when a == b)."""
    axis = b - a
    length = float(np.linalg.norm(axis))
    w = axis / length if length > 0 else np.array([0.0, 1.0, 0.0])
    u = np.cross(w, [1.0, 0.0, 0.0] if abs(w[0]) < 0.9 else [0.0, 0.0, 1.0])
    u /= np.linalg.norm(u)
    v = np.cross(w, u)
    lat = np.linspace(-np.pi / 2, np.pi / 2, 2 * rings + 1)
    lon = np.linspace(0.0, 2 * np.pi, sides + 1)[:-1]
    # rings from the a end's pole to the b end's; the equator doubled, one copy at each end
    lat = np.concatenate([lat[:rings + 1], lat[rings:]])
    end = np.concatenate([np.zeros(rings + 1), np.ones(rings + 1)])
    ring = (np.cos(lat)[:, None, None] * (np.cos(lon)[None, :, None] * u + np.sin(lon)[None, :, None] * v)
            + np.sin(lat)[:, None, None] * w) * radius
    pts = ring + a + end[:, None, None] * axis
    k = len(lat)
    i, j = np.meshgrid(np.arange(k - 1), np.arange(sides), indexing="ij")
    j1 = (j + 1) % sides
    p00, p01, p10, p11 = pts[i, j], pts[i, j1], pts[i + 1, j], pts[i + 1, j1]
    tris = np.concatenate([np.stack([p00, p01, p11], -2).reshape(-1, 3, 3),
                           np.stack([p00, p11, p10], -2).reshape(-1, 3, 3)])
    return tris


def _plane_patches(world: Any, camera: Camera3D, items: _Items) -> None:
    """Each plane whose free side holds the eye as a chequered patch around the camera's
    target, cut by the other planes, drawn behind everything (a plane cannot hide what is on
    its free side from an eye on that side)."""
    C = world.store.colliders
    planes: list[tuple[np.ndarray, float]] = []
    for row, entity in enumerate(C.view("entity").tolist()):
        geo = world.collider(int(entity)).geometry
        if geo.kind == 0 and len(geo.face_offset) == 1 and geo.cap_a is None:
            n = C.view("rotation")[row] @ geo.face_normal[0]
            planes.append((n, float(geo.face_offset[0] + n @ C.view("center")[row])))
    if not planes:
        return
    # the patch: within the box the camera was fitted to, grown by a quarter of its size (or
    # a cube about the target a little larger than the view), so it stays put while the
    # camera does, on a grid of power-of-two tiles (steady as the camera zooms)
    if camera.extent is not None:
        lo, hi = camera.extent
        grow = max(0.25 * float(np.max(hi - lo)), 0.5)
        lo, hi = lo - grow, hi + grow
        centre, half = 0.5 * (lo + hi), 0.5 * float(np.linalg.norm(hi - lo))
    else:
        centre = camera.target
        half = 1.25 * max(camera.width, camera.height) / 2.0 / camera.scale
        lo, hi = centre - half, centre + half
    box = [(axis, float(axis @ (lo if axis.sum() > 0 else hi)))  # the box's inside: free sides
           for axis in np.concatenate([np.eye(3), -np.eye(3)])]
    step = 2.0 ** round(math.log2(half / 5.0))
    reach = math.ceil(half / step)
    for k, (n, offset) in enumerate(planes):
        if float(n @ camera.eye) < offset:  # the eye is in its solid side
            continue
        u = np.cross(n, [0.0, 0.0, 1.0] if abs(n[2]) < 0.9 else [1.0, 0.0, 0.0])
        u /= np.linalg.norm(u)
        v = np.cross(n, u)
        p0 = offset * n  # tiles on a grid fixed in the plane, around the camera's target
        ci, cj = (math.floor(float((centre - p0) @ axis) / step) for axis in (u, v))
        i, j = (g.ravel() for g in np.meshgrid(np.arange(ci - reach, ci + reach + 1),
                                               np.arange(cj - reach, cj + reach + 1), indexing="ij"))
        corner = np.array([(0, 0), (1, 0), (1, 1), (0, 1)], dtype=float)
        quads = (p0 + ((i[:, None] + corner[None, :, 0]) * step)[..., None] * u
                 + ((j[:, None] + corner[None, :, 1]) * step)[..., None] * v)  # (k, 4, 3)
        cuts = [(n2, o2) for m, (n2, o2) in enumerate(planes) if m != k]
        cuts += [(a, o) for a, o in box if abs(float(a @ n)) < 0.999]  # (not the box's face along it)
        side = np.stack([quads @ n2 - o2 for n2, o2 in cuts] or [np.ones(quads.shape[:2])])  # (cuts, k, 4)
        inside = np.asarray((side >= 0.0).all(axis=(0, 2)))
        outside = np.asarray((side < 0.0).all(axis=2).any(axis=0))
        whole = quads[inside]
        cut = []
        for q in quads[~inside & ~outside]:  # the tiles a boundary crosses: cut them
            for n2, o2 in cuts:
                q = _clip(q, n2, o2)
                if len(q) < 3:
                    break
            cut.append(q)
        parts = [q for q in cut if len(q) >= 3]
        rgb = np.array(TILES)[(i + j) % 2]
        polys = [(whole, rgb[inside])]
        if parts:  # one batch: each cut tile padded to the most corners by repeating its last
            most = max(len(q) for q in parts)
            padded = np.stack([np.concatenate([q, np.repeat(q[-1:], most - len(q), axis=0)]) for q in parts])
            polys.append((padded, rgb[~inside & ~outside][[len(q) >= 3 for q in cut]]))
        for poly, colour in polys:
            d = camera.depth(poly)
            ok = (d >= camera.near).all(axis=1)
            if ok.any():  # behind everything: a depth beyond all else, farther tiles first
                fill = np.concatenate([colour[ok], np.full((int(ok.sum()), 1), 255)], axis=1)
                items.add(camera.project(poly[ok]), 1e12 + d[ok].mean(axis=1), fill.astype(np.uint8))


def _clip(poly: np.ndarray, n: np.ndarray, offset: float) -> np.ndarray:
    """The part of convex polygon ``poly`` on the free side of plane (n, offset)."""
    s = poly @ n - offset
    out = []
    for i in range(len(poly)):
        j = (i + 1) % len(poly)
        if s[i] >= 0:
            out.append(poly[i])
        if (s[i] >= 0) != (s[j] >= 0):
            out.append(poly[i] + (poly[j] - poly[i]) * (s[i] / (s[i] - s[j])))
    return np.array(out) if out else np.zeros((0, 3))


def _colliders(world: Any, camera: Camera3D, items: _Items) -> None:
    _plane_patches(world, camera, items)
    C = world.store.colliders
    for row, entity in enumerate(C.view("entity").tolist()):
        geo = world.collider(int(entity)).geometry
        center, rot = C.view("center")[row], C.view("rotation")[row]
        if geo.cap_a is not None:
            a, b = C.view("cap_a")[row] @ rot.T + center, C.view("cap_b")[row] @ rot.T + center
            tris = _capsule_mesh(a, b, float(C.view("cap_radius")[row]))
        elif len(geo.face_offset) == 6:  # a box
            tris = _box_mesh(np.asarray(geo.face_offset[:3])) @ rot.T + center
        else:
            continue
        _faces(items, camera, tris, COLLIDER, two_sided=False)


def _arrows(drawer: Any, camera: Camera3D, origins: np.ndarray, vectors: np.ndarray,
            colours: np.ndarray) -> None:
    """World arrows as image-plane arrows (those that start behind the eye left out)."""
    o, tip = camera.project(origins), camera.project(origins + vectors)
    ok = np.isfinite(o).all(axis=1) & np.isfinite(tip).all(axis=1)
    if ok.any():
        _call(drawer, "arrows", o[ok], (tip - o)[ok], colours[ok])


def _pressure(world: Any, drawer: Any, camera: Camera3D) -> None:
    """Arrows of the gas's push on each surface triangle of a gas body, from its centroid
    along its outward normal, 0.1 m per newton (the force: pressure x the triangle's area)."""
    from pysoft.draw import PRESSURE_ARROW
    from pysoft.shapes import enclosed_volume

    B = world.store.bodies
    flat = world.store.body_outlines.arrays["rows"]
    origins, vectors = [], []
    for row in np.flatnonzero(B.view("pressure_count") > 0).tolist():
        start, count = int(B.view("outline_start")[row]), int(B.view("outline_count")[row])
        tris = world.positions[flat[start:start + count].astype(np.int64)].reshape(-1, 3, 3)
        amount, floor = float(B.view("amount")[row]), float(B.view("min_area")[row])
        push = amount / max(enclosed_volume(tris), floor) if amount else 0.0
        area_normals = 0.5 * np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
        origins.append(tris.mean(axis=1))
        vectors.append(push * area_normals * 0.1)
    if origins:
        o = np.concatenate(origins)
        _arrows(drawer, camera, o, np.concatenate(vectors), _rgba(PRESSURE_ARROW, len(o)))


def debug_draw(world: Any, drawer: Any, flags: int, camera: Any = None) -> None:
    """The 3D draw (see the module's docstring); ``camera`` a ``Camera3D``, default the
    drawer's own (``drawer.camera``)."""
    from pysoft.draw import CONTACT, PARTICLE, SPRING, TEXT, DrawFlags, strain_colors

    camera = camera if camera is not None else getattr(drawer, "camera", None)
    if not isinstance(camera, Camera3D):
        raise ValueError("camera: a 3D world is drawn through a pysoft.draw.Camera3D; give the drawer "
                         f"one or pass camera=, got {type(camera).__name__}")
    flags = DrawFlags(flags)
    pos = world.positions
    items = _Items()
    bias = 1e-3 * camera.distance  # lines and dots on a surface show in front of it
    if DrawFlags.COLLIDERS in flags:
        _colliders(world, camera, items)
    if DrawFlags.OUTLINES in flags and world.store.bodies.n:
        _bodies(world, camera, items)
    if DrawFlags.SPRINGS in flags and world.store.springs.n:
        pairs = world.spring_pairs()
        colours = (strain_colors(world.spring_strain()) if DrawFlags.STRAIN in flags
                   else _rgba(SPRING, len(pairs)))
        _bands(items, camera, pos[pairs[:, 0]], pos[pairs[:, 1]], colours,
               np.full(len(pairs), SPRING_PIXELS / camera.scale), bias)
    if DrawFlags.PARTICLES in flags and len(pos):
        radii = np.maximum(world.store.particles.view("radius"), 0.0)
        _dots(items, camera, pos, radii, _rgba(PARTICLE, len(pos)), 2.0 * bias)
    items.emit(drawer)
    if DrawFlags.CONTACTS in flags:  # collider contacts at their particles, body contacts at their points
        c, b = world.contacts, world.body_contacts
        at = np.concatenate([pos[world.store.particles.rows(c.particles)], b.points])
        normals = np.concatenate([c.normals, b.normals])
        if len(at):
            _arrows(drawer, camera, at, 0.1 * normals, _rgba(CONTACT, len(at)))
    if DrawFlags.PRESSURE in flags:
        _pressure(world, drawer, camera)
    if DrawFlags.TEXT in flags:
        corner = np.array([-camera.width / 2.0 + 4.0, camera.height / 2.0 - 4.0]) / camera.scale
        _call(drawer, "text", corner,
              f"t {world.time:.2f} s  particles {world.store.particles.n}  springs {world.store.springs.n}"
              f"  bodies {world.store.bodies.n}", TEXT)
