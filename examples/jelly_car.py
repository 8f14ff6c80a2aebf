"""A jelly car (``pysoft.scenes.jelly_car``, the car of the sandbox's ``course`` scene): two gas
wheels turning on hub particles and a shape-matched chassis joined by axle springs, rolling
along a floor. A user system, ``scenes.Motor``, drives it: added between the force and
integrate stages (``World.add_system``), it turns each wheel with a torque -- tangential
forces on the rim that sum to zero -- up to a top spin; its ``throttle`` is the pedal.

    python examples/jelly_car.py [seconds]
"""

from __future__ import annotations

import sys

import pysoft
from pysoft import scenes


def main(seconds: float = 3.0) -> float:
    """Drive for two thirds of the run, then brake (reverse torque); return how far the
    chassis travelled (m)."""
    world = pysoft.World()
    world.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=1.0)
    car = scenes.jelly_car(world, position=(0.0, 0.85), torque=3.0, throttle=1.0)
    rows = [world.row(e) for e in world.body(car.chassis).particles]
    start = float(world.positions[rows, 0].mean())
    frames = round(seconds / world.dt)
    for frame in range(frames):
        if frame == 2 * frames // 3:
            car.motor.throttle = -1.0  # brake
        world.step()
    travelled = float(world.positions[rows, 0].mean()) - start
    print(f"the jelly car drove {travelled:.2f} m in {seconds:g} s "
          f"({world.store.particles.n} particles, {world.store.springs.n} springs)")
    return travelled


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)
