"""A gas ring in the terminal: a pressurised ring (``build.ball``: a skin of springs with gas
inside, pressure = amount / area) dropped onto a tilted board; it rolls down, hops onto the
floor, rolls to the wall and settles, drawn with ``pysoft.draw.render`` every few frames.
The gas keeps its area: the ring squashes where it hits and comes back round.

    python examples/gas_ring.py [seconds]
"""

from __future__ import annotations

import sys

import pysoft
from pysoft import build
from pysoft.draw import render

EVERY = 15  # frames between drawings (4 a second)
LANDED = 15  # frames of unbroken floor contact after which the ring has landed (no more hops)


def main(seconds: float = 4.0) -> float:
    """Drop the ring, draw it every EVERY frames; return the largest departure of its area
    from its built area (a fraction) once it has landed (nan if it has not)."""
    world = pysoft.World()
    floor = world.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.6)
    world.add_collider(pysoft.Plane((-1.0, 0.0), -1.9), friction=0.6)  # a wall on the right
    world.add_collider(pysoft.Box((-0.7, 0.75), (0.9, 0.05), angle=-0.35), friction=0.3)  # the board
    build.ball(world, center=(-1.1, 2.2), radius=0.4, segments=24)
    built = float(world.body_shapes().areas[0])
    errors: list[float] = []  # |area / built - 1| in each frame since it landed
    touching = 0
    for frame in range(1, round(seconds / world.dt) + 1):
        world.step()
        area = float(world.body_shapes().areas[0]) / built
        touching = touching + 1 if floor in world.contacts.colliders else 0
        if touching >= LANDED:
            errors.append(abs(area - 1.0))
        if frame % EVERY == 0:
            print(f"t = {world.time:.2f} s, area {area:.3f} x built"
                  + (", landed" if touching >= LANDED else "") + "\n"
                  + render(world, width=60, height=14, view=(-2.0, -0.1, 2.0, 2.9)))
    worst = max(errors, default=float("nan"))
    print(f"once landed, the ring's area stayed within {100 * worst:.1f} % of its built area")
    return worst


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 4.0)
