"""Cloth in gusty wind: a net of springs hung from its top corners, blown by a system of our own.

The ``Wind`` system runs between the built-in force and integration passes
(``priority=450``) and pulls every particle toward the wind's velocity, as air
drag does: force = c (wind - v), in gusts that rise and fall. The cloth sags
under its weight and billows downwind. (In 2D a net of inextensible XPBD links
with shear braces is a rigid plate: it would not sag or billow.)

    python examples/cloth_wind.py
"""

from __future__ import annotations

import math

import esper

import pysoft
from pysoft import build


class Wind(esper.Processor):
    """Air moving along +x at ``speed`` m/s in gusts; drag ``coefficient`` (N s/m) per particle."""

    def __init__(self, world: pysoft.World, speed: float, coefficient: float) -> None:
        self.world, self.speed, self.coefficient = world, speed, coefficient
        self.t = 0.0

    def process(self, h: float) -> None:
        self.t += h
        gust = self.speed * (1.0 + 0.5 * math.sin(1.7 * self.t) * math.sin(0.6 * self.t))
        w = self.world
        w.forces[:, 0] += self.coefficient * (gust - w.velocities[:, 0])
        w.forces[:, 1] -= self.coefficient * w.velocities[:, 1]


def _cloth(world: pysoft.World) -> list[int]:
    """A 1.6 x 1.0 m net of 17 x 11 particles, 1 kg in all; returns its particles' rows."""
    body = build.cloth(world, center=(0.0, 2.0), size=(1.6, 1.0), cells=(16, 10), mass=1.0,
                       model="springs")
    return [world.row(e) for e in world.body(body).particles]


def main(seconds: float = 4.0) -> float:
    """Blow the cloth for ``seconds``; return how far downwind its centre of mass is beside the
    same cloth in calm air (m)."""
    windy, calm = pysoft.World(), pysoft.World()
    rows, calm_rows = _cloth(windy), _cloth(calm)
    windy.add_system(Wind(windy, speed=6.0, coefficient=0.007), priority=450)
    for _ in range(round(seconds / windy.dt)):
        windy.step()
        calm.step()
    shift = float(windy.positions[rows, 0].mean() - calm.positions[calm_rows, 0].mean())
    print(f"after {windy.time:.1f} s the wind holds the cloth {shift:.2f} m downwind of where it "
          "hangs in calm air")
    return shift


if __name__ == "__main__":
    main()
