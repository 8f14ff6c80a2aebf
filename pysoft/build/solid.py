"""3D builders: solids of tetrahedra, closed surfaces, blobs (``pysoft.build.cube(world, ...)``).

The same models as in 2D (see pysoft.build): ``"xpbd"`` (a tetrahedral lattice whose edges
are XPBD distance constraints and whose tetrahedra keep their volume), ``"springs"`` (the
lattice's edges as springs), ``"pressure"`` (gas inside the closed surface) and
``"shape_matching"`` (pull toward the best-fit rotated rest shape). A body of only gas
and/or shape matching is surface-only: its particles are its surface's, and a gas bag's
skin is springs along the surface's edges, prestressed so the built shape holds its gas.
The defaults follow 2D's: spring stiffness from the particle mass (k / m = 5000 s^-2),
a damping ratio of about 0.2, ``wobble_damping`` for bodies without shape matching.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from pysoft import _validate as validate
from pysoft.build import planar
from pysoft.build.planar import (
    _body,
    _body_models,
    _braces,
    _check,
    _count,
    _derived,
    _models,
    _optional,
    _or_undo,
    _prestress,
    _skin,
    _sources,
    _spring_defaults,
    _tear,
)
from pysoft.shapes import enclosed_volume, oriented, tet_boundary
from pysoft.world import World

# Each cube of a lattice as six tetrahedra around its diagonal from corner 0 to corner 7
# (corner x + 2 y + 4 z): one per order of the three axes (Freudenthal's split). Every face of
# every cube is cut along the diagonal through its lowest corner, so neighbours' tetrahedra
# meet face to face.
_FREUDENTHAL = np.array([[0, 1, 3, 7], [0, 1, 5, 7], [0, 2, 3, 7], [0, 2, 6, 7], [0, 4, 5, 7],
                         [0, 4, 6, 7]])


def _three(name: str, value: Any, integral: bool = False) -> np.ndarray:
    """``value``: a number or three of them (ValueError naming ``name`` otherwise), as three."""
    v = validate.array(name, value, (None,) if np.ndim(value) else (), integral=integral)
    if v.ndim and len(v) != 3:
        raise ValueError(f"{name} must be a number or three, got {len(v)} of them")
    return np.broadcast_to(v, (3,))


def _cells3(cells: Any) -> tuple[int, int, int]:
    """``cells``: a number or three, each >= 1; the particles along each axis."""
    nx, ny, nz = (validate.integer("cells", int(n), 1) + 1 for n in _three("cells", cells, True))
    return nx, ny, nz


def _size3(size: Any) -> np.ndarray:
    """``size``: a number or three, each > 0 (m)."""
    v = _three("size", size).astype(float)
    if not (v > 0).all():
        raise ValueError(f"size must be > 0 along every axis, got {size!r}")
    return v


def lattice(nx: int, ny: int, nz: int) -> tuple[np.ndarray, np.ndarray]:
    """A grid of nx x ny x nz points (index x + nx (y + ny z)) in the unit cube, and its
    tetrahedra, six a cell (positively oriented)."""
    g = [np.linspace(0.0, 1.0, n) for n in (nx, ny, nz)]
    z, y, x = np.meshgrid(g[2], g[1], g[0], indexing="ij")
    pos = np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1)
    idx = np.arange(nx * ny * nz).reshape(nz, ny, nx)
    corner = np.stack([idx[k:nz - 1 + k, j:ny - 1 + j, i:nx - 1 + i].ravel()
                       for k in (0, 1) for j in (0, 1) for i in (0, 1)], axis=1)  # x + 2 y + 4 z
    tets = corner[:, _FREUDENTHAL].reshape(-1, 4)
    return pos, oriented(pos, tets)


def edges(cells: np.ndarray) -> np.ndarray:
    """The distinct edges (E, 2) of triangles or tetrahedra ``cells``, each low index first,
    sorted."""
    w = cells.shape[1]
    pairs = np.concatenate([cells[:, [i, j]] for i in range(w) for j in range(i + 1, w)])
    return np.unique(np.sort(pairs, axis=1), axis=0)


def _default_amount(mass: float, volume: float, names: str) -> float:
    """The default gas: pressure 2 m g / (pi R_eq^2) (R_eq: the radius of a ball of the body's
    volume), which carries about four times the body's weight before it flattens (2D's rule
    over a disc's cross-section); amount = P V."""
    if not volume > 0.0:
        raise ValueError(f"{names}: the surface encloses no volume ({volume:.3g} m^3)")
    r = (3.0 * volume / (4.0 * math.pi)) ** (1.0 / 3.0)
    amount = float(2.0 * mass * 9.81 / (math.pi * r * r) * volume)
    _derived(names, "the default amount of gas (2 m g / (pi R_eq^2) x volume)", amount)
    return amount


