"""Many worlds in one process (DESIGN.md, "Many worlds in one process").

Worlds built and stepped from as many threads as you like give bit for bit what each gives
alone, on both backends, with Python switching threads as often as it can; esper's current
context is never left changed, and a user's systems see their own world's context;
``step_many`` gives each world what a loop of its ``step()`` gives; a World is freed by
``del`` without the cyclic collector, and reserves what the process can have.
"""

from __future__ import annotations

import gc
import math
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from typing import Any

import esper
import numpy as np
import pytest

import pysoft
from pysoft import build, scenes

BACKENDS = ("c", "python")


@pytest.fixture
def switch_often() -> Iterator[None]:
    """Python switches threads as often as it can (every microsecond)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def state(world: pysoft.World) -> bytes:
    """Everything a frame changes and a test compares: positions, velocities, time, entities."""
    return b"".join([np.ascontiguousarray(world.positions).tobytes(),
                     np.ascontiguousarray(world.velocities).tobytes(),
                     np.float64(world.time).tobytes(), (world.particles - world._ecs.base).tobytes(),
                     np.int64(world.store.springs.n).tobytes()])


def sheet(backend: str) -> pysoft.World:
    """A spring sheet of 1,200 particles and about 4,600 springs on a floor: arrays large
    enough that NumPy lets go of the GIL inside its operations."""
    w = pysoft.World(backend=backend)
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.4)
    build.box(w, center=(0.0, 1.0), size=(3.0, 1.0), cells=(39, 29))
    return w


def xpbd_and_bodies(backend: str) -> pysoft.World:
    """XPBD boxes, gas balls and shape-matched boxes falling on each other (body contacts)."""
    w = pysoft.World(backend=backend)
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.5)
    for i, model in enumerate(("xpbd", "springs+shape_matching", "xpbd+shape_matching")):
        build.box(w, center=(0.6 * i, 0.5 + 0.45 * i), size=(0.4, 0.4), cells=(5, 5), model=model)
    build.ball(w, center=(0.3, 2.2), radius=0.25)
    return w


SCENES: dict[str, Callable[[str], pysoft.World]] = {
    "sheet": sheet,
    "xpbd_and_bodies": xpbd_and_bodies,
    "demo": lambda backend: scenes.demo(backend=backend),
    "course": lambda backend: scenes.course(backend=backend),  # a system of its own (the motor)
}


def run_alone(make: Callable[[str], pysoft.World], backend: str, frames: int) -> bytes:
    w = make(backend)
    for _ in range(frames):
        w.step()
    return state(w)


def run_in_threads(jobs: list[Callable[[], bytes]]) -> list[bytes]:
    """Each job in a thread of its own, all started together; their results in order."""
    results: list[Any] = [None] * len(jobs)
    start = threading.Barrier(len(jobs))

    def work(k: int) -> None:
        start.wait()
        try:
            results[k] = jobs[k]()
        except BaseException as exc:
            results[k] = exc

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results


@pytest.mark.parametrize(("backend", "names", "frames", "repeats"), [
    ("c", ("sheet", "xpbd_and_bodies", "demo", "course"), 40, 5),
    ("c", ("sheet", "sheet", "sheet"), 40, 3),
    ("python", ("sheet", "xpbd_and_bodies"), 12, 3),
    ("python", ("sheet", "sheet"), 12, 2),
])
def test_worlds_built_and_stepped_in_threads_match_each_alone(
        backend: str, names: tuple[str, ...], frames: int, repeats: int, switch_often: None) -> None:
    alone = [run_alone(SCENES[name], backend, frames) for name in names]
    context = esper.current_world
    for _ in range(repeats):
        got = run_in_threads([lambda name=name: run_alone(SCENES[name], backend, frames)  # type: ignore[misc]
                              for name in names])
        for name, a, b in zip(names, alone, got, strict=True):
            assert a == b, f"{name} ({backend}) differs from the same world alone"
        assert esper.current_world == context


class Census(esper.Processor):
    """A user's system: counts, from esper, the particles of the current context each substep."""

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.contexts: set[str] = set()

    def process(self, *args: Any) -> None:
        self.seen.add(len(esper.get_component(pysoft.Particle)))
        self.contexts.add(esper.current_world)


