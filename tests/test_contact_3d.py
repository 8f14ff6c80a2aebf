"""Contact in 3D (Plane, Sphere, rotated Box) and replay with moving colliders."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pysoft

BACKENDS = ("c", "python")


def _world(backend: str, gravity: tuple[float, ...] = (0.0, -9.81, 0.0)) -> pysoft.World:
    return pysoft.World(dim=3, gravity=gravity, dt=1 / 60, substeps=8, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_3d_bounce_apex_is_e_squared_h(backend: str) -> None:
    """Bounce on a 3D floor: apex after one bounce = e^2 h within 6 %."""
    w = _world(backend)
    w.add_collider(pysoft.Plane((0.0, 1.0, 0.0), 0.0), restitution=0.6, friction=0.0)
    p = w.add_particle((0.0, 1.05, 0.0), radius=0.05)
    ys, bounced = [], False
    for _ in range(150):
        w.step()
        y = float(w.particle(p).position[1]) - 0.05
        vy = float(w.particle(p).velocity[1])
        bounced = bounced or vy > 0
        if bounced:
            ys.append(y)
            if vy < 0:
                break
    assert max(ys) == pytest.approx(0.36, rel=0.06)


@pytest.mark.parametrize("backend", BACKENDS)
def test_3d_rests_on_sphere_and_rotated_box(backend: str) -> None:
    """A particle dropped on a Sphere top rests at R + r above its centre (1e-6); one dropped
    on a rotated 3D Box never ends inside it and comes to rest (speed < 1e-2 m/s)."""
    w = _world(backend)
    w.add_collider(pysoft.Sphere((0.0, 0.0, 0.0), 0.5), friction=0.5, restitution=0.0)
    rot = np.array([[math.cos(0.3), 0.0, math.sin(0.3)], [0.0, 1.0, 0.0],
                    [-math.sin(0.3), 0.0, math.cos(0.3)]])
    box = w.add_collider(pysoft.Box((3.0, 0.0, 0.0), (1.0, 0.1, 1.0), rotation=rot),
                         friction=0.8, restitution=0.0)
    a = w.add_particle((0.0, 1.5, 0.0), radius=0.02)
    b = w.add_particle((3.2, 1.0, 0.1), radius=0.02)
    R = w.collider(box).rotation
    for _ in range(120):
        w.step()
        local = R.T @ (w.particle(b).position - np.array([3.0, 0.0, 0.0]))
        assert not (np.abs(local) < np.array([1.0, 0.1, 1.0]) + 0.02 - 1e-9).all()
    assert np.linalg.norm(w.particle(a).position) == pytest.approx(0.52, abs=1e-6)
    assert np.linalg.norm(w.particle(b).velocity) < 1e-2


@pytest.mark.parametrize("backend", BACKENDS)
def test_3d_no_tunnelling_through_thin_box(backend: str) -> None:
    """50 m/s at 60 Hz, 8 substeps, against a 5 cm thick 3D box: never ends on the far side."""
    w = _world(backend, gravity=(0.0, 0.0, 0.0))
    w.add_collider(pysoft.Box((0.0, 0.0, 0.0), (1.0, 0.025, 1.0)), restitution=0.5)
    p = w.add_particle((0.1, 1.0, -0.2), velocity=(0.0, -50.0, 5.0), radius=0.01)
    for _ in range(30):
        w.step()
        assert w.particle(p).position[1] >= 0.025 + 0.01 - 1e-9


@pytest.mark.parametrize("backend", BACKENDS)
def test_3d_spinning_platform_carries_a_resting_particle(backend: str) -> None:
    """A box spinning about y at w rad/s carries a particle resting on it (moving with the
    surface, v = w x r): after t its azimuth has turned by w t (within 1 %), its radius
    unchanged (1e-3)."""
    w = _world(backend)
    spin = w.add_collider(pysoft.Box((0.0, 0.0, 0.0), (2.0, 0.1, 2.0)), friction=1.0, restitution=0.0,
                          angular_velocity=(0.0, 0.5, 0.0))
    p = w.add_particle((1.0, 0.12, 0.0), velocity=(0.0, 0.0, -0.5), radius=0.02)
    for _ in range(60):
        w.step()
    x, _, z = w.particle(p).position
    assert math.hypot(x, z) == pytest.approx(1.0, abs=1e-3)
    # A positive rotation about y takes +x towards -z.
    assert math.atan2(-z, x) == pytest.approx(0.5 * w.time, rel=0.01)
    assert np.allclose(w.collider(spin).rotation @ w.collider(spin).rotation.T, np.eye(3), atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dim", [2, 3])
def test_moving_colliders_replay_bit_identically_after_restore(backend: str, dim: int) -> None:
    """Snapshot -> restore replays a scene with moving colliders and wells bit for bit."""
    def build() -> pysoft.World:
        w = pysoft.World(dim=dim, backend=backend)
        up = (0.0, 1.0, 0.0)[:dim]
        w.add_collider(pysoft.Plane(up, 0.0))
        w.add_collider(pysoft.Box((0.0, 0.5, 0.0)[:dim], (0.5, 0.05, 0.5)[:dim]),
                       velocity=(0.3, 0.1, 0.0)[:dim],
                       angular_velocity=0.7 if dim == 2 else (0.0, 0.7, 0.2))
        w.add_gravity_well((0.0, 3.0, 0.0)[:dim], strength=2.0)
        rng = np.random.default_rng(3)
        w.add_particles(rng.uniform(-0.5, 0.5, (40, dim)) + np.array(up) * 1.0, radii=0.02)
        return w

    w = build()
    for _ in range(20):
        w.step()
    snap = w.snapshot()
    for _ in range(40):
        w.step()
    first = w.positions.tobytes() + w.velocities.tobytes() + w.store.colliders.view("center").tobytes()
    for world in (w, build()):
        world.restore(snap)
        for _ in range(40):
            world.step()
        again = (world.positions.tobytes() + world.velocities.tobytes()
                 + world.store.colliders.view("center").tobytes())
        assert again == first
