"""Bad input: every public entry point rejects it with a clear error and changes nothing.

DESIGN.md, "Bad input": NaN or infinite coordinates, non-positive mass,
negative radius, ``dt < 0`` (``dt == 0`` is a no-op), a spring from a
particle to itself, unknown or deleted entities, wrong array shapes or dtypes
get a ``ValueError``/``KeyError`` naming the argument, and the world is
unchanged. Each case below checks all three: the type, the argument's name in
the message, and a bitwise fingerprint of the world before and after.
"""

from __future__ import annotations

import gc
import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import esper
import numpy as np
import pytest

import pysoft
from pysoft import build

BACKENDS = ("c", "python")
NAN = math.nan
INF = math.inf


def fingerprint(world: pysoft.World) -> bytes:
    """Bytes of everything a rejected call must not touch."""
    s = world.store
    previous = esper.current_world
    esper.switch_world(world.context)
    try:
        live = tuple(len(esper.get_component(kind))
                     for kind in (pysoft.Particle, pysoft.Spring, pysoft.Collider))
    finally:
        esper.switch_world(previous)
    return b"".join((
        np.ascontiguousarray(world.positions).tobytes(),
        np.ascontiguousarray(world.velocities).tobytes(),
        struct.pack("<d", world.time),
        struct.pack("<5q", s.particles.n, s.springs.n, s.colliders.n, s.version, len(world.particles)),
        struct.pack("<3q", *live),
    ))


@dataclass
class Scene:
    """A small stepped world and the entities the cases refer to."""

    world: pysoft.World
    p0: int
    p1: int
    p2: int
    spring: int
    collider: int
    removed: int


def make_scene(backend: str) -> Scene:
    w = pysoft.World(backend=backend)
    collider = w.add_collider(pysoft.Plane(normal=(0.0, 1.0), offset=0.0))
    p0 = w.add_particle((0.0, 1.0), velocity=(0.5, 0.0))
    p1 = w.add_particle((0.3, 1.2))
    p2 = w.add_particle((0.6, 0.9), mass=2.0, radius=0.05)
    removed = w.add_particle((1.0, 1.0))
    spring = w.add_spring(p0, p1, stiffness=300.0, damping=1.0)
    w.remove(removed)
    for _ in range(3):  # non-trivial velocities and time
        w.step()
    return Scene(w, p0, p1, p2, spring, collider, removed)


Call = Callable[[Scene], Any]


def _np_object_positions() -> np.ndarray:
    out = np.empty((2, 2), dtype=object)
    out[:] = [[0.0, 1.0], [None, 2.0]]
    return out


def _many_with_one_nan() -> np.ndarray:
    pos = np.stack([np.linspace(-1.0, 1.0, 50), np.full(50, 2.0)], axis=1)
    pos[37, 1] = NAN
    return pos


