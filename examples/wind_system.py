"""A user system between the built-in passes: gusty wind on a hanging rope.

``World.add_system`` runs a processor inside every substep at its priority;
between FORCES (500) and INTEGRATE (400) it may add to ``world.forces``.

    python examples/wind_system.py
"""

from __future__ import annotations

import math

import esper
import numpy as np

import pysoft


class Wind(esper.Processor):
    """Adds a horizontal force that rises and falls with time."""

    def __init__(self, world: pysoft.World, strength: float) -> None:
        self.world = world
        self.strength = strength
        self.t = 0.0

    def process(self, h: float) -> None:
        self.t += h
        self.world.forces[:, 0] += self.strength * (1.0 + math.sin(2.0 * self.t))


def main(frames: int = 180) -> float:
    """Hang a 10-link rope from a pinned point in the wind; return the tip's x (m)."""
    world = pysoft.World(drag=0.5)
    points = np.stack([np.zeros(11), 2.0 - 0.1 * np.arange(11)], axis=1)
    rope = world.add_particles(points, masses=0.05, pinned=np.arange(11) == 0)
    world.add_springs(np.stack([rope[:-1], rope[1:]], axis=1), stiffness=400.0, damping=0.5)
    world.add_system(Wind(world, strength=0.2), priority=450)
    for _ in range(frames):
        world.step()
    tip = float(world.particle(rope[-1]).position[0])
    print(f"after {world.time:.1f} s the rope's tip is {tip:.3f} m downwind")
    return tip


if __name__ == "__main__":
    main()
