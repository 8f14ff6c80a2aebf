"""Bodies on bodies: a stack, a pile poured in waves, and a rope heaped on itself.

A stack of three XPBD boxes; spring, shape-matched and gas bodies poured into a
bin twenty at a time; a rope with self-collision dropped in a zig-zag. The last
frame is drawn in the terminal, with how the bodies touch.

    python examples/piles.py [seconds]
"""

from __future__ import annotations

import sys

import numpy as np

import pysoft
from pysoft import build
from pysoft.draw import render


def main(seconds: float = 4.0) -> int:
    """Run the scene; return how many particles touch another body in the last step."""
    w = pysoft.World()
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0), friction=0.6, restitution=0.1)
    for normal, offset in (((1.0, 0.0), -2.9), ((-1.0, 0.0), -2.9)):
        w.add_collider(pysoft.Plane(normal, offset), friction=0.4)
    for k in range(3):  # the stack
        build.box(w, center=(-2.3, 0.25 + 0.51 * k), size=(0.5, 0.5), model="xpbd")
    rope = build.rope(w, start=(1.0, 3.6), end=(2.7, 3.6), segments=30, pin=(), particle_radius=0.03,
                      self_collision=True)
    pts = np.array([[1.2 + 0.4 * np.cos(3 * t), 2.0 + 0.05 * t] for t in np.linspace(0, 6, 31)])
    w.positions[[w.row(e) for e in w.body(rope).particles]] = pts  # coiled: it must heap
    kinds = ("springs+shape_matching", "ball", "shape_matching", "blob")
    frames = round(seconds / w.dt)
    for frame in range(frames):
        if frame % 30 == 0 and frame < frames // 2:  # pour a wave of bodies every 0.5 s
            top = float(w.positions[:, 1].max())
            for k in range(4):
                c = (-1.6 + 0.6 * k, top + 0.4)
                kind = kinds[(frame // 30 + k) % len(kinds)]
                if kind == "ball":
                    build.ball(w, center=c, radius=0.25)
                elif kind == "blob":
                    build.blob(w, center=c, radius=0.25)
                else:
                    build.box(w, center=c, size=(0.45, 0.45), model=kind)
        w.step()
    print(render(w, view=(-3.0, -0.2, 3.0, 4.2)))
    touching = w.body_contacts
    print(f"t = {w.time:.2f} s: {w.store.bodies.n} bodies, {w.store.particles.n} particles; "
          f"{len(touching.particles)} particles touch another body, total normal impulse "
          f"{touching.impulses.sum():.3f} N s this step")
    return len(touching.particles)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 4.0)
