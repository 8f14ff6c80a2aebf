"""Tumbling: a spring box and a spring disc tumble down a zig-zag of rotated static boxes onto
a floor, and then a scripted mouse drag picks the box up: ``world.grab`` takes one of its
particles, the drag moves the grab's ``target`` along a path for a second (a zero-length
spring pulls the particle after it), and ``release()`` drops it again.

    python examples/tumbling.py [seconds]
"""

from __future__ import annotations

import sys

import numpy as np

import pysoft
from pysoft import build
from pysoft.draw import render

SLOPES = [((-0.8, 3.2), -0.45), ((0.7, 2.0), 0.45), ((-0.9, 0.8), -0.4)]  # centre, angle (rad)
DRAG = 1.0  # s: the drag lasts one second


def main(seconds: float = 5.0) -> tuple[float, float, bool]:
    """Tumble for ``seconds - 2`` s, drag the box for a second, let it fall for one more; print
    the last frame. Returns (how much closer the drag brought the box's centre to the drag's
    end, in m; the lowest particle's height, m; whether every position stayed finite)."""
    world = pysoft.World()
    world.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.6, restitution=0.2)
    for centre, angle in SLOPES:
        world.add_collider(pysoft.Box(centre, (1.0, 0.05), angle=angle), friction=0.2, restitution=0.3)
    world.add_collider(pysoft.Plane((-1.0, 0.0), -2.4), friction=0.6)  # a wall on the right
    box = build.box(world, center=(-1.3, 3.9), size=(0.5, 0.5), model="springs")
    disc = build.circle(world, center=(-0.5, 4.1), radius=0.3, rings=2, model="springs")
    finite, lowest = True, np.inf

    def step() -> None:
        nonlocal finite, lowest
        world.step()
        finite &= bool(np.isfinite(world.positions).all())
        lowest = min(lowest, float(world.positions[:, 1].min()))

    def centre(body: int) -> np.ndarray:
        shapes = world.body_shapes()
        return shapes.centroids[list(shapes.entities).index(body)]

    for _ in range(round(max(seconds - 2.0, 0.5) / world.dt)):  # tumbling
        step()
    corner = world.body(box).outline[0]
    start = world.positions[world.row(corner)].copy()
    path_end = start + np.array([1.2, 1.2])  # up and to the right, as a mouse would drag it
    gap = float(np.linalg.norm(centre(box) - path_end))
    hand = world.grab(corner, stiffness=200.0, damping=2.0)
    frames = round(DRAG / world.dt)
    for frame in range(frames):
        hand.target = start + (path_end - start) * (frame + 1) / frames
        step()
    closer = gap - float(np.linalg.norm(centre(box) - path_end))
    hand.release()
    for _ in range(round(1.0 / world.dt)):  # let go: it falls again
        step()
    print(render(world, view=(-2.5, -0.2, 2.5, 4.6)))
    print(f"t = {world.time:.2f} s: the drag brought the box {closer:.2f} m closer to its end; "
          f"lowest particle {lowest:.4f} m; disc at {np.round(centre(disc), 2).tolist()}")
    return closer, lowest, finite


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 5.0)
