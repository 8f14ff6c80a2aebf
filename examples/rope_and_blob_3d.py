"""The founding scene in 3D: a rope pinned at one end swings down while a jelly blob (a sphere
of particles, every pair joined by a spring) bounces on the floor below and settles. Writes
the last frame as a PNG through a ``Camera3D`` (Pillow, headless).

    python examples/rope_and_blob_3d.py [seconds] [out.png]
"""

from __future__ import annotations

import sys

import pysoft
from pysoft import build
from pysoft.draw import Camera3D
from pysoft.draw import image as pimage


def main(seconds: float = 3.0, out: str | None = None) -> tuple[float, float]:
    """Run for ``seconds``; write the last frame to ``out`` if given; return (the rope's free
    end's height, the blob's lowest particle's height) in m."""
    world = pysoft.World(dim=3)
    world.add_collider(pysoft.Plane((0.0, 1.0, 0.0), 0.0), restitution=0.5)
    rope = build.rope(world, start=(-1.5, 2.5, 0.0), end=(0.0, 2.5, 0.3), segments=15, pin=("start",),
                      particle_radius=0.03)
    blob = build.blob(world, center=(0.8, 1.5, 0.0), radius=0.35, segments=24)
    camera = Camera3D(640, 400, yaw=0.35, pitch=0.3)
    camera.fit((-1.6, 0.0, -0.3), (1.2, 2.6, 0.3), margin=0.03)  # the rope's swing, the blob's bounce
    for _ in range(round(seconds / world.dt)):
        world.step()
    tip = world.positions[world.row(world.body(rope).particles[-1]), 1]
    lowest = world.positions[world.store.particles.rows(world.body(blob).particles), 1].min()
    print(f"after {seconds:g} s: the rope's end at {tip:.3f} m, the blob's lowest particle at {lowest:.4f} m")
    if out:
        pimage.save_png(world, out, camera=camera)
        print(f"wrote {out}")
    return float(tip), float(lowest)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0, sys.argv[2] if len(sys.argv) > 2 else None)
