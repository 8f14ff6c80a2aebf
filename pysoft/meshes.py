"""Closed triangle meshes in, tetrahedra out: load, validate, tetrahedralise, embed.

A volumetric body needs tetrahedra; users have surfaces (OBJ, STL, PLY, OFF or
arrays). This module is the pipeline between them, with no World involved:

* ``load`` reads a mesh (through trimesh, ``process=False`` so that welding is
  ours), welds vertices closer than 1e-9 of the bounding-box diagonal, and
  checks that the surface bounds a solid: every edge joins exactly two faces
  that traverse it in opposite directions (closed, manifold, consistently
  wound), no face has zero area, and every closed component encloses volume.
  Faces are made counter-clockwise seen from outside: a component nested inside
  an even number of others faces outwards, one inside an odd number (a cavity)
  inwards; a mesh given the other way round is flipped.
* ``tetrahedralize`` follows Ten Minute Physics' tetrahedraliser (Müller,
  "13 - Tetrahedralize", BlenderTetPlugin.py): the surface's own vertices plus
  interior samples (a body-centred cubic lattice, whose Delaunay cells are
  well-shaped tetrahedra, jittered by 5 % of a spacing with a fixed seed so
  that it never ties with the surface, kept at least half a spacing inside), a
  Delaunay tetrahedralisation of them all (Qhull through scipy), oriented
  consistently (a nearly flat tetrahedron takes its orientation from a
  neighbour, not from its rounded volume), and only the tetrahedra whose
  centroid is inside. Inside means a winding number of 1: the signed count of
  faces a +z ray crosses, exact on a closed surface because each edge test is
  computed one way for both faces of the edge and ties are broken by a
  simulation of simplicity; a grid over xy gives each ray a few candidate faces
  (a generalised winding number, summing solid angles over all faces, was 40
  times slower). Where kept tetrahedra meet only along an edge, tetrahedra
  around it change side until the boundary is a closed 2-manifold. Slivers
  whose corners are all surface vertices (spanning the surface) are peeled
  from the boundary where their removal is a simplicial collapse (the boundary
  stays a closed 2-manifold).
* ``embed`` gives render vertices barycentric weights in the tetrahedra, so a
  surface moves with the simulated points.

Delaunay tetrahedra do not conform to the surface: their boundary is made of
the surface's vertices but not always of its faces, which is why the original
surface is kept as an embedded render mesh.
"""

from __future__ import annotations

import math
import os
from typing import Any, NamedTuple

import numpy as np
from scipy.sparse import coo_matrix  # type: ignore[import-untyped]
from scipy.sparse.csgraph import connected_components  # type: ignore[import-untyped]
from scipy.spatial import Delaunay, cKDTree  # type: ignore[import-untyped]

from pysoft import _validate as validate
from pysoft.shapes import TET_FACES, enclosed_volume, signed_volumes, tet_boundary

WELD = 1e-9  # vertices closer than this x the bounding-box diagonal are one vertex
FLAT = 1e-12  # a face (volume) below this x diagonal**2 (**3) is degenerate
JITTER = 0.05  # interior samples move up to this x spacing (fixed seed): no cospherical ties
SLIVER = 1e-6  # boundary tetrahedra below this quality are always peeled (flat ones among them)


class Tetrahedra(NamedTuple):
    """A tetrahedral mesh: ``points`` (N, 3) whose first V rows are the surface's vertices,
    unchanged; ``tetrahedra`` (K, 4) each positively oriented; ``surface`` (T, 3) the
    tetrahedra's boundary faces, counter-clockwise seen from outside."""

    points: np.ndarray
    tetrahedra: np.ndarray
    surface: np.ndarray


# --------------------------------------------------------------------------- loading and checks