def test_user_systems_see_their_own_world_in_threads(switch_often: None) -> None:
    worlds = [pysoft.World() for _ in range(4)]
    census = [Census() for _ in worlds]
    for k, (w, c) in enumerate(zip(worlds, census, strict=True)):
        w.add_particles(np.column_stack([np.arange(k + 3.0), np.ones(k + 3)]))
        w.add_system(c, priority=450)
    before = esper.current_world

    def run(k: int) -> bytes:
        for _ in range(30):
            worlds[k].step()
            worlds[k].add_particle((0.0, 5.0))  # built while the others step
            worlds[k].remove(int(worlds[k].particles[-1]))
        return b""

    run_in_threads([lambda k=k: run(k) for k in range(len(worlds))])  # type: ignore[misc]
    assert esper.current_world == before
    for k, (w, c) in enumerate(zip(worlds, census, strict=True)):
        assert c.seen == {k + 3}, f"world {k}'s system saw {c.seen} particles"
        assert c.contexts == {w.context}


def test_pysoft_calls_leave_esper_context_as_they_found_it() -> None:
    esper.switch_world("default")
    try:
        w = pysoft.World()
        shared = pysoft.World(context="game-of-the-test")
        for world in (w, shared):
            p = world.add_particle((0.0, 1.0))
            world.add_system(Census())
            world.step()
            world.remove(p)
            assert esper.current_world == "default"
        shared.close()
        w.close()
        assert esper.current_world == "default"
    finally:
        esper.switch_world("default")
        if "game-of-the-test" in esper.list_worlds():
            esper.delete_world("game-of-the-test")


def test_one_world_used_from_two_threads_raises_and_is_not_changed() -> None:
    w = pysoft.World()
    p = w.add_particle((0.0, 1.0))
    inside, release = threading.Event(), threading.Event()

    class Hold(esper.Processor):
        def process(self, *args: Any) -> None:
            if not inside.is_set():
                inside.set()
                release.wait(10)

    w.add_system(Hold())
    stepping = threading.Thread(target=w.step)
    stepping.start()
    assert inside.wait(10)
    before = state(w)
    with pytest.raises(pysoft.ConcurrentUseError, match="another thread"):
        w.step()
    with pytest.raises(pysoft.ConcurrentUseError):
        w.add_particle((1.0, 1.0))
    with pytest.raises(pysoft.ConcurrentUseError):
        w.remove(p)
    with pytest.raises(pysoft.ConcurrentUseError):
        pysoft.step_many([w])
    assert state(w) == before
    release.set()
    stepping.join()
    w.step()  # and it is usable again


# -- step_many ---------------------------------------------------------------------------


def mixed(k: int) -> pysoft.World:
    """Worlds of every kind step_many meets: one-call frames of several models, a NumPy world,
    one with a system of the user's, one with a spring that tears, watched or not."""
    kinds: list[Callable[[], pysoft.World]] = [
        lambda: xpbd_and_bodies("c"),
        lambda: scenes.demo(),
        lambda: scenes.course(),  # a system of the user's: stepped by Python
        lambda: xpbd_and_bodies("python"),
        lambda: scenes.planets(),
        lambda: scenes.bridge(on_instability="ignore"),
    ]
    w = kinds[k % len(kinds)]()
    if k % len(kinds) == 4:  # a spring that tears: frames one by one
        a, b = w.add_particle((5.0, 5.0)), w.add_particle((5.5, 5.0), pinned=True)
        w.spring(w.add_spring(a, b, stiffness=50.0)).max_strain = 1.02
    return w


@pytest.mark.parametrize("frames", [1, 3, 20])
@pytest.mark.parametrize("threads", [1, 2])
def test_step_many_gives_what_a_loop_of_step_gives(frames: int, threads: int) -> None:
    many = [mixed(k) for k in range(7)]
    loop = [mixed(k) for k in range(7)]
    for _ in range(3):
        pysoft.step_many(many, frames, threads=threads)
        for w in loop:
            for _ in range(frames):
                w.step()
        for k, (a, b) in enumerate(zip(many, loop, strict=True)):
            assert state(a) == state(b), f"world {k}"
            touching = [w.contacts.particles - w._ecs.base for w in (a, b)]
            assert touching[0].tolist() == touching[1].tolist()
            assert a.broken_springs == b.broken_springs


class Kick(esper.Processor):
    """A system of the user's: pushes the first particle sideways every substep."""

    def __init__(self, world: pysoft.World) -> None:
        self.world = world

    def process(self, h: float) -> None:
        self.world.velocities[0, 0] += 0.5 * h


