"""Other engines on the canonical scene, for ``python -m pysoft bench --peers``.

Each peer builds the scene of a pysoft world made by ``scenes.boxes`` (the same
particles, springs, masses and floor) in its own engine and returns a function
that advances it one step of the world's ``dt``; the benchmark times it against
``World.step`` in the same rounds. A peer whose package is not installed is
skipped (the extra ``[peers]`` installs them). Each engine runs its own solver,
as a user of it would: the figures compare what a game gets from each, not
identical arithmetic. The scene check: over 1.5-2 s the boxes' mean height
must be near the settled 0.44 m (they landed), or the peer's figure does not
count.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import numpy as np

from pysoft.world import World

Step = Callable[[], None]
Height = Callable[[], float]


def _scene(world: World) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float, float]:
    """Positions, spring pairs, rest lengths, stiffness, damping and particle mass."""
    P, S = world.store.particles, world.store.springs
    return (P.view("pos").copy(), S.view("pairs").copy(), S.view("rest_length").copy(),
            float(S.view("stiffness")[0]), float(S.view("damping")[0]), float(P.view("mass")[0]))


def pymunk_peer(world: World) -> tuple[Step, Height]:
    """pymunk (Chipmunk2D): a body per particle with a small circle that collides with the
    floor only (one shape group), a ``DampedSpring`` per spring, a static floor segment of
    the same restitution and friction; pymunk's own solver (10 iterations, its default)."""
    import pymunk

    pos, pairs, rest, k, c, mass = _scene(world)
    space = pymunk.Space()
    space.gravity = tuple(world.gravity)
    floor = pymunk.Segment(space.static_body, (-1e4, -0.05), (1e4, -0.05), 0.05)
    floor.friction, floor.elasticity = 0.5, 0.2
    space.add(floor)
    group = pymunk.ShapeFilter(group=1)  # particles do not collide with each other
    bodies = []
    for x, y in pos.tolist():
        body = pymunk.Body(mass, pymunk.moment_for_circle(mass, 0.0, 0.01))
        body.position = (x, y)
        shape = pymunk.Circle(body, 0.01)
        shape.friction, shape.elasticity, shape.filter = 0.5, 0.2, group
        space.add(body, shape)
        bodies.append(body)
    for (a, b), r in zip(pairs.tolist(), rest.tolist(), strict=True):
        space.add(pymunk.DampedSpring(bodies[a], bodies[b], (0, 0), (0, 0), r, k, c))
    dt = world.dt
    return (lambda: space.step(dt)), (lambda: float(np.mean([b.position.y for b in bodies])))


def mujoco_peer(world: World) -> tuple[Step, Height]:
    """MuJoCo: a body per particle on two slide joints (x and z: the scene's plane; MuJoCo's
    z is up) with a small sphere that collides with the floor plane only (contype 1,
    conaffinity 0: particles do not touch each other), a spatial tendon per spring (stiffness,
    damping and spring length: the same damped spring along the line of its two ends), the
    floor's friction 0.5; MuJoCo's own solver and its recommended ``implicitfast`` integrator.
    Its soft contact's time constant is 0.01 s: at its default 0.02 (tuned to its 2 ms step)
    the soft boxes rebounded off the floor for 3 s (mean height 0.69 m at 2 s)."""
    import mujoco

    pos, pairs, rest, k, c, mass = _scene(world)
    gx, gy = (float(v) for v in world.gravity)
    bodies = "".join(
        f'<body pos="{x!r} 0 {y!r}"><joint type="slide" axis="1 0 0"/><joint type="slide" axis="0 0 1"/>'
        f'<geom size="0.01" mass="{mass!r}"/><site name="s{i}"/></body>'
        for i, (x, y) in enumerate(pos.tolist()))
    tendons = "".join(
        f'<spatial stiffness="{k!r}" damping="{c!r}" springlength="{r!r}"><site site="s{a}"/>'
        f'<site site="s{b}"/></spatial>' for (a, b), r in zip(pairs.tolist(), rest.tolist(), strict=True))
    model = mujoco.MjModel.from_xml_string(
        f'<mujoco><option timestep="{world.dt!r}" gravity="{gx!r} 0 {gy!r}" integrator="implicitfast"/>'
        '<default><geom contype="1" conaffinity="0" friction="0.5 0.005 0.0001" solref="0.01 1"/></default>'
        '<worldbody><geom type="plane" size="1000 1000 1" contype="0" conaffinity="1"/>'
        f'{bodies}</worldbody><tendon>{tendons}</tendon></mujoco>')
    data = mujoco.MjData(model)
    z, y0 = np.arange(len(pos)) * 2 + 1, float(pos[:, 1].mean())  # qpos: displacements (x, z)
    return (lambda: mujoco.mj_step(model, data)), (lambda: y0 + float(np.mean(data.qpos[z])))