def load(mesh: Any, *, weld: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """A closed, manifold, outward-wound triangle mesh: float64 (V, 3) vertices, int64 (F, 3)
    faces.

    ``mesh`` is a path (str or os.PathLike: any format trimesh reads, e.g. OBJ, STL, PLY, OFF),
    a ``(vertices, faces)`` pair of array-likes or a ``trimesh.Trimesh``. Vertices closer than
    1e-9 of the bounding-box diagonal are welded (with ``weld``) and unused vertices dropped;
    an inside-out mesh is flipped. Raises ValueError naming ``mesh`` when the mesh is not the
    surface of a solid: open, non-manifold, inconsistently wound, zero-area faces, no volume.
    """
    vertices, faces = _arrays(mesh)
    if weld:
        vertices, faces = _weld(vertices, faces)
        collapsed = (faces[:, 0] == faces[:, 1]) | (faces[:, 1] == faces[:, 2]) | (faces[:, 2] == faces[:, 0])
        if collapsed.any():
            raise ValueError(f"mesh: {int(collapsed.sum())} faces have zero area (their corners "
                             f"weld into one within {WELD:g} of the mesh's size)")
    _check_closed(faces)
    diagonal = float(np.linalg.norm(np.ptp(vertices, axis=0)))
    cross = _face_cross(vertices, faces)
    flat = np.linalg.norm(cross, axis=1) <= FLAT * diagonal**2
    if flat.any():
        raise ValueError(f"mesh: {int(flat.sum())} faces have zero area (first: face "
                         f"{int(np.flatnonzero(flat)[0])})")
    return vertices, _orient(vertices, faces)


def _arrays(mesh: Any) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(mesh, (str, os.PathLike)):
        import trimesh  # (imported when used: it takes a moment)

        try:
            loaded: Any = trimesh.load(os.fspath(mesh), force="mesh", process=False)
        except Exception as exc:  # trimesh raises many kinds; all mean "could not read it"
            raise ValueError(f"mesh: could not read {os.fspath(mesh)!r}: {exc}") from None
        mesh = (loaded.vertices, loaded.faces)
    elif type(mesh).__module__.startswith("trimesh"):
        mesh = (mesh.vertices, mesh.faces)
    if not isinstance(mesh, (tuple, list)) or len(mesh) != 2:
        raise ValueError("mesh must be a path, a (vertices, faces) pair or a trimesh.Trimesh, "
                         f"got {type(mesh).__name__}")
    vertices = validate.array("mesh vertices", mesh[0], (None, 3))
    faces = validate.array("mesh faces", mesh[1], (None, 3), integral=True)
    if len(faces) < 4:
        raise ValueError(f"mesh: {len(faces)} faces cannot close a volume (4 at least)")
    if faces.min() < 0 or faces.max() >= len(vertices):
        raise ValueError(f"mesh faces: indices must be in [0, {len(vertices)}), got "
                         f"{int(faces.min())}..{int(faces.max())}")
    repeated = (faces[:, 0] == faces[:, 1]) | (faces[:, 1] == faces[:, 2]) | (faces[:, 2] == faces[:, 0])
    if repeated.any():
        raise ValueError(f"mesh faces: {int(repeated.sum())} faces repeat a vertex (first: face "
                         f"{int(np.flatnonzero(repeated)[0])})")
    return vertices, faces


def _weld(vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vertices closer than WELD x diagonal become one (the first of each cluster, clusters
    joined transitively); vertices no face uses are dropped; order of first use is kept."""
    tolerance = WELD * float(np.linalg.norm(np.ptp(vertices, axis=0)))
    pairs = cKDTree(vertices).query_pairs(tolerance, output_type="ndarray")
    n = len(vertices)
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    _, label = connected_components(graph, directed=False)
    first = np.full(label.max() + 1, n)
    np.minimum.at(first, label, np.arange(n))
    faces = first[label][faces]
    used, inverse = np.unique(faces, return_inverse=True)
    return vertices[used], inverse.reshape(faces.shape).astype(np.int64)


def _check_closed(faces: np.ndarray) -> None:
    directed = np.stack([faces, np.roll(faces, -1, axis=1)], axis=2).reshape(-1, 2)
    undirected = np.sort(directed, axis=1)
    _, count = np.unique(undirected, axis=0, return_counts=True)
    if (count == 1).any():
        raise ValueError(f"mesh: {int((count == 1).sum())} edges are open (each must join "
                         "exactly two faces)")
    if (count > 2).any():
        raise ValueError(f"mesh: {int((count > 2).sum())} edges are non-manifold (joined by "
                         f"{int(count.max())} faces; each must join exactly two)")
    _, count = np.unique(directed, axis=0, return_counts=True)
    if (count > 1).any():
        raise ValueError(f"mesh: {int((count > 1).sum())} edges join two faces wound the same "
                         "way (faces must be consistently oriented)")


def _face_cross(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    a, b, c = vertices[faces[:, 0]], vertices[faces[:, 1]], vertices[faces[:, 2]]
    return np.asarray(np.cross(b - a, c - a))


def _orient(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Faces of each closed component flipped if needed so that the solid is on their inner
    side: a component inside an even number of others faces outwards (positive volume), one
    inside an odd number (a cavity) inwards. Raises ValueError for a flat component."""
    n = len(vertices)
    graph = coo_matrix((np.ones(2 * len(faces)),
                        (np.r_[faces[:, 0], faces[:, 1]], np.r_[faces[:, 1], faces[:, 2]])),
                       shape=(n, n))
    count, label = connected_components(graph, directed=False)
    of_face = label[faces[:, 0]]
    faces = faces.copy()
    for k in range(count):
        own = of_face == k
        part = faces[own]
        extent = float(np.linalg.norm(np.ptp(vertices[np.unique(part)], axis=0)))
        signed = volume(vertices, part)
        if abs(signed) <= FLAT * extent**3:
            where = "" if count == 1 else f" (component {k} of {count})"
            raise ValueError(f"mesh: encloses no volume{where}: the surface is flat or "
                             "degenerate")
        if signed < 0:
            faces[own] = part[:, ::-1]
    if count > 1:
        inner = np.zeros(count, dtype=bool)
        for k in range(count):
            others = of_face != k
            point = vertices[np.flatnonzero(label == k)[:1]]
            depth = round(float(_winding(vertices, faces[others], point)[0]))
            inner[k] = depth % 2 == 1
        flip = inner[of_face]
        faces[flip] = faces[flip][:, ::-1]
    return faces


def volume(vertices: Any, faces: Any) -> float:
    """The volume a closed surface encloses (divergence theorem: the signed volumes of the
    tetrahedra joining the origin to each face), positive when faces are counter-clockwise
    seen from outside. The mean vertex is taken as origin, to keep rounding small."""
    v = validate.array("vertices", vertices, (None, 3))
    f = validate.array("faces", faces, (None, 3), integral=True)
    if len(f) == 0:
        return 0.0
    return enclosed_volume((v - v.mean(axis=0))[f])


# --------------------------------------------------------------------------- inside tests


def _winding(vertices: np.ndarray, faces: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """The winding number of a closed surface at each query point: the signed count of the
    faces a ray from the point in +z crosses (+1 where it leaves through a face, -1 where it
    enters); 1 inside an outward surface, 0 outside, +-1 per enclosing shell.

    Exact and robust: a face is crossed when the point's xy lies in the face's projection,
    all three edge tests agreeing in sign (that sign is the crossing's). Each edge test is
    computed from the edge's lower-numbered vertex, so the two faces of an edge see the same
    number, and a zero (the ray through an edge or a vertex) takes the sign the point would
    have moved by (eps, eps**2) (a simulation of simplicity): exactly one face of a shared
    edge counts. Candidate faces come from a grid over xy, so each query tests a few faces,
    not all (a generalised winding number tests all, which is what made it slow)."""
    tri = vertices[faces]
    lo, hi = tri[..., :2].min(axis=(0, 1)), tri[..., :2].max(axis=(0, 1))
    cells = max(1, min(256, round(math.sqrt(len(faces)))))
    size = np.maximum(hi - lo, 1e-300) / cells
    f_lo = np.clip(((tri[..., :2].min(axis=1) - lo) // size).astype(np.int64), 0, cells - 1)
    f_hi = np.clip(((tri[..., :2].max(axis=1) - lo) // size).astype(np.int64), 0, cells - 1)
    span = f_hi - f_lo + 1
    face = np.repeat(np.arange(len(faces)), span[:, 0] * span[:, 1])
    first = np.cumsum(span[:, 0] * span[:, 1]) - span[:, 0] * span[:, 1]
    k = np.arange(len(face)) - first[face]
    cell = (f_lo[face, 0] + k // span[face, 1]) * cells + f_lo[face, 1] + k % span[face, 1]
    order = np.argsort(cell, kind="stable")
    face, start = face[order], np.searchsorted(cell[order], np.arange(cells * cells + 1))
    q = ((queries[:, :2] - lo) // size).astype(np.int64)
    inside = ((q >= 0) & (q < cells)).all(axis=1)
    qc = np.where(inside, q[:, 0] * cells + q[:, 1], 0)
    count = np.where(inside, start[qc + 1] - start[qc], 0)
    out = np.zeros(len(queries))
    for begin in range(0, len(queries), 65536):
        rows = np.arange(begin, min(begin + 65536, len(queries)))
        which = np.repeat(rows, count[rows])
        offset = np.arange(len(which)) - np.repeat(np.cumsum(count[rows]) - count[rows], count[rows])
        f = face[start[qc[which]] + offset]
        out += np.bincount(which, _crossing(vertices, faces[f], queries[which]), len(queries))
    return out


def _crossing(vertices: np.ndarray, faces: np.ndarray, p: np.ndarray) -> np.ndarray:
    """+1 / -1 / 0: whether the +z ray from each point p crosses its face, and which way."""
    signs, weight = [], []
    for i, j in ((0, 1), (1, 2), (2, 0)):
        u, w = faces[:, i], faces[:, j]
        flip = u > w
        a, b = vertices[np.where(flip, w, u)], vertices[np.where(flip, u, w)]
        o = (b[:, 0] - a[:, 0]) * (p[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (p[:, 0] - a[:, 0])
        tie = np.where(b[:, 1] != a[:, 1], a[:, 1] - b[:, 1], b[:, 0] - a[:, 0])
        sign = np.sign(np.where(o != 0, o, tie)) * np.where(flip, -1.0, 1.0)
        signs.append(sign)
        weight.append(o * np.where(flip, -1.0, 1.0))
    agree = (signs[0] == signs[1]) & (signs[1] == signs[2]) & (signs[0] != 0)
    z = vertices[faces][:, :, 2]
    total = weight[0] + weight[1] + weight[2]
    with np.errstate(divide="ignore", invalid="ignore"):
        height = (weight[1] * z[:, 0] + weight[2] * z[:, 1] + weight[0] * z[:, 2]) / total
    above = np.where(total != 0, height > p[:, 2], False)
    return np.asarray(np.where(agree & above, signs[0], 0.0))


def _distance_below(vertices: np.ndarray, faces: np.ndarray, queries: np.ndarray,
                    limit: float) -> np.ndarray:
    """For each query, whether some face lies closer than ``limit`` (exact point-triangle
    distances, for the faces a KD-tree of face centroids offers as candidates)."""
    tri = vertices[faces]
    centre = tri.mean(axis=1)
    reach = float(np.linalg.norm(tri - centre[:, None], axis=2).max())
    pairs = cKDTree(queries).sparse_distance_matrix(cKDTree(centre), limit + reach,
                                                    output_type="ndarray")
    q, f = pairs["i"], pairs["j"]
    near = np.zeros(len(queries), dtype=bool)
    if len(q):
        near[q[_point_triangle(queries[q], tri[f]) < limit]] = True
    return near


def _point_triangle(p: np.ndarray, tri: np.ndarray) -> np.ndarray:
    """Distances from points (n, 3) to triangles (n, 3, 3): to the plane when the point
    projects inside the triangle, else to the nearest of its three edges."""
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    n = np.cross(b - a, c - a)
    side = [np.einsum("ij,ij->i", np.cross(y - x, p - x), n) for x, y in ((a, b), (b, c), (c, a))]
    inside = (side[0] >= 0) & (side[1] >= 0) & (side[2] >= 0)
    plane = np.abs(np.einsum("ij,ij->i", p - a, n)) / np.linalg.norm(n, axis=1)
    edge = np.full(len(p), np.inf)
    for x, y in ((a, b), (b, c), (c, a)):
        e = y - x
        t = np.clip(np.einsum("ij,ij->i", p - x, e) / np.einsum("ij,ij->i", e, e), 0.0, 1.0)
        edge = np.minimum(edge, np.linalg.norm(p - x - t[:, None] * e, axis=1))
    return np.where(inside, plane, edge)


# --------------------------------------------------------------------------- tetrahedralisation



def tetrahedralize(vertices: Any, faces: Any, *, spacing: float | None = None,
                   quality: float = 0.01) -> Tetrahedra:
    """Tetrahedra filling a closed surface (welded, as ``load`` returns it: it is checked
    again here, and turned right way out if need be, but not welded).

    ``spacing`` (m) is the edge of the cubic cell of the body-centred lattice that samples the
    interior (default: a tenth of the longest side of the bounding box, at most 200 cells a
    side); samples closer than half a spacing to the surface are left out. ``quality`` is the
    least shape quality ``6 sqrt(2) volume / rms_edge**3`` (1 for a regular tetrahedron, 0 for
    a flat one) of a boundary tetrahedron whose corners are all surface vertices: worse ones
    are peeled off where that keeps the boundary a closed manifold (interior slivers stay; the
    tetrahedra near a large flat face are long). The first V rows of ``points`` are
    ``vertices``, unchanged (a vertex no tetrahedron uses stays a row); samples no tetrahedron
    uses are dropped.
    """
    v, f = load((vertices, faces), weld=False)
    span = np.ptp(v, axis=0)
    h = float(span.max()) / 10.0 if spacing is None else validate.positive("spacing", spacing)
    q_min = validate.nonnegative("quality", quality)
    if q_min > 1.0:
        raise ValueError(f"quality must be <= 1 (a regular tetrahedron's), got {q_min}")
    if float(span.max()) / h > 200.0:
        raise ValueError(f"spacing must be at least 1/200 of the mesh's longest side "
                         f"({float(span.max()) / 200:g}), got {h:g}")
    samples = _interior(v, f, h)
    points = np.vstack([v, samples])
    delaunay = Delaunay(points, qhull_options="Qbb Qc Qz Q12")
    tets = _orient_tets(points, delaunay.simplices.astype(np.int64), delaunay.neighbors)
    tets = _mend_pinches(points, tets, _winding(v, f, points[tets].mean(axis=1)) > 0.5)
    tets = _peel(points, tets, max(q_min, SLIVER), len(v))
    flat = signed_volumes(points, tets) <= 0
    if flat.any():
        raise ValueError(f"mesh: {int(flat.sum())} flat tetrahedra are left inside (coplanar, "
                         "cocircular surface vertices); try another spacing")
    used = np.zeros(len(points), dtype=bool)
    used[: len(v)] = True
    used[tets] = True
    index = np.cumsum(used) - 1
    tets = index[tets]
    surface = boundary(tets)
    try:
        _check_closed(surface)
    except ValueError as exc:  # (not seen on the tested meshes; a guard, not a repair)
        raise ValueError(f"mesh: its tetrahedra's boundary is not a closed manifold "
                         f"({str(exc).removeprefix('mesh: ')}); try another spacing") from None
    return Tetrahedra(points[used], tets, surface)


def _interior(vertices: np.ndarray, faces: np.ndarray, h: float) -> np.ndarray:
    """The body-centred cubic lattice of cell ``h`` centred on the bounding box, inside the
    surface and at least h/2 from it."""
    lo, span = vertices.min(axis=0), np.ptp(vertices, axis=0)
    n = np.floor(span / h).astype(int)
    start = lo + (span - n * h) / 2.0
    axes = [start[i] + h * np.arange(n[i] + 1) for i in range(3)]
    corners = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    centres = np.stack(np.meshgrid(*(a[:-1] + h / 2 for a in axes), indexing="ij"),
                       axis=-1).reshape(-1, 3)
    lattice = np.vstack([corners, centres])
    lattice += JITTER * h * np.random.default_rng(0).uniform(-1.0, 1.0, lattice.shape)
    lattice = lattice[~_distance_below(vertices, faces, lattice, 0.5 * h)]
    return np.asarray(lattice[_winding(vertices, faces, lattice) > 0.5])


def _orient_tets(points: np.ndarray, tets: np.ndarray, neighbors: np.ndarray) -> np.ndarray:
    """Tetrahedra reordered to be positively oriented, consistently: a shared face is
    traversed in opposite directions by its two tetrahedra. Rounding may give a nearly flat
    tetrahedron (4 cocircular surface vertices) either sign, so those take their orientation
    from a neighbour (across a face, the opposite vertex changes sides) rather than from
    their own volume. Qhull's simplices come in no particular order."""
    quality = tet_quality(points, tets)
    sign = np.where(np.abs(quality) < SLIVER, 0.0, np.sign(quality))
    while (sign == 0).any():
        todo = np.flatnonzero(sign == 0)
        for j in range(4):
            n = neighbors[todo, j]
            ok = (n >= 0) & (sign[np.maximum(n, 0)] != 0) & (sign[todo] == 0)
            i, n = todo[ok], n[ok]
            if len(i) == 0:
                continue
            swapped = tets[i].copy()  # i with its vertex j replaced by n's vertex opposite it
            shared = (tets[n][:, :, None] == tets[i][:, None, :]).any(axis=2)
            swapped[:, j] = tets[n][~shared]
            pos = np.argmax(tets[n][:, None, :] == swapped[:, :, None], axis=2)
            odd = sum((pos[:, a] > pos[:, b]).astype(int) for a in range(4) for b in range(a + 1, 4)) % 2
            sign[i] = -sign[n] * np.where(odd == 1, -1, 1)
        if (sign[todo] == 0).all():  # (a cluster of flat ones with no oriented neighbour)
            sign[todo] = 1
    out = tets.copy()
    out[sign < 0] = out[sign < 0][:, [0, 1, 3, 2]]
    return out


def _mend_pinches(points: np.ndarray, tets: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """The ``inside`` tetrahedra, mended where they meet only along an edge (a boundary edge
    of more than two boundary faces: the surface thinner than the sampling, or a Delaunay
    face missing from it). Each round, at each such edge, the smallest tetrahedron around it
    changes side: the smallest left-out one is added or the smallest kept one removed,
    whichever is smaller; each tetrahedron changes side once at most (else they cycle). An edge
    with no tetrahedron left to change gets its whole star added, which ends at worst at the
    convex hull."""
    keep = inside.copy()
    pairs = np.array([[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]])
    edges = np.sort(tets[:, pairs], axis=2)
    n = int(tets.max()) + 1
    keys = edges[..., 0] * n + edges[..., 1]  # (K, 6)
    size = np.abs(signed_volumes(points, tets))
    moved = np.zeros(len(tets), dtype=bool)  # a tetrahedron changes side once at most
    for _ in range(len(tets) + 1):
        faces = boundary(tets[keep])
        around = np.sort(faces[:, [[0, 1], [1, 2], [2, 0]]].reshape(-1, 2), axis=1)
        key, count = np.unique(around[:, 0] * n + around[:, 1], return_counts=True)
        pinched = key[count > 2]
        if len(pinched) == 0:
            return np.asarray(tets[keep])
        hit = np.isin(keys, pinched)
        tet, slot = np.nonzero(hit & ~moved[:, None])
        if len(tet) == 0:
            keep |= hit.any(axis=1)
            continue
        edge = keys[tet, slot]
        order = np.lexsort((tet, size[tet], edge))  # per edge, smallest first
        tet, edge = tet[order], edge[order]
        best = {}
        for side in (False, True):  # the smallest left-out, the smallest kept
            mine = keep[tet] == side
            t, e = tet[mine], edge[mine]
            first = np.ones(len(e), dtype=bool)
            first[1:] = e[1:] != e[:-1]
            best[side] = dict(zip(e[first].tolist(), t[first].tolist(), strict=True))
        for e in pinched.tolist():
            out, kept = best[False].get(e), best[True].get(e)
            if out is not None and (kept is None or size[out] <= size[kept]):
                keep[out], moved[out] = True, True
            elif kept is not None:
                keep[kept], moved[kept] = False, True
    raise AssertionError("unreachable: the convex hull has no pinched edge")


def tet_quality(points: np.ndarray, tets: np.ndarray) -> np.ndarray:
    """Each tetrahedron's ``6 sqrt(2) volume / rms_edge**3``: 1 for a regular one, 0 for a
    flat one, negative for an inverted one (Ten Minute Physics' tetQuality)."""
    p = points[tets]
    edges = p[:, [1, 2, 3, 2, 3, 3]] - p[:, [0, 0, 0, 1, 1, 2]]
    rms = np.sqrt(np.einsum("kei,kei->k", edges, edges) / 6.0)
    return np.asarray(6.0 * math.sqrt(2.0) * signed_volumes(points, tets) / rms**3)


def boundary(tets: Any) -> np.ndarray:
    """The faces of positively oriented tetrahedra (K, 4) that belong to one tetrahedron only,
    counter-clockwise seen from outside, in the order of their tetrahedra."""
    return tet_boundary(validate.array("tets", tets, (None, 4), integral=True))


def _peel(points: np.ndarray, tets: np.ndarray, q_min: float, surface: int) -> np.ndarray:
    """Remove boundary tetrahedra of quality below ``q_min`` whose corners are all surface
    vertices (rows below ``surface``: slivers spanning the surface; removing one never exposes
    an interior sample, so peeling cannot eat into the body) while the removal is a simplicial
    collapse (the boundary stays a closed 2-manifold): with one boundary face, the opposite
    vertex is not on the boundary; with two, the edge joining the vertices opposite them is
    not a boundary edge; with three, their common vertex is in no other tetrahedron. Each
    round removes vertex-disjoint candidates, worst first, so their checks stay independent."""
    quality = tet_quality(points, tets)
    keep = np.ones(len(tets), dtype=bool)
    n = len(points)
    while True:
        live = np.flatnonzero(keep)
        t = tets[live]
        keys = np.sort(t[:, TET_FACES], axis=2).reshape(-1, 3)
        _, inverse, count = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
        outer = (count[inverse.ravel()] == 1).reshape(-1, 4)  # face j of tet opposite vertex j
        n_outer = outer.sum(axis=1)
        cand = np.flatnonzero((quality[live] < q_min) & (n_outer >= 1) & (n_outer <= 3)
                              & (t < surface).all(axis=1))
        if len(cand) == 0:
            return tets[keep]
        faces = keys.reshape(-1, 4, 3)[outer]
        on_surface = np.zeros(n, dtype=bool)
        on_surface[faces] = True
        edges = np.sort(faces[:, [[0, 1], [1, 2], [2, 0]]].reshape(-1, 2), axis=1)
        edge_keys = np.unique(edges[:, 0] * n + edges[:, 1])
        uses = np.bincount(t.ravel(), minlength=n)
        removed = np.zeros(n, dtype=bool)
        for c in cand[np.argsort(quality[live][cand], kind="stable")]:
            ids, out = t[c], outer[c]
            if removed[ids].any():
                continue
            if out.sum() == 1:
                ok = not on_surface[ids[out]].any()
            elif out.sum() == 2:
                i, j = sorted(ids[out])
                ok = not np.isin(i * n + j, edge_keys)
            else:
                ok = uses[ids[~out]][0] == 1
            if ok:
                keep[live[c]] = False
                removed[ids] = True
        if not removed.any():
            return tets[keep]


# --------------------------------------------------------------------------- embedding


def embed(points: Any, tetrahedra: Any, targets: Any) -> tuple[np.ndarray, np.ndarray]:
    """For each target point (M, 3), the tetrahedron it lies in and its 4 barycentric weights
    (summing to 1), so that ``(weights[:, :, None] * points[tetrahedra[index]]).sum(1)`` gives
    the targets back. A point in no tetrahedron takes the one where its least weight is
    greatest among nearby ones (its weights then extrapolate, some negative).

    Candidates are the tetrahedra whose centroid lies within the largest centroid-to-corner
    distance (all that can contain the point) plus the 8 nearest centroids, in chunks of
    targets, so memory stays proportional to the candidates.
    """
    p = validate.array("points", points, (None, 3))
    t = validate.array("tetrahedra", tetrahedra, (None, 4), integral=True)
    x = validate.array("targets", targets, (None, 3))
    if len(t) == 0:
        raise ValueError("tetrahedra: none given")
    if t.min() < 0 or t.max() >= len(p):
        raise ValueError(f"tetrahedra: indices must be in [0, {len(p)})")
    corners = p[t]
    centre = corners.mean(axis=1)
    reach = float(np.linalg.norm(corners - centre[:, None], axis=2).max())
    tree = cKDTree(centre)
    k = min(8, len(t))
    index = np.empty(len(x), dtype=np.int64)
    weights = np.empty((len(x), 4))
    for start in range(0, len(x), 4096):
        chunk = x[start:start + 4096]
        pairs = cKDTree(chunk).sparse_distance_matrix(tree, reach, output_type="ndarray")
        _, near = tree.query(chunk, k=k)
        rows = np.r_[pairs["i"], np.repeat(np.arange(len(chunk)), k)]
        cols = np.r_[pairs["j"], np.asarray(near).reshape(-1)].astype(np.int64)
        w = _barycentric(corners[cols], chunk[rows])
        worst = np.where(np.isfinite(w).all(axis=1), w.min(axis=1), -np.inf)
        order = np.lexsort((cols, -worst, rows))  # per target: greatest least weight first
        first = order[np.r_[True, rows[order][1:] != rows[order][:-1]]]
        index[start + rows[first]] = cols[first]
        weights[start + rows[first]] = w[first]
    return index, weights


def _barycentric(corners: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Weights (n, 4) of points x (n, 3) in tetrahedra (n, 4, 3), by Cramer's rule."""
    a = corners[:, 0]
    e1, e2, e3, d = corners[:, 1] - a, corners[:, 2] - a, corners[:, 3] - a, x - a
    det = np.einsum("ij,ij->i", e1, np.cross(e2, e3))
    with np.errstate(divide="ignore", invalid="ignore"):
        w1 = np.einsum("ij,ij->i", d, np.cross(e2, e3)) / det
        w2 = np.einsum("ij,ij->i", e1, np.cross(d, e3)) / det
        w3 = np.einsum("ij,ij->i", e1, np.cross(e2, d)) / det
    return np.stack([1.0 - w1 - w2 - w3, w1, w2, w3], axis=1)


# --------------------------------------------------------------------------- shapes


def box(size: Any = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """A box centred on the origin: 8 corners and 12 faces, counter-clockwise from outside.
    ``size`` is one edge length or three (m)."""
    s = np.broadcast_to(validate.array("size", size, (None,) if np.ndim(size) else ()), (3,))
    if (s <= 0).any():
        raise ValueError(f"size must be > 0, got {size!r}")
    corners = np.array([[i, j, k] for i in (-0.5, 0.5) for j in (-0.5, 0.5) for k in (-0.5, 0.5)])
    faces = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                      [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
    return corners * s, faces


def icosphere(subdivisions: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """A unit sphere of triangles: an icosahedron whose faces are split in four
    ``subdivisions`` times, the new vertices pushed out to the sphere (10 4**n + 2 vertices,
    20 4**n faces), counter-clockwise from outside."""
    n = validate.integer("subdivisions", subdivisions, 0, 8)
    g = (1.0 + math.sqrt(5.0)) / 2.0
    v = np.array([[-1, g, 0], [1, g, 0], [-1, -g, 0], [1, -g, 0], [0, -1, g], [0, 1, g],
                  [0, -1, -g], [0, 1, -g], [g, 0, -1], [g, 0, 1], [-g, 0, -1], [-g, 0, 1]])
    f = np.array([[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9],
                  [5, 11, 4], [11, 10, 2], [10, 7, 6], [7, 1, 8], [3, 9, 4], [3, 4, 2],
                  [3, 2, 6], [3, 6, 8], [3, 8, 9], [4, 9, 5], [2, 4, 11], [6, 2, 10],
                  [8, 6, 7], [9, 8, 1]])
    v = v / np.linalg.norm(v, axis=1, keepdims=True)
    for _ in range(n):
        edges = np.sort(f[:, [[0, 1], [1, 2], [2, 0]]].reshape(-1, 2), axis=1)
        unique, inverse = np.unique(edges, axis=0, return_inverse=True)
        mid = v[unique].mean(axis=1)
        m = len(v) + inverse.reshape(-1, 3)  # midpoints of edges 01, 12, 20
        v = np.vstack([v, mid / np.linalg.norm(mid, axis=1, keepdims=True)])
        f = np.concatenate([np.stack([f[:, 0], m[:, 0], m[:, 2]], axis=1),
                            np.stack([f[:, 1], m[:, 1], m[:, 0]], axis=1),
                            np.stack([f[:, 2], m[:, 2], m[:, 1]], axis=1), m])
    return v, f.astype(np.int64)


def torus(major: float = 1.0, minor: float = 0.25, segments_major: int = 32,
          segments_minor: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """A torus about the z axis: the circle of radius ``minor`` (m) whose centre runs round
    the circle of radius ``major`` in the xy plane, sampled at ``segments_major`` x
    ``segments_minor`` vertices on it; faces counter-clockwise from outside."""
    big = validate.positive("major", major)
    small = validate.positive("minor", minor)
    if small >= big:
        raise ValueError(f"minor must be < major (a ring with a hole), got {small} >= {big}")
    m = validate.integer("segments_major", segments_major, 3)
    k = validate.integer("segments_minor", segments_minor, 3)
    u = 2.0 * math.pi * np.arange(m)[:, None] / m
    w = 2.0 * math.pi * np.arange(k)[None, :] / k
    ring = big + small * np.cos(w)
    v = np.stack(np.broadcast_arrays(ring * np.cos(u), ring * np.sin(u), small * np.sin(w)),
                 axis=-1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(m), np.arange(k), indexing="ij")
    a, b = i * k + j, (i + 1) % m * k + j
    c, d = (i + 1) % m * k + (j + 1) % k, i * k + (j + 1) % k
    f = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)])
    return v, f.astype(np.int64)
