"""Area springs (``World.add_area_springs``, ``csrc/src/springs.c``): a damped spring on a
triangle's signed area, F = -(k (A - A0) + c dA/dt) dA/dx on each corner (2D). The
builders give every spring lattice without XPBD area constraints of its own one on each
triangle (``build.AREA_STIFFNESS``), so it knows its inside from its outside; a triangle
turned inside out is pushed back harder (``INVERSION_GAIN``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pysoft
from pysoft import _kernels, build
from pysoft._constants import INVERSION_GAIN

BASE, HEIGHT, MASS, K = 1.0, 1.0, 0.5, 200.0  # m, m, kg, N/m^3



def _triangle(backend: str, apex_y: float, damping: float = 0.0) -> tuple[pysoft.World, int]:
    """Base corners pinned at (-BASE/2, 0) and (BASE/2, 0), a free apex of MASS at (0, apex_y);
    an area spring of rest area BASE HEIGHT / 2 (apex at HEIGHT); no gravity. Returns the
    world and the apex's row."""
    w = pysoft.World(gravity=(0.0, 0.0), backend=backend, dt=1 / 240, substeps=8)
    a, b = w.add_particles([(-BASE / 2, 0.0), (BASE / 2, 0.0)], pinned=True)
    c = w.add_particle((0.0, apex_y), mass=MASS)
    w.add_area_spring(a, b, c, stiffness=K, damping=damping, rest_area=BASE * HEIGHT / 2)
    return w, w.row(c)


def test_the_apex_oscillates_at_the_area_mode_frequency(backend: str) -> None:
    """Only the apex moves, along y: A = BASE y / 2, dA/dy = BASE / 2, so
    m y'' = -K (BASE / 2)^2 (y - HEIGHT): period 2 pi sqrt(4 m / (K BASE^2)) = 0.314 s.
    Released 0.1 m above its rest height, its upward zero crossings over 3 s give the period
    within 0.5 %, and the swing keeps its amplitude (undamped) within 1 %."""
    w, apex = _triangle(backend, HEIGHT + 0.1)
    period = 2.0 * math.pi * math.sqrt(4.0 * MASS / (K * BASE**2))
    ys, t = [], []
    for f in range(round(3.0 / w.dt)):
        w.step()
        ys.append(float(w.positions[apex, 1]) - HEIGHT)
        t.append((f + 1) * w.dt)
    y = np.array(ys)
    up = np.flatnonzero((y[:-1] < 0.0) & (y[1:] >= 0.0))
    crossings = np.array(t)[up] - y[up] / (y[up + 1] - y[up]) * w.dt  # linear interpolation
    measured = float(np.diff(crossings).mean())
    assert abs(measured - period) <= 0.005 * period, (measured, period)
    assert abs(np.abs(y[-round(period / w.dt):]).max() - 0.1) <= 0.001
    assert abs(float(w.positions[apex, 0])) < 1e-12  # the force on the apex is along y only


def test_an_inverted_triangle_is_pushed_back_through_itself(backend: str) -> None:
    """The apex mirrored below the base (A = -A0), with damping 2 sqrt(K (BASE/2)^2 m) /
    (BASE/2)^2 (critical for the area mode): it crosses the base and comes to rest at
    HEIGHT within 1 mm in 2 s."""
    critical = 2.0 * math.sqrt(K * (BASE / 2) ** 2 * MASS) / (BASE / 2) ** 2
    w, apex = _triangle(backend, -HEIGHT, damping=critical)
    for _ in range(round(2.0 / w.dt)):
        w.step()
    assert abs(float(w.positions[apex, 1]) - HEIGHT) < 1e-3


def test_the_forces_sum_to_zero_with_no_torque(backend: str) -> None:
    """One kernel call over 50 random triangles of 20 particles: the forces sum to zero and
    their torque about the origin is zero (to rounding: 1e-12 of the summed |r x F|)."""
    rng = np.random.default_rng(3)
    n, m = 20, 50
    pos, vel = rng.normal(0.0, 1.0, (n, 2)), rng.normal(0.0, 1.0, (n, 2))
    tri = np.stack([rng.choice(n, 3, replace=False) for _ in range(m)]).astype(np.int32)
    force = np.zeros((n, 2))
    _kernels.call("area_springs", backend, force=force, pos=pos, vel=vel, triangles=tri,
                  rest_area=rng.normal(0.0, 0.5, m), rest_gradient=np.zeros(m),
                  stiffness=rng.uniform(0, 500, m), damping=rng.uniform(0, 5, m))
    torque = pos[:, 0] * force[:, 1] - pos[:, 1] * force[:, 0]
    scale = float(np.abs(torque).sum())
    assert np.abs(force.sum(axis=0)).max() <= 1e-12 * float(np.abs(force).sum())
    assert abs(float(torque.sum())) <= 1e-12 * scale


