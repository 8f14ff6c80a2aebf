"""A game server's rooms: one world per room, all stepped each tick in one call.

    python examples/many_rooms.py [rooms] [seconds]

Each room drops a jelly box at a place of its own; ``pysoft.step_many`` steps every room's
world as its own ``step()`` would, on both CPUs with the GIL released. The same rooms could
be stepped from a thread pool (each world by one thread at a time), with the same results.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pysoft
from pysoft import build


def room(k: int) -> pysoft.World:
    """A floor and a box dropped from a height of the room's own."""
    world = pysoft.World(capacity=4096)  # a small room: 8 MiB of address space, not 20 GB
    world.add_collider(pysoft.Plane(normal=(0.0, 1.0), offset=0.0), friction=0.6)
    build.box(world, center=(0.0, 0.6 + 0.05 * (k % 10)), size=(0.5, 0.5), cells=(4, 4))
    return world


def main(rooms: int = 64, seconds: float = 2.0) -> float:
    """Run ``rooms`` rooms for ``seconds`` in ticks of 6 frames (a server's 10 Hz tick); check
    against the same rooms stepped from a thread pool; return the highest box bottom."""
    worlds = [room(k) for k in range(rooms)]
    ticks = round(seconds * 10)
    t0 = time.perf_counter()
    for _ in range(ticks):
        pysoft.step_many(worlds, frames=6, threads=2)
    took = time.perf_counter() - t0
    print(f"{rooms} rooms, {seconds:g} s each: {took * 1e3:.0f} ms "
          f"({rooms * ticks * 6 / took:,.0f} room-frames a second)")

    pooled = [room(k) for k in range(rooms)]

    def tick(world: pysoft.World) -> None:
        for _ in range(6):
            world.step()

    with ThreadPoolExecutor(max_workers=2) as pool:
        for _ in range(ticks):
            list(pool.map(tick, pooled))
    same = all((a.positions == b.positions).all() for a, b in zip(worlds, pooled, strict=True))
    print("the same as a thread pool of step():", same)
    return max(float(w.positions[:, 1].min()) for w in worlds) if same else float("nan")


if __name__ == "__main__":
    main(*(int(a) if i == 0 else float(a) for i, a in enumerate(sys.argv[1:3])))
