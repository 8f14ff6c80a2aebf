"""The scenes of the restore fuzzer's seed corpus (``restore/<name>.snap``: each scene's
snapshot after 30 frames). ``python tests/fuzz/corpus/corpus_scenes.py`` writes them again
(after a change of the snapshot format)."""

from __future__ import annotations

import pathlib
from collections.abc import Callable

import pysoft
from pysoft import build


def _floor(dim: int = 2) -> pysoft.World:
    w = pysoft.World(dim=dim)
    w.add_collider(pysoft.Plane((0.0, 1.0) if dim == 2 else (0.0, 1.0, 0.0), 0.0), friction=0.5)
    return w


def springs_box() -> pysoft.World:
    w = _floor()
    build.box(w, center=(0.0, 0.6), size=(0.5, 0.5), cells=(3, 3))
    return w


def gas_and_matching() -> pysoft.World:
    w = _floor()
    build.ball(w, center=(0.0, 0.5), radius=0.3, segments=10)
    build.box(w, center=(1.0, 0.5), size=(0.4, 0.4), cells=(2, 2), model="springs+shape_matching")
    w.add_collider(pysoft.Disc((0.5, 0.1), 0.1))
    return w


def xpbd_rope_and_cloth() -> pysoft.World:
    w = _floor()
    build.rope(w, start=(-1.0, 1.0), end=(0.0, 1.0), segments=6, model="xpbd")
    build.cloth(w, center=(1.0, 1.0), size=(0.5, 0.5), cells=(3, 3))
    w.add_gravity_well((0.0, 3.0), strength=1.0)
    return w


def three_d() -> pysoft.World:
    w = _floor(3)
    ps = w.add_particles([(0.0, 1.0, 0.0), (0.5, 1.0, 0.0), (0.0, 1.5, 0.0), (0.0, 1.0, 0.5)])
    w.add_springs([[ps[0], ps[1]], [ps[0], ps[2]], [ps[0], ps[3]]], stiffness=200.0, damping=1.0)
    w.add_volume_constraints([ps], 0.0)
    return w


def material() -> pysoft.World:
    """Two material tets sharing a face, one of them stiffer, dropped on the floor."""
    w = _floor(3)
    ps = w.add_particles([(0.0, 0.3, 0.0), (0.2, 0.3, 0.0), (0.0, 0.5, 0.0), (0.0, 0.3, 0.2),
                          (0.2, 0.5, 0.2)], masses=0.1)
    w.add_material_constraints([[ps[0], ps[1], ps[2], ps[3]], [ps[1], ps[2], ps[3], ps[4]]],
                               young=[1e5, 3e5], poisson=0.4)
    return w


SCENES: dict[str, Callable[[], pysoft.World]] = {
    "springs_box": springs_box, "gas_and_matching": gas_and_matching,
    "xpbd_rope_and_cloth": xpbd_rope_and_cloth, "three_d": three_d, "material": material}


if __name__ == "__main__":
    out = pathlib.Path(__file__).resolve().parent / "restore"
    out.mkdir(exist_ok=True)
    for name, make in SCENES.items():
        w = make()
        for _ in range(30):
            w.step()
        (out / f"{name}.snap").write_bytes(w.snapshot())
        print(name, len(w.snapshot()), "bytes")
