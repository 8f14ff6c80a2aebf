"""Builders: a few arguments in, a stable soft body out (``pysoft.build.box(world, ...)``).

Every builder returns the body entity. ``model`` picks how the body holds
its shape: ``"springs"`` (a spring lattice, with an area spring on each of its
triangles unless shape matching or XPBD orients it: see _orient; a ring's are each edge
with the particle across the ring), ``"xpbd"`` (the same lattice as
XPBD distance constraints, plus area constraints on its triangles where the
builder has them), ``"pressure"`` (gas inside the outline),
``"shape_matching"`` (pull toward the best-fit rest shape), or several of
them as a tuple or ``"springs+pressure"``. Defaults are stable at
the World's default dt (1/60 s) and substeps (8): spring stiffness scales with
particle mass (k/m = 5000 s^-2) and damping gives a damping ratio of about 0.2.
A gas body bounces almost elastically (its edge springs barely change length
as it flattens) and XPBD constraints carry no damping of their own, so
pressure and XPBD bodies without shape matching also get ``wobble_damping``
(1/s): ShapeMatching with stiffness 0, which damps motion relative to the
body's rigid motion and leaves its flight and spin alone.
XPBD bodies take ``compliance`` (m/N, default 1e-5: stiff) for their
distance constraints and ``area_compliance`` (default 0: area kept) for
their triangles. Every builder also takes the body's collision options,
keyword-only, as ``World.add_body`` does: ``category``, ``mask``,
``self_collision``, ``friction``, ``restitution`` and ``rolling_resistance``
(default 0.1 here, 0 for ``World.add_body``); and ``max_strain``
(length / rest length, > 1): the body's springs tear beyond it, and a gas body
whose outline tears loses its gas (a balloon pops).

An argument left at None is derived: ``stiffness`` and ``damping`` from the particle mass,
``amount`` from the mass and the body's area; ``max_strain=None`` never tears. Every other
argument must be given (None is a ValueError naming it), and a refused builder adds nothing.
An error names the argument the caller passed, also when a value derived from it is what
overflows (a stiffness from an enormous ``mass`` names ``mass``).

In a 3D world (``World(dim=3)``) the same names make 3D bodies (pysoft.build.solid):
``box`` is ``cube`` (a tetrahedral lattice, or a surface-only gas or shape-matched box),
``ball`` a pressurised icosphere, ``blob`` a sphere of particles joined pair by pair,
``rope`` a chain in space, ``cloth`` a hanging sheet that bends along its shared edges; and
``mesh`` makes a body of any closed mesh (an OBJ, STL, PLY or OFF file, or arrays),
tetrahedralised here for the volumetric models, its surface kept as a render mesh. 3D
builders also take ``model="material"``: a continuum material of Young's modulus and
Poisson's ratio on the tetrahedra. The 2D-only builders (``circle``, ``polygon``,
``voxels``) refuse a 3D world, naming it.

``voxels`` makes a voxel robot of a grid in Evolution Gym's convention (rigid, soft and
actuator voxels sharing their corners; actuators carry muscles) and returns a
:class:`VoxelRobot` that drives them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from pysoft.build import planar, solid
from pysoft.build.planar import (
    AREA_STIFFNESS,
    AREA_UNDER_MATCHING,
    MODELS,
    ROLLING_RESISTANCE,
    SKIN_STABLE,
    gas_forces,
    grid_pairs,
    rope,
)
from pysoft.build.solid import cube, mesh
from pysoft.build.voxels import VoxelRobot, voxels

__all__ = [
    "AREA_STIFFNESS",
    "AREA_UNDER_MATCHING",
    "MODELS",
    "ROLLING_RESISTANCE",
    "SKIN_STABLE",
    "VoxelRobot",
    "ball",
    "blob",
    "box",
    "circle",
    "cloth",
    "cube",
    "gas_forces",
    "grid_pairs",
    "mesh",
    "polygon",
    "rope",
    "voxels",
]

F = TypeVar("F", bound=Callable[..., int])


def _by_dim(flat: F, deep: Callable[..., int] | None) -> F:
    """``flat`` (2D) as the builder, ``deep`` in a 3D world (None: 2D only)."""
    @functools.wraps(flat)
    def builder(world: Any, *args: Any, **kwargs: Any) -> int:
        if getattr(world, "dim", 2) == 3:
            if deep is None:
                raise ValueError(f"world: build.{flat.__name__} makes a 2D body; this world has dim=3")
            return deep(world, *args, **kwargs)
        return flat(world, *args, **kwargs)

    if deep is not None:
        deep_doc = f"In a 3D world, pysoft.build.solid.{deep.__name__}: {deep.__doc__}"
        builder.__doc__ = f"{flat.__doc__}\n\n    {deep_doc}"
    return builder  # type: ignore[return-value]


box = _by_dim(planar.box, solid.cube)
blob = _by_dim(planar.blob, solid.blob)
ball = _by_dim(planar.ball, solid.ball)
circle = _by_dim(planar.circle, None)
cloth = _by_dim(planar.cloth, solid.cloth)
polygon = _by_dim(planar.polygon, None)
