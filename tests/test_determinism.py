"""Determinism and snapshots (DESIGN.md, "Determinism and snapshots").

Same build, same inputs: bit-identical trajectories. ``snapshot()`` and
``restore()`` replay bit for bit in a world of the same topology; a corrupted
or mismatched blob raises ValueError and leaves the world unchanged. The C
kernels and their NumPy twins are documented bitwise-equal, so the two
backends must produce the same bytes too.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

import pysoft
from pysoft._snapshot import FORMAT_VERSION

BACKENDS = ("c", "python")
GRID = 4
SPACING = 0.25
FRAMES = 120


@dataclass
class Scene:
    world: pysoft.World
    particles: list[int]
    springs: list[int]


def grid_pairs(n: int) -> np.ndarray:
    """Local index pairs of an n-by-n grid: horizontal, vertical, both diagonals."""
    idx = np.arange(n * n).reshape(n, n)
    blocks = [(idx[:, :-1], idx[:, 1:]), (idx[:-1, :], idx[1:, :]),
              (idx[:-1, :-1], idx[1:, 1:]), (idx[:-1, 1:], idx[1:, :-1])]
    return np.concatenate([np.stack([a.ravel(), b.ravel()], axis=1) for a, b in blocks])


def build_scene(backend: str = "c", integrator: str = "symplectic_euler", dim: int = 2,
                extra_particle: bool = False) -> Scene:
    """A 4x4 spring grid (one corner pinned) falling onto a floor, tilted and spinning."""
    w = pysoft.World(dim=dim, backend=backend, integrator=integrator)
    normal = (0.0, 1.0, 0.0)[:dim]
    w.add_collider(pysoft.Plane(normal=normal, offset=0.0), restitution=0.3, friction=0.5)
    g = np.arange(GRID) * SPACING
    xy = np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2)
    xy = xy @ np.array([[np.cos(0.3), np.sin(0.3)], [-np.sin(0.3), np.cos(0.3)]]) + (-0.4, 0.15)
    pos = np.zeros((GRID * GRID, dim))
    pos[:, :2] = xy
    vel = np.zeros_like(pos)
    vel[:, 0] = 1.5 - 2.0 * xy[:, 1]  # a spin, so contacts slide (friction) and bounce
    vel[:, 1] = -1.0
    pinned = np.zeros(GRID * GRID, dtype=bool)
    pinned[-1] = True  # the top corner
    masses = np.linspace(0.8, 1.2, GRID * GRID)
    particles = w.add_particles(pos, velocities=vel, masses=masses, radii=0.03, pinned=pinned)
    ents = np.asarray(particles, dtype=np.int64)
    springs = w.add_springs(ents[grid_pairs(GRID)], stiffness=2000.0, damping=5.0)
    if extra_particle:
        particles.append(w.add_particle((2.0, 1.0)[:2] + (0.0,) * (dim - 2)))
    return Scene(w, particles, springs)


def state(world: pysoft.World) -> bytes:
    return (np.ascontiguousarray(world.positions).tobytes()
            + np.ascontiguousarray(world.velocities).tobytes())


def fingerprint(world: pysoft.World) -> bytes:
    s = world.store
    return state(world) + struct.pack("<d4q", world.time, s.particles.n, s.springs.n,
                                      s.colliders.n, s.version)


def run(world: pysoft.World, frames: int) -> None:
    for _ in range(frames):
        world.step()


def test_scene_has_contacts_and_motion() -> None:
    """The scene must exercise collision, friction and springs, or the tests below are weak."""
    sc = build_scene()
    w = sc.world
    start = w.positions.copy()
    min_y = np.inf
    for _ in range(FRAMES):
        w.step()
        movable = w.positions[:-1]
        min_y = min(min_y, float((movable[:, 1] - 0.03).min()))
    assert min_y < 1e-3  # the grid reached the floor
    assert np.isfinite(w.positions).all()
    assert not np.array_equal(w.positions[:-1], start[:-1])
    assert np.array_equal(w.positions[-1], start[-1])  # pinned


@pytest.mark.parametrize("integrator", pysoft.INTEGRATORS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_same_scene_twice_is_bit_identical(backend: str, integrator: str) -> None:
    a = build_scene(backend, integrator).world
    b = build_scene(backend, integrator).world
    run(a, FRAMES)
    run(b, FRAMES)
    assert np.isfinite(a.positions).all()
    assert state(a) == state(b)
    assert a.time == b.time


@pytest.mark.parametrize("integrator", pysoft.INTEGRATORS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_restore_replays_bit_identically(backend: str, integrator: str) -> None:
    w = build_scene(backend, integrator).world
    run(w, 30)
    snap = w.snapshot()
    t_snap = w.time
    run(w, 60)
    first, t_first = state(w), w.time
    w.restore(snap)
    assert w.time == t_snap
    run(w, 60)
    assert state(w) == first
    assert w.time == t_first


@pytest.mark.parametrize("backend", BACKENDS)
def test_restore_writes_back_the_snapshot_state(backend: str) -> None:
    w = build_scene(backend).world
    run(w, 10)
    snap, at_snap = w.snapshot(), fingerprint(w)
    run(w, 5)
    assert fingerprint(w) != at_snap
    w.restore(snap)
    assert fingerprint(w)[:-8] == at_snap[:-8]  # all but the topology version


@pytest.mark.parametrize("integrator", pysoft.INTEGRATORS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_restore_into_fresh_world_replays(backend: str, integrator: str) -> None:
    w = build_scene(backend, integrator).world
    run(w, 30)
    snap = w.snapshot()
    run(w, 60)
    fresh = build_scene(backend, integrator).world
    fresh.restore(snap)
    run(fresh, 60)
    assert state(fresh) == state(w)
    assert fresh.time == w.time


def _flip(blob: bytes, at: int) -> bytes:
    out = bytearray(blob)
    out[at] ^= 0x01
    return bytes(out)


def _with_version(blob: bytes, version: int) -> bytes:
    out = bytearray(blob)
    struct.pack_into("<I", out, 8, version)  # after the 8-byte magic
    return bytes(out)


CORRUPTIONS: dict[str, Callable[[bytes], bytes]] = {
    "payload-last-byte": lambda b: _flip(b, len(b) - 1),
    "payload-middle-byte": lambda b: _flip(b, len(b) - 200),
    "head-json-byte": lambda b: _flip(b, 40),
    "magic": lambda b: _flip(b, 0),
    "digest": lambda b: _flip(b, 20),
    "truncated": lambda b: b[:-8],
    "truncated-to-header": lambda b: b[:12],
    "empty": lambda b: b"",
    "trailing-bytes": lambda b: b + b"\x00",
    "version-next": lambda b: _with_version(b, FORMAT_VERSION + 1),
    "version-previous": lambda b: _with_version(b, FORMAT_VERSION - 1),
    "version-0": lambda b: _with_version(b, 0),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("how", list(CORRUPTIONS))
def test_corrupted_snapshot_raises_and_changes_nothing(backend: str, how: str) -> None:
    w = build_scene(backend).world
    run(w, 10)
    good = w.snapshot()
    bad = CORRUPTIONS[how](good)
    assert bad != good
    run(w, 7)  # the world has moved on: a restore would visibly change it
    before = fingerprint(w)
    with pytest.raises(ValueError, match="blob"):
        w.restore(bad)
    assert fingerprint(w) == before
    w.restore(good)  # the world still accepts the good blob afterwards
    assert fingerprint(w) != before


def _mismatched(kind: str, backend: str) -> tuple[pysoft.World, pysoft.World]:
    """(world whose snapshot is taken, world it is restored into)."""
    if kind == "extra-particle-in-target":
        return build_scene(backend).world, build_scene(backend, extra_particle=True).world
    if kind == "extra-particle-in-source":
        return build_scene(backend, extra_particle=True).world, build_scene(backend).world
    if kind == "removed-spring-in-target":
        target = build_scene(backend)
        target.world.remove(target.springs[3])
        return build_scene(backend).world, target.world
    if kind == "removed-spring-in-source":
        source = build_scene(backend)
        source.world.remove(source.springs[3])
        return source.world, build_scene(backend).world
    if kind == "same-counts-other-entities":
        source = build_scene(backend)
        source.world.remove(source.particles[0])
        source.world.add_particle((0.0, 1.0))
        target = build_scene(backend)
        target.world.remove(target.particles[0])
        target.world.add_particle((5.0, 1.0))
        target.world.add_particle((5.0, 1.0))
        target.world.remove(target.world.particles[-2])
        assert target.world.store.particles.n == source.world.store.particles.n
        return source.world, target.world
    if kind == "dim3-into-dim2":
        return build_scene(backend, dim=3).world, build_scene(backend).world
    if kind == "dim2-into-dim3":
        return build_scene(backend).world, build_scene(backend, dim=3).world
    raise AssertionError(kind)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["extra-particle-in-target", "extra-particle-in-source",
                                  "removed-spring-in-target", "removed-spring-in-source",
                                  "same-counts-other-entities", "dim3-into-dim2",
                                  "dim2-into-dim3"])
def test_snapshot_of_other_topology_raises(backend: str, kind: str) -> None:
    source, target = _mismatched(kind, backend)
    run(source, 5)
    blob = source.snapshot()
    run(target, 3)
    before = fingerprint(target)
    with pytest.raises(ValueError, match="blob"):
        target.restore(blob)
    assert fingerprint(target) == before


@pytest.mark.parametrize("integrator", pysoft.INTEGRATORS)
def test_c_and_python_backends_are_bitwise_equal(integrator: str) -> None:
    c = build_scene("c", integrator).world
    py = build_scene("python", integrator).world
    for frame in range(60):
        c.step()
        py.step()
        assert state(c) == state(py), f"backends diverge at frame {frame + 1}"
    assert c.time == py.time


def test_snapshot_is_portable_between_backends() -> None:
    c = build_scene("c").world
    run(c, 20)
    py = build_scene("python").world
    py.restore(c.snapshot())
    assert state(py) == state(c)
    run(c, 20)
    run(py, 20)
    assert state(py) == state(c)
