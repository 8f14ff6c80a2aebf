"""Soft bodies falling onto a floor and onto each other, drawn in the terminal (the demo scene).

    python examples/falling_boxes.py [seconds]
"""

from __future__ import annotations

import sys

from pysoft import scenes
from pysoft.draw import render


def main(seconds: float = 3.0) -> float:
    """Run the demo scene for ``seconds``; print the last frame; return the lowest y."""
    world = scenes.demo()
    for _ in range(round(seconds / world.dt)):
        world.step()
    print(render(world))
    return float(world.positions[:, 1].min())


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)
