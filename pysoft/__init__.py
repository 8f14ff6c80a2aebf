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

from pysoft import (
    _native,
    build,
)
from pysoft.components import (
    Collider,
    GravityWell,
    Particle,
    Pressure,
    ShapeMatching,
    SoftBody,
    Spring,
)
from pysoft.shapes import Box, Disc, Plane, Polygon, Segment, Sphere
from pysoft.systems import Priority
from pysoft.world import INTEGRATORS, Contacts, InstabilityError, World

__version__ = "0.1.0"
C_AVAILABLE = _native.AVAILABLE

__all__ = [
    "C_AVAILABLE",
    "INTEGRATORS",
    "Box",
    "Collider",
    "Contacts",
    "Disc",
    "GravityWell",
    "InstabilityError",
    "Particle",
    "Plane",
    "Polygon",
    "Pressure",
    "Priority",
    "Segment",
    "ShapeMatching",
    "SoftBody",
    "Sphere",
    "Spring",
    "World",
    "__version__",
    "build",
]
