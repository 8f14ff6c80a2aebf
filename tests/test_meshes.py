"""pysoft.meshes: closed triangle meshes loaded, checked and welded; tetrahedra that fill them
(and not their holes); barycentric embedding. Analytic volumes where there are some."""

from __future__ import annotations

import math
import pathlib

import numpy as np
import pytest

from pysoft import meshes


def _tet_volumes(points: np.ndarray, tets: np.ndarray) -> np.ndarray:
    p = points[tets]
    return np.einsum("ij,ij->i", p[:, 1] - p[:, 0], np.cross(p[:, 2] - p[:, 0], p[:, 3] - p[:, 0])) / 6


def _in_some_tet(points: np.ndarray, tets: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Brute force: whether each x lies in (or on) some tetrahedron."""
    p = points[tets]  # (K, 4, 3)
    a = p[:, 0]
    m = np.stack([p[:, 1] - a, p[:, 2] - a, p[:, 3] - a], axis=2)  # (K, 3, 3)
    w = np.linalg.solve(m[None], (x[:, None] - a[None])[..., None])[..., 0]  # (M, K, 3)
    w = np.concatenate([1 - w.sum(axis=2, keepdims=True), w], axis=2)
    return np.asarray((w.min(axis=2) >= -1e-12).any(axis=1))


def _closed_manifold(faces: np.ndarray) -> bool:
    directed = np.stack([faces, np.roll(faces, -1, axis=1)], axis=2).reshape(-1, 2)
    _, count = np.unique(np.sort(directed, axis=1), axis=0, return_counts=True)
    return bool((count == 2).all() and len(np.unique(directed, axis=0)) == len(directed))


# --------------------------------------------------------------------------- shapes and volume


def test_box_volume_is_the_product_of_its_sides() -> None:
    v, f = meshes.box((2.0, 1.0, 0.5))
    assert meshes.volume(v, f) == pytest.approx(1.0, rel=1e-15)
    assert _closed_manifold(f)


def test_icosphere_volume_is_the_polyhedron_s_and_within_its_spheres() -> None:
    for n in range(4):
        v, f = meshes.icosphere(n)
        assert len(v) == 10 * 4**n + 2 and len(f) == 20 * 4**n
        assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-15)
        # the polyhedron exactly: pyramids from the centre, a third of base times height
        cross = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
        height = np.einsum("ij,ij->i", v[f[:, 0]], cross) / np.linalg.norm(cross, axis=1)
        exact = float((np.linalg.norm(cross, axis=1) / 2 * height / 3).sum())
        assert height.min() > 0  # every face outward
        vol = meshes.volume(v, f)
        assert vol == pytest.approx(exact, rel=1e-13)
        # inscribed in the unit sphere, circumscribing the sphere of its least face distance
        assert 4 / 3 * math.pi * height.min() ** 3 < vol < 4 / 3 * math.pi


def test_torus_volume_is_pappus_of_its_polygons() -> None:
    big, small, m, k = 1.0, 0.25, 32, 16
    v, f = meshes.torus(big, small, m, k)
    assert _closed_manifold(f)
    analytic = 2 * math.pi**2 * big * small**2
    # vertices on the torus: a k-gon swept round an m-gon, each shrinking by sin(x)/x
    def shrink(n: int) -> float:
        return n / (2 * math.pi) * math.sin(2 * math.pi / n)

    polygons = shrink(k) * shrink(m)
    vol = meshes.volume(v, f)
    assert vol == pytest.approx(analytic * polygons, rel=1e-4)
    assert vol == pytest.approx(analytic, rel=0.05)


# --------------------------------------------------------------------------- tetrahedra


def test_torus_tetrahedra_fill_the_tube_and_leave_the_hole() -> None:
    big, small = 1.0, 0.25
    v, f = meshes.load(meshes.torus(big, small, 32, 16))
    t = meshes.tetrahedralize(v, f)
    assert np.array_equal(t.points[: len(v)], v)
    vols = _tet_volumes(t.points, t.tetrahedra)
    assert (vols > 0).all()
    assert vols.sum() == pytest.approx(meshes.volume(v, f), rel=0.05)
    assert vols.sum() == pytest.approx(2 * math.pi**2 * big * small**2, rel=0.05)
    assert _closed_manifold(t.surface)
    assert meshes.volume(t.points, t.surface) == pytest.approx(vols.sum(), rel=1e-12)  # outward
    axis = np.array([[0.0, 0.0, z] for z in np.linspace(-small, small, 9)])
    hole = np.array([[0.5 * (big - small) * math.cos(a), 0.5 * (big - small) * math.sin(a), 0.0]
                     for a in np.linspace(0.0, 2 * math.pi, 12)])
    assert not _in_some_tet(t.points, t.tetrahedra, np.vstack([axis, hole])).any()
    tube = np.array([[big * math.cos(a), big * math.sin(a), 0.0] for a in np.linspace(0, 6, 12)])
    assert _in_some_tet(t.points, t.tetrahedra, tube).all()


def test_box_tetrahedra_have_the_box_s_volume_to_rounding() -> None:
    """Every box corner is a point and the box is convex, so the tetrahedra tile it exactly."""
    for size in (1.0, (2.0, 1.0, 0.5)):
        v, f = meshes.box(size)
        t = meshes.tetrahedralize(v, f)
        vols = _tet_volumes(t.points, t.tetrahedra)
        assert (vols > 0).all()
        assert vols.sum() == pytest.approx(meshes.volume(v, f), rel=1e-9)
        assert _closed_manifold(t.surface)


def test_tetrahedralize_is_deterministic() -> None:
    v, f = meshes.icosphere(2)
    a, b = meshes.tetrahedralize(v, f), meshes.tetrahedralize(v, f)
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x, y)


def test_finer_spacing_samples_more_and_keeps_the_volume() -> None:
    v, f = meshes.icosphere(3)
    coarse = meshes.tetrahedralize(v, f, spacing=0.4)
    fine = meshes.tetrahedralize(v, f, spacing=0.15)
    assert len(fine.points) > len(coarse.points) + 500
    for t in (coarse, fine):
        assert _tet_volumes(t.points, t.tetrahedra).sum() == pytest.approx(meshes.volume(v, f), rel=0.02)
        # interior samples stay half a spacing inside the unit sphere
        assert np.linalg.norm(t.points[len(v):], axis=1).max() < 1.0


def _bumpy_sphere(amplitude: float) -> tuple[np.ndarray, np.ndarray]:
    """An icosphere(3) whose vertices move in or out by up to ``amplitude`` (seeded): a surface
    whose faces are not all Delaunay faces, so tetrahedra span it and parts of it meet at edges."""
    v, f = meshes.icosphere(3)
    return v * (1 + amplitude * np.random.default_rng(3).uniform(-1, 1, (len(v), 1))), f


def test_peeling_slivers_keeps_the_boundary_a_closed_manifold() -> None:
    v, f = meshes.load(_bumpy_sphere(0.1))
    kept = meshes.tetrahedralize(v, f, quality=0.0)
    peeled = meshes.tetrahedralize(v, f, quality=0.3)
    assert len(peeled.tetrahedra) < len(kept.tetrahedra)
    for t in (kept, peeled):
        assert _closed_manifold(t.surface)
        assert (_tet_volumes(t.points, t.tetrahedra) > 0).all()
        assert _tet_volumes(t.points, t.tetrahedra).sum() == pytest.approx(meshes.volume(v, f), rel=1e-3)
    assert meshes.tet_quality(peeled.points, peeled.tetrahedra).min() > 0
    with pytest.raises(ValueError, match="quality"):
        meshes.tetrahedralize(v, f, quality=1.5)
    with pytest.raises(ValueError, match="spacing"):
        meshes.tetrahedralize(v, f, spacing=0.0)


def test_a_spiky_surface_still_bounds_a_closed_manifold() -> None:
    """Spikes thinner than the sampling: the tetrahedra inside meet along edges, which are
    mended (a few tetrahedra change side) into a closed manifold; the volume suffers (5 %)."""
    v, f = meshes.load(_bumpy_sphere(0.3))
    t = meshes.tetrahedralize(v, f)
    assert _closed_manifold(t.surface)
    assert (_tet_volumes(t.points, t.tetrahedra) > 0).all()
    assert _tet_volumes(t.points, t.tetrahedra).sum() == pytest.approx(meshes.volume(v, f), rel=0.1)


def test_a_cavity_is_left_empty() -> None:
    """A ball with a spherical cavity: both shells given outward, the inner one is turned in."""
    outer, faces = meshes.icosphere(2)
    inner = 0.5 * outer
    v = np.vstack([outer, inner])
    f = np.vstack([faces, faces + len(outer)])
    lv, lf = meshes.load((v, f))
    assert meshes.volume(lv, lf) == pytest.approx(meshes.volume(outer, faces) * (1 - 0.125), rel=1e-12)
    t = meshes.tetrahedralize(lv, lf, spacing=0.15)
    assert not _in_some_tet(t.points, t.tetrahedra, np.array([[0.0, 0.0, 0.0], [0.2, 0.1, 0.0]])).any()
    assert _tet_volumes(t.points, t.tetrahedra).sum() == pytest.approx(meshes.volume(lv, lf), rel=0.05)


# --------------------------------------------------------------------------- loading and checks


def _cube() -> tuple[np.ndarray, np.ndarray]:
    v, f = meshes.box(1.0)
    return v + 0.5, f


def _two_cubes_on_an_edge() -> tuple[np.ndarray, np.ndarray]:
    v, f = _cube()
    return np.vstack([v, v + np.array([1.0, 1.0, 0.0])]), np.vstack([f, f + 8])


def _fin() -> tuple[np.ndarray, np.ndarray]:
    v, f = _cube()
    a, b = f[0, 0], f[0, 1]  # an edge of the cube, and a fin of two faces on it
    return np.vstack([v, [[-1.0, -1.0, -1.0]]]), np.vstack([f, [[a, b, 8], [b, a, 8]]])


def _flat_tet() -> tuple[np.ndarray, np.ndarray]:
    v = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.25, 0.25, 0.0]])
    return v, np.array([[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]])


def _edit(vertices: object = None, faces: object = None) -> tuple[object, object]:
    v, f = _cube()
    return (v if vertices is None else vertices(v)), (f if faces is None else faces(f))  # type: ignore[operator]


def _with_nan(v: np.ndarray) -> np.ndarray:
    v = v.copy()
    v[3, 1] = np.nan
    return v


BAD = {
    "open": (_edit(faces=lambda f: f[1:]), "1 edges are open|3 edges are open"),
    "two cubes on an edge": (_two_cubes_on_an_edge(), "non-manifold"),
    "fin": (_fin(), "non-manifold"),
    "one face flipped": (_edit(faces=lambda f: np.vstack([f[:1, ::-1], f[1:]])), "consistently oriented"),
    "flat tetrahedron": (_flat_tet(), "no volume"),
    "flat cube": (_edit(vertices=lambda v: v * (1.0, 1.0, 0.0)), "zero area|no volume"),
    "NaN": (_edit(vertices=_with_nan), "finite"),
    "index out of range": (_edit(faces=lambda f: np.where(f == 7, 8, f)), r"in \[0, 8\)"),
    "negative index": (_edit(faces=lambda f: np.where(f == 7, -1, f)), r"in \[0, 8\)"),
    "float indices": (_edit(faces=lambda f: f.astype(float)), "integers"),
    "wrong vertices shape": (_edit(vertices=lambda v: v[:, :2]), r"shape \(N, 3\)"),
    "wrong faces shape": (_edit(faces=lambda f: f.reshape(-1, 4)), r"shape \(N, 3\)"),
    "repeated vertex": (_edit(faces=lambda f: np.vstack([[[0, 0, 1]], f])), "repeat a vertex"),
    "not a mesh": (42, "path, a \\(vertices, faces\\) pair"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_meshes_are_refused_saying_why(name: str) -> None:
    mesh, message = BAD[name]
    with pytest.raises(ValueError, match=message):
        meshes.load(mesh)


def test_a_missing_file_is_a_value_error(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="could not read"):
        meshes.load(tmp_path / "nothing.obj")


def test_an_inside_out_mesh_is_turned_right_way_out() -> None:
    v, f = meshes.torus()
    lv, lf = meshes.load((v, f[:, ::-1]))
    assert meshes.volume(lv, lf) == pytest.approx(meshes.volume(v, f), rel=1e-14)
    assert np.array_equal(lf, f)
    right = meshes.tetrahedralize(v, f)
    flipped = meshes.tetrahedralize(v, f[:, ::-1])
    assert _tet_volumes(flipped.points, flipped.tetrahedra).sum() == pytest.approx(
        _tet_volumes(right.points, right.tetrahedra).sum(), rel=1e-12)


def test_unwelded_corners_are_welded() -> None:
    """A cube exported with one vertex per face corner (24, off by up to 1e-12): 8 after."""
    v, f = meshes.box((2.0, 1.0, 0.5))
    loose_v, loose_f = [], []
    for quad in range(6):  # box() lists each side as two consecutive triangles
        pair = f[2 * quad: 2 * quad + 2]
        corners = list(dict.fromkeys(pair.ravel().tolist()))
        loose_f.append(np.array([[len(loose_v) + corners.index(i) for i in face] for face in pair]))
        loose_v.extend(v[i] + 1e-12 * (quad - 2.5) for i in corners)
    soup = np.array(loose_v), np.vstack(loose_f)
    assert len(soup[0]) == 24
    wv, wf = meshes.load(soup)
    assert len(wv) == 8 and len(wf) == 12
    assert np.allclose(np.sort(wv, axis=0), np.sort(v, axis=0), atol=1e-11)
    assert {frozenset(map(tuple, wv[face].round(9))) for face in wf} == {
        frozenset(map(tuple, v[face].round(9))) for face in f}
    with pytest.raises(ValueError, match="open"):
        meshes.load(soup, weld=False)
    a, b = meshes.tetrahedralize(wv, wf), meshes.tetrahedralize(v, f)
    assert _tet_volumes(a.points, a.tetrahedra).sum() == pytest.approx(1.0, rel=1e-9)
    assert _tet_volumes(b.points, b.tetrahedra).sum() == pytest.approx(1.0, rel=1e-9)
    assert np.allclose(np.sort(a.points, axis=0), np.sort(b.points, axis=0), atol=1e-11)


def test_an_obj_file_loads_as_its_arrays(tmp_path: pathlib.Path) -> None:
    v, f = meshes.torus(1.0, 0.3, 24, 12)
    path = tmp_path / "torus.obj"
    lines = ["# a torus"] + [f"v {x!r} {y!r} {z!r}" for x, y, z in v.tolist()]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in f.tolist()]
    path.write_text("\n".join(lines) + "\n")
    arrays = meshes.load((v.tolist(), f.tolist()))
    for source in (path, str(path)):
        loaded = meshes.load(source)
        assert np.array_equal(loaded[0], arrays[0]) and np.array_equal(loaded[1], arrays[1])
    a, b = meshes.tetrahedralize(*meshes.load(path)), meshes.tetrahedralize(*arrays)
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x, y)


def test_files_that_split_or_repeat_vertices_load_welded(tmp_path: pathlib.Path) -> None:
    """An OBJ with texture coordinates per corner (trimesh splits its vertices by them) and an
    STL (a float32 triangle soup, three vertices per face) load welded, volume kept."""
    v, f = meshes.box(1.0)
    lines = [f"v {x!r} {y!r} {z!r}" for x, y, z in v.tolist()] + ["vt 0 0", "vt 1 0", "vt 0 1"]
    lines += [f"f {a + 1}/1 {b + 1}/2 {c + 1}/3" for a, b, c in f.tolist()]
    (tmp_path / "box.obj").write_text("\n".join(lines) + "\n")
    lv, lf = meshes.load(tmp_path / "box.obj")
    assert len(lv) == 8 and meshes.volume(lv, lf) == pytest.approx(1.0, rel=1e-15)
    trimesh = pytest.importorskip("trimesh")
    tv, tf = meshes.torus()
    trimesh.Trimesh(tv, tf, process=False).export(tmp_path / "torus.stl")
    sv, sf = meshes.load(tmp_path / "torus.stl")
    assert len(sv) == len(tv) and len(sf) == len(tf)
    assert meshes.volume(sv, sf) == pytest.approx(meshes.volume(tv, tf), rel=1e-6)  # float32


def test_a_trimesh_loads_as_its_arrays() -> None:
    trimesh = pytest.importorskip("trimesh")
    v, f = meshes.icosphere(1)
    loaded = meshes.load(trimesh.Trimesh(v, f, process=False))
    assert np.array_equal(loaded[0], v) and np.array_equal(loaded[1], f)


# --------------------------------------------------------------------------- embedding


def test_embedded_points_come_back_and_follow_an_affine_map() -> None:
    v, f = meshes.icosphere(3)
    t = meshes.tetrahedralize(v, f)
    rng = np.random.default_rng(7)
    x = rng.normal(size=(2000, 3))
    x *= 0.97 * rng.uniform(size=(2000, 1)) ** (1 / 3) / np.linalg.norm(x, axis=1, keepdims=True)
    x = np.vstack([x, v])  # the surface's own vertices too
    index, weights = meshes.embed(t.points, t.tetrahedra, x)
    assert np.allclose(weights.sum(axis=1), 1.0, atol=1e-14, rtol=0)
    inside = weights.min(axis=1) >= -1e-12
    assert inside[:-len(v)].mean() > 0.99  # (the tets' boundary is the polyhedron's, inside r=1)
    assert inside[-len(v):].all()
    back = (weights[:, :, None] * t.points[t.tetrahedra[index]]).sum(axis=1)
    assert np.abs(back - x).max() < 1e-12
    a = np.array([[1.3, 0.2, -0.4], [0.1, 0.8, 0.3], [-0.2, 0.5, 1.1]])
    moved = t.points @ a.T + (3.0, -1.0, 2.0)
    follow = (weights[:, :, None] * moved[t.tetrahedra[index]]).sum(axis=1)
    assert np.abs(follow - (x @ a.T + (3.0, -1.0, 2.0))).max() < 1e-12


def test_a_point_outside_takes_a_nearby_tetrahedron() -> None:
    v, f = meshes.box(1.0)
    t = meshes.tetrahedralize(v, f)
    x = np.array([[0.0, 0.0, 0.6], [2.0, 2.0, 2.0], [0.1, -0.2, 0.3]])
    index, weights = meshes.embed(t.points, t.tetrahedra, x)
    back = (weights[:, :, None] * t.points[t.tetrahedra[index]]).sum(axis=1)
    assert np.abs(back - x).max() < 1e-12
    assert weights[0].min() < 0 and weights[2].min() >= -1e-12
    assert np.linalg.norm(t.points[t.tetrahedra[index[0]]].mean(axis=0) - x[0]) < 0.6


def test_nearly_flat_delaunay_tetrahedra_are_oriented_by_their_neighbours() -> None:
    """A torus's rings are cocircular: Qhull gives flat and nearly flat tetrahedra whose own
    volume has the sign of rounding. Oriented from neighbours, every face shared by two
    tetrahedra is traversed both ways (a consistent orientation), flat ones included."""
    from scipy.spatial import Delaunay

    v, f = meshes.load(meshes.torus())
    points = np.vstack([v, meshes._interior(v, f, 0.25)])
    d = Delaunay(points, qhull_options="Qbb Qc Qz Q12")
    tets = meshes._orient_tets(points, d.simplices.astype(np.int64), d.neighbors)
    quality = meshes.tet_quality(points, tets)
    assert (np.abs(quality) < meshes.SLIVER).sum() > 10  # there are some to orient
    assert (quality[np.abs(quality) >= meshes.SLIVER] > 0).all()
    faces = tets[:, meshes.TET_FACES].reshape(-1, 3)
    turn = (np.argmin(faces, axis=1)[:, None] + np.arange(3)) % 3  # each face from its least
    directed = np.take_along_axis(faces, turn, axis=1)  # vertex, its winding kept
    assert len(np.unique(directed, axis=0)) == len(directed)
