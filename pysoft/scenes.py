"""Scenes written once, used by the tests, the benchmark, the examples and the CLI.

``SHOWCASE`` names the scenes of ``python -m pysoft sandbox`` and ``render``; the jelly car
(``jelly_car``, driven by the ``Motor`` system) is the course's and the example's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import esper
import numpy as np

from pysoft import build
from pysoft._pipeline import Priority
from pysoft.build import grid_pairs, solid
from pysoft.build.voxels import WALKER, VoxelRobot, gait
from pysoft.shapes import Box, Disc, Plane, Polygon, Segment, Sphere
from pysoft.world import World

BOX_CELLS = 10  # particles per box side
BOX_SPACING = 0.1  # m
BOX_STIFFNESS = 15_000.0  # N/m
BOX_DAMPING = 15.0  # N s/m


def box_origins(count: int, layers: int = 2, pitch: float = 1.2, layer_gap: float = 1.0,
                bottom: float = 0.1) -> np.ndarray:
    """Lower-left corners of ``count`` boxes in ``layers`` rows, centred on x = 0."""
    per_layer = -(-count // layers)
    i = np.arange(count)
    x = (i % per_layer - (per_layer - 1) / 2.0) * pitch - (BOX_CELLS - 1) * BOX_SPACING / 2.0
    y = bottom + (i // per_layer) * layer_gap
    return np.stack([x, y], axis=1)


def add_boxes(world: World, origins: np.ndarray, cells: int = BOX_CELLS,
              spacing: float = BOX_SPACING, mass: float = 1.0,
              stiffness: float = BOX_STIFFNESS, damping: float = BOX_DAMPING) -> np.ndarray:
    """Add spring-grid boxes at ``origins`` (2D) in two bulk calls; returns particle entities."""
    g = np.arange(cells) * spacing
    local = np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2)
    positions = (origins[:, None, :] + local[None, :, :]).reshape(-1, 2)
    entities = np.asarray(world.add_particles(positions, masses=mass), dtype=np.int64)
    local_pairs = grid_pairs(cells, cells, by_particle=True)  # (the yardstick's order)
    offsets = np.arange(len(origins)) * cells * cells
    pairs = (local_pairs[None, :, :] + offsets[:, None, None]).reshape(-1, 2)
    world.add_springs(entities[pairs], stiffness=stiffness, damping=damping)
    return entities


def boxes(particles: int = 1000, **world_args: Any) -> World:
    """The canonical benchmark scene: 10x10 spring boxes in two layers onto a floor.

    1 kg particles 0.1 m apart, structural and shear springs (15,000 N/m,
    15 N s/m), boxes 1.2 m apart, layers 1.0 m apart, the lowest row 0.1 m
    above the floor (restitution 0.2, friction 0.5), dt = 1/240 s, 1 substep.
    ``particles`` is rounded to whole boxes of 100.
    """
    args = {"dt": 1.0 / 240.0, "substeps": 1, "gravity": (0.0, -9.81), **world_args}
    world = World(dim=2, **args)
    world.add_collider(Plane(normal=(0.0, 1.0), offset=0.0), restitution=0.2, friction=0.5)
    add_boxes(world, box_origins(max(1, particles // (BOX_CELLS * BOX_CELLS))))
    return world


def demo(**world_args: Any) -> World:
    """The demo scene: soft bodies landing on each other and piling up (60 Hz, 8 substeps).

    A stack of three XPBD boxes; two spring and shape-matched boxes with a third on
    top of them; a gas ball dropped onto the stack, a blob onto the pair, a rope (with
    self-collision) draped over everything and a shape-matched box thrown in from the
    right -- between walls, so the pile stays in view.
    """
    world = World(dim=2, **world_args)
    world.add_collider(Plane(normal=(0.0, 1.0), offset=0.0), restitution=0.2, friction=0.6)
    for normal, offset in (((1.0, 0.0), -2.9), ((-1.0, 0.0), -2.9)):
        world.add_collider(Plane(normal=normal, offset=offset), friction=0.3)
    for k in range(3):
        build.box(world, center=(-2.0, 0.3 + 0.61 * k), size=(0.6, 0.6), model="xpbd")
    for c in ((0.05, 0.3), (0.7, 0.3), (0.38, 0.91)):
        build.box(world, center=c, size=(0.6, 0.6), model="springs+shape_matching")
    build.ball(world, center=(-1.9, 3.4), radius=0.35)
    build.blob(world, center=(0.5, 2.4), radius=0.35)
    build.rope(world, start=(-1.4, 3.9), end=(1.6, 3.9), segments=30, pin=(), particle_radius=0.04,
               self_collision=True)
    thrown = build.box(world, center=(2.3, 1.6), size=(0.5, 0.5), model="shape_matching")
    world.velocities[[world.row(e) for e in world.body(thrown).particles]] = (-2.5, 1.0)
    return world


def obstacle_course(particles: int = 10_000, colliders: int = 64, **world_args: Any) -> World:
    """Particles raining through a field of static colliders (the contact benchmark).

    ``colliders`` obstacles in a grid, cycling through rotated boxes, discs,
    hexagons and slanted segments, over a floor; particles of radius 2 cm on
    a grid above them, falling. dt = 1/240 s, 1 substep.
    """
    args = {"dt": 1.0 / 240.0, "substeps": 1, "gravity": (0.0, -9.81), **world_args}
    world = World(dim=2, **args)
    world.add_collider(Plane(normal=(0.0, 1.0), offset=0.0), restitution=0.2, friction=0.5)
    side = max(1, round(np.sqrt(colliders)))
    angles = np.arange(6) * np.pi / 3
    tilt = np.array([0.3, 0.1])  # half of a slanted segment
    hexagon = 0.25 * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    for i in range(colliders - 1):
        c = np.array([(i % side - (side - 1) / 2.0) * 0.8, 0.6 + (i // side) * 0.6])
        shape = (Box(c, (0.25, 0.06), angle=0.3 * (i % 5 - 2)), Disc(c, 0.2), Polygon(hexagon + c),
                 Segment(c - tilt, c + tilt, 0.03))[i % 4]
        world.add_collider(shape, restitution=0.3, friction=0.4)
    top = 0.6 + side * 0.6 + 0.5
    cols = max(1, int(np.sqrt(particles * 4)))
    k = np.arange(particles)
    x = (k % cols - (cols - 1) / 2.0) * (side * 0.8 / cols)
    y = top + (k // cols) * 0.05
    world.add_particles(np.stack([x, y], axis=1), radii=0.02, masses=0.01)
    return world


def _grid_centres(count: int, pitch: float, bottom: float) -> np.ndarray:
    side = max(1, round(np.sqrt(count)))
    i = np.arange(count)
    return np.stack([(i % side - (side - 1) / 2.0) * pitch, bottom + (i // side) * pitch], axis=1)


def pressure_balls(count: int = 100, **world_args: Any) -> World:
    """``count`` pressurised balls (20 segments, radius 0.3 m) dropping onto a floor."""
    world = World(dim=2, **world_args)
    world.add_collider(Plane(normal=(0.0, 1.0), offset=0.0), restitution=0.2, friction=0.5)
    for c in _grid_centres(count, 0.8, 0.5):
        build.ball(world, center=c, radius=0.3)
    return world


def matched_boxes(count: int = 100, **world_args: Any) -> World:
    """``count`` shape-matched 5x5 boxes (0.5 m) dropping onto a floor."""
    world = World(dim=2, **world_args)
    world.add_collider(Plane(normal=(0.0, 1.0), offset=0.0), restitution=0.2, friction=0.5)
    for c in _grid_centres(count, 0.8, 0.5):
        build.box(world, center=c, size=(0.5, 0.5), model="shape_matching")
    return world


def xpbd_cloth(cells: int = 100, **world_args: Any) -> World:
    """A (cells + 1)^2 XPBD cloth, 4 m wide, hanging from its top row."""
    world = World(dim=2, **world_args)
    build.cloth(world, center=(0.0, 3.0), size=(4.0, 4.0), cells=(cells, cells), pin="top")
    return world


def tet_cubes(count: int = 80, **world_args: Any) -> World:
    """3D: ``count`` XPBD cubes of tetrahedra (0.5 m, 4 x 4 x 4 cells: 125 particles, 384
    tetrahedra and 604 edges each; 80 make 10,000 particles) in a square grid 0.1 m apart,
    0.05 m above a frictionless floor; integrator "xpbd", 2 constraint iterations (the XPBD
    yardstick's scene, built with build.cube)."""
    world = World(dim=3, **{"integrator": "xpbd", **world_args})
    world.constraint_iterations = 2
    world.add_collider(Plane(normal=(0.0, 1.0, 0.0), offset=0.0), restitution=0.0, friction=0.0)
    side = int(np.ceil(np.sqrt(count)))
    for c in range(count):
        i, j = divmod(c, side)
        build.cube(world, center=(i * 0.6, 0.3, j * 0.6), size=0.5, cells=4, model="xpbd",
                   compliance=1e-4)
    return world


def kernel_zoo(particles: int = 10_000, **world_args: Any) -> World:
    """A scene in which every kernel has work: spring boxes (most of the ``particles``), a
    gravity well, pressure balls, shape-matched boxes, XPBD boxes with area constraints and
    the obstacle course's colliders. The benchmark times each kernel in it."""
    world = World(dim=2, **world_args)
    world.add_collider(Plane(normal=(0.0, 1.0), offset=0.0), restitution=0.2, friction=0.5)
    for i in range(8):
        c = np.array([(i % 4 - 1.5) * 0.8, 0.6 + (i // 4) * 0.6])
        world.add_collider((Box(c, (0.25, 0.06), angle=0.3), Disc(c, 0.2),
                            Segment(c - np.array((0.3, 0.1)), c + np.array((0.3, 0.1)), 0.03))[i % 3])
    world.add_gravity_well((0.0, -20.0), strength=50.0)
    per = BOX_CELLS * BOX_CELLS
    add_boxes(world, box_origins(max(1, (particles - 3_000) // per), bottom=2.0))
    for c in _grid_centres(30, 0.8, 8.0):
        build.ball(world, center=c, radius=0.3)
        build.box(world, center=c + np.array((10.0, 0.0)), size=(0.5, 0.5), model="shape_matching")
        build.box(world, center=c + np.array((20.0, 0.0)), size=(0.5, 0.5), model="xpbd")
    return world


def pile(bodies: int = 400, width: float = 60.0, model: str = "springs", **world_args: Any) -> World:
    """``bodies`` 0.5 m boxes of 5 x 5 particles (``model``), dropped in a grid into a bin
    ``width`` wide with walls (the body-contact benchmark; 400 boxes: 10,000 particles,
    four layers deep in the 60 m bin)."""
    world = World(dim=2, **world_args)
    world.add_collider(Plane(normal=(0.0, 1.0), offset=0.0), restitution=0.1, friction=0.6)
    half = width / 2.0
    for normal, offset in (((1.0, 0.0), -half), ((-1.0, 0.0), -half)):
        world.add_collider(Plane(normal=normal, offset=offset), friction=0.4)
    per_row = max(1, int(width / 0.6))
    for k in range(bodies):
        c = (-half + 0.3 + 0.6 * (k % per_row) + 0.05 * ((k // per_row) % 2), 0.35 + 0.6 * (k // per_row))
        build.box(world, center=c, size=(0.5, 0.5), model=model)
    return world


PILE3D_KINDS = ("xpbd", "material", "shape_matching", "ball", "springs", "blob", "pressure")
# The pile's gas balls' gas (N m): 2.5 times a 1 kg, 0.15 m ball's default (build.solid), so a
# ball carries about ten times its weight before it flattens. With the default's four, a ball
# at the bottom of the pile carries two or three bodies flattened: 70-86 % of its volume as
# the bodies happen to fall (piles of 20-30 bodies in bins 1.4-1.6 m wide).
PILE3D_BALL_GAS = 2.5 * 2.0 * 9.81 * (4.0 / 3.0) * 0.15


def pile3d(bodies: int = 24, width: float = 1.5, **world_args: Any) -> World:
    """3D: ``bodies`` mixed bodies -- 0.3 m cubes of 3 x 3 x 3 cells of each model, gas balls
    (radius 0.15 m, 42 particles) and blobs, in turn (``PILE3D_KINDS``) -- dropped in a grid
    0.45 m apart into a square bin ``width`` wide with walls (the 3D body-contact test and
    benchmark scene; 180 bodies make about 10,000 particles)."""
    world = World(dim=3, **world_args)
    world.add_collider(Plane(normal=(0.0, 1.0, 0.0), offset=0.0), restitution=0.1, friction=0.6)
    half = width / 2.0
    for normal in ((1.0, 0.0, 0.0), (-1.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, 0.0, -1.0)):
        world.add_collider(Plane(normal=normal, offset=-half), friction=0.4)
    side = max(1, int((width - 0.1) / 0.45))
    for k in range(bodies):
        i, j, layer = k % side, (k // side) % side, k // (side * side)
        shift = 0.05 * (layer % 2)
        c = (-half + 0.25 + 0.45 * i + shift, 0.25 + 0.45 * layer, -half + 0.25 + 0.45 * j + shift)
        kind = PILE3D_KINDS[k % len(PILE3D_KINDS)]
        if kind == "ball":
            solid.ball(world, center=c, radius=0.15, subdivisions=1, amount=PILE3D_BALL_GAS)
        elif kind == "blob":
            solid.blob(world, center=c, radius=0.15)
        else:
            build.cube(world, center=c, size=0.3, cells=3, model=kind)
    return world


# -- the jelly car --------------------------------------------------------------------------


class Motor(esper.Processor):
    """A system that turns a car's wheels (added with ``World.add_system`` between the force
    and integrate stages): each wheel's particles get tangential forces that sum to zero and
    turn it with ``throttle`` x ``torque`` (N m) about its centre -- clockwise for a positive
    throttle, so the car drives to +x -- while the wheel spins slower than ``max_spin``
    (rad/s) that way (a cruise control: the car does not speed up for ever)."""

    def __init__(self, world: World, wheels: list[int], torque: float = 3.0, max_spin: float = 6.0,
                 throttle: float = 0.0) -> None:
        self.world, self.wheels = world, wheels
        self.torque, self.max_spin, self.throttle = torque, max_spin, throttle

    def process(self, h: float) -> None:
        drive = float(np.clip(self.throttle, -1.0, 1.0)) * self.torque
        if drive == 0.0:
            return
        w = self.world
        pos, vel, force = w.positions, w.velocities, w.forces
        for wheel in self.wheels:
            rows = [w.row(e) for e in w.body(wheel).particles]
            r = pos[rows] - pos[rows].mean(axis=0)
            v = vel[rows] - vel[rows].mean(axis=0)
            lever = float((r * r).sum())
            spin = float((r[:, 0] * v[:, 1] - r[:, 1] * v[:, 0]).sum()) / lever  # rad/s, anticlockwise
            if -spin * np.sign(drive) < self.max_spin:
                # F_i = -T r_i^perp / sum |r|^2: a pure torque -T (clockwise for T > 0)
                force[rows] += -drive * np.stack([-r[:, 1], r[:, 0]], axis=1) / lever


@dataclass
class Car:
    """A jelly car's parts: body entities and its motor (``motor.throttle`` drives it)."""

    chassis: int
    wheels: list[int]
    motor: Motor


def _ramp(start: Any, end: Any, depth: float = 0.05) -> Box:
    """A plank: a static box ``2 depth`` thick whose top face runs from ``start`` to ``end``
    (left to right) and a little beyond, so it meets the ground flush."""
    a, b = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    along = b - a
    angle = float(np.arctan2(along[1], along[0]))
    up = np.array([-np.sin(angle), np.cos(angle)])
    half = 0.5 * float(np.linalg.norm(along)) + 0.1  # a little longer: no step at either end
    return Box(tuple((0.5 * (a + b) - depth * up).tolist()), (half, depth), angle=angle)


def jelly_car(world: World, position: Any = (0.0, 0.85), torque: float = 3.0, max_spin: float = 6.0,
              throttle: float = 0.0) -> Car:
    """JellyCar's car, its chassis centred at ``position``: a shape-matched chassis (1.6 x 0.35 m,
    1.5 kg) on two gas wheels (radius 0.3 m, 1 kg, free to roll) 0.5 m below it. Each wheel
    has a hub particle with a spoke spring to every rim particle (radial, so the rim turns
    freely about the hub), and axle springs tie the hub to the three chassis particles
    nearest it. The :class:`Motor` that turns the wheels is added to the world's systems."""
    x, y = (float(v) for v in position)
    chassis = build.box(world, center=(x, y), size=(1.6, 0.35), cells=(8, 2), model="shape_matching",
                        mass=1.5)
    members = world.body(chassis).particles
    frame = world.positions[[world.row(e) for e in members]]
    wheels = []
    for dx in (-0.6, 0.6):
        centre = (x + dx, y - 0.5)
        wheel = build.ball(world, center=centre, radius=0.3, mass=1.0, rolling_resistance=0.0)
        hub = world.add_particle(centre, mass=0.1)
        world.add_springs([[hub, e] for e in world.body(wheel).particles], stiffness=60.0, damping=0.5)
        near = np.argsort(np.linalg.norm(frame - np.array(centre), axis=1))[:3].tolist()
        world.add_springs([[hub, members[k]] for k in near], stiffness=800.0, damping=8.0)  # the axle
        wheels.append(wheel)
    motor = Motor(world, wheels, torque, max_spin, throttle)
    world.add_system(motor, priority=Priority.FORCES - 50)
    return Car(chassis, wheels, motor)


def course(**world_args: Any) -> World:
    """A JellyCar course, 10 m between two walls: a bump (a polygon), a plank (a rotated box)
    up to a plateau (a box), a plank down, a gas ball and a crate in the dip and a steep bank
    (a polygon) at the end; a jelly car (:func:`jelly_car`) at the start with its motor on:
    it drives itself to +x (the sandbox hands its throttle to LEFT/RIGHT)."""
    return course_and_car(**world_args)[0]


def course_and_car(throttle: float = 1.0, **world_args: Any) -> tuple[World, Car]:
    """:func:`course` and its car (``car.motor.throttle`` drives it; ``throttle`` is where it
    starts: pysoft.envs' JellyCar starts it at 0)."""
    world = World(dim=2, **world_args)
    ground: dict[str, Any] = {"restitution": 0.1, "friction": 1.0}
    world.add_collider(Plane(normal=(0.0, 1.0), offset=0.0), **ground)
    for normal, offset in (((1.0, 0.0), -5.0), ((-1.0, 0.0), -5.4)):
        world.add_collider(Plane(normal=normal, offset=offset), friction=0.5)
    world.add_collider(Polygon([(-2.9, 0.0), (-2.4, 0.18), (-2.1, 0.18), (-1.6, 0.0)]), **ground)
    world.add_collider(_ramp((-1.2, 0.0), (0.3, 0.5)), **ground)
    world.add_collider(Box((0.8, 0.25), (0.5, 0.25)), **ground)  # the plateau
    world.add_collider(_ramp((1.3, 0.5), (2.8, 0.0)), **ground)
    world.add_collider(Polygon([(4.2, 0.0), (5.4, 0.0), (5.4, 1.0)]), **ground)  # the bank
    build.ball(world, center=(3.3, 0.36), radius=0.35, mass=0.5)
    build.box(world, center=(3.95, 0.21), size=(0.4, 0.4), model="springs+shape_matching", mass=0.4)
    car = jelly_car(world, position=(-4.1, 0.85), throttle=throttle)
    return world, car


def planets(**world_args: Any) -> World:
    """Soft bodies on a disc planet (radius 2 m) with radial gravity (9.81 m/s^2 at its
    surface, falling off as 1/d^2): a gas ball, shape-matched and spring boxes, a blob and a
    star dropped from every side come to rest around it."""
    world = World(dim=2, **{"gravity": (0.0, 0.0), **world_args})
    radius = 2.0
    world.add_collider(Disc((0.0, 0.0), radius), friction=0.8, restitution=0.1)
    world.add_gravity_well((0.0, 0.0), strength=9.81 * radius**2)
    build.ball(world, center=(0.0, radius + 1.0), radius=0.4)
    build.box(world, center=(0.0, -radius - 1.0), size=(0.6, 0.6), model="shape_matching")
    build.box(world, center=(radius + 1.2, 0.3), size=(0.5, 0.5), model="springs")
    build.blob(world, center=(-radius - 1.0, 0.4), radius=0.35)
    build.box(world, center=(1.9, 1.9), size=(0.5, 0.5), model="springs+shape_matching")
    star = np.array([(np.cos(t), np.sin(t)) for t in np.pi / 2 + np.arange(10) * np.pi / 5])
    star *= np.where(np.arange(10) % 2 == 0, 0.4, 0.18)[:, None]
    build.polygon(world, star + np.array([-1.9, -1.9]), model="springs+shape_matching")
    return world


def bridge(**world_args: Any) -> World:
    """A rope bridge over a gap: a heavy rope pinned at both ends to two cliffs (static boxes),
    with three soft boxes and a gas ball dropped onto it."""
    world = World(dim=2, **world_args)
    world.add_collider(Plane(normal=(0.0, 1.0), offset=0.0), friction=0.6, restitution=0.1)
    for x in (-3.0, 3.0):
        world.add_collider(Box((x, 1.0), (0.6, 1.0)), friction=0.8)  # the cliffs
    build.rope(world, start=(-2.4, 2.0), end=(2.4, 2.0), segments=28, pin=("start", "end"),
               particle_radius=0.05, mass=2.0, stiffness=4000.0)
    for x, y, model in ((-1.5, 2.5, "springs"), (-0.5, 3.0, "springs+shape_matching"),
                        (1.6, 2.7, "springs")):
        build.box(world, center=(x, y), size=(0.5, 0.5), model=model, particle_radius=0.05)
    build.ball(world, center=(0.6, 3.5), radius=0.3)
    return world


def _walls(world: World, half: float) -> World:
    for normal in ((1.0, 0.0), (-1.0, 0.0)):
        world.add_collider(Plane(normal=normal, offset=-half), friction=0.4)
    return world


def pile_showcase(**world_args: Any) -> World:
    """Forty 0.5 m spring boxes dropped into a 6 m bin (:func:`pile` at a sandbox's size)."""
    return pile(bodies=40, width=6.0, **world_args)


def balls_showcase(**world_args: Any) -> World:
    """Twelve gas balls dropped between two walls 5 m apart (:func:`pressure_balls`)."""
    return _walls(pressure_balls(count=12, **world_args), 2.5)


def boxes_showcase(**world_args: Any) -> World:
    """Twelve shape-matched boxes dropped between two walls 5 m apart (:func:`matched_boxes`)."""
    return _walls(matched_boxes(count=12, **world_args), 2.5)


def cloth_showcase(**world_args: Any) -> World:
    """A trampoline: a 4 x 0.3 m cloth of springs (21 x 3 particles, 1 kg) strung between two
    posts by its end columns, and a gas ball, a shape-matched box and a blob dropped on it."""
    world = World(dim=2, **world_args)
    world.add_collider(Plane(normal=(0.0, 1.0), offset=0.0), friction=0.6, restitution=0.1)
    for x in (-2.2, 2.2):
        world.add_collider(Box((x, 0.75), (0.15, 0.75)), friction=0.6)  # the posts
    nx, ny = 20, 2
    ends = [j * (nx + 1) + i for j in range(ny + 1) for i in (0, nx)]
    build.cloth(world, center=(0.0, 1.35), size=(4.0, 0.3), cells=(nx, ny), pin=ends, model="springs",
                mass=1.0, stiffness=200.0)
    build.ball(world, center=(-0.9, 3.0), radius=0.3)
    build.box(world, center=(0.2, 3.6), size=(0.45, 0.45), model="springs+shape_matching")
    build.blob(world, center=(1.1, 2.6), radius=0.3)
    return world


# -- 3D ---------------------------------------------------------------------------------------

CUBE_MODELS3 = ("xpbd", "springs", "pressure", "shape_matching", "material")


def _bin3(world: World, half: tuple[float, float]) -> World:
    """A floor and four walls around x in [-half[0], half[0]], z in [-half[1], half[1]]."""
    world.add_collider(Plane(normal=(0.0, 1.0, 0.0), offset=0.0), restitution=0.1, friction=0.6)
    hx, hz = half
    for normal, offset in (((1.0, 0.0, 0.0), -hx), ((-1.0, 0.0, 0.0), -hx), ((0.0, 0.0, 1.0), -hz),
                           ((0.0, 0.0, -1.0), -hz)):
        world.add_collider(Plane(normal=normal, offset=offset), friction=0.4)
    return world


def jelly3d(**world_args: Any) -> World:
    """3D: a cube of each model (XPBD, springs, gas, shape matching, the continuum material),
    gas balls and a mesh body (a torus, tetrahedralised by pysoft) dropped in two layers into
    a bin 3 x 2 m, where they pile up. Bodies meet bodies where the world's body contact
    does in 3D (the default ``body_collisions=True``); where it does not yet, they land
    through each other onto the floor."""
    from pysoft import meshes

    world = _bin3(World(dim=3, **world_args), (1.5, 1.0))
    for k, model in enumerate(CUBE_MODELS3):
        build.cube(world, center=(-1.0 + 0.5 * k, 0.35, -0.45 + 0.45 * (k % 2)), size=0.4, cells=3,
                   model=model)
    for k, x in enumerate((-0.9, 0.0, 0.9)):
        solid.ball(world, center=(x, 1.1, 0.35 - 0.3 * (k % 2)), radius=0.25, subdivisions=2)
    build.mesh(world, meshes.torus(0.28, 0.11, 24, 10), model="xpbd", center=(0.45, 1.6, 0.1))
    build.cube(world, center=(-0.5, 1.7, 0.0), size=(0.5, 0.3, 0.4), cells=(4, 2, 3),
               model="springs+shape_matching")
    return world


def drape3d(**world_args: Any) -> World:
    """3D: a 1.6 m XPBD cloth (25 x 25 particles, self-collision on) laid flat 0.5 m above a
    sphere (radius 0.4 m), most of it to one side, falls over the sphere and slides onto
    the floor, folding on itself."""
    world = World(dim=3, **world_args)
    world.add_collider(Plane(normal=(0.0, 1.0, 0.0), offset=0.0), restitution=0.0, friction=0.6)
    world.add_collider(Sphere((0.0, 0.4, 0.0), 0.4), friction=0.3)
    cloth = build.cloth(world, center=(0.6, 1.3, 0.1), size=(1.6, 1.6), cells=(24, 24), pin="none",
                        particle_radius=0.02, self_collision=True)
    rows = world.store.particles.rows(world.body(cloth).particles)
    middle = np.array([0.6, 1.3, 0.1])
    p = world.positions[rows] - middle  # the builder hangs the sheet in a plane z = const: lay it flat
    world.positions[rows] = np.stack([p[:, 0], np.zeros(len(p)), -p[:, 1]], axis=1) + middle
    return world


class Gait(esper.Processor):
    """A system that walks voxel robots (``build.voxels``): before each frame's first
    substep, every robot's actuators get the fixed gait of the frame (``build.voxels.gait``)."""

    def __init__(self, world: World, robots: list[VoxelRobot]) -> None:
        self.world, self.robots = world, robots
        self.actions = [np.empty(len(r.actuators)) for r in robots]

    def process(self, h: float) -> None:
        if self.world.pipeline.substep:
            return
        frame = round(self.world.time * 60.0)
        for robot, action in zip(self.robots, self.actions, strict=True):
            gait(robot.actuators, frame, action)
            action *= 0.5
            action += 1.0
            robot.drive(action)


def walkers(**world_args: Any) -> World:
    """Three voxel robots (Evolution Gym's grids: the default walker, a soft one and a
    two-legged one with a rigid spine) walking right with a fixed gait (a :class:`Gait`
    system) along a 5 m track between two walls; muscles drawn blue when contracted, red when
    extended."""
    world = World(**world_args)
    world.add_collider(Plane((0.0, 1.0), 0.0), friction=1.0)
    for x in (-0.3, 4.9):  # a wall at each end of a 5 m track
        world.add_collider(Box((x, 0.4), (0.1, 0.4)))
    soft = np.where(WALKER == 1, 2, WALKER)
    legs = np.array([[1, 1, 1, 1, 1], [4, 0, 3, 0, 4], [4, 0, 0, 0, 4], [3, 0, 0, 0, 3]])
    robots = [build.voxels(world, grid, origin=(1.2 * k, 0.0), cell=0.1)  # side by side
              for k, grid in enumerate((WALKER, soft, legs))]
    world.add_system(Gait(world, robots), priority=Priority.FORCES - 50)
    return world


# The scenes of the sandbox (``python -m pysoft sandbox --scene NAME``) and of
# ``python -m pysoft render NAME``, by name; each maker takes World keywords and returns the
# World ready to step (60 Hz, 8 substeps), stable with its defaults.
SHOWCASE: dict[str, Callable[..., World]] = {
    "demo": demo,
    "course": course,
    "planets": planets,
    "bridge": bridge,
    "balls": balls_showcase,
    "pile": pile_showcase,
    "cloth": cloth_showcase,
    "boxes": boxes_showcase,
    "jelly3d": jelly3d,
    "drape3d": drape3d,
    "walkers": walkers,
}