def changing() -> tuple[pysoft.World, list[Callable[[pysoft.World], Any]]]:
    """A world with a collider, a gas ball and a box that touch, and changes a user makes
    between frames: each one something a frame's Python start reads (the collider's damping
    and velocity, a body's rolling resistance and self-collision, the settings, the rows,
    esper's entities, a snapshot), undone or not."""
    w = pysoft.World()
    floor = w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.6)
    ball = build.ball(w, center=(0.0, 0.4), radius=0.2)
    box = build.box(w, center=(0.45, 0.3), size=(0.3, 0.3), cells=(3, 3))
    tie = w.add_spring(int(w.particles[0]), int(w.particles[-1]), stiffness=5.0)
    saved: list[bytes] = []

    def max_strain(world: pysoft.World, value: float) -> None:
        world.spring(tie).max_strain = value

    def damping(world: pysoft.World, value: float) -> None:
        world.collider(floor).tangential_damping = value

    def delete_through_esper(world: pysoft.World) -> None:
        with world._ecs.entered():
            esper.delete_entity(int(world.particles[-1]))

    changes: list[Callable[[pysoft.World], Any]] = [
        lambda world: damping(world, 3.0),
        lambda world: None,
        lambda world: setattr(world.collider(floor), "velocity", (0.2, 0.0)),
        lambda world: setattr(world.collider(floor), "velocity", (0.0, 0.0)),
        lambda world: setattr(world.body(ball), "rolling_resistance", 0.4),
        lambda world: setattr(world.body(box), "self_collision", True),
        lambda world: setattr(world, "gravity", (0.5, -9.0)),
        lambda world: max_strain(world, 1e6),  # (may tear: after_frame after every frame)
        lambda world: max_strain(world, math.inf),
        lambda world: world.positions.__setitem__((0, 0), world.positions[0, 0] + 0.01),
        lambda world: saved.append(world.snapshot()),
        lambda world: world.add_particle((1.0, 1.0)),
        lambda world: delete_through_esper(world),
        lambda world: world.step(),
        lambda world: world.add_system(Kick(world), priority=450),
        lambda world: world.remove_system(next(p for p in world.systems if isinstance(p, Kick))),
        lambda world: setattr(world, "substeps", 10),
        lambda world: world.restore(saved[-1]),
        lambda world: damping(world, 0.0),
    ]
    return w, changes


def test_step_many_continues_each_frame_only_while_nothing_it_read_changed() -> None:
    """Worlds stepped by step_many calls one after another continue each frame from the last
    in C (their Python start skipped); a change between the calls to anything that start
    reads must be seen as a loop of step() sees it."""
    (many, changes), (loop, same) = changing(), changing()
    others, twins = [mixed(0), mixed(1)], [mixed(0), mixed(1)]
    for change, twin in zip(changes, same, strict=True):
        for frames in (1, 1, 3):
            pysoft.step_many([many, *others], frames)
            for w in (loop, *twins):
                for _ in range(frames):
                    w.step()
            assert state(many) == state(loop), change
            assert [state(w) for w in others] == [state(w) for w in twins]
        change(many)
        twin(loop)
    resumed = many._frame
    assert resumed is not None and resumed.resumable  # (the last calls did continue)


def test_step_many_of_many_small_worlds_on_threads() -> None:
    def small(i: int) -> pysoft.World:
        w = pysoft.World()
        w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.5)
        build.box(w, center=(0.01 * i, 0.5 + 0.02 * i), size=(0.4, 0.4), cells=(4, 4))
        return w

    many, loop = [small(i) for i in range(64)], [small(i) for i in range(64)]
    for frames in (1, 5, 30):
        pysoft.step_many(many, frames, threads=2)
        for w in loop:
            for _ in range(frames):
                w.step()
    assert [state(w) for w in many] == [state(w) for w in loop]



