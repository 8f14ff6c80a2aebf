"""A game that owns the esper loop: physics runs as one of the game's processors.

The World shares the game's esper context (``context="default"``), so a
particle entity can also carry the game's own components (here a Sprite),
and the game's ``esper.process(dt)`` steps the physics at its priority.

    python examples/esper_game.py
"""

from __future__ import annotations

from dataclasses import dataclass

import esper

import pysoft


@dataclass
class Sprite:
    """The game's own component: what to draw for an entity."""

    glyph: str
    last_y: float = 0.0


class SpriteSync(esper.Processor):
    """Runs after physics (lower priority) and reads positions through the Particle views."""

    def process(self, dt: float) -> None:
        for _, (particle, sprite) in esper.get_components(pysoft.Particle, Sprite):
            sprite.last_y = float(particle.position[1])


def main(frames: int = 120) -> list[float]:
    """Drop two balls joined by a spring; return each sprite's last height."""
    esper.switch_world("default")
    world = pysoft.World(context="default")
    world.add_collider(pysoft.Plane(normal=(0.0, 1.0), offset=0.0), restitution=0.5)
    a = world.add_particle((0.0, 2.0), radius=0.05)
    b = world.add_particle((0.3, 2.5), radius=0.05)
    world.add_spring(a, b, stiffness=200.0, damping=1.0)
    esper.add_component(a, Sprite("A"))
    esper.add_component(b, Sprite("B"))
    esper.add_processor(world.processor(), priority=10)  # physics first
    esper.add_processor(SpriteSync(), priority=0)
    for _ in range(frames):
        esper.process(1.0 / 60.0)
    heights = [esper.component_for_entity(e, Sprite).last_y for e in (a, b)]
    print(f"after {world.time:.2f} s: A at y = {heights[0]:.3f} m, B at y = {heights[1]:.3f} m")
    return heights


if __name__ == "__main__":
    main()
