"""Soft bodies on a disc planet with radial gravity (seed 000's scene): a gas ball and a
shape-matched box fall onto a planet from either side and come to rest on its surface.

    python examples/planets.py [seconds] [out.png]
"""

from __future__ import annotations

import sys

import numpy as np

import pysoft
from pysoft import build

RADIUS = 2.0  # the planet's (m)


def main(seconds: float = 4.0, out: str | None = None) -> list[float]:
    """Run; return each body's centroid height above the planet's surface (m)."""
    world = pysoft.World(gravity=(0.0, 0.0))
    world.add_collider(pysoft.Disc((0.0, 0.0), RADIUS), friction=0.8)
    world.add_gravity_well((0.0, 0.0), strength=9.81 * RADIUS**2)  # g = 9.81 m/s^2 at the surface
    bodies = [build.ball(world, center=(0.0, RADIUS + 1.0), radius=0.4),
              build.box(world, center=(0.0, -RADIUS - 1.0), size=(0.6, 0.6), model="shape_matching"),
              build.box(world, center=(RADIUS + 1.2, 0.3), size=(0.5, 0.5), model="springs")]
    for _ in range(round(seconds / world.dt)):
        world.step()
    if out:
        from pysoft.draw import image

        image.save_png(world, out)
    shapes = world.body_shapes()
    heights = np.linalg.norm(shapes.centroids, axis=1) - RADIUS
    print("heights above the surface (m):", np.round(heights, 3).tolist())
    return heights.tolist() if len(bodies) == len(heights) else []


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 4.0, sys.argv[2] if len(sys.argv) > 2 else None)