# A surface-only shape-matched body's defaults (1/s^2, 1/s): nothing inside holds its shell,
# so its sag on a floor is what it loses of its volume: at 2D's 2,000 and 20 a cube lost 3.4 %,
# a ball 4.5 % and a torus 8.7 %; at 5,000 and 50, 1.4 %, 1.9 % and 3.9 %, all at rest in 5 s
# (k h^2 = 0.02 at 8 substeps: far inside symplectic Euler's bound)
MATCH = (5000.0, 50.0)
# The material model's default: a soft jelly (a 1 kg, 0.5 m cube of it sags 0.5 % under its
# own weight; rubber is about 1e6 Pa), nearly incompressible
YOUNG, POISSON = 1e4, 0.45


def _models3(model: str | Sequence[str]) -> set[str]:
    """A 3D builder's models: 2D's (see pysoft.build), and "material" (the continuum material
    on the tetrahedra)."""
    if isinstance(model, str):
        names = model.split("+")
    elif isinstance(model, (list, tuple)):
        names = list(model)
    else:
        return _models(model)  # (refused, naming model)
    rest = [n for n in names if n != "material"]
    return (_models(rest) if rest else set()) | ({"material"} if len(rest) < len(names) else set())


def solid(world: World, pos: np.ndarray, tets: np.ndarray, surface: np.ndarray, models: set[str],
          mass: float, names: str, stiffness: float | None, damping: float | None,
          amount: float | None, match: tuple[float, float], wobble_damping: float,
          compliance: float, volume_compliance: float, particle_radius: float,
          body: dict[str, Any], max_strain: float | None,
          material: tuple[float, float] = (YOUNG, POISSON)) -> int:
    """A 3D body from points ``pos``, positively oriented tetrahedra and their closed surface
    (outward), with ``models``: volumetric (all points, the tetrahedra's edges as springs
    and/or XPBD constraints, the tetrahedra's volumes kept under XPBD) when the models have
    springs or XPBD, else surface-only (the surface's points; a gas bag's skin of springs
    along its edges). Everything is checked before the first particle is added."""
    given = models  # (a gas bag's skin follows from its gas: see _skin)
    if not {"springs", "xpbd", "material"} & models:  # surface-only: keep the surface's points
        keep = np.unique(surface)
        index = np.full(len(pos), -1, np.int64)
        index[keep] = np.arange(len(keep))
        pos, surface, tets = pos[keep], index[surface], np.zeros((0, 4), np.int64)
        pairs = edges(surface) if "pressure" in models else np.zeros((0, 2), np.int64)
        if pairs.size:
            models = models | {"springs"}  # a gas bag's skin
    else:
        pairs = edges(tets)
    n = len(pos)
    _count(names, n, len(pairs))
    m = validate.positive("mass", mass) / n
    k, d = _spring_defaults(m, stiffness, damping)
    particles = planar._particles(pos, m, particle_radius, names, pairs)
    sources = _sources(stiffness, damping, amount, names)
    if "pressure" in models and amount is None:
        amount = _default_amount(float(mass), enclosed_volume(pos[surface]), sources.gas)
    springs: dict[str, Any] | None = None
    if "springs" in models and len(pairs):
        rest = None
        if "pressure" in models and amount:
            k, d, rest = _prestress(world, pos, pairs, surface, amount, k, d,
                                    _skin(given, m, stiffness, damping), sources)
        springs = {"stiffness": k, "damping": d, "rest_lengths": rest, "max_strain": max_strain}
    volumes = None  # a spring lattice's tetrahedra get volume springs (see planar._orient)
    if springs is not None and len(tets) and "xpbd" not in models:
        volumes = planar._orient(pos[tets], springs["stiffness"], springs["damping"],
                                 planar.AREA_UNDER_MATCHING if "shape_matching" in models else 1.0,
                                 sources)
    alpha = (validate.nonnegative("compliance", compliance),
             validate.nonnegative("volume_compliance", volume_compliance))
    chosen = _body_models(models, amount, match, wobble_damping)
    entities = planar._add(world, particles)
    with _or_undo(world, entities):
        if springs is not None:
            world.add_springs(entities[pairs], **springs)
        if volumes is not None:
            world.add_area_springs(entities[tets], *volumes)
        if "xpbd" in models:
            world.add_distance_constraints(entities[pairs], alpha[0])
            world.add_volume_constraints(entities[tets], alpha[1])
        if "material" in models:
            world.add_material_constraints(entities[tets], *material)
        return world.add_body(entities[surface], *chosen, particles=entities.tolist(),
                              tetrahedra=entities[tets] if len(tets) else None, **body)