def test_step_many_overlaps_python_and_c_on_two_threads_bit_for_bit() -> None:
    """With threads=2 and more worlds than a chunk, a call of one frame runs a chunk's frames
    on a thread of the core's own while this thread begins the next chunk's and ends the last
    one's: every world still gets what its own step() gives, through the changes a user makes
    between calls (the changed world in the second chunk) and with a world that raises."""
    from pysoft.many import CHUNK

    def small(i: int) -> pysoft.World:
        w = pysoft.World()
        w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.5)
        build.box(w, center=(0.01 * i, 0.5 + 0.02 * i), size=(0.4, 0.4), cells=(3, 3))
        return w

    (many, changes), (loop, same) = changing(), changing()
    count = 2 * CHUNK + 3
    others, twins = [small(i) for i in range(count)], [small(i) for i in range(count)]
    bad, bad_twin = blows_up(), blows_up()
    listed = [*others[:CHUNK + 1], many, bad, *others[CHUNK + 1:]]
    raised = 0
    for change, twin in zip(changes, same, strict=True):
        for _ in range(3):
            try:
                pysoft.step_many(listed, 1, threads=2)
                errors: dict[int, BaseException] = {}
            except pysoft.StepManyError as e:
                errors = e.errors
            try:
                bad_twin.step()
                alone = False
            except pysoft.InstabilityError:
                alone = True
            assert set(errors) == ({CHUNK + 2} if alone else set())
            raised += alone
            for w in (loop, *twins):
                w.step()
            assert state(many) == state(loop), change
            assert [state(w) for w in others] == [state(w) for w in twins]
        change(many)
        twin(loop)
    assert raised > 0  # (the world that raises did, in some of the calls)
    resumed = many._frame
    assert resumed is not None and resumed.resumable


def test_step_many_with_threads_call_after_call_bit_for_bit() -> None:
    """300 calls of one frame in a row over three groups of worlds (the last a single world):
    each call's groups are taken by the core's thread and the calling thread in whatever order
    they come, run after run, and every world still gets what its own step() gives."""
    from pysoft.many import CHUNK

    def small(i: int) -> pysoft.World:
        w = pysoft.World()
        w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.5)
        build.box(w, center=(0.01 * i, 0.4 + 0.03 * i), size=(0.3, 0.3), cells=(2, 2))
        return w

    count = 2 * CHUNK + 1
    many, loop = [small(i) for i in range(count)], [small(i) for i in range(count)]
    for _ in range(300):
        pysoft.step_many(many, 1, threads=2)
        for w in loop:
            w.step()
    assert [state(w) for w in many] == [state(w) for w in loop]


