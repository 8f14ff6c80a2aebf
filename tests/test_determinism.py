"""Determinism and snapshots (DESIGN.md, "Determinism and snapshots").

Same build, same inputs: bit-identical trajectories. ``snapshot()`` and
``restore()`` replay bit for bit in a world of the same topology; a corrupted
or mismatched blob raises ValueError and leaves the world unchanged. The C
kernels and their NumPy twins are documented bitwise-equal, so the two
backends must produce the same bytes too.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import pysoft
from pysoft import _native, scenes
from pysoft._snapshot import _HEADER, FORMAT_VERSION, _digest

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


def _split(blob: bytes) -> tuple[dict[str, Any], bytearray]:
    """A snapshot's JSON head and its payload (the arrays' bytes)."""
    head_len = _HEADER.unpack_from(blob)[2]
    body = blob[_HEADER.size:]
    return json.loads(body[:head_len]), bytearray(body[head_len:])


def _joined(blob: bytes, head: dict[str, Any], payload: bytes) -> bytes:
    """``blob``'s magic and version over ``head`` and ``payload``, with the digest recomputed:
    what a hand-edited save file looks like."""
    magic, version, _, _ = _HEADER.unpack_from(blob)
    text = json.dumps(head).encode()
    return _HEADER.pack(magic, version, len(text), _digest(text + payload)) + text + payload


def _with_array(blob: bytes, name: str, edit: Callable[[np.ndarray], None]) -> bytes:
    """``blob`` with array ``name`` changed in place by ``edit`` and the checksum recomputed
    (a hand-edited save file)."""
    head, payload = _split(blob)
    offset = 0
    for array, shape, dtype in head["arrays"]:
        size = int(np.prod(shape)) * np.dtype(dtype).itemsize
        if array == name:
            arr = np.frombuffer(bytes(payload[offset:offset + size]), dtype=dtype).reshape(shape).copy()
            edit(arr)
            payload[offset:offset + size] = arr.tobytes()
        offset += size
    return _joined(blob, head, bytes(payload))


def _edited(blob: bytes, name: str, row: int, value: float, column: int = 0) -> bytes:
    """``blob`` with array ``name``'s value at ``row`` (and ``column``) replaced."""

    def edit(arr: np.ndarray) -> None:
        arr[(row,) if arr.ndim == 1 else (row, column)] = value

    return _with_array(blob, name, edit)


def _edited_time(blob: bytes, time: float) -> bytes:
    head, payload = _split(blob)
    head["time"] = time.hex()
    return _joined(blob, head, bytes(payload))


