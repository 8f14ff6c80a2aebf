"""Bodies against bodies in 3D (csrc/src/contacts3d.c): particles of one body kept out of
the surface triangles of others.

Penetration is measured independently of the kernel: a particle is inside a closed
surface when the surface's generalised winding number about it (the sum of its
triangles' solid angles over 4 pi) exceeds 1/2, and its depth is then its distance to
the nearest triangle. Momentum is summed over every particle (m v).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import cKDTree

import pysoft
from pysoft import build, scenes

INTEGRATORS = ("symplectic_euler", "xpbd")
MODELS = ("xpbd", "material", "springs", "pressure", "shape_matching")


def _winding(points: np.ndarray, tri: np.ndarray) -> np.ndarray:
    """The winding numbers of ``points`` (P, 3) about triangles ``tri`` (T, 3, 3) (Van
    Oosterom and Strackee's solid angle): 1 inside a closed outward surface, 0 outside."""
    a, b, c = (tri[None, :, k, :] - points[:, None, :] for k in range(3))
    la, lb, lc = (np.linalg.norm(v, axis=2) for v in (a, b, c))
    num = np.einsum("ptk,ptk->pt", a, np.cross(b, c))
    den = (la * lb * lc + np.einsum("ptk,ptk->pt", a, b) * lc + np.einsum("ptk,ptk->pt", b, c) * la
           + np.einsum("ptk,ptk->pt", c, a) * lb)
    return np.asarray(np.arctan2(num, den).sum(axis=1) / (2.0 * np.pi))


def _segment_distance(p: np.ndarray, s0: np.ndarray, s1: np.ndarray) -> np.ndarray:
    d = s1 - s0
    dd = np.einsum("...k,...k->...", d, d)
    t = np.clip(np.einsum("...k,...k->...", p - s0, d) / np.where(dd > 0.0, dd, 1.0), 0.0, 1.0)
    return np.asarray(np.linalg.norm(p - (s0 + t[..., None] * d), axis=-1))


def _distance(points: np.ndarray, tri: np.ndarray) -> np.ndarray:
    """Each point's distance to the nearest triangle: to its plane where the foot is inside
    the triangle, else to its nearest edge."""
    p = points[:, None, :]
    a, b, c = tri[None, :, 0], tri[None, :, 1], tri[None, :, 2]
    n = np.cross(b - a, c - a)
    nn = np.einsum("...k,...k->...", n, n)
    t = np.einsum("...k,...k->...", p - a, n) / np.where(nn > 0.0, nn, 1.0)
    foot = p - t[..., None] * n
    inside = np.ones(foot.shape[:2], dtype=bool)
    for u, v in ((a, b), (b, c), (c, a)):  # the foot on the inner side of each edge
        inside &= np.einsum("...k,...k->...", np.cross(v - u, foot - u), n) >= 0.0
    plane = np.abs(t) * np.sqrt(nn)
    edge = np.minimum(np.minimum(_segment_distance(p, a, b), _segment_distance(p, b, c)),
                      _segment_distance(p, c, a))
    return np.asarray(np.where(inside, plane, edge).min(axis=1))


def depth_into(w: pysoft.World, particles: list[int], body: int) -> float:
    """How deep the deepest of ``particles`` is inside ``body``'s closed surface (m; 0.0 if
    none is inside)."""
    pts = w.positions[[w.row(e) for e in particles]]
    rows = np.array([[w.row(int(e)) for e in t] for t in w.body(body).surface])
    tri = w.positions[rows]
    inside = _winding(pts, tri) > 0.5
    return float(_distance(pts[inside], tri).max()) if inside.any() else 0.0


def _momentum(w: pysoft.World) -> tuple[np.ndarray, float]:
    """Total momentum and the sum of |m v| (the scale the error is taken relative to)."""
    m = np.array([w.particle(int(e)).mass for e in w.store.particles.view("entity")])
    mv = m[:, None] * w.velocities
    return mv.sum(axis=0), float(np.abs(mv).sum())


def _rows(w: pysoft.World, body: int) -> list[int]:
    return [w.row(e) for e in w.body(body).particles]


def _balls(integrator: str, backend: str = "c") -> tuple[pysoft.World, int, int]:
    w = pysoft.World(dim=3, gravity=(0.0, 0.0, 0.0), integrator=integrator, backend=backend)
    a = build.ball(w, center=(-0.5, 0.0, 0.0), radius=0.3, restitution=0.5)
    b = build.ball(w, center=(0.5, 0.02, 0.01), radius=0.3, restitution=0.5)
    w.velocities[_rows(w, a)] = (2.0, 0.0, 0.0)
    w.velocities[_rows(w, b)] = (-2.0, 0.0, 0.0)
    return w, a, b


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_balls_meeting_head_on_keep_momentum_and_bounce(integrator: str) -> None:
    """Two 0.3 m gas balls meeting at 4 m/s in zero gravity, slightly off centre: the total
    momentum stays what it was to 1e-9 of the sum of |m v| (the contact splits each push
    over a triangle's corners by barycentric weight), no particle goes deeper than 5 % of
    the radius into the other ball, and they come apart (each ball's mean velocity along x
    reversed)."""
    w, a, b = _balls(integrator)
    p0, scale = _momentum(w)
    deepest, error = 0.0, 0.0
    for _ in range(45):
        w.step()
        p, _ = _momentum(w)
        error = max(error, float(np.abs(p - p0).max()) / scale)
        deepest = max(deepest, depth_into(w, w.body(a).particles, b),
                      depth_into(w, w.body(b).particles, a))
    assert error < 1e-9
    assert deepest < 0.05 * 0.3
    assert w.velocities[_rows(w, a)][:, 0].mean() < -0.5
    assert w.velocities[_rows(w, b)][:, 0].mean() > 0.5
    assert len(w.body_contacts.particles) == 0  # apart by the end


def test_balls_filtered_apart_pass_through() -> None:
    """category/mask: a ball whose mask leaves out the other's category passes through it
    (the test above is then the one that makes contacts matter)."""
    w = pysoft.World(dim=3, gravity=(0.0, 0.0, 0.0))
    a = build.ball(w, center=(-0.5, 0.0, 0.0), radius=0.3, category=1, mask=1)
    b = build.ball(w, center=(0.5, 0.0, 0.0), radius=0.3, category=2)
    w.velocities[_rows(w, a)] = (2.0, 0.0, 0.0)
    w.velocities[_rows(w, b)] = (-2.0, 0.0, 0.0)
    for _ in range(20):
        w.step()
        assert len(w.body_contacts.particles) == 0
    assert w.velocities[_rows(w, a)][:, 0].mean() == pytest.approx(2.0)


def test_body_contacts_report_3d_points_and_normals() -> None:
    """A cube landing on a cube: the report names the other body for each touching
    particle, with a 3D point near the particle and a unit normal pointing toward it (up for
    the upper cube's particles, down for the lower's)."""
    w = pysoft.World(dim=3)
    w.add_collider(pysoft.Plane((0.0, 1.0, 0.0), 0.0))
    low = build.cube(w, center=(0.0, 0.15, 0.0), size=0.3, cells=2)
    high = build.cube(w, center=(0.03, 0.5, 0.02), size=0.3, cells=2)
    for _ in range(40):
        w.step()
    bc = w.body_contacts
    assert len(bc.particles) > 0 and bc.points.shape[1] == 3 and bc.normals.shape[1] == 3
    upper = set(w.body(high).particles)
    for e, body, point, normal, impulse in zip(bc.particles, bc.bodies, bc.points, bc.normals,
                                               bc.impulses, strict=True):
        assert body == (low if e in upper else high)
        assert np.linalg.norm(normal) == pytest.approx(1.0)
        assert np.sign(normal[1]) == (1.0 if e in upper else -1.0)
        assert np.linalg.norm(w.particle(int(e)).position - point) < 0.02
        assert impulse > 0.0


def _stack(model: str, integrator: str) -> tuple[pysoft.World, list[int]]:
    # springs and pressure cubes (a spring lattice) shear under load along their cells'
    # diagonals: stiffer springs, and 16 substeps to carry them, keep the lean small
    stiff = {"stiffness": 300.0} if model in ("springs", "pressure") else {}
    w = pysoft.World(dim=3, integrator=integrator, substeps=16 if stiff else 8)
    w.add_collider(pysoft.Plane((0.0, 1.0, 0.0), 0.0), friction=0.8)
    cubes = [build.cube(w, center=(0.0, 0.15 + 0.31 * k, 0.0), size=0.3, cells=3, model=model,
                        friction=0.8, **stiff) for k in range(3)]
    return w, cubes


@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("model", MODELS)
def test_a_stack_of_three_cubes_does_not_sink(model: str, integrator: str) -> None:
    """Three 0.3 m cubes stacked on a floor for 2.5 s: no particle of one deeper than 5 % of
    a side inside another (checked every other frame once they have landed), and the stack
    keeps its order (each cube's centre above the one below by more than half a side)."""
    w, cubes = _stack(model, integrator)
    deepest = 0.0
    for frame in range(150):
        w.step()
        if frame >= 20 and frame % 2 == 0:
            deepest = max(deepest, *(depth_into(w, w.body(i).particles, j)
                                     for i in cubes for j in cubes if i != j))
    assert deepest < 0.05 * 0.3
    heights = [float(w.positions[_rows(w, c)][:, 1].mean()) for c in cubes]
    assert heights[1] - heights[0] > 0.15 and heights[2] - heights[1] > 0.15, heights


def test_a_poured_pile_of_mixed_bodies_comes_to_rest() -> None:
    """scenes.pile3d: 24 bodies (cubes of each model, gas balls, blobs; 1,297 particles)
    poured into a 1.5 m bin come to rest within 5 s: the median particle moves less than 2
    cm over the last second, and at rest no body is below 80 % of its built volume."""
    w = scenes.pile3d(24)
    bodies = [int(b) for b in w.store.bodies.view("entity")]
    assert len(bodies) >= 20
    built = np.array([w.body(b).volume for b in bodies])
    for _ in range(240):
        w.step()
    before = w.positions.copy()
    for _ in range(60):
        w.step()
    moved = np.linalg.norm(w.positions - before, axis=1)
    assert np.median(moved) < 0.02
    volumes = np.array([w.body(b).volume for b in bodies]) / built
    assert volumes.min() > 0.8, volumes
    assert len(w.body_contacts.particles) > 0  # they rest on each other


@pytest.mark.parametrize(("count", "width"), [(24, 1.4), (28, 1.3), (30, 1.4), (40, 1.5)])
def test_piles_in_narrow_bins_keep_their_bodies_apart(count: int, width: float) -> None:
    """scenes.pile3d in narrower bins (4 or 9 bodies a layer, up to 7 layers, the top ones
    dropped from 2.5-3 m): after 5 s no particle of one body deeper than 5 % of a side (15 mm)
    inside another body, and no body below 80 % of its built volume (the promise of the poured
    pile above, in piles of other shapes). Where the XPBD settle pulled a particle back into
    a surface after the contact pass every substep, or a corner that its own contact had moved
    vetoed every push on its triangles, one corner stayed 62-68 mm inside another body."""
    w = scenes.pile3d(count, width=width)
    bodies = [int(b) for b in w.store.bodies.view("entity")]
    built = np.array([w.body(b).volume for b in bodies])
    for _ in range(300):
        w.step()
    deepest = max(depth_into(w, [e for other in bodies if other != b for e in w.body(other).particles], b)
                  for b in bodies)
    volumes = np.array([w.body(b).volume for b in bodies]) / built
    assert deepest < 0.05 * 0.3, deepest
    assert volumes.min() > 0.8, volumes


def _two_cubes(backend: str, integrator: str) -> pysoft.World:
    """Two small cubes (2 x 2 x 2 cells) meeting in the first frames (small enough for the
    NumPy twins)."""
    w = pysoft.World(dim=3, backend=backend, integrator=integrator)
    w.add_collider(pysoft.Plane((0.0, 1.0, 0.0), 0.0))
    build.cube(w, center=(0.0, 0.12, 0.0), size=0.24, cells=2, restitution=0.3)
    top = build.cube(w, center=(0.05, 0.37, 0.03), size=0.24, cells=2, model="shape_matching",
                     friction=0.2)
    w.velocities[_rows(w, top)] = (0.3, -1.5, 0.1)
    return w


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_c_and_numpy_twins_step_bit_for_bit_with_body_contacts(integrator: str) -> None:
    """The same 3D scene stepped on the C core and on the NumPy twins: positions,
    velocities and the contact report equal bit for bit, with contacts in every frame after
    the first few."""
    c, py = _two_cubes("c", integrator), _two_cubes("python", integrator)
    touched = 0
    for _ in range(12):
        c.step()
        py.step()
        assert c.positions.tobytes() == py.positions.tobytes()
        assert c.velocities.tobytes() == py.velocities.tobytes()
        for field in ("points", "normals", "impulses"):
            assert getattr(c.body_contacts, field).tobytes() == getattr(py.body_contacts, field).tobytes()
        for name, row in (("particles", lambda w, e: w.row(int(e))),  # entity ids are per world
                          ("bodies", lambda w, e: w.store.bodies.row_of.get(int(e), -1))):
            assert [row(c, e) for e in getattr(c.body_contacts, name)] == \
                [row(py, e) for e in getattr(py.body_contacts, name)]
        touched += len(c.body_contacts.particles) > 0
    assert touched >= 6


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_snapshot_replays_body_contacts_bit_for_bit(integrator: str) -> None:
    """Restore a snapshot taken mid-contact and step again: the same frames, bit for bit
    (the kept candidate lists are work, not state: a replay from the snapshot makes its own)."""
    w, _, _ = _balls(integrator)
    for _ in range(8):
        w.step()
    snap = w.snapshot()
    first = []
    for _ in range(10):
        w.step()
        first.append((w.positions.tobytes(), w.velocities.tobytes()))
        assert len(w.body_contacts.particles) > 0 or len(first) > 4
    w.restore(snap)
    for k in range(10):
        w.step()
        assert (w.positions.tobytes(), w.velocities.tobytes()) == first[k]


def test_free_particles_collide_in_3d_when_asked(backend: str) -> None:
    """World(particle_collisions=True) in 3D: two free particles (radius 0.1 m, 1 and 2 kg)
    meeting slightly off centre stop at the sum of their radii (to 1e-5 m), keep their total
    momentum (to 1e-12) and, with restitution 0, leave together at the common velocity
    -1/3 m/s; without particle collisions they pass through each other."""
    for collide in (True, False):
        w = pysoft.World(dim=3, gravity=(0.0, 0.0, 0.0), particle_collisions=collide, backend=backend)
        w.add_particle((-0.5, 0.0, 0.0), velocity=(1.0, 0.0, 0.0), radius=0.1, mass=1.0)
        w.add_particle((0.5, 0.02, -0.01), velocity=(-1.0, 0.0, 0.0), radius=0.1, mass=2.0)
        closest = np.inf
        for _ in range(60):
            w.step()
            closest = min(closest, float(np.linalg.norm(w.positions[0] - w.positions[1])))
        momentum = 1.0 * w.velocities[0] + 2.0 * w.velocities[1]
        assert np.abs(momentum - (-1.0, 0.0, 0.0)).max() < 1e-12
        if collide:
            assert closest > 0.2 - 1e-5
            assert w.velocities[:2, 0] == pytest.approx([-1.0 / 3.0] * 2, abs=1e-9)
        else:
            assert closest < 0.05


def _closest_pairs(w: pysoft.World) -> float:
    """The least distance / (r_i + r_j) over the pairs of particles that may collide: all but
    the neighbours, those nearer at rest than the sum of their radii (as the kernel decides)."""
    radius = w.store.particles.view("radius")
    rest = w.store.particles.view("rest_pos")
    x = w.positions
    pairs = cKDTree(x).query_pairs(2.0 * float(radius.max()), output_type="ndarray")
    i, j = pairs[:, 0], pairs[:, 1]
    sums = radius[i] + radius[j]
    apart = np.linalg.norm(rest[i] - rest[j], axis=1) >= sums
    ratio = np.linalg.norm(x[i] - x[j], axis=1)[apart] / sums[apart]
    return float(ratio.min()) if len(ratio) else np.inf


def test_a_self_colliding_cloth_draped_on_a_sphere_keeps_its_particles_apart() -> None:
    """scenes.drape3d: a 25 x 25 XPBD cloth (particle radius 0.02 m, self-collision on)
    falls onto a 0.4 m sphere and the floor and folds on itself. Over 4 s and every pair of
    particles that are not neighbours (neighbours: nearer at rest than the sum of their
    radii), none is ever nearer than 0.9 x the sum of their radii (its folds met: some pair
    came within 1.5 x), and no particle is ever inside the sphere."""
    w = scenes.drape3d()
    sphere = np.array([0.0, 0.4, 0.0])
    closest, inside = np.inf, np.inf
    for _ in range(240):
        w.step()
        closest = min(closest, _closest_pairs(w))
        inside = min(inside, float(np.linalg.norm(w.positions - sphere, axis=1).min()) - 0.4)
    assert 0.9 < closest < 1.5
    assert inside > 0.0


def test_the_draped_cloth_is_bitwise_equal_on_both_backends() -> None:
    """scenes.drape3d on the C core and on the NumPy twins for its first 45 frames (its
    folds meet at about frame 37, the contacts' limits and the pass after the settle at
    work): positions and velocities equal bit for bit."""
    c, py = scenes.drape3d(), scenes.drape3d(backend="python")
    again = [w.pipeline.resettle[-1] for w in (c, py)]
    for _ in range(45):
        c.step()
        py.step()
        assert c.positions.tobytes() == py.positions.tobytes()
        assert c.velocities.tobytes() == py.velocities.tobytes()
    assert again[0].runs == again[1].runs > 0


def test_bodies_meet_again_after_a_settle_only_with_a_self_colliding_body() -> None:
    """The pass after the settle runs in a 3D world with a self-colliding body only: a stack
    of XPBD cubes resting on a floor settles every substep and never meets again."""
    w, _ = _stack("xpbd", "symplectic_euler")
    settle, again = w.pipeline.settle[0], w.pipeline.resettle[-1]
    for _ in range(30):
        w.step()
    assert settle.runs > 0 and again.runs == 0


def test_many_particles_pushing_one_face_move_its_corners_no_farther_than_one_push() -> None:
    """60 free particles (radius 5 mm, 10 g) at rest just inside the top face of a 0.4 m
    cube of one cell (8 particles, 1 kg), in zero gravity, one substep of 1/60 s: each contact
    may push an overlap met at rest by 1 m/s x h, and the face's corners, pushed by all 60,
    move no farther than that either (to rounding); no particle leaves faster than 1 m/s,
    and the total momentum stays zero (to 1e-15 kg m/s)."""
    w = pysoft.World(dim=3, gravity=(0.0, 0.0, 0.0), particle_collisions=True, substeps=1)
    build.cube(w, center=(0.0, 0.0, 0.0), size=0.4, cells=1, model="springs")
    rng = np.random.default_rng(0)
    pts = rng.uniform(-0.15, 0.15, (60, 3))
    pts[:, 1] = rng.uniform(0.15, 0.18, 60)
    w.add_particles(pts, radii=0.005, masses=0.01)
    before = w.positions.copy()
    w.step()
    h = w.dt
    moved = np.linalg.norm(w.positions - before, axis=1)
    assert moved[:8].max() > 0.5 * h  # the corners were pushed
    assert moved.max() <= h * (1.0 + 1e-9)
    assert np.linalg.norm(w.velocities, axis=1).max() <= 1.0 + 1e-9
    m = w.store.particles.view("mass")
    assert np.abs((m[:, None] * w.velocities).sum(axis=0)).max() < 1e-15
