"""The benchmark's reference loop (csrc/src/reference.c) steps the same scene as World.step:
the yardstick's figure is only a figure if both do the same work."""

from __future__ import annotations

import numpy as np
import pytest

import pysoft
from pysoft import bench, peers, scenes

pytestmark = pytest.mark.skipif(not pysoft.C_AVAILABLE, reason="the reference loop is in the C core")


def _state(ref: bench.Reference) -> np.ndarray:
    return np.stack([ref.x, ref.y, ref.vx, ref.vy], axis=1)


def test_the_reference_loop_follows_the_world_in_free_fall() -> None:
    """Before anything touches the floor (the lowest row falls 0.1 m in 34 steps) both are
    symplectic Euler on the same springs: the same motion to rounding."""
    world = scenes.boxes(1000)
    ref = bench.Reference(world)
    for _ in range(30):
        world.step()
    ref.steps(30)
    mine = np.concatenate([world.positions, world.velocities], axis=1)
    assert np.abs(_state(ref) - mine).max() < 1e-9
    assert world.positions[:, 1].min() > 0.0  # no contact yet: the comparison is of free motion


def test_the_reference_loop_lands_the_boxes_where_the_world_does() -> None:
    """3 s later both have landed both layers on the floor and come to rest: mean height
    within 1 cm of each other (their contact models differ in detail), nothing below it."""
    world = scenes.boxes(1000)
    ref = bench.Reference(world)
    steps = round(3.0 / world.dt)
    for _ in range(steps):
        world.step()
    ref.steps(steps)
    assert ref.y.min() >= 0.0
    assert abs(float(ref.y.mean()) - float(world.positions[:, 1].mean())) < 0.01
    assert np.abs(ref.vy).max() < 0.5 and float(world.positions[:, 1].max()) < 1.0


def test_bench_scene_reports_the_reference_ratio() -> None:
    r = bench.bench_scene(1000, rounds=1, numpy_frames=1)
    assert r["reference_ms"] > 0.0
    assert r["vs_reference"] == pytest.approx(r["reference_ms"] / r["step_ms"])


def test_a_step_allocates_no_arrays() -> None:
    """100 frames of the canonical scene at 10k particles: the traced memory does not grow and
    never rises by as much as one array of the particles (80 KB): no step allocates per-particle
    or per-spring memory in C or in Python (the stage loop keeps a small profile dict)."""
    import gc
    import tracemalloc

    world = scenes.boxes(10_000)
    for _ in range(10):
        world.step()
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        for _ in range(100):
            world.step()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert current - base < 4096, f"{current - base} bytes more after 100 frames"
    assert peak - base < 16 * 1024, f"a step allocated {peak - base} bytes at once"


def test_the_bench_reports_memory_per_row() -> None:
    world = scenes.boxes(1000)
    assert bench.row_bytes(world.store.particles) >= 2 * 2 * 8  # at least a position and velocity
    assert bench.row_bytes(world.store.springs) >= 2 * 4 + 3 * 8  # two ends, three parameters


@pytest.mark.parametrize("peer", ["pymunk", "mujoco"])
def test_a_peer_lands_the_boxes_and_is_timed(peer: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`bench --peers`: the peer steps the same 200-particle scene in the same rounds as
    World.step, and over 1.5-2 s its boxes have landed (mean height 0.35-0.55 m, pysoft's
    settles at 0.437): its figure counts. The ratio is the two timings' (the peer's seconds per
    step over pysoft's)."""
    pytest.importorskip(peer)
    monkeypatch.setattr(peers, "PEERS", {peer: peers.PEERS[peer]})
    (r,) = bench.bench_peers(200, rounds=1, steps=2)
    assert r["peer"] == peer and r["particles"] == 200
    assert r["landed"] and 0.35 <= r["height"] <= 0.55
    assert r["pysoft_over_peer"] == pytest.approx(r["pysoft_steps_per_s"] / r["steps_per_s"])


def test_mujoco_flex_lands_the_3d_cubes_and_is_timed() -> None:
    """`bench --peers` in 3D: MuJoCo's flex steps the tet cubes in the same rounds as
    World.step (a frame: 8 of its steps), and its cube lands in 2 s (lowest vertex on the
    floor, at rest): its figure counts."""
    pytest.importorskip("mujoco")
    r = bench.bench_peers_3d(cubes=2, rounds=1, frames=1, check_cubes=1)
    assert r["particles"] == 250 and r["landed"]
    assert r["pysoft_over_mujoco"] == pytest.approx(r["pysoft_frames_per_s"] / r["mujoco_frames_per_s"])


def test_the_floor_figure_times_the_collide_pass_of_the_resting_scene() -> None:
    """bench_floor: 2 s in, the bottom row of every box rests on the floor (a tenth of the
    particles: 10 of each 100-particle box), and the figure is per particle."""
    r = bench.bench_floor(1000, rounds=1)
    assert r["particles"] == 1000 and r["resting"] == 100
    assert r["stage_ns"] > 0.0


def test_the_canonical_scene_lists_its_springs_particle_by_particle() -> None:
    """The yardstick's scene lists a box's springs particle by particle (row-major): each
    one's spring to the right, up, diagonally up-right, then its cell's other diagonal; the
    canonical scene lists them so (in the order by kind its 100k step took 1.80 ms where the
    yardstick's world took 1.53). The same springs as build.grid_pairs' order by kind."""
    want = [(0, 1), (0, 3), (0, 4), (1, 3), (1, 2), (1, 4), (1, 5), (2, 4), (2, 5),
            (3, 4), (3, 6), (3, 7), (4, 6), (4, 5), (4, 7), (4, 8), (5, 7), (5, 8), (6, 7), (7, 8)]
    got = pysoft.build.grid_pairs(3, 3, by_particle=True)
    assert [tuple(p) for p in got.tolist()] == want
    assert sorted(want) == sorted(tuple(p) for p in pysoft.build.grid_pairs(3, 3).tolist())
    world = scenes.boxes(100)  # one box of 10 x 10
    pairs = world.store.springs.view("pairs")
    assert np.array_equal(pairs, pysoft.build.grid_pairs(10, 10, by_particle=True))


def test_the_3d_pile_reports_its_contact_cost() -> None:
    """bench_pile3d on a small pile: the figures it reports are there and sane (speed itself is
    reported by ``python -m pysoft bench``, never asserted here)."""
    from pysoft import bench

    r = bench.bench_pile3d(bodies=8, rounds=1, frames=1, settle=2)
    assert r["bodies"] == 8 and r["particles"] > 8 * 17
    assert r["frame_ms"] > 0.0 and r["off_ms"] > 0.0 and r["ratio"] > 0.0
    assert "ns_per_particle_substep" in r
