"""XPBD distance and volume constraints against analytic results; xpbd builders; bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pysoft
from pysoft import build

BACKENDS = ("c", "python")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("integrator", pysoft.INTEGRATORS)
def test_hanging_mass_stretches_by_compliance_times_weight(backend: str, integrator: str) -> None:
    """A mass m hanging at rest on a distance constraint of compliance alpha stretches by
    alpha m g (XPBD's compliance is 1/k): within 1 %."""
    w = pysoft.World(gravity=(0.0, -9.81), integrator=integrator, drag=1.0, backend=backend)
    top = w.add_particle((0.0, 0.0), pinned=True)
    bob = w.add_particle((0.0, -1.0), mass=2.0)
    w.add_distance_constraint(top, bob, compliance=1e-3)
    for _ in range(600):
        w.step()
    stretch = float(np.linalg.norm(w.particle(bob).position)) - 1.0
    assert stretch == pytest.approx(1e-3 * 2.0 * 9.81, rel=0.01)


@pytest.mark.parametrize("backend", BACKENDS)
def test_rigid_chain_keeps_its_links_while_swinging(backend: str) -> None:
    """A zero-compliance 10-link chain released horizontally keeps every link within 3 % of its
    rest length at every frame of a 3 s swing (and really swings: the tip drops > 0.5 m)."""
    w = pysoft.World(backend=backend)
    rope = build.rope(w, start=(0.0, 2.0), end=(1.0, 2.0), segments=10, model="xpbd")
    links = [w.distance_constraint(int(e)) for e in w.store.distances.view("entity")]
    tip = w.body(rope).particles[-1]
    lowest = 2.0
    for _ in range(180):
        w.step()
        for link in links:
            length = np.linalg.norm(w.particle(link.b).position - w.particle(link.a).position)
            assert abs(length / link.rest_length - 1.0) < 0.03
        lowest = min(lowest, float(w.particle(tip).position[1]))
    assert lowest < 1.5


@pytest.mark.parametrize("backend", BACKENDS)
def test_area_constraint_keeps_a_triangles_area(backend: str) -> None:
    """A triangle pinned at one corner, held only by an area constraint (compliance 0), falls
    and tumbles under gravity; its area stays within 0.1 % of the rest area at every frame."""
    w = pysoft.World(backend=backend)
    a = w.add_particle((0.0, 2.0), pinned=True)
    b = w.add_particle((1.0, 2.0))
    c = w.add_particle((0.3, 2.8))
    tri = w.add_volume_constraint([a, b, c])
    rest = w.volume_constraint(tri).rest_volume
    assert rest == pytest.approx(0.5 * 1.0 * 0.8)
    moved = 0.0
    for _ in range(120):
        w.step()
        p, q, r = (w.particle(e).position for e in (a, b, c))
        area = 0.5 * ((q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]))
        assert area == pytest.approx(rest, rel=1e-3)
        moved = max(moved, float(np.linalg.norm(w.particle(b).position - (1.0, 2.0))))
    assert moved > 0.1  # the triangle really deformed and moved


@pytest.mark.parametrize("backend", BACKENDS)
def test_volume_constraint_keeps_a_tetrahedrons_volume(backend: str) -> None:
    """3D: a tetrahedron pinned at one vertex keeps its volume within 0.1 % while it falls."""
    w = pysoft.World(dim=3, backend=backend)
    ps = [w.add_particle((0.0, 2.0, 0.0), pinned=True), w.add_particle((1.0, 2.0, 0.0)),
          w.add_particle((0.0, 2.0, 1.0)), w.add_particle((0.0, 3.0, 0.0))]
    tet = w.add_volume_constraint(ps)
    rest = w.volume_constraint(tet).rest_volume
    assert abs(rest) == pytest.approx(1.0 / 6.0)
    for _ in range(90):
        w.step()
        x = [w.particle(e).position for e in ps]
        vol = np.dot(x[1] - x[0], np.cross(x[2] - x[0], x[3] - x[0])) / 6.0
        assert vol == pytest.approx(rest, rel=1e-3)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("make", ["box", "cloth", "polygon", "polygon springs", "rope"])