def _threads_of_this_process() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Threads:"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts threads in /proc")
def test_step_many_keeps_one_runner_per_calling_thread_and_frees_it_when_the_thread_ends() -> None:
    """A calling thread's step_many calls with threads share one runner thread of the core's
    (made on the first), and it ends with the calling thread."""
    from pysoft.many import CHUNK

    def stepped() -> None:
        worlds = [mixed(i % 2) for i in range(CHUNK + 1)]
        for _ in range(3):
            pysoft.step_many(worlds, 1, threads=2)
        during.append(_threads_of_this_process())

    gc.collect()
    before, during = _threads_of_this_process(), []
    for _ in range(3):
        t = threading.Thread(target=stepped)
        t.start()
        t.join()
        gc.collect()
    # the calling thread and its runner while it ran (a pool's workers, made once, may stay)
    assert min(during) >= before + 2
    assert _threads_of_this_process() <= max(during) - 2


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_steps_many_worlds_with_threads_after_its_parent_did() -> None:
    """A runner made before a fork belongs to the parent (its thread is not in the child):
    the child makes its own, and gets what the parent gets."""
    code = textwrap.dedent("""
        import os, signal
        import pysoft
        from pysoft import build

        def worlds():
            out = []
            for i in range(40):
                w = pysoft.World()
                w.add_collider(pysoft.Plane((0.0, 1.0), 0.0))
                build.box(w, center=(0.01 * i, 0.5), size=(0.3, 0.3), cells=(3, 3))
                out.append(w)
            return out

        parent = worlds()
        pysoft.step_many(parent, 1, threads=2)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            signal.alarm(60)  # (a child that hangs ends)
            child = worlds()
            pysoft.step_many(child, 1, threads=2)
            pysoft.step_many(child, 5, threads=2)
            pysoft.step_many(child, 1, threads=2)
            os.write(write, repr([w.positions.tolist() for w in child]).encode())
            os._exit(0)
        os.close(write)
        got = b""
        while chunk := os.read(read, 1 << 20):
            got += chunk
        os.waitpid(pid, 0)
        mine = worlds()
        for frames in (1, 5, 1):
            pysoft.step_many(mine, frames, threads=2)
        assert got.decode() == repr([w.positions.tolist() for w in mine])
        print("same")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "same", done.stderr


def blows_up(backend: str = "c") -> pysoft.World:
    """A world whose spring is far too stiff for its substep: unstable within a few frames."""
    w = pysoft.World(backend=backend, substeps=1)
    a, b = w.add_particle((0.0, 1.0)), w.add_particle((0.3, 1.0), mass=0.01)
    w.add_spring(a, b, stiffness=1e7, rest_length=0.1)
    return w


@pytest.mark.parametrize("backend", BACKENDS)
def test_step_many_reports_the_world_that_raised_and_completes_the_others(backend: str) -> None:
    worlds = [mixed(0), blows_up(backend), mixed(1)]
    twins = [mixed(0), blows_up(backend), mixed(1)]
    with pytest.raises(pysoft.StepManyError, match=r"worlds\[1\] raised InstabilityError") as info:
        pysoft.step_many(worlds, 30)
    assert set(info.value.errors) == {1}
    error = info.value.errors[1]
    assert isinstance(error, pysoft.InstabilityError)
    for _ in range(30):
        twins[0].step()
        twins[2].step()
    with pytest.raises(pysoft.InstabilityError) as alone:
        for _ in range(30):
            twins[1].step()
    # the same frame, the same particle (by row: ids differ from world to world), the same pass
    reports = [(str(e).replace(str(e.entity), "E"), e.row, e.pass_name, e.substep)
               for e in (error, alone.value)]
    assert reports[0] == reports[1]
    assert [state(w) for w in worlds] == [state(w) for w in twins]


def _starts(monkeypatch: pytest.MonkeyPatch) -> list[pysoft.World]:
    """The worlds whose frames step_many starts in Python from now on (a list that grows): it
    begins them (``_Pending.start``), or continues them from their last frame in C after a
    look in Python (``_resumed``)."""
    from pysoft import many

    started: list[pysoft.World] = []
    start, resumed = many._Pending.start, many._resumed

    def counted_start(w: pysoft.World, frames: int) -> Any:
        started.append(w)
        return start(w, frames)

    def counted_resumed(w: pysoft.World, frames: int) -> Any:
        started.append(w)
        return resumed(w, frames)

    monkeypatch.setattr(many._Pending, "start", counted_start)
    monkeypatch.setattr(many, "_resumed", counted_resumed)
    return started


def _small(i: int) -> pysoft.World:
    w = pysoft.World()
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.5)
    build.box(w, center=(0.01 * i, 0.5), size=(0.3, 0.3), cells=(3, 3), model="xpbd" if i % 2 else "springs")
    return w


@pytest.mark.parametrize(("threads", "count"), [(1, 6), (2, 6), (2, 35)])
def test_step_many_continues_unchanged_worlds_in_c_and_starts_changed_ones_in_python(
        monkeypatch: pytest.MonkeyPatch, threads: int, count: int) -> None:
    """Worlds whose last frame step_many ran in C and that nothing changed since continue in C
    (the lane: no Python start; 35 worlds on two threads: on the core's own thread and this
    one); a changed setting, a changed row, a
    counted edit, an esper deletion behind pysoft's back or a step() of the world's own sends
    that world alone through Python; every world stays bit for bit what a loop of step()
    makes of it."""
    many, loop = [_small(i) for i in range(count)], [_small(i) for i in range(count)]

    def both(frames: int) -> None:
        pysoft.step_many(many, frames, threads=threads)
        for w in loop:
            for _ in range(frames):
                w.step()
        assert [state(w) for w in many] == [state(w) for w in loop]

    both(1)  # (started in Python: then armed)
    started = _starts(monkeypatch)
    both(1)
    both(3)
    assert started == []

    def delete_through_esper(w: pysoft.World) -> None:
        with w._ecs.entered():
            esper.delete_entity(int(w.particles[-1]))

    def edit(w: pysoft.World) -> None:
        spring = w.store.springs.view("entity")[0]
        w.spring(int(spring)).max_strain = 1e6

    changes: list[Callable[[pysoft.World], Any]] = [
        lambda w: setattr(w, "drag", 0.25), lambda w: w.add_particle((3.0, 3.0)), edit,
        delete_through_esper, lambda w: w.step()]
    changed = [(7 * k) % count for k in range(len(changes))]  # (worlds in several chunks)
    for k, change in enumerate(changes):
        change(many[changed[k]])
        change(loop[changed[k]])
        # (from the edit on, that world has a spring that may tear: Python after every frame)
        tearing = {id(many[changed[2]])} if k >= 2 else set()
        both(1)
        assert {id(w) for w in started} == {id(many[changed[k]])} | tearing, k
        started.clear()
        both(2)  # (armed again)
        assert {id(w) for w in started} == tearing, k
        started.clear()


REMOVALS = ("delete_entity", "delete_entity_now", "remove_component", "try_remove_component",
            "clear_database", "shared_context")


@pytest.mark.parametrize("removal", REMOVALS)
def test_step_many_sees_each_removal_esper_makes(monkeypatch: pytest.MonkeyPatch, removal: str) -> None:
    """In a world's own esper context C compares a count of the removals made through it (no
    look at esper's tables in a step of the lane): each of esper's ways of removing a component
    or an entity, made while the world's context is current, sends that world alone through
    Python, which sweeps what was removed as step() does, and the next call continues it in C;
    a context shared with the game is looked at in Python. Bit for bit a loop of step()."""
    shared = removal == "shared_context"

    def make(i: int, which: str) -> pysoft.World:
        w = pysoft.World(context=f"removals-{which}" if shared and i else None)
        w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.5)
        build.box(w, center=(0.01 * i, 0.5), size=(0.3, 0.3), cells=(3, 3))
        return w

    many, loop = [make(0, "many"), make(1, "many")], [make(0, "loop"), make(1, "loop")]

    def both() -> None:
        pysoft.step_many(many)
        for w in loop:
            w.step()
        assert [state(w) for w in many] == [state(w) for w in loop]

    def remove(w: pysoft.World) -> None:
        e = int(w.particles[-1])
        with w._ecs.entered():
            if removal in ("delete_entity", "shared_context"):
                esper.delete_entity(e)
            elif removal == "delete_entity_now":
                esper.delete_entity(e, immediate=True)
            elif removal == "remove_component":
                esper.remove_component(e, type(w._ecs.components[e]))
            elif removal == "try_remove_component":
                esper.try_remove_component(e, type(w._ecs.components[e]))
            else:
                esper.clear_database()

    both()
    started = _starts(monkeypatch)
    both()
    assert started == []
    remove(many[1])
    remove(loop[1])
    both()
    assert {id(w) for w in started} == {id(many[1])}
    assert len(many[1].particles) == (0 if removal == "clear_database" else len(many[0].particles) - 1)
    started.clear()
    both()
    both()
    assert started == []


def test_step_many_with_the_same_list_again_sees_every_change_to_it() -> None:
    """A call with the worlds of one of this thread's recent calls finds them through what
    that call found; the list changed in place, a world closed, held by another thread, given a system
    or let go of, is seen as a new list would be; a world let go of is freed at once."""
    import weakref

    worlds = [_small(0), _small(1), _small(2)]
    twins = [_small(0), _small(1), _small(2)]
    pysoft.step_many(worlds)
    pysoft.step_many(worlds)
    for w in twins:
        w.step(), w.step()
    assert [state(w) for w in worlds] == [state(w) for w in twins]
    worlds[1], twins[1] = _small(3), _small(3)  # (the same list object, another world in it)
    pysoft.step_many(worlds)
    for w in twins:
        w.step()
    assert [state(w) for w in worlds] == [state(w) for w in twins]
    for w in (worlds[2], twins[2]):
        w.add_system(Kick(w), priority=450)
    pysoft.step_many(worlds)
    for w in twins:
        w.step()
    assert [state(w) for w in worlds] == [state(w) for w in twins]  # (the system ran)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with worlds[0]._guard.held("test"):
            held.set()
            release.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    before = [state(w) for w in worlds]
    with pytest.raises(pysoft.ConcurrentUseError):
        pysoft.step_many(worlds)
    release.set()
    holder.join()
    assert [state(w) for w in worlds] == before  # (none stepped)
    worlds[1].step()  # (and none is held)
    twins[1].step()
    worlds[2].close()
    with pytest.raises(ValueError, match=r"worlds\[2\] was closed"):
        pysoft.step_many(worlds)
    gone = weakref.ref(worlds[1])
    gc.disable()
    try:
        del worlds[1:]
        assert gone() is None  # (the roster refers to it weakly)
    finally:
        gc.enable()
    pysoft.step_many(worlds)
    twins[0].step()
    assert state(worlds[0]) == state(twins[0])


def test_a_world_in_step_manys_lane_that_goes_unstable_raises_as_its_step_would() -> None:
    """A world continued in C whose particle is set to a non-finite velocity between calls:
    step_many reports the InstabilityError its own step() raises, at the same frame."""
    worlds, twins = [_small(0), _small(1)], [_small(0), _small(1)]
    pysoft.step_many(worlds, 2)
    for w in twins:
        w.step()
        w.step()
    for w in (worlds[1], twins[1]):
        w.velocities[3] = (math.nan, 0.0)
    with pytest.raises(pysoft.StepManyError) as info:
        pysoft.step_many(worlds, 3)
    twins[0].step(), twins[0].step(), twins[0].step()
    with pytest.raises(pysoft.InstabilityError) as alone:
        twins[1].step()
    error = info.value.errors[1]
    assert set(info.value.errors) == {1}
    assert (str(error).replace(str(error.entity), "E")
            == str(alone.value).replace(str(alone.value.entity), "E"))
    assert [state(w) for w in worlds] == [state(w) for w in twins]


def test_step_many_checks_everything_before_stepping() -> None:
    a, b = pysoft.World(), pysoft.World()
    pa = a.add_particle((0.0, 1.0))
    closed = pysoft.World()
    closed.close()
    cases: list[tuple[Any, dict[str, Any], str]] = [
        ([a, b, a], {}, r"worlds\[2\] is worlds\[0\]"),
        ([a, "b"], {}, r"worlds\[1\] is not a pysoft.World"),
        ([a, closed], {}, r"worlds\[1\] was closed"),
        (a, {}, "worlds must be a list"),
        ([a, b], {"frames": -1}, "frames"),
        ([a, b], {"frames": 1.5}, "frames"),
        ([a, b], {"threads": 0}, "threads"),
        ([a, b], {"threads": 10**400}, "threads"),
    ]
    for worlds, kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            pysoft.step_many(worlds, **kwargs)
        assert a.time == b.time == 0.0
        assert a.particle(pa).position.tolist() == [0.0, 1.0]
    pysoft.step_many([], 3)  # nothing to step
    pysoft.step_many([a, b], 0)
    assert a.time == 0.0


# -- memory ------------------------------------------------------------------------------


def _mapped_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * 4096 / 2**20


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_del_frees_the_store_without_the_cyclic_collector() -> None:
    """``del world`` with the cyclic collector off unmaps every byte the world's Store reserved,
    at once, and leaves the process's address space within 64 MiB of where it was (not checked
    under the sanitizers: their allocator maps regions of its own, 128 MiB at a time, and keeps
    them)."""
    sanitized = "ASAN_OPTIONS" in os.environ
    for backend in BACKENDS:  # (what a first world loads and maps once: modules, the pool)
        w = xpbd_and_bodies(backend)
        w.step()
        w.close()
    del w
    gc.collect()
    gc.disable()
    try:
        before = _mapped_mib()
        for backend in BACKENDS:
            w = xpbd_and_bodies(backend)
            w.add_system(Census())
            for _ in range(3):
                w.step()
            reserved = w.store.reserved / 2**20
            during = _mapped_mib()
            assert reserved > 10_000 and during - before >= reserved  # (address space only)
            del w
            after = _mapped_mib()
            assert during - after >= reserved, "the world's reservation outlived it"
            assert sanitized or after - before < 64, "the world left mappings behind"
    finally:
        gc.enable()


def test_a_closed_world_refuses_calls_and_held_views_stay_valid() -> None:
    with pysoft.World() as w:
        p = w.add_particle((0.0, 1.0))
        w.step()
        positions, particle = w.positions, w.particle(p)
    assert positions[0, 1] < 1.0  # a held view keeps its memory
    for call in (w.step, lambda: w.add_particle((0.0, 0.0)), w.snapshot, lambda: w.positions):
        with pytest.raises(pysoft.ClosedError, match="closed"):
            call()
    with pytest.raises(pysoft.RemovedError):
        particle.position  # noqa: B018
    assert "closed" in repr(w)
    w.close()  # twice: nothing


def test_world_capacity_and_its_error() -> None:
    w = pysoft.World(capacity=5000)
    assert w.capacity == 5000
    w.add_particles(np.zeros((5000, 2)))
    with pytest.raises(pysoft.CapacityError, match=r"World\(capacity=5,000\)"):
        w.add_particle((0.0, 0.0))
    assert len(w.positions) == 5000
    for bad in (0, -1, 2.5, 10**400, "many", 1 << 40):
        with pytest.raises(ValueError, match="capacity"):
            pysoft.World(capacity=bad)


LIMITED = textwrap.dedent("""
    import resource, sys
    import numpy as np
    import pysoft
    from pysoft import build
    limit = 2 << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    worlds = []
    for k in range(3):
        w = pysoft.World(backend=sys.argv[1])
        w.add_collider(pysoft.Plane((0.0, 1.0), 0.0))
        build.box(w, center=(0.0, 1.0), size=(0.5, 0.5), cells=(8, 8))
        for _ in range(10):
            w.step()
        worlds.append(w)
    print(*(w.capacity for w in worlds))
    try:
        pysoft.World(capacity=1 << 24)
    except MemoryError as exc:
        print("refused:", exc)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is enforced on Linux")
