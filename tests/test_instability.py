"""Where an instability began: ``InstabilityError`` (and the "warn" policy's warning) names
the particle and the pass where a value first went non-finite or faster than ``max_speed``,
found by replaying the frame pass by pass (``pysoft._replay``). The replay is the frame run
again bit for bit, and the world is left exactly as the frame left it."""

from __future__ import annotations

from typing import Any

import esper
import numpy as np
import pytest

import pysoft
from pysoft import _replay, scenes

BACKENDS = ("c", "python")


def _chain(backend: str, n: int = 12, policy: str = "raise") -> tuple[pysoft.World, list[int]]:
    """A chain of 1 kg particles on soft springs (1 kN/m) ending in a 1 g particle on a
    100 kN/m spring: its period (0.6 ms) is shorter than the substep (2.1 ms), so it blows up
    in the first substep, and by the frame's end the blow-up has spread along the chain."""
    w = pysoft.World(backend=backend, gravity=(0.0, 0.0), on_instability=policy)
    ps = [w.add_particle((0.1 * i, 0.0), mass=1.0 if i < n - 1 else 1e-3) for i in range(n)]
    for i in range(n - 2):
        w.add_spring(ps[i], ps[i + 1], stiffness=1e3, rest_length=0.1)
    w.add_spring(ps[n - 2], ps[n - 1], stiffness=1e5, rest_length=0.05)
    return w, ps


@pytest.mark.parametrize("backend", BACKENDS)
def test_it_names_where_the_blow_up_began_not_the_first_row(backend: str) -> None:
    """At the frame's end the first unstable row is one of the chain's middle particles; the
    error names the light end particle, in the integrator's pass of substep 1, under the
    spring force (5 kN: 1e5 N/m times 0.05 m)."""
    w, ps = _chain(backend)
    with pytest.raises(pysoft.InstabilityError) as info, np.errstate(all="ignore"):
        w.step()
    err = info.value
    speed = np.linalg.norm(w.velocities, axis=1)
    first_row_at_end = int(np.flatnonzero(~(speed <= w.max_speed))[0])
    assert first_row_at_end != w.row(ps[-1])  # the frame-end scan alone would name another
    assert err.entity == ps[-1] and err.row == w.row(ps[-1])
    assert err.pass_name == "integrator (symplectic_euler)" and err.substep == 0
    assert "in substep 1 of 8" in str(err) and "springs (5e+03 N)" in str(err)
    assert "its velocity went faster than max_speed 1000 m/s in the integrator" in str(err)
    assert w.time == pytest.approx(1 / 60)  # the frame ran to its end


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_non_finite_force_names_the_force_term(backend: str) -> None:
    """A spring whose end is 1e200 m away: its length squared overflows and the spring pass
    gives a non-finite force; the error names that pass, not the integrator after it."""
    w = pysoft.World(backend=backend)
    a = w.add_particle((0.0, 1.0))
    b = w.add_particle((1e200, 1.0))
    w.add_spring(a, b, stiffness=10.0, rest_length=0.5)
    with pytest.raises(pysoft.InstabilityError) as info, np.errstate(all="ignore"):
        w.step()
    assert info.value.pass_name == "springs" and info.value.substep == 0
    assert "its force was not finite in the springs pass" in str(info.value)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("integrator", pysoft.INTEGRATORS)
