"""pysoft: soft-body physics for Python games.

Point masses, damped springs and colliders live in an esper ECS; every pass
of a step runs a C kernel (or its NumPy twin) over contiguous Store arrays.

>>> import pysoft
>>> w = pysoft.World()
>>> floor = w.add_collider(pysoft.Plane(normal=(0.0, 1.0), offset=0.0))
>>> p = w.add_particle((0.0, 1.0))
>>> for _ in range(120):
...     w.step()
>>> bool(abs(w.particle(p).position[1]) < 1e-9)
True
"""

from pysoft import _native, build
from pysoft._pipeline import Priority
from pysoft._store import CapacityError, RemovedError
from pysoft.features._materials import MaterialConstraint
from pysoft.features.bodies import Pressure, ShapeMatching, SoftBody
from pysoft.features.colliders import Collider
from pysoft.features.constraints import DistanceConstraint, VolumeConstraint
from pysoft.features.gravity import GravityWell
from pysoft.features.particles import Particle
from pysoft.features.springs import Muscles, Spring
from pysoft.many import StepManyError, step_many
from pysoft.shapes import Box, Disc, Plane, Polygon, Segment, Sphere
from pysoft.world import INTEGRATORS, ClosedError, ConcurrentUseError, Contacts, InstabilityError, World

__version__ = "0.1.0"
"""pysoft's version."""
C_AVAILABLE = _native.AVAILABLE
"""Whether the compiled C core loaded (``python -m pysoft info`` says which build; without it
worlds run on the NumPy twins)."""

__all__ = [
    "C_AVAILABLE",
    "INTEGRATORS",
    "Box",
    "CapacityError",
    "ClosedError",
    "Collider",
    "ConcurrentUseError",
    "Contacts",
    "Disc",
    "DistanceConstraint",
    "GravityWell",
    "InstabilityError",
    "MaterialConstraint",
    "Muscles",
    "Particle",
    "Plane",
    "Polygon",
    "Pressure",
    "Priority",
    "RemovedError",
    "Segment",
    "ShapeMatching",
    "SoftBody",
    "Sphere",
    "Spring",
    "StepManyError",
    "VolumeConstraint",
    "World",
    "__version__",
    "build",
    "step_many",
]