def test_xpbd_builders_come_to_rest(backend: str, make: str) -> None:
    """XPBD builders with their defaults, dropped on a floor (cloth: hanging from its pins):
    no NaN, nothing below the floor, max speed < 5e-2 m/s after 10 s, triangles not inverted."""
    w = pysoft.World(backend=backend)
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), restitution=0.1, friction=0.6)
    if make == "box":
        build.box(w, (0.0, 1.5), model="xpbd")
    elif make == "cloth":
        build.cloth(w, (0.0, 1.5), cells=(6, 6))
    elif make == "polygon":
        build.polygon(w, [(0, 1), (1, 1), (1, 2), (0.5, 1.5), (0, 2)], model="xpbd", segment=0.25)
    elif make == "polygon springs":  # the builder's defaults
        build.polygon(w, [(0, 1), (1, 1), (1, 2), (0.5, 1.5), (0, 2)])
    else:
        build.rope(w, (0.0, 1.5), (1.0, 1.5), model="xpbd", pin=())
    for _ in range(600):
        w.step()
    assert np.isfinite(w.positions).all()
    assert w.positions[:, 1].min() > -1e-9
    assert np.linalg.norm(w.velocities, axis=1).max() < 5e-2
    for con in (w.volume_constraint(int(e)) for e in w.store.volumes.view("entity")):
        p, q, r = (w.particle(e).position for e in con.particles)
        area = 0.5 * ((q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]))
        assert area > 0.0


def test_polygon_builder_triangulates_any_simple_outline() -> None:
    """A clockwise concave outline is accepted: every triangle comes out counter-clockwise
    and the triangles' areas sum to the outline's area (shoelace)."""
    w = pysoft.World()
    outline = np.array([(0, 0), (0, 2), (1, 1), (2, 2), (2, 0)], dtype=float)  # clockwise, concave
    build.polygon(w, outline, model="xpbd")
    areas = w.store.volumes.view("rest_volume")
    assert (areas > 0).all()
    shoelace = 0.5 * abs((outline[:, 0] * np.roll(outline[:, 1], -1)
                          - np.roll(outline[:, 0], -1) * outline[:, 1]).sum())
    assert areas.sum() == pytest.approx(shoelace)


@pytest.mark.parametrize(("call", "match"), [
    (lambda w: build.polygon(w, [(0, 0), (1, 0)]), "vertices"),
    (lambda w: build.polygon(w, [(0, 0), (2, 2), (2, 0), (0, 1.5)]), "simple polygon"),
    (lambda w: build.polygon(w, [(0, 0), (1, 0), (2, 0)]), "area"),
    (lambda w: build.polygon(w, [(0, 0), (1, 0), (0, 1)], segment=0.0), "segment"),
    (lambda w: build.polygon(w, [(0, 0), (1, 0), (0, 1)], spacing=-1.0), "spacing"),
    (lambda w: build.polygon(w, [(0, 0), (1, 0), (0, 1)], spacing=1e-5), "spacing"),
    (lambda w: build.polygon(w, [(0, 0), (1, 0), (0, 1)], segment=1e-7), "segment"),
    (lambda w: build.cloth(w, pin="left"), "pin"),
    (lambda w: build.cloth(w, pin=[0, 10**6]), "pin"),
    (lambda w: build.rope(w, model="pressure"), "model"),
    (lambda w: build.box(w, model="xpbd", compliance=-1.0), "compliance"),
    (lambda w: w.add_distance_constraint(w.add_particle((0, 0)), 10**6), "b"),
    (lambda w: w.add_volume_constraint([w.add_particle((0, 0)), w.add_particle((1, 1)),
                                        w.add_particle((2, 2))]), "zero area"),
    (lambda w: w.add_distance_constraints([[1, 1]]), "pairs"),
])
def test_bad_xpbd_and_builder_input(call, match: str) -> None:  # type: ignore[no-untyped-def]
    """Bad arguments raise ValueError/KeyError naming the argument; no constraint is added."""
    w = pysoft.World()
    before = (w.store.distances.n, w.store.volumes.n, w.store.springs.n, w.store.bodies.n)
    with pytest.raises((ValueError, KeyError), match=match):
        call(w)
    assert (w.store.distances.n, w.store.volumes.n, w.store.springs.n, w.store.bodies.n) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_removing_a_particle_removes_its_constraints(backend: str) -> None:
    """Constraints naming a removed particle go with it; the rest keep stepping."""
    w = pysoft.World(backend=backend)
    build.box(w, (0.0, 1.5), model="xpbd")
    victim = int(w.particles[7])
    named = (w.store.distances.view("ends") == victim).any(axis=1).sum()
    named_v = (w.store.volumes.view("ends") == victim).any(axis=1).sum()
    d, v = w.store.distances.n, w.store.volumes.n
    w.remove(victim)
    assert (w.store.distances.n, w.store.volumes.n) == (d - named, v - named_v)
    assert not (w.store.distances.view("ends") == victim).any()
    for _ in range(30):
        w.step()
    assert np.isfinite(w.positions).all()


