"""The body-contact kernel's candidate lists (csrc/src/contacts.c; 3D: contacts3d.c).

The C kernel lists, for each particle, the bodies whose box grown by a slack
holds it, and keeps the lists from call to call while no particle has moved
farther than the slack and the layout (owners, outlines, flags, radii) is the
same. The lists only save time: here the C kernel, called again and again on
one set of workspace arrays, is held bit for bit to its twin (which lists
nothing) through small moves (lists kept), a large move and a teleport (lists
made again), changed flags and outlines with the same counts, and lists too
long for their room (made in turns).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from samplers import SAMPLERS, arrays_of, scalars_of

import pysoft
from pysoft import _kernels, build
from pysoft._kernels import REGISTRY

KERNEL = REGISTRY["body_contacts"]
STATE = ("pos", "vel", "contact_body", "contact_point", "contact_normal", "contact_impulse",
         "left_pos")


def _sample(dim: int, n: int = 400, seed: int = 3) -> dict[str, Any]:
    args = SAMPLERS["body_contacts"](np.random.default_rng(seed), n, dim)
    args["fat_body"] = np.zeros(n * len(args["body_flags"]), dtype=np.int32)  # room for every pair
    args["fat_clear"] = np.zeros(len(args["fat_body"]))
    args["fat_kept"] = np.zeros((len(args["fat_body"]), 2))
    return args


class _Twins:
    """One C workspace kept across calls; every call also run by the twin on copies."""

    def __init__(self, args: dict[str, Any]) -> None:
        self.args = args
        self.work = {k: args[k].copy() for k in KERNEL.scratch}

    def call(self) -> None:
        c = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in self.args.items()}
        c.update(self.work)  # the C kernel's lists live on in its workspace
        py = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in self.args.items()}
        out_c = _kernels.call("body_contacts", "c", *scalars_of("body_contacts", c),
                              **arrays_of("body_contacts", c))
        out_py = _kernels.call("body_contacts", "python", *scalars_of("body_contacts", py),
                               **arrays_of("body_contacts", py))
        assert out_c == out_py
        assert out_c > 0  # the case has contacts to get right
        for name in STATE:
            assert c[name].tobytes() == py[name].tobytes(), name

    @property
    def listed_at(self) -> np.ndarray:
        return self.work["fat_pos"].copy()


@pytest.mark.parametrize("dim", [2, 3])
def test_lists_are_kept_through_small_moves_and_made_again_after_large_ones(dim: int) -> None:
    args = _sample(dim)
    t = _Twins(args)
    t.call()
    made = t.listed_at
    assert t.work["fat_state"][0] == 1.0
    rng = np.random.default_rng(5)
    for _ in range(3):  # a few mm: the lists are kept (and the results still equal)
        args["pos"] = args["pos"] + rng.normal(0.0, 0.002, args["pos"].shape)
        t.call()
        assert np.array_equal(t.listed_at, made)
    args["pos"] = args["pos"] + rng.normal(0.0, 0.3, args["pos"].shape)  # most move far
    t.call()
    assert not np.array_equal(t.listed_at, made)
    made = t.listed_at
    args["pos"] = args["pos"].copy()
    args["pos"][0] += (5.0, -3.0, 2.0)[:dim]  # one particle teleported
    t.call()
    assert not np.array_equal(t.listed_at, made)


@pytest.mark.parametrize("dim", [2, 3])
def test_lists_are_made_again_when_the_layout_changes_with_the_same_counts(dim: int) -> None:
    args = _sample(dim)
    t = _Twins(args)
    t.call()

    def changed(change: str, value: np.ndarray) -> None:
        made = t.listed_at
        args["pos"] = args["pos"] + 1e-4  # kept lists keep their positions; new ones take these
        args[change] = value
        t.call()
        assert not np.array_equal(t.listed_at, made), f"lists kept after {change} changed"

    flags = args["body_flags"].copy()
    flags[flags == 1] = 3  # closed bodies now self-colliding: their own particles are candidates
    changed("body_flags", flags)
    flags = flags.copy()
    flags[flags & 1 == 0] |= 1  # open bodies closed: new targets
    changed("body_flags", flags)
    counts, start = args["outline_count"], args["outline_start"]
    same = [b for b in range(len(counts)) if counts[b] == counts[0]]
    assert len(same) >= 2
    outline, a, b = args["outline"].copy(), same[0], same[1]
    ra = outline[start[a]: start[a] + counts[a]].copy()
    outline[start[a]: start[a] + counts[a]] = outline[start[b]: start[b] + counts[b]]
    outline[start[b]: start[b] + counts[b]] = ra
    changed("outline", outline)  # two bodies trade outlines
    owner = args["owner"].copy()
    owner[owner == -1] = 0  # free particles join body 0
    changed("owner", owner)
    changed("radius", args["radius"] * 1.5)  # larger radii: larger boxes
    changed("particle_collisions", 0)


@pytest.mark.parametrize("dim", [2, 3])
def test_lists_too_long_for_their_room_are_made_in_turns(dim: int) -> None:
    args = _sample(dim)
    nb = len(args["body_flags"])
    args["fat_body"] = np.zeros(nb, dtype=np.int32)  # room for one body's worth of pairs
    args["fat_clear"] = np.zeros(nb)
    args["fat_kept"] = np.zeros((nb, 2))
    t = _Twins(args)
    for _ in range(3):
        t.call()
        assert t.work["fat_state"][0] == 0.0  # never all listed at once: made again each call
        args["pos"] = args["pos"] + 0.001


def _approaching_cubes(backend: str, va: float, vb: float) -> pysoft.World:
    w = pysoft.World(dim=3, gravity=(0.0, 0.0, 0.0), backend=backend)
    a = build.cube(w, center=(-0.23, 0.0, 0.0), size=0.4, cells=3, particle_radius=0.01)
    b = build.cube(w, center=(0.23, 0.03, 0.02), size=0.4, cells=3, particle_radius=0.01)
    for body, v in ((a, va), (b, vb)):
        w.velocities[w.store.particles.rows(w.body(body).particles)] = (v, 0.0, 0.0)
    return w


@pytest.mark.parametrize("va, vb", [(0.05, -0.05), (0.1, 0.0), (0.0, -0.1)])
def test_kept_clearances_let_go_only_pairs_that_stay_apart(va: float, vb: float) -> None:
    """Two cubes closing slowly (0.1 m/s; both moving, or one of them): the lists are made
    once and kept until after they touch, so pairs whose clearance was kept while they were
    apart (contacts3d.c lets such a pair go without face_contact while its clearance, less
    how far both have come since the lists were made, exceeds the separation) come into
    contact with the same lists. The C kernel stays bit for bit with its twin (which computes
    every pair) every frame. Leaving out either drift (the particle's or the surface's) makes
    the moving-one-cube cases differ at frame 22."""
    w, twin = _approaching_cubes("c", va, vb), _approaching_cubes("python", va, vb)
    work = {t.name: t for t in w.store.work}
    clear = work["body_contact_pairs"].arrays["clear"]
    fat_pos = w.store.particles.arrays["fat_pos"]
    made, kept_clear, touched = None, -1, -1
    for frame in range(26):
        w.step()
        twin.step()
        assert w.positions.tobytes() == twin.positions.tobytes(), frame
        assert w.velocities.tobytes() == twin.velocities.tobytes(), frame
        if made is None or not np.array_equal(fat_pos[: w.store.particles.n], made):
            made, kept_clear = fat_pos[: w.store.particles.n].copy(), -1  # lists made again
        if kept_clear < 0 and (clear[:1000] > 0.0).sum() >= 8:
            kept_clear = frame
        if touched < 0 and len(w.body_contacts.particles):
            touched = frame
            break
    assert touched > 0, "the cubes never touched"
    assert 0 <= kept_clear < touched - 2, "no clearances kept by the same lists before the touch"


def test_a_clearance_kept_far_out_is_not_used_on_the_way_back() -> None:
    """One cube listed 4 cm from another, outside its box, is driven 2 cm away (its pairs'
    clearances made again there, from the box) and then back past where it was listed into
    contact, the lists kept throughout: a clearance is relative to where the lists were
    made, so it must not count the 2 cm the particle had gone away when it was made (leaving
    out that drift lets the returning pairs go through the contact). Bit for bit with the
    twin every frame."""
    worlds = []
    for backend in ("c", "python"):
        w = pysoft.World(dim=3, gravity=(0.0, 0.0, 0.0), backend=backend)
        a = build.cube(w, center=(-0.22, 0.0, 0.0), size=0.4, cells=3, particle_radius=0.01)
        build.cube(w, center=(0.22, 0.03, 0.02), size=0.4, cells=3, particle_radius=0.01)
        worlds.append((w, w.store.particles.rows(w.body(a).particles)))
    (w, rows), (twin, twin_rows) = worlds
    fat_pos = w.store.particles.arrays["fat_pos"]
    made, touched = None, -1
    for frame in range(16):
        v = -0.3 if frame < 4 else 0.3
        w.velocities[rows] = (v, 0.0, 0.0)
        twin.velocities[twin_rows] = (v, 0.0, 0.0)
        w.step()
        twin.step()
        assert w.positions.tobytes() == twin.positions.tobytes(), frame
        assert w.velocities.tobytes() == twin.velocities.tobytes(), frame
        if made is None:
            made = fat_pos[: w.store.particles.n].copy()
        assert np.array_equal(fat_pos[: w.store.particles.n], made), f"lists made again at {frame}"
        if len(w.body_contacts.particles):
            touched = frame
            break
    assert touched > 8, "the cubes never touched on the way back"