def test_components_removal_and_snapshot() -> None:
    w = pysoft.World()
    a, b, c, d = w.add_particles([(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)])
    first, second = w.add_area_springs([[a, b, c], [b, d, c]], stiffness=[100.0, 200.0], damping=1.0)
    s = w.area_spring(first)
    assert s.particles == [a, b, c] and s.rest_area == 0.5 and s.stiffness == 100.0
    s.stiffness = 150.0
    assert w.area_spring(first).stiffness == 150.0
    blob = w.snapshot()
    w.area_spring(second).damping = 3.0
    w.restore(blob)
    assert w.area_spring(second).damping == 1.0
    w.remove(a)  # takes the area spring that names it along
    with pytest.raises(KeyError):
        w.area_spring(first)
    assert w.area_spring(second).particles == [b, d, c]


@pytest.mark.parametrize(("args", "kwargs", "match"), [
    ((), {"stiffness": -1.0}, "stiffness"),
    ((), {"stiffness": 1.0, "damping": float("nan")}, "damping"),
    ((), {"stiffness": 1.0, "rest_area": float("inf")}, "rest_area"),
])
def test_bad_area_springs_are_refused(args: tuple[object, ...], kwargs: dict[str, float],
                                      match: str) -> None:
    w = pysoft.World()
    a, b, c = w.add_particles([(0.0, 0.0), (1.0, 0.0), (0.0, 1.0)])
    before = w.snapshot()
    with pytest.raises(ValueError, match=match):
        w.add_area_spring(a, b, c, *args, **kwargs)  # type: ignore[arg-type]
    assert w.snapshot() == before
    with pytest.raises(ValueError, match="different particles"):
        w.add_area_springs([[a, b, a]], stiffness=1.0)
    with pytest.raises(KeyError, match="triangles"):
        w.add_area_springs([[a, b, 10**9]], stiffness=1.0)
    assert w.snapshot() == before


def test_volume_springs_in_3d_sag_as_hookes_law_says_and_push_an_inverted_tetrahedron_back() -> None:
    """3D area springs hold a tetrahedron's volume. Corners a, b, c pinned (a base of area
    A_b), d of mass m free above it at height z: V = A_b z / 3, dV/dd = (A_b / 3) up. Gravity
    m g down balances s |dV/dd| with s = -k (V - V0): V - V0 = -3 m g / (k A_b), so d sinks by
    9 m g / (k A_b^2). Pushed through the base (V < 0), the spring and its inversion gain push
    it back up."""
    def tet(z: float) -> tuple[pysoft.World, int]:
        w = pysoft.World(dim=3, gravity=(0.0, 0.0, -9.81))
        ps = w.add_particles([(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.2, 0.2, 1.0)],
                             masses=[1.0, 1.0, 1.0, 0.1], pinned=[True, True, True, False])
        w.add_area_springs([ps], stiffness=2000.0, damping=50.0)
        w.positions[3, 2] = z
        return w, ps[3]

    w, _ = tet(1.0)
    with pytest.raises(ValueError, match="triangles"):
        w.add_area_springs([[0, 1, 2]], stiffness=1.0)  # 3D: four corners
    for _ in range(300):
        w.step()
    want = 1.0 - 9.0 * 0.1 * 9.81 / (2000.0 * 0.5**2)
    assert w.positions[3, 2] == pytest.approx(want, rel=1e-9)
    w, _ = tet(-0.3)  # inside out
    for _ in range(300):
        w.step()
    assert w.positions[3, 2] == pytest.approx(want, rel=1e-9)


def test_which_builder_bodies_get_them() -> None:
    """A spring lattice (a box's 4 x 4 cells: 32 triangles; a gas box keeps its lattice) gets
    area springs, one with shape matching too (AREA_UNDER_MATCHING times as stiff: they only
    give a mirrored body its direction); XPBD (area constraints) does not. A ring of springs
    gets one per edge, on the edge and the particle across the ring (16 for the default 16
    segments); a gas bag (a ring of outline springs holding gas) none."""
    for model, count in (("springs", 32), ("springs+pressure", 32), ("pressure", 32),
                         ("springs+shape_matching", 32), ("xpbd", 0)):
        w = pysoft.World()
        build.box(w, model=model)
        assert w.store.tables["area_springs"].n == count, model
    stiffness = {}
    for model in ("springs", "springs+shape_matching"):
        w = pysoft.World()
        build.box(w, model=model)
        stiffness[model] = w.store.tables["area_springs"].view("stiffness").copy()
    assert np.allclose(stiffness["springs+shape_matching"], build.AREA_UNDER_MATCHING * stiffness["springs"],
                       rtol=1e-12, atol=0.0)
    for model, count in (("springs", 16), ("springs+shape_matching", 16), ("pressure", 0), ("xpbd", 0)):
        w = pysoft.World()
        build.circle(w, model=model)
        assert w.store.tables["area_springs"].n == count, model