# When to compare: while the wobble is still well above what phase decides (a braced spring
# box's is down to 1e-6 of the squash by 0.5 s, where only rounding and phase are left to
# compare; with its area springs it is down to 3 % by 0.1 s, where the RMS at one instant
# differed by 10 % between 60 and 120 Hz, and 2 % at 0.05 s, where it is 19 %).
WOBBLE_AT = {"springs": 0.05, "shape_matching": 0.5, "pressure": 0.5}


def _wobble(backend: str, dt: float, model: str) -> tuple[float, float]:
    """RMS distance of a squashed body's particles from the shape it settles into (its shape
    after 4 s, about the centroid): at the start and after WOBBLE_AT[model] seconds."""
    w = pysoft.World(gravity=(0.0, 0.0), dt=dt, substeps=8, backend=backend)
    if model == "pressure":  # a gas bag: the skin's damping and the wobble damping
        build.circle(w, center=(0.0, 0.0), model=model)
    else:  # the model's own damping alone
        build.box(w, center=(0.0, 0.0), model=model, wobble_damping=0.0)
    w.positions[:, 1] *= 0.7  # squash it
    shapes = [w.positions - w.positions.mean(axis=0)]
    for frame in range(1, round(4.0 / dt) + 1):
        w.step()
        if frame == round(WOBBLE_AT[model] / dt):
            shapes.append(w.positions - w.positions.mean(axis=0))
    settled = w.positions - w.positions.mean(axis=0)
    start, half = (float(np.sqrt(((x - settled) ** 2).sum(axis=1).mean())) for x in shapes)
    return start, half


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("model", ["springs", "shape_matching", "pressure"])
def test_damping_does_not_depend_on_the_frame_rate(backend: str, model: str) -> None:
    """Every damping is a force or exp(-rate h), never a factor per step: a squashed body
    (spring damping; shape-matching damping; a gas ring's skin and wobble damping) stepped at 60 Hz and
    at 120 Hz (same substeps) has the same residual wobble (after 0.5 s; 0.05 s for the
    braced spring box, see WOBBLE_AT), within 5 % of each
    other, and the wobble has really decayed (< 50 % of the squash). XPBD is left out: its
    implicit update damps by itself, more for longer steps (docs/guides/soft-bodies.md)."""
    (start, slow), (_, fast) = _wobble(backend, 1 / 60, model), _wobble(backend, 1 / 120, model)
    assert slow == pytest.approx(fast, rel=0.05)
    assert fast < 0.5 * start


@pytest.mark.xfail(strict=True, reason=(
    "still moving at up to 0.99 m/s at the end (it blew up at 1.6 s, 900 m/s, before distance "
    "corrections took the speed of ends flying apart with them): an inextensible XPBD strip "
    "pinned at both ends cannot sag under the ball without stretching, and each substep the "
    "body contacts push its particles down while its constraints pull them back; the "
    "corrections become velocity that neither pass takes back"))
def test_a_gas_ball_comes_to_rest_on_an_xpbd_trampoline() -> None:
    """A 4 m x 0.3 m XPBD cloth (compliance 1e-6 m/N) strung between its end columns, a gas
    ball dropped on it from 0.5 m: after 5 s it rests on the strip (nothing faster than
    0.05 m/s), the strip sagging under it by less than its own length allows."""
    w = pysoft.World()
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0))
    nx, ny = 20, 2
    ends = [j * (nx + 1) + i for j in range(ny + 1) for i in (0, nx)]
    build.cloth(w, center=(0.0, 1.35), size=(4.0, 0.3), cells=(nx, ny), pin=ends, model="xpbd")
    build.ball(w, center=(0.0, 2.2), radius=0.3)
    for _ in range(300):
        w.step()
    assert float(np.linalg.norm(w.velocities, axis=1).max()) < 0.05
    assert float(w.positions[:, 1].min()) > 0.5


