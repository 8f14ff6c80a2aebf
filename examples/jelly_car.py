"""A jelly car: two gas wheels and a shape-matched chassis joined by springs, driven by a
torque on the wheels from a system of our own (added between the force and integrate
stages), rolling along a floor.

    python examples/jelly_car.py [seconds]
"""

from __future__ import annotations

import sys

import numpy as np

import pysoft
from pysoft import build

TORQUE = 3.0  # N m on each wheel


class Motor:
    """Spins the wheels: each wheel particle gets a tangential force, together TORQUE about
    the wheel's centre (a pure torque: the forces sum to zero)."""

    def __init__(self, world: pysoft.World, wheels: list[int]) -> None:
        self.world, self.wheels = world, wheels

    def process(self, h: float) -> None:
        w = self.world
        for wheel in self.wheels:
            rows = [w.row(e) for e in w.body(wheel).particles]
            r = w.positions[rows] - w.positions[rows].mean(axis=0)
            lever = (r * r).sum()
            # F_i = -T r_i^perp / sum |r|^2 (clockwise: the car drives to +x)
            w.forces[rows] += -TORQUE * np.stack([-r[:, 1], r[:, 0]], axis=1) / lever


def main(seconds: float = 3.0) -> float:
    """Run; return how far the chassis travelled (m)."""
    world = pysoft.World()
    world.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=1.0)
    chassis = build.box(world, center=(0.0, 0.9), size=(1.6, 0.35), cells=(8, 2),
                        model="shape_matching", mass=2.0)
    wheels = [build.ball(world, center=(x, 0.35), radius=0.3, mass=0.5, rolling_resistance=0.0)
              for x in (-0.6, 0.6)]
    members = world.body(chassis).particles
    rows = [world.row(e) for e in members]
    for wheel in wheels:  # axle springs from the wheel's rim to the chassis particles above it
        rim = world.body(wheel).particles
        centre = world.positions[[world.row(e) for e in rim]].mean(axis=0)
        gap = np.linalg.norm(world.positions[rows] - centre, axis=1)
        near = [members[k] for k in np.argsort(gap)[:3].tolist()]
        world.add_springs([[a, b] for a in rim[::4] for b in near], stiffness=150.0, damping=3.0)
    world.add_system(Motor(world, wheels), priority=pysoft.Priority.FORCES - 50)
    start = float(world.positions[rows, 0].mean())
    for _ in range(round(seconds / world.dt)):
        world.step()
    travelled = float(world.positions[rows, 0].mean()) - start
    print(f"the jelly car drove {travelled:.2f} m in {seconds:g} s")
    return travelled


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)