@pytest.mark.parametrize("apex_y", [-HEIGHT, -0.25 * HEIGHT, 0.0, 0.5 * HEIGHT, 2.0 * HEIGHT])
def test_an_inside_out_triangle_is_pushed_back_harder(backend: str, apex_y: float) -> None:
    """Base corners at (-BASE/2, 0), (BASE/2, 0), the apex at (0, apex_y) at rest: A =
    BASE apex_y / 2, dA/dy_apex = BASE / 2. The apex's force is s BASE / 2 with s = -K (A - A0)
    while A >= 0, and s = -K (A - A0) - INVERSION_GAIN K A once inside out (A < 0): zero extra
    at A = 0, so the force is continuous (to 1e-12 relative)."""
    pos = np.array([(-BASE / 2, 0.0), (BASE / 2, 0.0), (0.0, apex_y)])
    force = np.zeros((3, 2))
    a0 = BASE * HEIGHT / 2
    _kernels.call("area_springs", backend, force=force, pos=pos, vel=np.zeros((3, 2)),
                  triangles=np.array([[0, 1, 2]], dtype=np.int32), rest_area=np.array([a0]),
                  rest_gradient=np.zeros(1), stiffness=np.array([K]), damping=np.array([0.0]))
    area = BASE * apex_y / 2
    s = -K * (area - a0) - (INVERSION_GAIN * K * area if area < 0.0 else 0.0)
    assert abs(float(force[2, 1]) - s * BASE / 2) <= 1e-12 * abs(s * BASE / 2)
    assert float(force[2, 0]) == 0.0


def test_a_mirrored_spring_box_turns_back() -> None:
    """The issue's case: a 1 x 1 default ("springs") box turned inside out (x -> -x) in the
    air with no gravity: within 3 s its outline is counter-clockwise again at its built area
    (10 %). With build.AREA_STIFFNESS = 0 it stays mirrored (measured: area -1.00 of built):
    the spring lattice's mirror image is at rest too."""
    w = pysoft.World(gravity=(0.0, 0.0))
    body = build.box(w, center=(0.0, 0.0), size=(1.0, 1.0))
    ring = [w.row(e) for e in w.body(body).outline]
    built = pysoft.shapes.signed_area(w.positions[ring])
    w.positions[:, 0] *= -1.0
    for _ in range(180):
        w.step()
    assert abs(pysoft.shapes.signed_area(w.positions[ring]) / built - 1.0) <= 0.1


@pytest.mark.parametrize("stretch", [1.0, 1.2, 2.0, 3.0])
def test_a_volume_spring_stiffens_with_its_faces_up_to_three_times_its_rest_pull(
        backend: str, stretch: float) -> None:
    """A unit right tetrahedron stretched by ``stretch`` in every direction: V = stretch^3 V0
    and each corner's gradient grows as stretch^2, so G = sum |g|^2 = stretch^4 G0. The pull
    is k (V - V0) g, scaled by 3 G0 / G where G > 3 G0 (stretch > 3^(1/4) = 1.316); the
    forces sum to zero with no torque either way."""
    rest = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    v0, k = 1.0 / 6.0, 1000.0
    g0 = np.array([[-1.0, -1.0, -1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]) / 6.0
    big_g0 = float((g0 * g0).sum())
    pos = stretch * rest + np.array([0.3, -0.2, 0.1])
    force = np.zeros((4, 3))
    _kernels.call("area_springs", backend, force=force, pos=pos, vel=np.zeros((4, 3)),
                  triangles=np.array([[0, 1, 2, 3]], dtype=np.int32), rest_area=np.array([v0]),
                  rest_gradient=np.array([big_g0]), stiffness=np.array([k]),
                  damping=np.array([0.0]))
    scale = min(1.0, 3.0 / stretch**4)
    expected = -k * (stretch**3 * v0 - v0) * stretch**2 * g0 * scale
    assert np.allclose(force, expected, rtol=1e-12, atol=1e-12 * abs(expected).max())
    assert np.abs(force.sum(axis=0)).max() <= 1e-12 * np.abs(force).sum()
    assert np.abs(np.cross(pos, force).sum(axis=0)).max() <= 1e-12 * np.abs(np.cross(pos, force)).sum()
