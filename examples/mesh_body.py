"""A body made from a mesh file: ``examples/meshes/bunny.obj`` (a small closed mesh kept in
the repository) is loaded, tetrahedralised by pysoft and dropped as an XPBD body onto the
floor, next to a shape-matched body of the same mesh, in front of a sphere; its detailed surface is drawn as
its embedded render mesh. Writes the last frame as a PNG through a ``Camera3D``.

    python examples/mesh_body.py [seconds] [out.png]
"""

from __future__ import annotations

import pathlib
import sys

import pysoft
from pysoft import build
from pysoft.draw import Camera3D
from pysoft.draw import image as pimage

BUNNY = pathlib.Path(__file__).resolve().parent / "meshes" / "bunny.obj"


def main(seconds: float = 3.0, out: str | None = None) -> dict[str, float]:
    """Run for ``seconds``; write the last frame to ``out`` if given; return each body's
    volume over its built volume."""
    world = pysoft.World(dim=3)
    world.add_collider(pysoft.Plane((0.0, 1.0, 0.0), 0.0), friction=0.6, restitution=0.1)
    world.add_collider(pysoft.Sphere((0.0, 0.2, -0.6), 0.2), friction=0.6)
    bodies = {
        "solid bunny": build.mesh(world, str(BUNNY), model="xpbd", center=(-0.35, 0.5, 0.0)),
        "matched bunny": build.mesh(world, str(BUNNY), model="shape_matching", center=(0.35, 0.5, 0.0)),
    }
    world.body(bodies["solid bunny"]).color = (225, 190, 150)
    world.body(bodies["matched bunny"]).color = (120, 170, 230)
    built = {name: world.body(b).volume for name, b in bodies.items()}
    camera = Camera3D(640, 400, yaw=0.4, pitch=0.35)
    camera.fit((-0.7, 0.0, -0.8), (0.7, 0.4, 0.3), margin=0.0)
    for _ in range(round(seconds / world.dt)):
        world.step()
    ratios = {name: world.body(b).volume / built[name] for name, b in bodies.items()}
    for name, ratio in ratios.items():
        print(f"{name:>12}: volume {ratio:.3f} of its built volume")
    if out:
        pimage.save_png(world, out, camera=camera)
        print(f"wrote {out}")
    return ratios


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0, sys.argv[2] if len(sys.argv) > 2 else None)