def test_a_cloth_spawned_over_a_disc_comes_to_rest() -> None:
    """build.cloth's default (XPBD, 13 x 13) spawned with its bottom row 15 cm inside a disc:
    pushed off, it falls and comes to rest on the floor and the disc (every particle slower
    than 0.05 m/s over the last 0.5 s of 10 s, none below the floor). Before, the capped
    velocity of each distance correction let ends keep flying apart while their positions
    were held: 1,000 m/s at 1.55 s, then InstabilityError."""
    w = pysoft.World()
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.5)
    w.add_collider(pysoft.Disc((0.3, 0.8), 0.25), friction=0.3)
    build.cloth(w, center=(0.0, 1.5), size=(1.2, 1.2), cells=(12, 12), pin="none")
    fastest = 0.0
    for frame in range(600):
        w.step()
        if frame >= 570:
            fastest = max(fastest, float(np.linalg.norm(w.velocities, axis=1).max()))
    assert np.isfinite(w.positions).all()
    assert fastest < 0.05 and float(w.positions[:, 1].min()) > -1e-3


@pytest.mark.parametrize("backend", ["c", "python"])
def test_the_xpbd_velocity_update_is_the_position_change_less_what_the_caps_withheld(backend: str) -> None:
    """Integrator "xpbd" sets v = (x - p) / h - withheld after the constraints, where withheld
    is the velocity the corrections' caps kept back: a particle with nothing withheld gets
    (x - p) / h exactly, however far from its velocity (5 m/s: there is no cap per particle,
    which gave the particles of one correction different shares and moved the body's momentum);
    one with (1, -2) m/s withheld gets (x - p) / h less that; an immovable one keeps its
    velocity."""
    from pysoft import _kernels

    h = 1.0 / 480.0
    prev = np.zeros((3, 2))
    vel = np.array([[1.0, 0.0], [1.0, 0.0], [7.0, 7.0]])
    pos = prev + h * np.array([[4.0, 4.0], [4.0, 4.0], [0.0, 0.0]])
    withheld = np.array([[0.0, 0.0], [1.0, -2.0], [5.0, 5.0]])
    inv_mass = np.array([1.0, 1.0, 0.0])
    _kernels.call("xpbd_velocity", backend, h, vel=vel, pos=pos, prev_pos=prev, withheld=withheld,
                  inv_mass=inv_mass)
    assert vel[0].tolist() == ((pos[0] - prev[0]) * (1.0 / h)).tolist()
    assert vel[1] == pytest.approx([3.0, 6.0], abs=1e-12)
    assert vel[2].tolist() == [7.0, 7.0]


@pytest.mark.parametrize("backend", ["c", "python"])
@pytest.mark.parametrize(("normals", "squeezed"), [
    (((0.0, 1.0), (0.0, -1.0)), True),  # floor and plate
    (((0.0, 1.0), (1.0, 0.0)), False),  # floor and wall: a corner
    (((0.0, 1.0), (np.sin(2.2), np.cos(2.2))), True),  # 126 degrees apart
    (((0.0, 1.0), (np.sin(2.0), np.cos(2.0))), False),  # 115 degrees apart
    (((0.0, 1.0), (np.sin(1.1), np.cos(1.1)), (np.sin(-1.1), np.cos(-1.1))), True),  # +-63 degrees
    (((0.0, 1.0), (0.0, 1.0)), False),
])
def test_the_settle_leaves_a_body_held_from_opposite_sides_alone(
        backend: str, normals: tuple[tuple[float, float], ...], squeezed: bool) -> None:
    """settle_mass: a particle static friction holds (stuck) is immovable in the settle solve,
    one a collider holds only along its normal (a support, not stuck: row 1 of body 0) is not;
    every member of a body whose held members' contact normals are more than 120 degrees apart
    is immovable too (it sits the solve out), stuck or not; particles of other bodies keep
    their inverse mass. The last but one case has no held normal opposed to the first one's:
    the pair at +-63 degrees is."""
    from pysoft import _kernels
    n, held = 8, len(normals)
    support = np.zeros((n, 2))
    support[1 : 1 + held] = normals  # body 0: rows 0..5, its held ones from row 1
    support[7] = (0.0, -1.0)  # body 1 (rows 6, 7), held from one side
    stuck = np.zeros(n, dtype=np.int32)
    stuck[2 : 1 + held] = 1  # row 1 slides (or its collider has no friction)
    stuck[7] = 1
    inv_mass = np.linspace(1.0, 2.0, n)
    out = np.full(n, np.nan)
    members = np.array([0, 1, 2, 3, 4, 5, 6, 7], dtype=np.int32)
    _kernels.Bound("settle_mass", backend, settle_inv_mass=out, support=support, stuck=stuck,
                   inv_mass=inv_mass, members=members, body_start=np.array([0, 6], dtype=np.int32),
                   body_count=np.array([6, 2], dtype=np.int32)).call(n, 2, 2)
    rows = np.arange(6)
    body = np.where((rows >= 2) & (rows <= held), 0.0, inv_mass[:6]) * (not squeezed)
    assert out.tolist() == [*body.tolist(), inv_mass[6], 0.0]


