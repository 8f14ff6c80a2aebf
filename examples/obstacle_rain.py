"""Rain through an obstacle course: boxes, discs, hexagons and slanted segments.

Particles with a radius bounce and slide over static colliders of every
shape, then settle on the floor; the last frame is drawn in the terminal and
the contacts of the last step are counted.

    python examples/obstacle_rain.py [seconds]
"""

from __future__ import annotations

import sys

from pysoft import scenes
from pysoft.draw import render


def main(seconds: float = 3.0) -> int:
    """Run the course at 60 Hz with 8 substeps; return how many particles touch a collider."""
    world = scenes.obstacle_course(particles=400, colliders=16, dt=1.0 / 60.0, substeps=8)
    for _ in range(round(seconds / world.dt)):
        world.step()
    print(render(world, view=(-2.0, -0.2, 2.0, 4.0)))
    contacts = world.contacts
    print(f"t = {world.time:.2f} s: {len(contacts.particles)} of {world.store.particles.n} particles "
          f"touch a collider; total normal impulse {contacts.impulses.sum():.4f} N s this step")
    return len(contacts.particles)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)