EDITS: dict[str, Callable[[bytes], bytes]] = {
    "position-nan": lambda b: _edited(b, "particles.pos", 0, float("nan")),
    "velocity-inf": lambda b: _edited(b, "particles.vel", 1, float("inf"), 1),
    "mass-negative": lambda b: _edited(b, "particles.mass", 2, -1.0),
    "mass-zero": lambda b: _edited(b, "particles.mass", 2, 0.0),
    "inv-mass-inconsistent": lambda b: _edited(b, "particles.inv_mass", 2, 7.0),
    "restitution-2": lambda b: _edited(b, "particles.restitution", 0, 2.0),
    "stiffness-negative": lambda b: _edited(b, "springs.stiffness", 0, -5.0),
    "rest-length-nan": lambda b: _edited(b, "springs.rest_length", 0, float("nan")),
    "time-nan": lambda b: _edited_time(b, float("nan")),
    "time-inf": lambda b: _edited_time(b, float("inf")),
    "time-negative": lambda b: _edited_time(b, -1.0),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("how", list(EDITS))
def test_a_hand_edited_snapshot_with_bad_values_is_refused(backend: str, how: str) -> None:
    """restore() checked the checksum, not the values: a blob edited and re-checksummed
    brought NaN positions, negative masses or a NaN time into the world. Every value is now
    held to the public API's rules, and the world is left as it was."""
    w = build_scene(backend).world
    run(w, 10)
    good = w.snapshot()
    bad = EDITS[how](good)
    run(w, 7)
    before = fingerprint(w)
    with pytest.raises(ValueError, match="blob"):
        w.restore(bad)
    assert fingerprint(w) == before
    w.restore(_edited(good, "particles.pos", 0, float(w.positions[0, 0])))  # a valid edit is taken


def test_a_gravity_well_falloff_past_its_range_is_refused() -> None:
    w = pysoft.World()
    w.add_particle((0.0, 1.0))
    w.add_gravity_well((0.0, 0.0), strength=10.0, falloff=2)
    bad = _edited(w.snapshot(), "wells.falloff", 0, 2**31 - 1)
    with pytest.raises(ValueError, match=r"wells\.falloff"):
        w.restore(bad)


# The snapshot layout of FORMAT_VERSION: every saved array, in order. A change to what a
# snapshot holds must bump FORMAT_VERSION and update this pin (old blobs are refused by version).
LAYOUT = {3: [
    "particles.entity", "particles.pos", "particles.vel", "particles.mass", "particles.inv_mass",
    "particles.radius", "particles.friction", "particles.restitution", "particles.category",
    "particles.mask", "wells.entity", "wells.center", "wells.strength", "wells.falloff",
    "wells.min_distance", "springs.entity", "springs.rest_length", "springs.stiffness",
    "springs.damping", "area_springs.entity", "area_springs.rest_area", "area_springs.stiffness",
    "area_springs.damping", "distances.entity", "distances.rest_length", "distances.compliance",
    "volumes.entity", "volumes.rest_volume", "volumes.compliance", "bodies.entity", "bodies.amount",
    "bodies.min_area", "bodies.match_stiffness", "bodies.match_damping", "bodies.flags",
    "bodies.category", "bodies.mask", "bodies.friction", "bodies.restitution",
    "bodies.rolling_resistance", "colliders.entity", "colliders.center", "colliders.rotation",
    "colliders.angle", "colliders.velocity", "colliders.angular_velocity",
    "colliders.restitution", "colliders.friction", "colliders.tangential_damping", "grabs.entity",
    "grabs.target", "grabs.stiffness", "grabs.damping",
]}
# 4: material constraints after the volume constraints
LAYOUT[4] = [*LAYOUT[3][: LAYOUT[3].index("volumes.compliance") + 1], "materials.entity",
             "materials.young", "materials.poisson", "materials.rest_volume", "materials.dm_inv",
             "materials.compliance", *LAYOUT[3][LAYOUT[3].index("volumes.compliance") + 1 :]]
# 5: the springs' muscle lengths and activations after their damping
LAYOUT[5] = [*LAYOUT[4][: LAYOUT[4].index("springs.damping") + 1], "springs.muscle_length",
             "springs.activation", *LAYOUT[4][LAYOUT[4].index("springs.damping") + 1 :]]
# 6: the area springs' rest gradients (3D volume springs' stiffening cap) after their rest areas
LAYOUT[6] = [*LAYOUT[5][: LAYOUT[5].index("area_springs.rest_area") + 1], "area_springs.rest_gradient",
             *LAYOUT[5][LAYOUT[5].index("area_springs.rest_area") + 1 :]]


def test_the_snapshot_layout_is_pinned_to_its_format_version() -> None:
    blob = build_scene("c" if pysoft.C_AVAILABLE else "python").world.snapshot()
    names = [a[0] for a in _split(blob)[0]["arrays"]]
    saved = [n for n in names if not n.endswith(".ends")]
    assert FORMAT_VERSION in LAYOUT, "a new FORMAT_VERSION needs its layout pinned here"
    assert saved == LAYOUT[FORMAT_VERSION], "the snapshot layout changed: bump FORMAT_VERSION"


def _draped_cloth() -> pysoft.World:
    """build.cloth's default (XPBD) spawned over a disc: falls onto it and the floor."""
    w = pysoft.World()
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.5)
    w.add_collider(pysoft.Disc((0.3, 0.8), 0.25), friction=0.3)
    pysoft.build.cloth(w, center=(0.0, 1.5), size=(1.2, 1.2), cells=(12, 12), pin="none")
    return w