# (id, call, exception, regex that must name the offending argument)
CASES: list[tuple[str, Call, type[Exception], str]] = [
    # add_particle
    ("position-nan", lambda s: s.world.add_particle((NAN, 0.0)), ValueError, "position"),
    ("position-inf", lambda s: s.world.add_particle((0.0, INF)), ValueError, "position"),
    ("position-neg-inf", lambda s: s.world.add_particle((-INF, 0.0)), ValueError, "position"),
    ("velocity-nan", lambda s: s.world.add_particle((0.0, 0.0), velocity=(0.0, NAN)),
     ValueError, "velocity"),
    ("position-wrong-length", lambda s: s.world.add_particle((0.0, 1.0, 2.0)),
     ValueError, "position"),
    ("position-string", lambda s: s.world.add_particle("ab"),  # type: ignore[arg-type]
     ValueError, "position"),
    ("position-strings", lambda s: s.world.add_particle(("0", "1")),  # type: ignore[arg-type]
     ValueError, "position"),
    ("mass-zero", lambda s: s.world.add_particle((0.0, 0.0), mass=0.0), ValueError, "mass"),
    ("mass-negative", lambda s: s.world.add_particle((0.0, 0.0), mass=-1.0), ValueError, "mass"),
    ("mass-nan", lambda s: s.world.add_particle((0.0, 0.0), mass=NAN), ValueError, "mass"),
    ("radius-negative", lambda s: s.world.add_particle((0.0, 0.0), radius=-0.1),
     ValueError, "radius"),
    ("radius-nan", lambda s: s.world.add_particle((0.0, 0.0), radius=NAN), ValueError, "radius"),
    ("pinned-not-bool", lambda s: s.world.add_particle((0.0, 0.0), pinned="yes"),  # type: ignore[arg-type]
     ValueError, "pinned"),
    # add_particles
    ("particles-shape-n3", lambda s: s.world.add_particles(np.zeros((4, 3))),
     ValueError, "positions"),
    ("particles-strings", lambda s: s.world.add_particles([["a", "b"], ["c", "d"]]),
     ValueError, "positions"),
    ("particles-object", lambda s: s.world.add_particles(_np_object_positions()),
     ValueError, "positions"),
    ("particles-complex", lambda s: s.world.add_particles(np.ones((3, 2), dtype=complex)),
     ValueError, "positions"),
    ("particles-masses-length", lambda s: s.world.add_particles(np.zeros((3, 2)), masses=[1.0, 2.0]),
     ValueError, "masses"),
    ("particles-masses-zero", lambda s: s.world.add_particles(np.zeros((3, 2)),
                                                              masses=[1.0, 0.0, 1.0]),
     ValueError, "masses"),
    ("particles-one-nan", lambda s: s.world.add_particles(_many_with_one_nan()),
     ValueError, "positions"),
    ("particles-velocities-shape", lambda s: s.world.add_particles(np.zeros((3, 2)),
                                                                   velocities=np.zeros((2, 2))),
     ValueError, "velocities"),
    ("particles-radii-negative", lambda s: s.world.add_particles(np.zeros((2, 2)),
                                                                 radii=[0.1, -0.1]),
     ValueError, "radii"),
    # add_spring: the bad endpoint is always ``b`` (``a`` would match the article "a")
    ("spring-self", lambda s: s.world.add_spring(s.p0, s.p0), ValueError, r"\bb\b"),
    ("spring-unknown", lambda s: s.world.add_spring(s.p0, 10_000), KeyError, r"\bb\b"),
    ("spring-removed", lambda s: s.world.add_spring(s.p0, s.removed), KeyError, r"\bb\b"),
    ("spring-to-spring", lambda s: s.world.add_spring(s.p0, s.spring), KeyError, r"\bb\b"),
    ("spring-to-collider", lambda s: s.world.add_spring(s.p0, s.collider), KeyError, r"\bb\b"),
    ("stiffness-negative", lambda s: s.world.add_spring(s.p0, s.p2, stiffness=-1.0),
     ValueError, "stiffness"),
    ("damping-nan", lambda s: s.world.add_spring(s.p0, s.p2, damping=NAN), ValueError, "damping"),
    ("rest-length-negative", lambda s: s.world.add_spring(s.p0, s.p2, rest_length=-0.5),
     ValueError, "rest_length"),
    # add_springs
    ("springs-shape-m3", lambda s: s.world.add_springs([[s.p0, s.p1, s.p2]]), ValueError, "pairs"),
    ("springs-float-pairs", lambda s: s.world.add_springs(np.array([[s.p0, s.p2]], dtype=float)),
     ValueError, "pairs"),
    ("springs-unknown", lambda s: s.world.add_springs([[s.p0, s.p2], [s.p1, 10_000]]),
     KeyError, "pairs"),
    ("springs-stiffness-length", lambda s: s.world.add_springs([[s.p0, s.p2]],
                                                               stiffness=[1.0, 2.0]),
     ValueError, "stiffness"),
    # step
    ("step-negative", lambda s: s.world.step(-1.0), ValueError, "dt"),
    ("step-nan", lambda s: s.world.step(NAN), ValueError, "dt"),
    ("step-inf", lambda s: s.world.step(INF), ValueError, "dt"),
    ("step-string", lambda s: s.world.step("x"), ValueError, "dt"),  # type: ignore[arg-type]
    # colliders
    ("plane-zero-normal", lambda s: s.world.add_collider(pysoft.Plane(normal=(0.0, 0.0))),
     ValueError, "normal"),
    ("plane-normal-nan", lambda s: s.world.add_collider(pysoft.Plane(normal=(NAN, 1.0))),
     ValueError, "normal"),
    ("plane-normal-inf", lambda s: s.world.add_collider(pysoft.Plane(normal=(INF, 1.0))),
     ValueError, "normal"),
    # builders
    ("box-model-none", lambda s: pysoft.build.box(s.world, model=None),  # type: ignore[arg-type]
     ValueError, "model"),
    ("box-model-int", lambda s: pysoft.build.box(s.world, model=3),  # type: ignore[arg-type]
     ValueError, "model"),
    # settings past their bounds (the C core's int counts overflowed at 2**31)
    ("contact-iterations-huge", lambda s: setattr(s.world, "contact_iterations", 2**40),
     ValueError, "contact_iterations"),
    ("constraint-iterations-huge", lambda s: setattr(s.world, "constraint_iterations", 2**40),
     ValueError, "constraint_iterations"),
    ("body-contact-iterations-huge", lambda s: setattr(s.world, "body_contact_iterations", 101),
     ValueError, "body_contact_iterations"),
    ("substeps-huge", lambda s: setattr(s.world, "substeps", 1001), ValueError, "substeps"),
    ("dt-tiny", lambda s: setattr(s.world, "dt", 1e-300), ValueError, "dt"),
    ("restitution-1.5", lambda s: s.world.add_collider(pysoft.Plane(normal=(0.0, 1.0)),
                                                       restitution=1.5),
     ValueError, "restitution"),
    ("friction-negative", lambda s: s.world.add_collider(pysoft.Plane(normal=(0.0, 1.0)),
                                                         friction=-1.0),
     ValueError, "friction"),
    # entities
    ("remove-unknown", lambda s: s.world.remove(10_000), KeyError, "entity"),
    ("remove-removed", lambda s: s.world.remove(s.removed), KeyError, "entity"),
    ("particle-of-spring", lambda s: s.world.particle(s.spring), KeyError, "entity"),
    ("particle-of-removed", lambda s: s.world.particle(s.removed), KeyError, "entity"),
    ("spring-of-particle", lambda s: s.world.spring(s.p0), KeyError, "entity"),
    ("row-of-collider", lambda s: s.world.row(s.collider), KeyError, "entity"),
    # component setters
    ("set-position-nan", lambda s: setattr(s.world.particle(s.p0), "position", (NAN, 0.0)),
     ValueError, "position"),
    ("set-velocity-shape", lambda s: setattr(s.world.particle(s.p0), "velocity", (1.0, 2.0, 3.0)),
     ValueError, "velocity"),
    # sizes, counts and masses a builder or a shape cannot simulate: before, each was built and
    # blew up on the first step (NaN), raised ZeroDivisionError or MemoryError, or hung
    ("subnormal-mass", lambda s: s.world.add_particle((0.0, 0.0), mass=1e-320), ValueError, "mass"),
    ("subnormal-masses", lambda s: s.world.add_particles([(0.0, 0.0)], masses=1e-320),
     ValueError, "masses"),
    ("box-overflowing-size", lambda s: build.box(s.world, size=(1e308, 1e308)), ValueError, "size"),
    ("box-far-away", lambda s: build.box(s.world, center=(1e200, 0.0)), ValueError, "center"),
    ("box-tiny", lambda s: build.box(s.world, size=(1e-300, 1e-300)), ValueError, "size"),
    ("box-subnormal-mass", lambda s: build.box(s.world, mass=1e-299), ValueError, "mass"),
    ("box-huge-cells", lambda s: build.box(s.world, cells=(100_000, 100_000)), ValueError, "cells"),
    ("circle-tiny", lambda s: build.circle(s.world, radius=1e-300), ValueError, "radius"),
    ("circle-huge", lambda s: build.circle(s.world, radius=1e308), ValueError, "radius"),
    ("circle-many-segments", lambda s: build.circle(s.world, segments=10**9), ValueError, "segments"),
    ("circle-many-rings", lambda s: build.circle(s.world, rings=10**6), ValueError, "rings"),
    ("ball-huge", lambda s: build.ball(s.world, radius=1e200), ValueError, "radius"),
    ("blob-many-segments", lambda s: build.blob(s.world, segments=10**5), ValueError, "segments"),
    ("rope-overflowing", lambda s: build.rope(s.world, end=(1e308, 0.0)), ValueError, "end"),
    ("rope-many-segments", lambda s: build.rope(s.world, segments=10**8), ValueError, "segments"),
    ("cloth-huge-cells", lambda s: build.cloth(s.world, cells=(10**5, 10**5)), ValueError, "cells"),
    ("polygon-overflowing", lambda s: build.polygon(s.world, [(0.0, 0.0), (1e200, 0.0), (0.0, 1e200)]),
     ValueError, "vertices"),
    ("box-shape-overflowing", lambda s: s.world.add_collider(pysoft.Box((0.0, 0.0), (1e308, 1e308))),
     ValueError, "half_extents"),
    ("polygon-shape-overflowing",
     lambda s: s.world.add_collider(pysoft.Polygon([(0.0, 0.0), (1e200, 0.0), (0.0, 1e200)])),
     ValueError, "vertices"),
    ("disc-overflowing", lambda s: s.world.add_collider(pysoft.Disc((0.0, 0.0), 1e308)),
     ValueError, "radius"),
    ("segment-overflowing", lambda s: s.world.add_collider(pysoft.Segment((0.0, 0.0), (1e308, 1e308))),
     ValueError, "a, b"),
    # snapshots
    ("restore-garbage", lambda s: s.world.restore(b"garbage"), ValueError, "blob"),
    ("restore-not-bytes", lambda s: s.world.restore("garbage"), ValueError, "blob"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("call", "exc", "name"), [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_bad_call_raises_and_leaves_world_unchanged(
    backend: str, call: Call, exc: type[Exception], name: str
) -> None:
    scene = make_scene(backend)
    w = scene.world
    context = esper.current_world
    before = fingerprint(w)
    with pytest.raises(exc, match=name):
        call(scene)
    assert fingerprint(w) == before
    assert esper.current_world == context


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_endpoint_message_names_the_entity(backend: str) -> None:
    scene = make_scene(backend)
    with pytest.raises(KeyError, match="10000"):
        scene.world.add_spring(scene.p0, 10_000)
    with pytest.raises(KeyError, match=str(scene.removed)):
        scene.world.add_spring(scene.p0, scene.removed)


WORLD_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("dim-4", {"dim": 4}, "dim"),
    ("dim-1", {"dim": 1}, "dim"),
    ("dim-float", {"dim": 2.0}, "dim"),
    ("dim-str", {"dim": "2"}, "dim"),
    ("integrator-leapfrog", {"integrator": "leapfrog"}, "integrator"),
    ("backend-fortran", {"backend": "fortran"}, "backend"),
    ("substeps-0", {"substeps": 0}, "substeps"),
    ("substeps-float", {"substeps": 2.5}, "substeps"),
    ("dt-0", {"dt": 0.0}, "dt"),
    ("dt-nan", {"dt": NAN}, "dt"),
    ("dt-tiny", {"dt": 1e-300}, "dt"),
    ("substeps-huge", {"substeps": 2**40}, "substeps"),
    ("contact-iterations-huge", {"contact_iterations": 2**40}, "contact_iterations"),
    ("max-dt-negative", {"max_dt": -1.0}, "max_dt"),
    ("drag-negative", {"drag": -0.1}, "drag"),
    ("gravity-3-in-2d", {"gravity": (0.0, -9.81, 0.0)}, "gravity"),
    ("gravity-2-in-3d", {"dim": 3, "gravity": (0.0, -9.81)}, "gravity"),
    ("gravity-nan", {"gravity": (0.0, NAN)}, "gravity"),
    ("on-instability", {"on_instability": "explode"}, "on_instability"),
    ("context-not-str", {"context": 7}, "context"),
]


@pytest.mark.parametrize(("kwargs", "name"), [pytest.param(*c[1:], id=c[0]) for c in WORLD_CASES])
def test_bad_world_arguments(kwargs: dict[str, Any], name: str) -> None:
    gc.collect()  # finalizers of dead worlds must not run during the comparison
    contexts = sorted(esper.list_worlds())
    current = esper.current_world
    with pytest.raises(ValueError, match=name):
        pysoft.World(**kwargs)
    assert sorted(esper.list_worlds()) == contexts  # no esper context leaked
    assert esper.current_world == current


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("attr", ["dt", "max_dt", "substeps", "drag", "gravity"])
def test_bad_setting_keeps_old_value(backend: str, attr: str) -> None:
    w = make_scene(backend).world
    old = np.array(getattr(w, attr), dtype=float).tobytes()
    bad: Any = (NAN, NAN, NAN) if attr == "gravity" else -1
    with pytest.raises(ValueError, match=attr):
        setattr(w, attr, bad)
    assert np.array(getattr(w, attr), dtype=float).tobytes() == old


@pytest.mark.parametrize("backend", BACKENDS)
def test_infinite_mass_is_valid_and_immovable(backend: str) -> None:
    w = make_scene(backend).world
    p = w.add_particle((0.0, 3.0), velocity=(1.0, 0.0), mass=INF)
    start = w.particle(p).position.copy()
    for _ in range(10):
        w.step()
    assert w.particle(p).position.tobytes() == start.tobytes()
    assert w.particle(p).pinned


@pytest.mark.parametrize("backend", BACKENDS)
def test_step_zero_is_a_bitwise_noop(backend: str) -> None:
    w = make_scene(backend).world
    before = fingerprint(w)
    w.step(0.0)
    assert fingerprint(w) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_long_frame_is_clamped_to_max_dt(backend: str) -> None:
    max_dt = 1.0 / 15.0
    w = make_scene(backend).world
    twin = make_scene(backend).world
    assert w.max_dt == max_dt
    t0 = w.time
    w.step(10.0)
    assert w.time == t0 + max_dt
    twin.step(max_dt)
    assert fingerprint(w) == fingerprint(twin)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_frame_shorter_than_min_dt_is_a_bitwise_noop(backend: str) -> None:
    """A frame of 1e-300 s (a game's clock ticking twice in one instant) changes nothing;
    with XPBD it used to divide by h^2 = 0 and fill the world with NaN."""
    w = make_scene(backend).world
    pysoft.build.box(w, center=(5.0, 2.0), model="xpbd")
    before = fingerprint(w)
    w.step(1e-300)
    assert fingerprint(w) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_huge_plane_normal_is_normalised(backend: str) -> None:
    """|normal|^2 overflowed at 1e200 and the plane got the normal (0, 0): it must be the
    unit normal of the direction given."""
    w = pysoft.World(backend=backend)
    w.add_collider(pysoft.Plane((1e200, 1e200), 0.0))
    p = w.add_particle((0.3, -0.5))  # inside the half-space x + y < 0 (not (1.0, -0.5): outside)
    for _ in range(30):  # (a deep particle is pushed out over a few frames)
        w.step()
    assert float(w.particle(p).position.sum()) >= -1e-12  # pushed out along (1, 1) / sqrt(2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_velocity_written_to_a_pinned_particle_drives_nothing(backend: str) -> None:
    """A pinned particle does not move, so a velocity written to it is not its motion: it is
    zeroed and its springs' dampers feel nothing (they pulled the free end at 0.77 m/s)."""
    w = pysoft.World(backend=backend, gravity=(0.0, 0.0))
    a, b = w.add_particles([[0.0, 0.0], [1.0, 0.0]], masses=[INF, 1.0])
    w.add_spring(a, b, stiffness=100.0, damping=10.0)
    w.velocities[w.row(a)] = (5.0, 0.0)
    w.step()
    assert w.particle(a).velocity.tolist() == [0.0, 0.0]
    assert w.particle(b).velocity.tolist() == [0.0, 0.0]
    assert w.particle(b).position.tolist() == [1.0, 0.0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_step_from_inside_step_is_rejected(backend: str) -> None:
    """A system calling world.step() recursed until RecursionError; it is a clear error, and
    the outer frame's time and the world stay consistent (the frame did not complete)."""
    w = make_scene(backend).world
    before = fingerprint(w)

    class Recursive(esper.Processor):
        def process(self, h: float) -> None:
            w.step()

    system = Recursive()
    w.add_system(system, priority=600)  # before every built-in stage: nothing moved yet
    with pytest.raises(RuntimeError, match="step"):
        w.step()
    assert fingerprint(w) == before
    w.remove_system(system)
    w.step()  # the world steps again afterwards
    assert w.time > 0.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_systems_added_or_removed_during_a_step_change_the_next_frame(backend: str) -> None:
    """add_system / remove_system from inside a system used to fail mid-frame (IndexError):
    the change now applies from the next frame."""
    w = make_scene(backend).world
    runs: list[str] = []

    class Probe(esper.Processor):
        def __init__(self, name: str) -> None:
            self.name = name

        def process(self, h: float) -> None:
            runs.append(self.name)

    late = Probe("late")

    class Adder(esper.Processor):
        def process(self, h: float) -> None:
            runs.append("adder")
            if late not in w.systems:
                w.add_system(late, priority=-10)
                w.remove_system(self)

    w.add_system(Adder())
    w.step()
    assert runs == ["adder"] * w.substeps  # this frame: the systems it began with
    runs.clear()
    w.step()
    assert runs == ["late"] * w.substeps  # the next: the adder gone, the late system in


def test_an_entity_of_another_world_is_not_alive_here() -> None:
    """Entity ids were per-world counters from 1, so an id from another world named whatever
    entity had the same number here; each world of its own esper context now numbers its
    entities in a range of its own."""
    first, second = pysoft.World(), pysoft.World()
    mine = first.add_particles([[0.0, 0.0], [1.0, 0.0]])
    theirs = second.add_particles([[0.0, 0.0], [1.0, 0.0]])
    assert not set(mine) & set(theirs)
    for e in mine:
        with pytest.raises(KeyError, match="entity"):
            second.row(e)
        with pytest.raises(KeyError, match="entity"):
            second.remove(e)
    assert second.store.particles.n == 2


def test_memory_returns_to_its_start_after_many_add_remove_cycles() -> None:
    """1,000 spawns and removals of a box (its particles, springs and body) leave the Store,
    its entity -> row maps and the ECS where they were: under 64 KiB more (dict and cache
    slack), where a map keyed by the largest id ever seen grew by megabytes."""
    import tracemalloc

    w = pysoft.World()

    def cycle() -> None:
        body = pysoft.build.box(w, center=(0.0, 1.0), size=(0.5, 0.5))
        w.step()
        w.remove(body, *w.body(body).particles)

    for _ in range(50):  # caches and first-use allocations
        cycle()
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(1000):
            cycle()
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024, f"{grown} bytes more after 1,000 cycles"
    assert w.store.particles.n == 0 and w.store.springs.n == 0 and w.store.bodies.n == 0