def test_the_replay_is_the_frame_again(backend: str, integrator: str, monkeypatch: Any) -> None:
    """The demo scene with its springs 1,000 times stiffer blows up in its first frame under
    every integrator: the replay finds the origin and arrives where the frame did bit for bit
    (positions, velocities, a kinematic collider's pose); every field of every table is left as the frame left
    it; and the positions and velocities are those of a world that ran the frame under
    "ignore"."""
    seen: list[tuple[Any, bool]] = []
    replay = _replay.replay

    def spy(*args: Any) -> tuple[Any, bool]:
        store = args[1].store
        before = _replay._tables(store)
        seen.append(replay(*args))
        after = _replay._tables(store)
        assert before.keys() == after.keys()
        for key in before:
            assert before[key].tobytes() == after[key].tobytes(), key
        return seen[-1]

    monkeypatch.setattr(_replay, "replay", spy)
    worlds = [scenes.demo(backend=backend, integrator=integrator, on_instability=policy)
              for policy in ("raise", "ignore")]
    for w in worlds:  # and a kinematic box moving and turning through the scene
        w.store.springs.view("stiffness")[:] *= 1000
        w.add_collider(pysoft.Box((0.0, 2.0), (0.4, 0.1)), velocity=(0.5, -1.0), angular_velocity=2.0)
    with np.errstate(all="ignore"):
        with pytest.raises(pysoft.InstabilityError) as info:
            worlds[0].step()
        worlds[1].step()
    (origin, faithful), = seen
    assert origin is not None and faithful
    assert info.value.pass_name == origin.name and info.value.substep == origin.substep >= 0
    for field in ("positions", "velocities"):
        assert getattr(worlds[0], field).tobytes() == getattr(worlds[1], field).tobytes()
    for field in ("center", "rotation", "angle"):
        assert worlds[0].store.colliders.view(field).tobytes() == \
            worlds[1].store.colliders.view(field).tobytes()
    assert worlds[0].time == worlds[1].time


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_system_that_writes_nan_is_named(backend: str) -> None:
    """A user system writes NaN into a velocity mid-frame: pysoft's passes alone stay stable
    in the replay, and the error says the user's systems made the difference."""
    w = pysoft.World(backend=backend, gravity=(0.0, 0.0))
    p = w.add_particle((1.0, 2.0), velocity=(0.5, 0.0))

    class Poison(esper.Processor):
        def process(self, h: float) -> None:
            w.velocities[w.row(p)] = (float("nan"), 0.0)

    w.add_system(Poison(), priority=350)
    with pytest.raises(pysoft.InstabilityError, match=r"without your systems \(Poison\)") as info:
        w.step()
    assert info.value.entity == p and info.value.pass_name is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_value_written_between_frames_is_told_apart(backend: str) -> None:
    """A velocity above max_speed written between frames: the error says the particle was
    already unstable when the frame began."""
    w = pysoft.World(backend=backend)
    w.add_particle((0.0, 0.0))
    p = w.add_particle((1.0, 2.0))
    w.step()
    w.velocities[w.row(p)] = (2e3, 0.0)
    with pytest.raises(pysoft.InstabilityError, match="already unstable when the frame began"
                       ) as info:
        w.step()
    assert info.value.entity == p and info.value.substep is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_frame_that_added_particles_is_not_replayed(backend: str) -> None:
    """A system adds a particle moving at 5 km/s mid-frame: the world's entities changed, so
    the frame is not replayed, and the error says so (naming the particle the scan found)."""
    w = pysoft.World(backend=backend)
    w.add_particle((0.0, 0.0))
    added: list[int] = []

    class Spawner(esper.Processor):
        def process(self, h: float) -> None:
            if not added:
                added.append(w.add_particle((0.0, 5.0), velocity=(5e3, 0.0)))

    w.add_system(Spawner(), priority=450)
    with pytest.raises(pysoft.InstabilityError, match="added or removed entities") as info:
        w.step()
    assert info.value.entity == added[0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_warn_reports_the_same_origin(backend: str) -> None:
    """Under "warn" the warning carries the same report and the step completes."""
    w, ps = _chain(backend, policy="warn")
    with pytest.warns(RuntimeWarning, match=f"particle {ps[-1]} .* in substep 1 of 8"), \
            np.errstate(all="ignore"):
        w.step()
    assert w.time == pytest.approx(1 / 60)


@pytest.mark.parametrize("backend", BACKENDS)
def test_entities_added_between_frames_are_in_the_replay(backend: str) -> None:
    """The frame-start copy follows the world's rows: a frame steps a lone particle, then the
    chain is added and blows up in the next frame, which is replayed from its own start."""
    w = pysoft.World(backend=backend, gravity=(0.0, 0.0))
    w.add_particle((0.0, 5.0))
    w.step()
    ps = [w.add_particle((0.1 * i, 0.0), mass=1.0 if i < 5 else 1e-3) for i in range(6)]
    for i in range(4):
        w.add_spring(ps[i], ps[i + 1], stiffness=1e3, rest_length=0.1)
    w.add_spring(ps[4], ps[5], stiffness=1e5, rest_length=0.05)
    with pytest.raises(pysoft.InstabilityError) as info, np.errstate(all="ignore"):
        w.step()
    assert info.value.entity == ps[-1] and info.value.substep == 0
    assert info.value.pass_name == "integrator (symplectic_euler)"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_one_substep_frame_replays_from_the_start_it_recorded(backend: str, monkeypatch: Any) -> None:
    """A frame of one substep run in one call (C) copies neither its start positions nor its
    start velocities: its integration records the positions in prev_pos, gravity the
    velocities in start_vel. The chain, stable for three frames at 240 Hz, blows up when its
    last spring is made 1e5 times stiffer between frames: the replay starts from the recorded
    state, names the light end particle in the integrator, arrives where the frame did, and
    leaves the world as a world under "ignore" is. A position or a velocity written between
    frames (to NaN) is in the recorded start too."""
    seen: list[tuple[Any, bool]] = []
    replay = _replay.replay
    monkeypatch.setattr(_replay, "replay", lambda *args: seen.append(replay(*args)) or seen[-1])
    worlds, chains = [], []
    for policy in ("raise", "ignore"):
        w, ps = _chain(backend, policy=policy)
        chains.append(ps)
        w.substeps, w.dt = 1, 1.0 / 240.0
        w.store.springs.view("stiffness")[-1] = 1.0
        for _ in range(3):
            w.step()
        w.store.springs.view("stiffness")[-1] = 1e5
        worlds.append(w)
    with np.errstate(all="ignore"):
        with pytest.raises(pysoft.InstabilityError) as info:
            worlds[0].step()
        worlds[1].step()
    recorded = {"pos": "prev_pos", "vel": "start_vel"} if backend == "c" else {}
    assert worlds[0]._frame_start.kept == recorded
    (origin, faithful), = seen
    ps = chains[0]
    assert faithful and origin is not None and origin.row == worlds[0].row(ps[-1])
    assert info.value.entity == ps[-1] and info.value.pass_name == "integrator (symplectic_euler)"
    for field in ("positions", "velocities"):
        assert getattr(worlds[0], field).tobytes() == getattr(worlds[1], field).tobytes()
    w, ps = worlds[1], chains[1]
    w.on_instability = "raise"
    w.velocities[:] = 0.0
    w.store.springs.view("stiffness")[-1] = 1.0
    w.step()
    w.positions[w.row(ps[3])] = (float("nan"), 0.0)
    with pytest.raises(pysoft.InstabilityError, match="already unstable when the frame began") as info:
        w.step()
    assert info.value.entity == ps[3] and w._frame_start.kept == recorded
    w.positions[w.row(ps[3])] = w.positions[w.row(ps[2])] + (0.1, 0.0)
    w.velocities[:] = 0.0
    w.on_instability = "ignore"
    w.step()
    w.on_instability = "raise"
    w.velocities[w.row(ps[2])] = (0.0, float("nan"))
    with pytest.raises(pysoft.InstabilityError, match="already unstable when the frame began") as info:
        w.step()
    assert info.value.entity == ps[2] and w._frame_start.kept == recorded