# sha256 (first 16 hex digits) of the positions' then the velocities' bytes after 10,000
# steps. They hold at -O0 and -O3 (CI builds both) and on every machine with IEEE doubles:
# kernels in a fixed order, no FMA contraction, no -ffast-math. A change that moves any
# bit of these trajectories must change them here, on purpose.
PINNED: dict[str, tuple[str, Callable[[], pysoft.World], str]] = {
    "boxes": ("canonical scene, 1,000 particles, 1/240 s", lambda: scenes.boxes(1000), "5101681701e84ca2"),
    "demo": ("the demo pile, 60 Hz x 8 substeps", scenes.demo, "1cff3071e0f0778f"),
    "cloth": ("an XPBD cloth draped over a disc", _draped_cloth, "64f48094047368fc"),
}


@pytest.mark.parametrize("name", list(PINNED))
def test_the_state_after_10000_steps_has_its_pinned_hash(name: str) -> None:
    _, make, pinned = PINNED[name]
    w = make()
    for _ in range(10_000):
        w.step()
    digest = hashlib.sha256(np.ascontiguousarray(w.positions).tobytes()
                            + np.ascontiguousarray(w.velocities).tobytes()).hexdigest()[:16]
    assert digest == pinned, f"{name}: {digest}"


@pytest.mark.skipif(_native.VARIANT != "x86-64-v3", reason="this CPU loads the baseline build only")
def test_both_builds_of_the_core_give_the_pinned_hashes() -> None:
    """The test above ran on the x86-64-v3 build of the core (this CPU has it); the baseline
    build, loaded in a fresh interpreter with PYSOFT_VARIANT=baseline, gives the same three
    hashes: the vectorised loops change no bit."""
    env = {**os.environ, "PYSOFT_VARIANT": "baseline"}
    which = subprocess.run([sys.executable, "-c", "import pysoft._native as n; print(n.VARIANT)"],
                           env=env, capture_output=True, text=True, check=True)
    assert which.stdout.strip() == "baseline"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
                          "-k", "pinned_hash"], env=env, capture_output=True, text=True)
    assert run.returncode == 0 and "3 passed" in run.stdout, run.stdout[-3000:]


def _state_digest(w: pysoft.World) -> str:
    return hashlib.sha256(np.ascontiguousarray(w.positions).tobytes()
                          + np.ascontiguousarray(w.velocities).tobytes()).hexdigest()


def test_threads_give_the_same_bits_as_one_thread() -> None:
    """World(threads=N) splits the spring pass's springs, then its particles, and the collide
    pass's particles into N fixed parts: the canonical scene (10,000 particles, 34,200
    springs: up to 8 parts of 4,096 springs, 4 of 2,048 particles) after 100 steps is the same
    bit for bit with 1, 2, 3 and 8 threads, and changing the count between frames changes
    nothing either."""
    digests = set()
    for threads in (1, 2, 3, 8):
        w = scenes.boxes(10_000)
        w.threads = threads
        for _ in range(100):
            w.step()
        digests.add(_state_digest(w))
    w = scenes.boxes(10_000)
    for k in range(100):
        w.threads = 1 + k % 3
        w.step()
    digests.add(_state_digest(w))
    assert len(digests) == 1


def test_the_spring_kernel_split_over_threads_matches_its_twin() -> None:
    """The kernel alone on 50,000 random springs (coincident endpoints and zero rest lengths
    among them), 1 to 5 threads against the NumPy twin: bitwise equal forces."""
    import importlib

    samplers = importlib.import_module("samplers")
    from pysoft import _kernels

    args = samplers.SAMPLERS["springs"](np.random.default_rng(5), 16_667, 2)
    want = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
    _kernels.call("springs", "python", 1, **samplers.arrays_of("springs", want))
    for threads in range(1, 6):
        got = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
        _kernels.call("springs", "c", threads, **samplers.arrays_of("springs", got))
        assert got["force"].tobytes() == want["force"].tobytes(), threads