def mujoco_flex_cubes(world: World) -> tuple[Step, Callable[[], tuple[float, float]]]:
    """MuJoCo's flex on the 3D scene of ``scenes.tet_cubes`` (a world of it): a 3D grid
    ``flexcomp`` of 5 x 5 x 5 vertices (MuJoCo makes its tetrahedra) of the same 0.5 m and
    1 kg per cube, its edges held by equality constraints (MuJoCo's soft constraints, its own
    solver: a user's XPBD-like inextensible edges), no self-collision, the cubes in the same
    grid on a plane; a step is one frame of the world (``substeps`` MuJoCo steps of
    dt / substeps). Returns the step and (lowest vertex, highest vertex speed) for the scene
    check."""
    import mujoco

    P = world.store.particles
    pos, count = P.view("pos"), world.store.bodies.n
    corners = pos.reshape(count, -1, 3).min(axis=1)  # each cube's lowest corner (x, y, z)
    h = world.dt / world.substeps
    comps = "".join(
        f'<flexcomp name="c{i}" type="grid" count="5 5 5" spacing=".125 .125 .125" dim="3" '
        f'pos="{x + 0.25!r} {z + 0.25!r} {y + 0.25!r}" radius=".001" mass="1">'
        '<edge equality="true"/><contact selfcollide="none"/></flexcomp>'
        for i, (x, y, z) in enumerate(corners.tolist()))
    model = mujoco.MjModel.from_xml_string(
        f'<mujoco><option timestep="{h!r}" gravity="0 0 -9.81"/><worldbody>'
        f'<geom type="plane" size="1000 1000 1"/>{comps}</worldbody></mujoco>')
    data = mujoco.MjData(model)
    n = world.substeps

    def check() -> tuple[float, float]:
        return float(data.flexvert_xpos[:, 2].min()), float(np.abs(data.qvel).max())

    return (lambda: mujoco.mj_step(model, data, n)), check


PEERS: dict[str, Callable[[World], tuple[Step, Height]]] = {"pymunk": pymunk_peer, "mujoco": mujoco_peer}
MODULES = {"pymunk": "pymunk", "mujoco": "mujoco"}


def available() -> dict[str, Callable[[World], tuple[Step, Height]]]:
    """The peers whose packages are installed."""
    return {name: make for name, make in PEERS.items() if importlib.util.find_spec(MODULES[name])}


def landed(height: float) -> bool:
    """The scene check: the boxes are on the floor (mean particle height 0.35-0.55 m over
    1.5-2 s; pysoft's and the reference's settle at 0.437 m)."""
    return 0.35 <= height <= 0.55


def describe(results: list[dict[str, Any]]) -> list[str]:
    """Report lines for the peers' figures."""
    return [f"{r['peer']:>10} at {r['particles']} particles: {r['steps_per_s']:.1f} steps/s; pysoft "
            f"is {r['pysoft_over_peer']:.1f}x faster; mean height over 1.5-2 s {r['height']:.3f} m"
            + ("" if r["landed"] else " (the boxes did not land: the figure does not count)")
            for r in results]
