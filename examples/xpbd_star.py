"""An XPBD polygon body: a star meshed inside (pythoncdt), held by distance constraints and
area constraints on its triangles, dropped on a floor; it keeps its area and its points.

    python examples/xpbd_star.py [seconds]
"""

from __future__ import annotations

import sys

import pysoft
from pysoft import build
from pysoft.draw import render
from pysoft.shapes import signed_area

STAR = [(0.0, 1.0), (0.25, 0.35), (0.95, 0.3), (0.4, -0.15), (0.6, -0.8), (0.0, -0.4),
        (-0.6, -0.8), (-0.4, -0.15), (-0.95, 0.3), (-0.25, 0.35)]


def main(seconds: float = 3.0) -> float:
    """Run; print the last frame; return the star's outline area over its built area."""
    world = pysoft.World()
    world.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.6)
    star = build.polygon(world, [(x, y + 2.0) for x, y in STAR], model="xpbd", segment=0.25)
    ring = [world.row(e) for e in world.body(star).outline]
    built = signed_area(world.positions[ring])
    for _ in range(round(seconds / world.dt)):
        world.step()
    print(render(world, view=(-1.5, -0.2, 1.5, 2.0)))
    return signed_area(world.positions[ring]) / built


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)