def test_the_settle_leaves_a_body_with_no_stuck_member_alone(backend: str) -> None:
    """settle_mass: a body none of whose members static friction holds (body 1, rows 3-5,
    resting on body 0 or falling) is immovable in the settle solve; a row it shares with a body
    that has a stuck member (row 3, also of body 0) and a particle of no body (row 6) keep
    their inverse mass; body 0's stuck row is immovable. A substep with no particle stuck
    writes nothing."""
    from pysoft import _kernels
    n = 7
    support = np.zeros((n, 3))
    support[0] = (0.0, 1.0, 0.0)
    stuck = np.zeros(n, dtype=np.int32)
    stuck[0] = 1
    inv_mass = np.linspace(1.0, 2.0, n)
    out = np.full(n, np.nan)
    call = _kernels.Bound("settle_mass", backend, settle_inv_mass=out, support=support, stuck=stuck,
                          inv_mass=inv_mass, members=np.array([0, 1, 2, 3, 3, 4, 5], dtype=np.int32),
                          body_start=np.array([0, 4], dtype=np.int32),
                          body_count=np.array([4, 3], dtype=np.int32)).call
    assert call(n, 2, 3) == 1
    assert out.tolist() == [0.0, *inv_mass[1:4].tolist(), 0.0, 0.0, inv_mass[6]]
    stuck[0] = 0
    out[:] = -1.0
    assert call(n, 2, 3) == 0 and (out == -1.0).all()


def _tangled_hexagon(turn: float, tangled: bool = True) -> dict[str, np.ndarray]:
    """A hexagon body (rows 0-5 round a centre, row 6) of six triangles about the centre, its
    rest shape turned by ``turn`` and moved to (2, 1), moving rigidly (1, -0.5) m/s + 0.7 rad/s,
    its centre moving on its own (3, -2) m/s faster; if ``tangled``, the centre pushed out
    through the ring's edge 0-1, which turns that edge's triangle inside out. Row 7 is no
    member; its triangle (0, 1, 7), listed last, is counter-clockwise now."""
    angles = np.arange(6) * np.pi / 3.0
    rest = np.vstack([np.stack([np.cos(angles), np.sin(angles)], axis=1) * 0.3, [0.0, 0.0]])
    rest -= rest.mean(axis=0)
    c, s = np.cos(turn), np.sin(turn)
    r = rest @ np.array([[c, s], [-s, c]])
    pos = np.vstack([np.array([2.0, 1.0]) + r, [2.0, 1.0]])
    pos[7] = pos[:2].mean(axis=0) + 0.5 * (pos[:2].mean(axis=0) - pos[6])  # outside edge 0-1
    vel = np.vstack([np.array([1.0, -0.5]) + 0.7 * np.stack([-r[:, 1], r[:, 0]], axis=1), [0.0, 0.0]])
    vel[6] += (3.0, -2.0)
    if tangled:
        pos[6] = pos[:2].mean(axis=0) + 0.3 * (pos[:2].mean(axis=0) - pos[6])
    tris = np.array([[6, k, (k + 1) % 6] for k in range(6)] + [[0, 1, 7]], dtype=np.int32)
    return {"pos": pos, "vel": vel, "rest": rest, "tris": tris}