@pytest.mark.parametrize("dim", [2, 3])
def test_the_collide_kernel_split_over_threads_matches_its_twin(dim: int) -> None:
    """The collide kernel on 12,000 particles against floors, boxes and moving shapes (the
    parity sampler's scene), 1 to 5 threads (parts of at least 2,048 particles) against the
    NumPy twin: bitwise equal written arrays and the same contact count."""
    import importlib

    samplers = importlib.import_module("samplers")
    from pysoft import _kernels
    from pysoft._kernels import REGISTRY

    args = samplers.SAMPLERS["collide"](np.random.default_rng(11), 12_000, dim)
    want = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
    count = _kernels.call("collide", "python", *samplers.scalars_of("collide", {**want, "threads": 1}),
                          **samplers.arrays_of("collide", want))
    assert count > 0
    for threads in range(1, 6):
        got = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
        assert _kernels.call("collide", "c", *samplers.scalars_of("collide", {**got, "threads": threads}),
                             **samplers.arrays_of("collide", got)) == count
        for name in REGISTRY["collide"].writes:
            assert got[name].tobytes() == want[name].tobytes(), (threads, name)


@pytest.mark.parametrize("bad", [0, 17, 1.5, True, "2"])
def test_threads_must_be_a_count_of_1_to_16(bad: Any) -> None:
    w = pysoft.World()
    with pytest.raises(ValueError, match="threads"):
        w.threads = bad
    assert w.threads == 1
    with pytest.raises(ValueError, match="threads"):
        pysoft.World(threads=bad)


def test_two_python_threads_calling_split_kernels_at_once_share_the_pool() -> None:
    """The C core releases the GIL during a kernel: two Python threads running the spring and
    collide kernels with threads=2 at once, on arrays of their own, take turns on the one
    pool (a run at a time) and get the bits of each run alone."""
    import importlib
    import threading

    samplers = importlib.import_module("samplers")
    from pysoft import _kernels

    def sample(name: str, seed: int) -> dict[str, Any]:
        args = samplers.SAMPLERS[name](np.random.default_rng(seed), 12_000, 2)
        return {**args, "threads": 2}

    def run(name: str, args: dict[str, Any], out: list[bytes]) -> None:
        for _ in range(20):
            _kernels.call(name, "c", *samplers.scalars_of(name, args), **samplers.arrays_of(name, args))
        out.append(args["vel" if name == "collide" else "force"].tobytes())

    cases = [("springs", 1), ("collide", 2), ("springs", 3), ("collide", 4)]
    alone: list[list[bytes]] = []
    for name, seed in cases:
        alone.append([])
        run(name, sample(name, seed), alone[-1])
    together: list[list[bytes]] = [[] for _ in cases]
    workers = [threading.Thread(target=run, args=(name, sample(name, seed), out))
               for (name, seed), out in zip(cases, together, strict=True)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(timeout=120)
    assert together == alone


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_process_starts_its_own_workers() -> None:
    """Workers are not copied by fork(): a child of a process whose pool ran steps a world with
    threads=2 (starting its own workers) and gets the parent's bits."""
    w = scenes.boxes(10_000)
    w.threads = 2
    for _ in range(5):
        w.step()
    want = _state_digest(w)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: step a fresh world the same way, report its digest
        try:
            c = scenes.boxes(10_000)
            c.threads = 2
            for _ in range(5):
                c.step()
            os.write(write, _state_digest(c).encode())
        finally:
            os._exit(0)
    os.close(write)
    got = os.read(read, 200).decode()
    os.close(read)
    _, status = os.waitpid(pid, 0)
    assert status == 0 and got == want