@pytest.mark.parametrize("backend", BACKENDS)
def test_three_worlds_under_a_two_gib_address_space_limit(backend: str) -> None:
    out = subprocess.run([sys.executable, "-c", LIMITED, backend], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    capacities = [int(c) for c in lines[0].split()]
    assert len(capacities) == 3 and min(capacities) >= 4096
    assert "refused: capacity:" in lines[1] and "World(capacity=...)" in lines[1]


def test_a_memory_error_part_way_through_an_add_leaves_nothing_behind(
        monkeypatch: pytest.MonkeyPatch) -> None:
    w = pysoft.World()
    kept = w.add_particles(np.zeros((3, 2)))
    before = (len(w._ecs.components), len(esper._context_map[w.context][2]), state(w))
    made = iter(range(10**9))

    original = pysoft.Particle.__init__

    def fails(self: Any, *args: Any) -> None:
        if next(made) == 7:
            raise MemoryError("the test's")
        original(self, *args)

    monkeypatch.setattr(pysoft.Particle, "__init__", fails)
    with pytest.raises(MemoryError, match="the test's"):
        w.add_particles(np.ones((20, 2)))
    assert (len(w._ecs.components), len(esper._context_map[w.context][2]), state(w)) == before
    monkeypatch.undo()
    assert len(w.add_particles(np.ones((20, 2)))) == 20
    assert w.particles.tolist()[:3] == list(kept)


def test_a_memory_error_after_the_entities_were_made_leaves_nothing_behind(
        monkeypatch: pytest.MonkeyPatch) -> None:
    w = pysoft.World()
    ps = w.add_particles(np.column_stack([np.arange(6.0), np.zeros(6)]))
    before = (len(w._ecs.components), len(esper._context_map[w.context][2]), state(w))
    original = pysoft._store.Table.add

    def fails(table: Any, count: int, **values: Any) -> int:
        if table.name == "springs":
            raise MemoryError("the test's")
        return original(table, count, **values)

    monkeypatch.setattr(pysoft._store.Table, "add", fails)
    with pytest.raises(MemoryError, match="the test's"):
        w.add_springs(np.array([[ps[0], ps[1]], [ps[2], ps[3]]]))
    assert (len(w._ecs.components), len(esper._context_map[w.context][2]), state(w)) == before
    assert w.store.springs.n == 0


def test_a_builder_that_fails_part_way_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    w = pysoft.World()
    w.add_particle((5.0, 5.0))
    before = (len(w._ecs.components), len(esper._context_map[w.context][2]), state(w))

    def fails(*args: Any, **kwargs: Any) -> None:
        raise MemoryError("the test's")

    for name, make in (("box", lambda: build.box(w, center=(0.0, 1.0), size=(1.0, 1.0), cells=(3, 3))),
                       ("ball", lambda: build.ball(w, center=(0.0, 1.0), radius=0.4))):
        monkeypatch.setattr(pysoft.World, "add_body", fails)
        with pytest.raises(MemoryError, match="the test's"):
            make()
        assert (len(w._ecs.components), len(esper._context_map[w.context][2]), state(w)) == before, name
        monkeypatch.undo()
    build.box(w, center=(0.0, 1.0), size=(1.0, 1.0), cells=(3, 3))  # and the world still builds
    w.step()