def _untangle(backend: str, h: dict[str, np.ndarray], support: np.ndarray,
              rest_volume: np.ndarray, owner_of_7: int = -1) -> list[int]:
    """The untangle kernel on _tangled_hexagon's body (in place); which bodies it put back."""
    from pysoft import _kernels
    tangled = np.full(1, -1, dtype=np.int32)
    _kernels.Bound("untangle", backend, pos=h["pos"], vel=h["vel"], withheld=np.zeros_like(h["vel"]),
                   tangled=tangled,
                   inv_mass=np.ones(8), support=support,
                   owner=np.array([0] * 7 + [owner_of_7], dtype=np.int32), simplices=h["tris"],
                   rest_volume=rest_volume, members=np.arange(7, dtype=np.int32), rest=h["rest"],
                   body_start=np.array([0], dtype=np.int32),
                   body_count=np.array([7], dtype=np.int32)).call(8, 7, 1, 2, 1.0 / 480.0)
    return tangled.tolist()


def _areas(h: dict[str, np.ndarray]) -> np.ndarray:
    from pysoft.twins.constraints import _simplex
    return np.asarray(_simplex(h["pos"], h["tris"], 2)[0])


@pytest.mark.parametrize("backend", ["c", "python"])
def test_a_tangled_body_is_put_back_at_its_rest_shape(backend: str) -> None:
    """untangle: a body with one of its own area triangles inside out gets its rest shape,
    turned by the best-fit rotation (the members' least-squares fit: here within 0.2 rad of
    the 0.6 rad it was built at), about its members' mean (kept), every triangle the right
    way round; its members move as a rigid body with their mean velocity (kept) and the
    best-fit spin. Row 7 (no member) is not moved."""
    h = _tangled_hexagon(0.6)
    rest_volume = np.abs(_areas(_tangled_hexagon(0.6, tangled=False)))
    assert (_areas(h)[:6] < 0.0).sum() == 1
    mean, mean_v, row7 = h["pos"][:7].mean(axis=0), h["vel"][:7].mean(axis=0), h["pos"][7].copy()
    assert _untangle(backend, h, np.zeros((8, 2)), rest_volume) == [1]
    pos, vel, rest = h["pos"], h["vel"], h["rest"]
    assert np.allclose(pos[:7].mean(axis=0), mean, atol=1e-12)
    d = pos[:7] - pos[:7].mean(axis=0)
    turn = np.arctan2(d[0, 1], d[0, 0]) - np.arctan2(rest[0, 1], rest[0, 0])
    assert abs(turn - 0.6) < 0.2
    c, s = np.cos(turn), np.sin(turn)
    assert np.allclose(d, rest @ np.array([[c, s], [-s, c]]), atol=1e-12)  # the rest shape, turned
    assert pos[7].tolist() == row7.tolist()
    assert (_areas(h)[:6] > 0.0).all()
    assert np.allclose(vel[:7].mean(axis=0), mean_v, atol=1e-12)
    spin = vel[:7] - mean_v
    assert np.allclose((spin * d).sum(axis=1), 0.0, atol=1e-12)  # rigid: no member moves along d
    w = (d[:6, 0] * spin[:6, 1] - d[:6, 1] * spin[:6, 0]) / (d[:6] * d[:6]).sum(axis=1)  # 6: the centre
    assert np.allclose(w, w[0], atol=1e-12) and w[0] != 0.0 and np.allclose(spin[6], 0.0, atol=1e-12)


@pytest.mark.parametrize("backend", ["c", "python"])
@pytest.mark.parametrize(("case", "owner_of_7"), [("not its own", -1), ("owner out of range", 1),
                                                  ("pressed", -1)])
def test_untangle_leaves_alone(backend: str, case: str, owner_of_7: int) -> None:
    """untangle moves nothing when no triangle of the body's own is inside out: row 7's
    triangle (0, 1, 7) is, against its rest area, but row 7 belongs to no body (owner -1) or
    to none in range; or when the body is held from opposite sides (a plate pressing it onto
    the floor: its rest shape does not fit there). The controls: with row 7 the body's own
    (owner 0) that triangle puts the body back; not pressed, the tangled body is put back."""
    h = _tangled_hexagon(0.6, tangled=case == "pressed")
    rest_volume = np.abs(_areas(_tangled_hexagon(0.6, tangled=False)))
    support = np.zeros((8, 2))
    if case == "pressed":
        support[1], support[4] = (0.0, 1.0), (0.0, -1.0)
    else:
        rest_volume[6] = -_areas(h)[6]  # row 7's triangle: inside out
    before = (h["pos"].tobytes(), h["vel"].tobytes())
    assert _untangle(backend, h, support, rest_volume, owner_of_7) == [0]
    assert (h["pos"].tobytes(), h["vel"].tobytes()) == before
    if case != "pressed":  # the control: the triangle with row 7 the body's own
        assert _untangle(backend, h, support, rest_volume, 0) == [1]
    else:  # and not pressed
        assert _untangle(backend, h, np.zeros((8, 2)), rest_volume, owner_of_7) == [1]