def _world3(world: World, builder: str) -> None:
    if not isinstance(world, World) or world.dim != 3:
        got = f"a World of dim {world.dim}" if isinstance(world, World) else type(world).__name__
        raise ValueError(f"world: build.{builder} makes a 3D body (World(dim=3)), got {got}")


def cube(world: World, center: Sequence[float] = (0.0, 1.0, 0.0), size: Any = 0.5, cells: Any = 3,
         model: str | Sequence[str] = "xpbd", mass: float = 1.0, stiffness: float | None = None,
         damping: float | None = None, amount: float | None = None,
         match_stiffness: float = MATCH[0], match_damping: float = MATCH[1], wobble_damping: float = 8.0,
         compliance: float = 1e-5, volume_compliance: float = 0.0, young: float = YOUNG,
         poisson: float = POISSON, particle_radius: float = 0.0,
         *, category: int = 1, mask: int = 0xFFFFFFFF, self_collision: bool = False,
         max_strain: float | None = None, friction: float = 0.5, restitution: float = 0.0) -> int:
    """A 3D box of (cells + 1) particles along each axis, six tetrahedra a cell (3D only;
    ``build.box`` in a 3D world is this). ``size`` (m) and ``cells`` are a number or three;
    ``mass`` is the whole body's (kg). ``model``: "xpbd" (default: edges as distance
    constraints of ``compliance``, tetrahedra keeping their volume with
    ``volume_compliance``), "springs" (edges as springs), "material" (the continuum material
    of Young's modulus ``young``, Pa, and Poisson's ratio ``poisson`` on the tetrahedra: see
    World.add_material_constraints), "pressure" (gas, with the springs' lattice as its frame:
    gas alone would push the box round, as in 2D), "shape_matching"
    (surface-only, with ``match_stiffness`` and ``match_damping``), or several
    ("xpbd+shape_matching"). ``amount`` (N m) defaults to the gas that carries about four
    times the body's weight."""
    _world3(world, "cube")
    body = _body(category, mask, self_collision, friction, restitution, 0.0)
    models = planar._framed(_models3(model))  # gas would push a box round: a lattice frames it
    material = (validate.positive("young", young), validate.finite("poisson", poisson))
    tear = _tear(max_strain, models)
    _optional(stiffness=stiffness, damping=damping, amount=amount)
    _check(match_stiffness=match_stiffness, match_damping=match_damping, wobble_damping=wobble_damping,
           compliance=compliance, volume_compliance=volume_compliance, particle_radius=particle_radius)
    c = validate.vector("center", center, 3)
    extent = _size3(size)
    nx, ny, nz = _cells3(cells)
    _count("cells", nx * ny * nz, 7 * nx * ny * nz)
    unit, tets = lattice(nx, ny, nz)
    with np.errstate(over="ignore", invalid="ignore"):
        pos = (unit - 0.5) * extent + c
    return solid(world, pos, tets, tet_boundary(tets), models, mass, "center, size, cells", stiffness,
                 damping, amount, (match_stiffness, match_damping), wobble_damping, compliance,
                 volume_compliance, particle_radius, body, tear, material)


