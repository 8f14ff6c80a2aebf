"""A rope and a blob (seed 003): a rope pinned at one end swings down from the left while a
blob of springs (every pair joined) bounces on the floor below and settles.

    python examples/rope_and_blob.py [seconds]
"""

from __future__ import annotations

import sys

import pysoft
from pysoft import build
from pysoft.draw import render


def main(seconds: float = 3.0) -> tuple[float, float]:
    """Run; print the last frame; return (the rope's free end's height, the blob's lowest
    particle's height) in m."""
    world = pysoft.World()
    world.add_collider(pysoft.Plane((0.0, 1.0), 0.0), restitution=0.5)
    rope = build.rope(world, start=(-1.5, 2.5), end=(0.0, 2.5), segments=15, pin=("start",))
    blob = build.blob(world, center=(0.8, 1.5), radius=0.35)
    for _ in range(round(seconds / world.dt)):
        world.step()
    print(render(world, view=(-2.5, -0.2, 2.5, 3.0)))
    tip = world.positions[world.row(world.body(rope).particles[-1]), 1]
    lowest = world.positions[[world.row(e) for e in world.body(blob).particles], 1].min()
    return float(tip), float(lowest)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)