def _tet_cubes(count: int, backend: str) -> tuple[pysoft.World, list[int]]:
    w = pysoft.World(dim=3, integrator="xpbd", backend=backend)
    w.add_collider(pysoft.Plane(normal=(0.0, 1.0, 0.0), offset=0.0), restitution=0.0, friction=0.0)
    cubes = [build.cube(w, center=(c * 0.4, 0.2, 0.0), size=0.3, cells=3, model="xpbd", compliance=1e-4)
             for c in range(count)]
    return w, cubes


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_tiled_solve_plan_gives_the_batch_orders_bits(backend: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Bodies that share no particle are solved tile by tile (pysoft._coloring): a plan of
    several tiles gives the same bits as one tile, through a removal that renumbers rows."""
    from pysoft import _coloring
    from pysoft.features.constraints import Constraints

    def run(tile: int) -> tuple[np.ndarray, np.ndarray, int]:
        monkeypatch.setattr(_coloring, "TILE_PARTICLES", tile)
        w, cubes = _tet_cubes(6, backend)  # 64 particles a cube
        for frame in range(12):
            if frame == 5:
                w.remove(w.body(cubes[1]).particles[0])
            w.step()
        volumes = w._features.get(Constraints).volumes.batches
        return w.positions.copy(), w.velocities.copy(), volumes.planned

    x1, v1, one = run(10**9)
    x2, v2, tiled = run(100)
    assert tiled > one  # the small tiles did cut the batches
    assert np.array_equal(x1, x2) and np.array_equal(v1, v2)


def _tet_cubes_run(backend: str, frames: int = 20, follow: bool = False) -> tuple[pysoft.World, bool]:
    """Three tet cubes: one squashed to a third of its height (its constraints' corrections are
    capped), one spinning, one falling; after ``frames`` frames, the world and whether a
    capped correction withheld velocity in some substep's last solve. ``follow``: the main
    solve moves the velocities too (``_follow_always``)."""
    w, cubes = _tet_cubes(3, backend)
    if follow:
        _follow_always(w)
    pos, vel = w.positions, w.velocities
    squashed = [w.row(p) for p in w.body(cubes[0]).particles]
    pos[squashed, 1] = 0.2 + (pos[squashed, 1] - 0.2) / 3.0
    spinning = [w.row(p) for p in w.body(cubes[1]).particles]
    centre = pos[spinning].mean(axis=0)
    vel[spinning] = np.cross((0.0, 0.0, 30.0), pos[spinning] - centre)
    withheld = False
    for _ in range(frames):
        w.step()
        withheld |= bool(np.any(w.store.particles.arrays["withheld"][: w.store.particles.n] != 0.0))
    return w, withheld


def test_the_3d_solve_gives_its_twins_bits() -> None:
    """Tet cubes (the vectorised 3D distance and tetrahedron solves, four at a time and on a
    CPU with AVX-512 in its AVX-512 form) give the NumPy twins' bits, capped corrections
    included; and so do the AVX2 functions where the CPU has AVX-512 (PYSOFT_AVX512=0)."""
    import hashlib
    import os
    import subprocess
    import sys

    c, withheld = _tet_cubes_run("c")
    python, _ = _tet_cubes_run("python")
    assert withheld  # the capped corrections' path ran
    assert np.array_equal(c.positions, python.positions)
    assert np.array_equal(c.velocities, python.velocities)
    digest = hashlib.sha256(c.positions.tobytes() + c.velocities.tobytes()).hexdigest()
    code = ("import hashlib, sys; sys.path.insert(0, sys.argv[1]); import test_xpbd as t; "
            "w, _ = t._tet_cubes_run('c'); "
            "print(hashlib.sha256(w.positions.tobytes() + w.velocities.tobytes()).hexdigest())")
    env = {**os.environ, "PYSOFT_AVX512": "0"}
    run = subprocess.run([sys.executable, "-c", code, os.path.dirname(__file__)], env=env,
                         capture_output=True, text=True, check=True)
    assert run.stdout.strip() == digest


def _follow_always(w: pysoft.World) -> None:
    """Have ``w``'s main solve move the velocities with the corrections (follow 1), as it did
    before the positions-only solve."""
    from pysoft.features.constraints import Constraints

    term = w._features.get(Constraints).term
    term.positions_only = lambda settle: False  # type: ignore[method-assign]


def test_the_positions_only_solve_changes_no_bit_where_no_correction_is_capped() -> None:
    """Integrator "xpbd" sets every velocity from the positions after the solve, so the 3D
    solve leaves the velocities alone (follow 0; a cap takes the ends' relative velocity from
    the positions): 8 tet cubes landing (no correction capped) end 2 s later with the bits of
    a solve that moved the velocities too (the spin pass off in both); 3 cubes, one squashed
    (capped corrections), one spinning, agree with it to rounding (1e-9 m, 1e-9 m/s after 20
    frames)."""
    from pysoft import scenes
    from pysoft.features.constraints import Constraints

    a, b = scenes.tet_cubes(8), scenes.tet_cubes(8)
    assert a._features.get(Constraints).term.positions_only(False)
    _follow_always(b)
    for w in (a, b):  # the spin pass finds the momentum before the solve by another sum in
        spin = w._features.get(Constraints).term.spin  # each (its mode 2, 1): off here
        spin.record = lambda: None  # type: ignore[method-assign]
        spin.keep = lambda h, mode: None  # type: ignore[method-assign]
        spin.record_ops = lambda: []  # type: ignore[method-assign]  # (a frame in one call)
        spin.keep_ops = lambda h, mode: []  # type: ignore[method-assign]
    for _ in range(120):
        a.step()
        b.step()
    assert np.array_equal(a.positions, b.positions) and np.array_equal(a.velocities, b.velocities)
    capped, withheld = _tet_cubes_run("c")
    assert withheld
    reference, _ = _tet_cubes_run("c", follow=True)
    assert not np.array_equal(capped.velocities, reference.velocities)  # the caps' u differ in rounding
    assert np.allclose(capped.positions, reference.positions, rtol=0.0, atol=1e-9)
    assert np.allclose(capped.velocities, reference.velocities, rtol=0.0, atol=1e-9)


@pytest.mark.parametrize(("dim", "model"), [(2, "xpbd"), (3, "xpbd"), (3, "material")])
def test_a_spinning_body_in_free_flight_keeps_its_angular_momentum(dim: int, model: str) -> None:
    """A box spun at 3 rad/s (3D: about (1, 2, 3)) and thrown, in zero gravity, has the
    angular momentum about its centre of mass it was thrown with after 300 frames, to
    rounding (1e-12 of it), and its momentum. Its constraints' corrections keep angular
    momentum only to first order in their size: each substep's solve took a little of it
    (8-11 % in 300 frames) until the spin pass took off what each solve changed."""
    w = pysoft.World(dim=dim, gravity=(0.0,) * dim)
    if dim == 2:
        build.box(w, center=(0.0, 0.0), size=(0.5, 0.3), model=model)
    else:
        build.box(w, center=(0.0, 0.0, 0.0), size=(0.5, 0.3, 0.2), cells=2, model=model)
    m = w.store.particles.view("mass").copy()[:, None]

    def momenta() -> tuple[np.ndarray, np.ndarray]:
        x, v = np.zeros((len(m), 3)), np.zeros((len(m), 3))
        x[:, :dim], v[:, :dim] = w.positions, w.velocities
        c = (m * x).sum(axis=0) / m.sum()
        return (m * v).sum(axis=0), np.cross(x - c, m * v).sum(axis=0)

    r = w.positions - w.positions.mean(axis=0)
    spin = np.array([1.0, 2.0, 3.0]) if dim == 3 else np.array([0.0, 0.0, 3.0])
    w.velocities[:] = np.cross(spin, np.pad(r, ((0, 0), (0, 3 - dim))))[:, :dim] + 0.1
    p0, l0 = momenta()
    for _ in range(300):
        w.step()
    p1, l1 = momenta()
    assert np.abs(p1 - p0).max() < 1e-12
    assert np.abs(l1 - l0).max() < 1e-12 * np.abs(l0).max()