def sphere_points(count: int) -> np.ndarray:
    """``count`` points spread evenly over the unit sphere (a Fibonacci spiral)."""
    i = np.arange(count) + 0.5
    z = 1.0 - 2.0 * i / count
    r = np.sqrt(1.0 - z * z)
    t = math.pi * (3.0 - math.sqrt(5.0)) * i
    return np.stack([r * np.cos(t), z, r * np.sin(t)], axis=1)


def hull(points: np.ndarray) -> np.ndarray:
    """The convex hull's triangles (T, 3) of ``points``, counter-clockwise seen from outside."""
    from scipy.spatial import ConvexHull  # type: ignore[import-untyped]

    tris = ConvexHull(points).simplices.astype(np.int64)
    a, b, c = (points[tris[:, i]] for i in range(3))
    outward = np.einsum("ij,ij->i", np.cross(b - a, c - a), a - points.mean(axis=0)) > 0.0
    out: np.ndarray = np.where(outward[:, None], tris, tris[:, [0, 2, 1]])
    return out


def blob(world: World, center: Sequence[float] = (0.0, 1.0, 0.0), radius: float = 0.4,
         segments: int = 16, mass: float = 1.0, stiffness: float | None = None,
         damping: float | None = None, particle_radius: float = 0.0,
         *, category: int = 1, mask: int = 0xFFFFFFFF, self_collision: bool = False,
         max_strain: float | None = None, friction: float = 0.5, restitution: float = 0.0) -> int:
    """A jelly blob (3D): ``segments`` particles over a sphere plus a centre particle, every
    pair joined by a spring; its surface is the points' convex hull."""
    _world3(world, "blob")
    body = _body(category, mask, self_collision, friction, restitution, 0.0)
    tear = _tear(max_strain, {"springs"})
    _optional(stiffness=stiffness, damping=damping)
    _check(particle_radius=particle_radius)
    c = validate.vector("center", center, 3)
    r = validate.positive("radius", radius)
    count = validate.integer("segments", segments, 4)
    n = count + 1
    _count("segments", n, n * (n - 1) // 2)
    m = validate.positive("mass", mass) / n
    k, d = _spring_defaults(m, stiffness, damping)
    pairs = np.stack(np.triu_indices(n, 1), 1)
    with np.errstate(over="ignore", invalid="ignore"):
        pos = np.concatenate([c + r * sphere_points(count), c[None]])
    particles = planar._particles(pos, m, particle_radius, "center, radius, segments", pairs)
    surface = hull(pos[:-1])
    entities = planar._add(world, particles)
    with _or_undo(world, entities):
        # many springs per particle: their total stiffness is that of 2D's blob's four
        world.add_springs(entities[pairs], stiffness=k * 4.0 / (n - 1), damping=d * 4.0 / (n - 1),
                          max_strain=tear)
        return world.add_body(entities[surface], particles=entities.tolist(), **body)


def cloth(world: World, center: Sequence[float] = (0.0, 2.0, 0.0), size: Sequence[float] = (1.0, 1.0),
          cells: Sequence[int] = (10, 10), pin: str | Sequence[int] | None = "top corners",
          model: str = "xpbd", mass: float = 0.5, compliance: float = 1e-6,
          stiffness: float | None = None, damping: float | None = None, bending: float | None = None,
          particle_radius: float = 0.0,
          *, category: int = 1, mask: int = 0xFFFFFFFF, self_collision: bool = False,
          max_strain: float | None = None, friction: float = 0.5, restitution: float = 0.0) -> int:
    """A hanging sheet (3D): (cells + 1)^2 particles in the plane z = center's z, ``size``
    (width, height) about ``center``, with structural and shear links (XPBD distance
    constraints of ``compliance``, or springs), and bending links across every edge two of
    its triangles share (between their opposite corners: a fold shortens them), of stiffness
    ``bending`` (N/m; None: a twentieth of the springs' derived stiffness; XPBD: compliance
    1 / bending), so it drapes in folds rather than crumpling. ``pin`` as in 2D ("top corners",
    "top", "none" or indices, row 0 at the bottom). Its body's surface is the sheet's
    triangles (open: it holds no gas)."""
    _world3(world, "cloth")
    body = _body(category, mask, self_collision, friction, restitution, 0.0)
    if not isinstance(model, str) or model not in ("springs", "xpbd"):
        raise ValueError(f"model must be 'springs' or 'xpbd' for a cloth, got {model!r}")
    tear = _tear(max_strain, {model})
    _optional(stiffness=stiffness, damping=damping, bending=bending)
    _check(compliance=compliance, particle_radius=particle_radius)
    c = validate.vector("center", center, 3)
    w, h = validate.vector("size", size, 2)
    if not (w > 0 and h > 0):
        raise ValueError("size must be > 0 in both directions")
    nx, ny = planar._cells(cells)
    _count("cells", nx * ny, 6 * nx * ny)
    idx = np.arange(nx * ny).reshape(ny, nx)
    pinned = np.zeros(nx * ny, dtype=bool)
    pinned[planar.cloth_pins(pin, idx)] = True
    m = validate.positive("mass", mass) / (nx * ny)
    k, d = _spring_defaults(m, stiffness, damping)
    kb = k / 20.0 if bending is None else float(bending)
    gx, gy = np.linspace(-w / 2, w / 2, nx), np.linspace(-h / 2, h / 2, ny)
    flat = np.stack(np.meshgrid(gx, gy), axis=-1).reshape(-1, 2)
    with np.errstate(over="ignore", invalid="ignore"):
        pos = np.concatenate([flat, np.zeros((len(flat), 1))], axis=1) + c
    a, b = idx[:-1, :-1].ravel(), idx[:-1, 1:].ravel()  # each cell: two counter-clockwise triangles
    c_, d_ = idx[1:, 1:].ravel(), idx[1:, :-1].ravel()
    tris = np.concatenate([np.stack([a, b, c_], 1), np.stack([a, c_, d_], 1)])
    pairs = planar.grid_pairs(nx, ny, by_particle=model == "springs")
    folds = _braces(tris)
    particles = planar._particles(pos, m, particle_radius, "center, size", pairs, pinned)
    entities = planar._add(world, particles)
    with _or_undo(world, entities):
        if model == "xpbd":
            world.add_distance_constraints(entities[pairs], validate.nonnegative("compliance", compliance))
            if kb > 0.0:
                world.add_distance_constraints(entities[folds], 1.0 / kb)
        else:
            world.add_springs(entities[pairs], stiffness=k, damping=d, max_strain=tear)
            if kb > 0.0:
                world.add_springs(entities[folds], stiffness=kb, damping=d / 20.0, max_strain=tear)
        return world.add_body(entities[tris], particles=entities.tolist(), **body)


def mesh(world: World, mesh: Any, model: str | Sequence[str] = "xpbd", center: Sequence[float] | None = None,
         scale: float = 1.0, spacing: float | None = None, mass: float = 1.0,
         stiffness: float | None = None, damping: float | None = None, amount: float | None = None,
         match_stiffness: float = MATCH[0], match_damping: float = MATCH[1], wobble_damping: float = 8.0,
         compliance: float = 1e-5, volume_compliance: float = 0.0, young: float = YOUNG,
         poisson: float = POISSON, particle_radius: float = 0.0,
         *, category: int = 1, mask: int = 0xFFFFFFFF, self_collision: bool = False,
         max_strain: float | None = None, friction: float = 0.5, restitution: float = 0.0,
         framed: bool = True) -> int:
    """A body of any closed mesh (3D): ``mesh`` is a path (OBJ, STL, PLY, OFF: whatever
    trimesh reads), a ``(vertices, faces)`` pair or a ``trimesh.Trimesh``; it is welded and
    checked (pysoft.meshes.load: ValueError naming ``mesh`` for an open, non-manifold or
    degenerate one; an inside-out one is turned), scaled by ``scale`` and, with ``center``,
    moved so its vertices' mean is there. Volumetric models ("xpbd", "springs", "material":
    Young's modulus ``young`` in Pa and Poisson's ratio ``poisson``) are tetrahedralised
    here (pysoft.meshes.tetrahedralize: the mesh's vertices plus interior points about
    ``spacing`` apart); surface models ("pressure", "shape_matching") use the mesh's own
    vertices. The mesh itself is kept as the body's render mesh (``body.render_mesh()``),
    its vertices moved barycentrically in the tetrahedra. Other arguments as ``cube``."""
    from pysoft import meshes

    _world3(world, "mesh")
    body = _body(category, mask, self_collision, friction, restitution, 0.0)
    models = _models3(model)
    if validate.flag("framed", framed):
        models = planar._framed(models)  # gas pushes a mesh round: the tetrahedra's springs frame it
    tear = _tear(max_strain, models)
    _optional(stiffness=stiffness, damping=damping, amount=amount)
    _check(match_stiffness=match_stiffness, match_damping=match_damping, wobble_damping=wobble_damping,
           compliance=compliance, volume_compliance=volume_compliance, particle_radius=particle_radius)
    material = (validate.positive("young", young), validate.finite("poisson", poisson))
    k = validate.positive("scale", scale)
    vertices, faces = meshes.load(mesh)
    with np.errstate(over="ignore", invalid="ignore"):
        vertices = vertices * k
        if center is not None:
            vertices = vertices - vertices.mean(axis=0) + validate.vector("center", center, 3)
    validate.extent("mesh, scale, center", vertices)
    if {"springs", "xpbd", "material"} & models:
        cut = meshes.tetrahedralize(vertices, faces, spacing=None if spacing is None
                                    else validate.positive("spacing", spacing) * k)
        _count("mesh, spacing", len(cut.points), 7 * len(cut.points))
        points, tets, surface = cut.points, cut.tetrahedra, cut.surface
    else:
        points, tets, surface = vertices, np.zeros((0, 4), np.int64), faces
    entity = solid(world, points, tets, surface, models, mass, "mesh, scale, center", stiffness, damping,
                   amount, (match_stiffness, match_damping), wobble_damping, compliance,
                   volume_compliance, particle_radius, body, tear, material)
    made = world.body(entity)
    particles = np.asarray(made.particles, np.int64)
    if len(tets):  # the mesh's vertices in the tetrahedra (the particles are points in order)
        index, weights = meshes.embed(points, tets, vertices)
        made.embed(particles[tets[index]], weights, faces)
    else:  # a surface body: the mesh's vertices are its particles (the used ones, in order)
        used = np.unique(surface)
        order = np.searchsorted(used, np.arange(len(vertices)))
        made.embed(np.repeat(particles[order][:, None], 4, axis=1),
                   np.tile([1.0, 0.0, 0.0, 0.0], (len(vertices), 1)), faces)
    return entity


def ball(world: World, center: Sequence[float] = (0.0, 1.0, 0.0), radius: float = 0.5,
         subdivisions: int = 2, model: str | Sequence[str] = "pressure", mass: float = 1.0,
         stiffness: float | None = None, damping: float | None = None, amount: float | None = None,
         match_stiffness: float = MATCH[0], match_damping: float = MATCH[1], wobble_damping: float = 8.0,
         compliance: float = 1e-5, volume_compliance: float = 0.0, particle_radius: float = 0.0,
         *, category: int = 1, mask: int = 0xFFFFFFFF, self_collision: bool = False,
         max_strain: float | None = None, friction: float = 0.5, restitution: float = 0.0) -> int:
    """A ball (3D): an icosphere of ``subdivisions`` (2: 162 particles) and ``radius`` about
    ``center``; by default a gas bag (``model="pressure"``: its skin springs along the
    icosphere's edges, prestressed to hold the gas at the built size), or any model of
    ``mesh``."""
    from pysoft import meshes

    _world3(world, "ball")
    c = validate.vector("center", center, 3)
    r = validate.positive("radius", radius)
    level = validate.integer("subdivisions", subdivisions, 0, 6)
    vertices, faces = meshes.icosphere(level)
    with np.errstate(over="ignore", invalid="ignore"):
        vertices = vertices * r + c
    return mesh(world, (vertices, faces), model, mass=mass, stiffness=stiffness, damping=damping,
                amount=amount, match_stiffness=match_stiffness, match_damping=match_damping,
                wobble_damping=wobble_damping, compliance=compliance, volume_compliance=volume_compliance,
                particle_radius=particle_radius, category=category, mask=mask,
                self_collision=self_collision, max_strain=max_strain, friction=friction,
                restitution=restitution, framed=False)
