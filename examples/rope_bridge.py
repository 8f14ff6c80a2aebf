"""A rope bridge: a rope pinned at both ends over a gap, and soft boxes dropped onto it.

    python examples/rope_bridge.py [seconds]
"""

from __future__ import annotations

import sys

import pysoft
from pysoft import build
from pysoft.draw import render


def main(seconds: float = 3.0) -> float:
    """Run; print the last frame; return the lowest box particle's height (m)."""
    world = pysoft.World()
    world.add_collider(pysoft.Plane((0.0, 1.0), 0.0))  # the bottom of the gap, 2 m down
    bridge = build.rope(world, start=(-2.0, 2.0), end=(2.0, 2.0), segments=24, pin=("start", "end"),
                        particle_radius=0.05, mass=2.0, stiffness=4000.0)
    boxes = [build.box(world, center=(x, 2.6), size=(0.5, 0.5), particle_radius=0.05)
             for x in (-0.8, 0.0, 0.8)]
    for _ in range(round(seconds / world.dt)):
        world.step()
    print(render(world, view=(-2.5, -0.2, 2.5, 3.0)))
    rows = [world.row(e) for b in boxes for e in world.body(b).particles]
    assert world.body(bridge) is not None
    return float(world.positions[rows, 1].min())


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)
