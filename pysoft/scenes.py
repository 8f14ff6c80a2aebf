"""Scenes written once, used by the tests, the benchmark, the examples and the CLI."""

from __future__ import annotations

from typing import Any

import numpy as np

from pysoft import build
from pysoft.build import grid_pairs
from pysoft.shapes import Box, Disc, Plane, Polygon, Segment
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
    local_pairs = grid_pairs(cells, cells)
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
