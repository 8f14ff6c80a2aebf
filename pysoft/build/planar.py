"""The 2D builders, and the helpers the 3D ones share (pysoft.build.solid): see pysoft.build."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, cast

import numpy as np

from pysoft import _validate as validate
from pysoft.features.bodies import Pressure, ShapeMatching
from pysoft.features.springs import max_strain_rows
from pysoft.shapes import enclosed_volume, signed_area
from pysoft.world import World

MODELS = ("springs", "xpbd", "pressure", "shape_matching")
"""The models a builder's ``model=`` names (mixed as ``"springs+pressure"`` or a tuple; 3D builders also
take ``"material"``)."""
STIFFNESS_PER_KG = 5000.0  # N/m per kg of particle mass: stable at h = 1/480 s
BRACE = 0.25  # a box's skip-one brace springs, as a fraction of its lattice springs' stiffness
# A round soft body rolls on with little to slow it (its skin barely deforms as it turns): the
# builders' bodies resist rolling as a rubber ball on a soft floor does, a torque of at most
# this x the load x its lever (World.add_body's default is 0, as Box2D's)
ROLLING_RESISTANCE = 0.1
"""The builders' default ``rolling_resistance``: while a body touches colliders, each substep
takes from its spin up to this x the normal impulse x its lever (``World.add_body``: 0)."""
MAX_MESH_POINTS = 100_000  # interior particles build.polygon will make
MAX_OUTLINE_POINTS = 2_000  # outline points (the simplicity check compares every pair of edges)
MAX_BODY_PARTICLES = 100_000  # particles any builder makes (build.polygon: MAX_MESH_POINTS inside)
MAX_BODY_SPRINGS = 1_000_000  # springs any builder makes (a blob joins every pair)
MIN_SPACING = 1e-6  # m: the closest two particles a builder places (its springs need a direction)
# ... and at least this fraction of their distance from the origin (4,096 ulps of it): nearer,
# rounding bends the shape (a ring at y = 1e200 rounded onto a line)
PRECISION = 2.0**-40
# build.ball: the gas stretches the skin by at most this fraction of its rest length (at 0.5 the
# skin's rest length would be half its built length, which _prestress refuses)
MAX_INFLATION = 0.5


# _GRID_ORDER: box and cloth list a spring grid particle by particle (a 301 x 301 spring
# cloth stepped 11 % faster than with its springs by kind: a particle's springs lie near
# each other) but keep the order by kind for XPBD constraints, whose order is the solve's
# (a pressed 0.7 x 0.8 m XPBD box in the other order stayed crushed, 0.77 of its area).


def grid_pairs(nx: int, ny: int, by_particle: bool = False) -> np.ndarray:
    """Spring index pairs of an nx-by-ny particle grid (row-major, x fastest).

    Structural springs (horizontal, then vertical), then shear springs (both
    diagonals of every cell), as local indices into the grid's particles. With
    ``by_particle``, the same springs particle by particle (row-major): each one's
    spring to the right, up, diagonally up-right, then its cell's other diagonal (the
    order of the shared yardstick's scene): a particle's springs lie near each other,
    and the spring pass over 100,000 particles took 15 % less time than in the order by
    kind.
    """
    idx = np.arange(nx * ny).reshape(ny, nx)
    blocks = [
        (idx[:, :-1], idx[:, 1:]),  # horizontal
        (idx[:-1, :], idx[1:, :]),  # vertical
        (idx[:-1, :-1], idx[1:, 1:]),  # diagonal /
        (idx[:-1, 1:], idx[1:, :-1]),  # diagonal \ (of the cell whose lower left is a - 1)
    ]
    pairs = np.concatenate([np.stack([a.ravel(), b.ravel()], axis=1) for a, b in blocks])
    if not by_particle:
        return pairs
    owner = pairs[:, 0] - (np.arange(len(pairs)) >= len(pairs) - (nx - 1) * (ny - 1))
    return pairs[np.argsort(owner, kind="stable")]  # by particle, each one's in kind order


def _models(model: str | Sequence[str]) -> set[str]:
    if not isinstance(model, (str, list, tuple)):
        raise ValueError(f"model must be a model name such as 'springs+pressure' or a list of names, "
                         f"got {model!r}")
    names = model.split("+") if isinstance(model, str) else list(model)
    for name in names:
        if name not in MODELS:
            raise ValueError(f"model must be one or more of {MODELS}, got {name!r}")
    if not names:
        raise ValueError("model must name at least one model")
    return set(names)


def _check(**values: Any) -> None:
    """Validate non-negative numbers up front, so a bad one adds nothing to the world."""
    for name, value in values.items():
        validate.nonnegative(name, value)


def _optional(**values: Any) -> None:
    """Validate non-negative numbers that may be None (the builder derives them) up front."""
    _check(**{name: value for name, value in values.items() if value is not None})


class _Sources(NamedTuple):
    """The caller's arguments a builder's derived values follow from: its errors name them."""

    stiffness: str  # the springs' stiffness ("mass" where the builder derives it)
    damping: str  # their damping ("mass, stiffness" where the builder derives it)
    gas: str  # the gas ("mass" and the shape's arguments where the builder derives it)


_PASSED = _Sources("stiffness", "damping", "amount")  # every value passed by the caller


def _sources(stiffness: float | None, damping: float | None, amount: float | None = None,
             shape: str = "size") -> _Sources:
    """Which caller's arguments the springs and the gas follow from (``shape``: the builder's
    arguments that set its shape, which the default gas follows from too)."""
    k = "stiffness" if stiffness is not None else "mass"
    c = "damping" if damping is not None else _joined("mass", k)
    return _Sources(k, c, "amount" if amount is not None else f"mass, {shape}")


def _joined(*names: str) -> str:
    """Lists of argument names ("mass, size") joined, each name once."""
    return ", ".join(dict.fromkeys(n for group in names for n in group.split(", ")))


def _derived(names: str, what: str, *values: Any) -> None:
    """ValueError naming the caller's arguments ``names`` if a value the builder derived from
    them (``what``) is not finite: it overflowed."""
    for value in values:
        if not np.isfinite(value).all():
            raise ValueError(f"{names}: {what} would not be finite (it overflows): choose smaller values")


@contextlib.contextmanager
def _or_undo(world: World, entities: np.ndarray) -> Iterator[None]:
    """If anything fails, the builder's particles (and with them all it added) are removed."""
    try:
        yield
    except Exception:
        world.remove(*entities.tolist())  # a builder that fails adds nothing
        raise


def _body(category: int, mask: int, self_collision: bool, friction: float,
          restitution: float, rolling_resistance: float) -> dict[str, Any]:
    """The body options every builder takes, checked before anything is added."""
    validate.bits("category", category)
    validate.bits("mask", mask)
    validate.flag("self_collision", self_collision)
    validate.nonnegative("friction", friction)
    validate.unit_interval("restitution", restitution)
    validate.nonnegative("rolling_resistance", rolling_resistance)
    return {"category": category, "mask": mask, "self_collision": self_collision,
            "friction": friction, "restitution": restitution, "rolling_resistance": rolling_resistance}


def _gas_bag(models: set[str]) -> bool:
    """Gas with no springs, constraints or material of its own: a skin of outline springs
    holds it."""
    return "pressure" in models and not {"springs", "xpbd", "material"} & models


def _framed(models: set[str]) -> set[str]:
    """Gas pushes any outline round, so a box's or polygon's gas keeps the builder's lattice
    of springs as its frame (a gas bag alone is build.ball or build.circle)."""
    return models | {"springs"} if _gas_bag(models) else models


def _tear(max_strain: float | None, models: set[str]) -> float | None:
    """A builder's ``max_strain`` (> 1, or None: never tears), checked before anything is
    added; only springs tear, so a body of none (an XPBD-only one) rejects it."""
    if max_strain is None:
        return None
    value = float(max_strain_rows(max_strain, 1)[0])
    if not {"springs", "pressure"} & models:  # (a gas bag's skin is springs)
        raise ValueError(f"max_strain: only springs tear, and model {'+'.join(sorted(models))} has none")
    return value


def _cells(cells: Sequence[int]) -> tuple[int, int]:
    counts = validate.array("cells", cells, (2,), integral=True)
    nx, ny = (validate.integer("cells", int(n), 1) + 1 for n in counts)
    return nx, ny


def _spring_defaults(mass: float, stiffness: float | None, damping: float | None) -> tuple[float, float]:
    """Spring stiffness (N/m) and damping (N s/m) for particles of ``mass`` (kg): the caller's,
    or derived from the mass (ValueError naming ``mass`` if that overflows)."""
    k = STIFFNESS_PER_KG * mass if stiffness is None else validate.nonnegative("stiffness", stiffness)
    c = 0.4 * math.sqrt(k * mass) if damping is None else validate.nonnegative("damping", damping)
    names = _sources(stiffness, damping)
    _derived(names.stiffness, "the springs' stiffness", k)
    _derived(names.damping, "the springs' damping", c)
    return k, c


class _Particles(NamedTuple):
    """A builder's particles before they are added (checked by _particles): positions (m),
    the mass of each (kg), radius (m), which are pinned."""

    pos: np.ndarray
    mass: float
    radius: float
    pinned: Any = False


def _finish(world: World, particles: _Particles, outline: np.ndarray, pairs: np.ndarray,
            models: set[str], k: Any, c: float, amount: float | None, match: tuple[float, float],
            wobble_damping: float = 0.0, triangles: np.ndarray | None = None,
            compliance: float = 1e-5, area_compliance: float = 0.0,
            body: dict[str, Any] | None = None, max_strain: float | None = None,
            skin: tuple[float, float, float | None] | None = None,
            sources: _Sources = _PASSED) -> int:
    """The particles, the lattice as springs (stiffness ``k``: one, or one per pair) and/or
    XPBD constraints (outline edges at least, for a gas bag) and the body with its models.
    With gas, the springs' rest lengths are prestressed so the built shape is an equilibrium;
    ``skin`` (see _prestress) lets a gas bag's skin stiffness follow from the gas.

    Everything is derived and checked before the first particle is added, so a refused
    builder leaves the world as it was; a derived value that overflows is refused naming
    the caller's arguments it follows from (``sources``)."""
    if _gas_bag(models):  # a gas bag still needs a skin
        pairs, models = np.stack([outline, np.roll(outline, -1)], axis=1), models | {"springs"}
    springs, areas = None, None
    if "springs" in models and len(pairs):
        springs, areas = _springs(world, particles.pos, pairs, outline, models, k, c, amount,
                                  triangles, skin, sources)
        springs["max_strain"] = max_strain
    alpha = (validate.nonnegative("compliance", compliance),
             validate.nonnegative("area_compliance", area_compliance))
    chosen = _body_models(models, amount, match, wobble_damping)
    entities = _add(world, particles)
    with _or_undo(world, entities):
        if springs is not None:
            world.add_springs(entities[pairs], **springs)
        if areas is not None:
            world.add_area_springs(entities[triangles], *areas)
        if "xpbd" in models:
            if len(pairs):
                world.add_distance_constraints(entities[pairs], alpha[0])
            if triangles is not None and len(triangles):
                world.add_volume_constraints(entities[triangles], alpha[1])
        return world.add_body(entities[outline].tolist(), *chosen, particles=entities.tolist(),
                              **(body or {}))


def _springs(world: World, pos: np.ndarray, pairs: np.ndarray, outline: np.ndarray, models: set[str],
             k: Any, c: float, amount: float | None, triangles: np.ndarray | None,
             skin: tuple[float, float, float | None] | None,
             sources: _Sources) -> tuple[dict[str, Any], tuple[np.ndarray, np.ndarray] | None]:
    """The springs' arguments (prestressed against the gas: _prestress) and the area springs'
    stiffness and damping (_orient; None without), from the particles' positions ``pos``."""
    rest = None
    if "pressure" in models and amount:
        k, c, rest = _prestress(world, pos, pairs, outline, amount, k, c, skin, sources)
    areas = None
    if "xpbd" not in models and triangles is not None:  # (XPBD keeps areas)
        areas = _orient(pos[triangles], k, c, AREA_UNDER_MATCHING if "shape_matching" in models else 1.0,
                        sources)
    return {"stiffness": k, "damping": c, "rest_lengths": rest}, areas


def _body_models(models: set[str], amount: float | None, match: tuple[float, float],
                 wobble_damping: float) -> list[Pressure | ShapeMatching]:
    """The body's models: gas, shape matching, or the wobble damping (shape matching of
    stiffness 0) of a body without shape matching."""
    chosen: list[Pressure | ShapeMatching] = []
    if "pressure" in models:
        chosen.append(Pressure(0.0 if amount is None else amount))
    if "shape_matching" in models:
        chosen.append(ShapeMatching(*match))
    elif validate.nonnegative("wobble_damping", wobble_damping) > 0:
        chosen.append(ShapeMatching(stiffness=0.0, damping=wobble_damping))
    return chosen


# How stiff a spring lattice's area springs are, against its springs: each triangle's area
# mode AREA_STIFFNESS times as stiff (and as damped) as one of its springs. At 1 a mirrored
# box or disc stayed inside out (the springs hold the mirror image); at 2 every spring
# lattice of the recovery matrix turns back.
AREA_STIFFNESS = 2.0
"""A spring lattice's area springs are this many times as stiff (and as damped) as one of its
springs, per triangle's area mode: enough to turn a mirrored or folded lattice back."""
# A lattice with shape matching gets area springs this many times as stiff as the above: shape
# matching holds its shape, but the best-fit rotation of a mirrored symmetric body (a regular
# hexagon) is undetermined, so it pulls such a body nowhere in particular and the lattice's
# springs held the mirror image for 3 s. The area springs only give it a direction: at 0.05 a
# mirrored spring+shape-matched hexagon turns back within 3 s (at 0.01 it does not); stiffer,
# they stiffen the body (at 0.25 a pile of mixed bodies crushed a gas ball to 35 % of its area
# under firmer boxes; at 1, a folded strip unfolded to 1.7 m of its 2 m in 2 s).
AREA_UNDER_MATCHING = 0.1
"""With shape matching, a lattice's area springs are this fraction of ``AREA_STIFFNESS``: they
give a mirrored symmetric body a direction back without stiffening it."""


def _orient(p: np.ndarray, k: Any, c: float, factor: float = 1.0,
            names: _Sources = _PASSED) -> tuple[np.ndarray, np.ndarray] | None:
    """A spring lattice alone does not know its inside from its outside: its mirror image,
    or a cell folded over, is at rest too. Area springs on its triangles push an inverted
    triangle back through itself: stiffness AREA_STIFFNESS k / |grad A|^2 (|grad A|^2 = the
    sum of the triangle's squared sides / 4), so its area mode is AREA_STIFFNESS times as
    stiff as a spring of stiffness k (the mean of the lattice's), damping alike. Returns
    their stiffness and damping for the triangles' corners ``p`` (M, 3, 2), or None (no
    triangles, or k = 0); if they overflow, ValueError naming the caller's arguments k and c
    follow from (``names``). In 3D (``p`` the corners of tetrahedra, (M, 4, 3)) the same for
    volume springs, |grad V|^2 the sum of the corners' squared volume gradients: an edge
    lattice neither knows its inside nor keeps its volume as it sags (a 0.3 m ball of 901
    particles made of springs alone kept 49 % of its volume on a floor; with them, 96 %)."""
    with np.errstate(over="ignore"):
        stiffness = float(np.mean(k))
    if not len(p) or not stiffness > 0.0:
        return None
    if p.shape[1] == 4:
        e1, e2, e3 = p[:, 1] - p[:, 0], p[:, 2] - p[:, 0], p[:, 3] - p[:, 0]
        g = [np.cross(e2, e3) / 6.0, np.cross(e3, e1) / 6.0, np.cross(e1, e2) / 6.0]
        g.append(-(g[0] + g[1] + g[2]))
        grad = sum(np.einsum("ij,ij->i", gi, gi) for gi in g)
        what = "the volume springs' {} (which keep the body's volume and its inside in)"
    else:
        grad = 0.25 * sum(np.sum((p[:, i] - p[:, (i + 1) % 3]) ** 2, axis=1) for i in range(3))
        what = "the area springs' {} (which keep the body from turning inside out)"
    gain = factor * AREA_STIFFNESS
    with np.errstate(over="ignore", divide="ignore"):
        area_k, area_c = gain * stiffness / grad, gain * c / grad
    _derived(names.stiffness, what.format("stiffness"), stiffness, area_k)
    _derived(names.damping, what.format("damping"), area_c)
    return area_k, area_c


GAS_SKIN_STRAIN = 0.05  # how far the default gas stretches a gas bag's skin
# The stiffest skin a substep h keeps stable, as k h^2 / m. A ring's fastest mode (neighbours
# moving apart) has w^2 = 4 k / m and damping rate 4 c / m with c = 0.4 sqrt(k m); symplectic
# Euler keeps it bounded while (w h)^2 < 4 - 2 (4 c / m) h, i.e. k h^2 / m < 0.458: 0.4 leaves
# room for the gas's own stiffness (at 0.5 a ball with 4x its default gas shook at 20 m/s).
SKIN_STABLE = 0.4
"""The stiffest skin a builder gives a gas bag, as k h^2 / m (h the world's substep, m a
particle's mass): stable under symplectic Euler with room for the gas's own stiffness."""


def _skin(models: set[str], mass: float, stiffness: float | None,
          damping: float | None) -> tuple[float, float, float | None] | None:
    """A gas bag (gas, no springs or constraints of its own) whose skin stiffness the user left
    to the builder: the skin follows from the gas (see _prestress)."""
    if _gas_bag(models) and stiffness is None:
        return mass, GAS_SKIN_STRAIN, damping
    return None


def _default_amount(mass: float, area: float, names: str) -> float:
    """The default gas: pressure 2 m g / R_eq (R_eq: the radius of a disc of the body's area),
    which carries about four times the body's weight before it flattens; amount = P A.
    ValueError naming ``names`` (the mass and size arguments) if it overflows."""
    if not area > 0.0:  # (an outline far from the origin, its points rounded onto a line)
        raise ValueError(f"{names}: the outline encloses no area (area {area:.3g} m^2)")
    amount = 2.0 * mass * 9.81 / math.sqrt(area / math.pi) * area
    _derived(names, "the default amount of gas (2 m g / R_eq x area)", amount)
    return amount


def gas_forces(pos: np.ndarray, outline: np.ndarray, amount: float) -> np.ndarray:
    """The pressure term's forces at ``pos``: each outline edge pushed outward with
    pressure x length (pressure = amount / area), half on each end; in 3D (``outline`` the
    surface's (T, 3) triangles) each triangle with pressure x area (pressure = amount /
    volume), a third on each corner."""
    if outline.ndim == 2:
        corners = pos[outline]
        normal = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])  # 2 area, out
        push3 = amount / enclosed_volume(corners) / 6.0 * normal
        f = np.zeros_like(pos)
        for i in range(3):
            np.add.at(f, outline[:, i], push3)
        return f
    ring = pos[outline]
    edge = np.roll(ring, -1, axis=0) - ring
    push = 0.5 * amount / abs(signed_area(ring)) * np.stack([edge[:, 1], -edge[:, 0]], axis=1)
    f = np.zeros_like(pos)
    np.add.at(f, outline, push)
    np.add.at(f, np.roll(outline, -1), push)
    return f


def _prestress(world: World, pos: np.ndarray, pairs: np.ndarray, outline: np.ndarray,
               amount: float, k: Any, c: float, skin: tuple[float, float, float | None] | None,
               sources: _Sources) -> tuple[Any, float, np.ndarray]:
    """Stiffness, damping and rest lengths that make the built shape an equilibrium of the
    springs and the gas.

    The tensions t (one per spring) that balance the gas forces f at every particle,
    A t = -f (column e of A: the unit vector along spring e at one end, its negative at
    the other), are the least-norm solution (scipy's LSQR: sparse, and the system is
    underdetermined for a lattice); each spring's rest length is its built length less
    t / k. A gas bag's skin (``skin`` = (particle mass, strain, damping or None: the
    default ratio)) is made as stiff as it
    takes for the tension to stretch it by ``strain``, but never stiffer than the
    substep keeps stable (k h^2 / m <= SKIN_STABLE); then it stretches further, and more gas
    than a skin can hold at twice its rest length is refused.
    """
    from scipy.sparse import coo_matrix  # type: ignore[import-untyped]
    from scipy.sparse.linalg import lsqr  # type: ignore[import-untyped]

    d = pos[pairs[:, 1]] - pos[pairs[:, 0]]
    length = np.linalg.norm(d, axis=1)
    u = d / length[:, None]
    (n, dim), m = pos.shape, len(pairs)
    rows = np.concatenate([dim * pairs[:, 0] + i for i in range(dim)]
                          + [dim * pairs[:, 1] + i for i in range(dim)])
    data = np.concatenate([u[:, i] for i in range(dim)] + [-u[:, i] for i in range(dim)])
    a = coo_matrix((data, (rows, np.tile(np.arange(m), 2 * dim))), shape=(dim * n, m)).tocsr()
    with np.errstate(over="ignore", invalid="ignore"):
        push = gas_forces(pos, outline, amount)
    _derived(sources.gas, "the gas's push on the outline", push)
    with np.errstate(all="ignore"):  # (a push near the float range overflows inside LSQR: checked)
        tension = lsqr(a, -push.ravel(), atol=1e-12, btol=1e-12)[0]
    _derived(sources.gas, "the springs' tension that holds the gas", tension)
    if skin is not None:
        mass, strain, damping = skin
        h = world.dt / world.substeps
        k = min(float((tension / length).max()) / strain, SKIN_STABLE * mass / h**2)
        c = 0.4 * math.sqrt(k * mass) if damping is None else damping
        _derived(_joined(sources.gas, "mass"), "the skin's stiffness", k)
        _derived(_joined(sources.gas, sources.damping), "the skin's damping", c)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # (stiffness 0: refused)
        rest: np.ndarray = length - tension / k
    if not (rest > 0.5 * length).all():
        raise ValueError(f"{sources.gas}: {amount:g} N m of gas is more than the springs "
                         f"(stiffness {float(np.min(k)):.4g} N/m) "
                         "can hold at twice their rest length: lower amount, raise stiffness or "
                         "use more substeps")
    return k, c, rest


def box(world: World, center: Sequence[float] = (0.0, 2.0), size: Sequence[float] = (1.0, 1.0),
        cells: Sequence[int] = (4, 4), model: str | Sequence[str] = "springs", mass: float = 1.0,
        stiffness: float | None = None, damping: float | None = None, amount: float | None = None,
        match_stiffness: float = 2000.0, match_damping: float = 20.0, wobble_damping: float = 8.0,
        compliance: float = 1e-5, area_compliance: float = 0.0, particle_radius: float = 0.0,
        *, category: int = 1, mask: int = 0xFFFFFFFF, self_collision: bool = False,
        max_strain: float | None = None,
        friction: float = 0.5, restitution: float = 0.0,
        rolling_resistance: float = ROLLING_RESISTANCE) -> int:
    """A box of (cells + 1) particles per side with structural and diagonal springs (seed 002).

    ``mass`` is the whole body's (kg); ``amount`` (N m) defaults to the gas that
    carries about four times the body's weight (see _default_amount), with the
    springs prestressed so the box rests at its built area. Gas pushes any outline
    round, so ``"pressure"`` keeps the spring lattice as its frame.
    """
    body = _body(category, mask, self_collision, friction, restitution, rolling_resistance)
    models = _framed(_models(model))
    tear = _tear(max_strain, models)
    _optional(stiffness=stiffness, damping=damping, amount=amount)
    _check(match_stiffness=match_stiffness, match_damping=match_damping, wobble_damping=wobble_damping,
           compliance=compliance, area_compliance=area_compliance, particle_radius=particle_radius)
    c = validate.vector("center", center, 2)
    w, h = validate.vector("size", size, 2)
    if not (w > 0 and h > 0):
        raise ValueError("size must be > 0 in both directions")
    nx, ny = _cells(cells)
    _count("cells", nx * ny, 6 * nx * ny)
    m = validate.positive("mass", mass) / (nx * ny)
    k, d = _spring_defaults(m, stiffness, damping)
    gx, gy = np.linspace(-w / 2, w / 2, nx), np.linspace(-h / 2, h / 2, ny)
    pos = np.stack(np.meshgrid(gx, gy), axis=-1).reshape(-1, 2) + c
    idx = np.arange(nx * ny).reshape(ny, nx)
    outline = np.concatenate([idx[0, :], idx[1:, -1], idx[-1, -2::-1], idx[-2:0:-1, 0]])
    bends = [np.stack([idx[:, :-2].ravel(), idx[:, 2:].ravel()], 1),  # skip one along rows
             np.stack([idx[:-2, :].ravel(), idx[2:, :].ravel()], 1)]  # and along columns
    grid = grid_pairs(nx, ny, by_particle="xpbd" not in models)  # (see _GRID_ORDER)
    pairs = np.concatenate([grid, *bends])  # braces: a cell cannot fold over the next
    particles = _particles(pos, m, particle_radius, "center, size", pairs)
    sources = _sources(stiffness, damping, amount, "center, size")
    if amount is None:
        amount = _default_amount(mass, w * h, sources.gas)
    a, b = idx[:-1, :-1].ravel(), idx[:-1, 1:].ravel()  # each cell: two CCW triangles
    c_, d_ = idx[1:, 1:].ravel(), idx[1:, :-1].ravel()
    triangles = np.concatenate([np.stack([a, b, c_], 1), np.stack([a, c_, d_], 1)])
    ks = np.concatenate([np.full(len(grid), k), np.full(len(pairs) - len(grid), BRACE * k)])
    return _finish(world, particles, outline, pairs, models, ks, d, amount,
                   (match_stiffness, match_damping), wobble_damping, triangles, compliance,
                   area_compliance, body, tear, _skin(models, m, stiffness, damping), sources)


def _ring(center: Sequence[float], radius: float, segments: int, mass: float) -> tuple[np.ndarray, float]:
    """Validated positions of a counter-clockwise ring and the mass per particle."""
    c = validate.vector("center", center, 2)
    r = validate.positive("radius", radius)
    n = validate.integer("segments", segments, 3)
    _count("segments", n, 3 * n)
    t = 2 * np.pi * np.arange(n) / n
    return c + r * np.stack([np.cos(t), np.sin(t)], axis=1), validate.positive("mass", mass) / n


def _count(names: str, particles: int, springs: int = 0) -> None:
    """Refuse, before anything is made, a body of more particles or springs than a builder makes."""
    if particles > MAX_BODY_PARTICLES or springs > MAX_BODY_SPRINGS:
        raise ValueError(f"{names}: {particles:,} particles and {springs:,} springs is more than a "
                         f"builder makes (at most {MAX_BODY_PARTICLES:,} and {MAX_BODY_SPRINGS:,})")


def _placeable(pos: np.ndarray, names: str, pairs: np.ndarray) -> None:
    """ValueError naming the arguments ``names`` that set the shape ``pos`` unless it can be
    simulated: no two particles a spring ``pairs`` joins closer than MIN_SPACING, nor than
    PRECISION x their distance from the origin (there, rounding moves them by a fraction of
    that: a ring far away rounds onto a line), no size whose square overflows."""
    validate.extent(names, pos)
    d = pos[pairs[:, 1]] - pos[pairs[:, 0]]
    length = np.hypot(d[:, 0], d[:, 1]) if d.shape[1] == 2 else np.hypot(np.hypot(d[:, 0], d[:, 1]), d[:, 2])
    closest = float(length.min()) if len(d) else math.inf
    far = float(np.abs(pos).max()) if len(pos) else 0.0
    if not closest >= max(MIN_SPACING, PRECISION * far):
        raise ValueError(f"{names}: the body's particles would be {closest:.3g} m apart (at least "
                         f"{MIN_SPACING:g} m, and {PRECISION:.2g} of their distance {far:.3g} m from "
                         "the origin)")


def _particles(pos: np.ndarray, m: float, radius: float, names: str, pairs: np.ndarray,
               pinned: Any = False) -> _Particles:
    """A body's particles, checked: a shape that can be simulated (_placeable), a mass each
    of at least MIN_MASS, a radius of at most MAX_RADIUS."""
    _placeable(pos, names, pairs)
    validate.radius_rows("particle_radius", radius, 1)
    if not m >= validate.MIN_MASS:
        raise ValueError(f"mass: {m:.3g} kg per particle is less than {validate.MIN_MASS:g} kg")
    return _Particles(pos, m, radius, pinned)


def _add(world: World, particles: _Particles) -> np.ndarray:
    """Add the body's particles (checked by _particles); their entities."""
    return np.asarray(world.add_particles(particles.pos, masses=particles.mass, radii=particles.radius,
                                          pinned=particles.pinned), dtype=np.int64)


def circle(world: World, center: Sequence[float] = (0.0, 2.0), radius: float = 0.5,
           segments: int = 16, model: str | Sequence[str] = "springs", mass: float = 1.0,
           stiffness: float | None = None, damping: float | None = None, amount: float | None = None,
           match_stiffness: float = 2000.0, match_damping: float = 20.0, wobble_damping: float = 8.0,
           compliance: float = 1e-5, particle_radius: float = 0.0, rings: int = 0,
        *, category: int = 1, mask: int = 0xFFFFFFFF, self_collision: bool = False,
        max_strain: float | None = None,
        friction: float = 0.5, restitution: float = 0.0,
        rolling_resistance: float = ROLLING_RESISTANCE) -> int:
    """A ring with criss-cross springs (seed 002): each particle to its neighbours at 1 and 2
    steps and to the opposite one. A ring has no inside of its own: ``"springs"`` gets an area
    spring on each edge and the particle across the ring, ``"xpbd"`` area constraints on a
    triangulation of the ring (its mirror image is otherwise at rest too).

    With ``rings`` = N >= 1 it is a filled disc instead: a centre particle and N
    concentric rings of ``segments`` particles (radii radius k / N), joined by springs
    along each ring, along each radius and criss-cross in every cell between two
    rings, and from the centre to the first ring (seed 002's circle); ``"xpbd"`` also
    keeps the area of every triangle (each cell's two, and the centre's fan). The
    outermost ring is the outline; the mass is shared equally.
    """
    body = _body(category, mask, self_collision, friction, restitution, rolling_resistance)
    models = _models(model)
    tear = _tear(max_strain, models)
    _optional(stiffness=stiffness, damping=damping, amount=amount)
    _check(match_stiffness=match_stiffness, match_damping=match_damping, wobble_damping=wobble_damping,
           compliance=compliance, particle_radius=particle_radius)
    if validate.integer("segments", segments, 3) < 4:
        raise ValueError(f"segments must be >= 4 for a circle, got {segments}")
    n_rings = validate.integer("rings", rings, 0)
    _count("segments, rings", segments * max(n_rings, 1) + min(n_rings, 1), 4 * segments * max(n_rings, 1))
    if n_rings:  # a filled disc's gas keeps its lattice, as a box's does
        models = _framed(models)
    pos, m = _ring(center, radius, segments, mass)
    r, n = float(radius), len(pos)
    i = np.arange(n)
    triangles = None
    rim = pos  # the outline's positions (their area sets the default gas)
    if n_rings == 0:  # a ring (a gas bag: its outline alone, see _finish)
        pairs = np.concatenate([np.stack([i, (i + 1) % n], 1), np.stack([i, (i + 2) % n], 1),
                                np.stack([i[: n // 2], i[: n // 2] + n // 2], 1)])
        outline = i
        if "xpbd" in models:  # area constraints on a triangulation of the ring give it an inside
            _placeable(pos, "center, radius, segments", pairs)
            triangles = _triangulate(pos, np.stack([i, (i + 1) % n], 1), "center, radius, segments")
        elif not _gas_bag(models):
            # a ring has no inside of its own: area springs on the triangles of each edge and the
            # particle across the ring give it one (those of a triangulation of the ring, thin
            # fans that tile it, jammed a mirrored ring into a three-pointed star)
            triangles = np.stack([i, (i + 1) % n, (i + n // 2) % n], 1)
    else:
        c = validate.vector("center", center, 2)
        unit = (pos - c) / r
        with np.errstate(over="ignore"):  # (a radius near the float range's end: refused below)
            pos = np.concatenate([c[None]] + [c + unit * r * k / n_rings for k in range(1, n_rings + 1)])
        m = validate.positive("mass", mass) / len(pos)
        ring = [1 + k * n + i for k in range(n_rings)]  # particle indices of ring k (0: innermost)
        nxt = (i + 1) % n
        pairs_list = [np.stack([np.zeros(n, dtype=np.int64), ring[0]], 1)]  # centre spokes
        tris = [np.stack([np.zeros(n, dtype=np.int64), ring[0], ring[0][nxt]], 1)]  # centre fan
        for k in range(n_rings):
            pairs_list.append(np.stack([ring[k], ring[k][nxt]], 1))  # along the ring
            if k + 1 < n_rings:
                a, b, cc, d = ring[k], ring[k][nxt], ring[k + 1][nxt], ring[k + 1]  # a cell: a d cc b CCW
                pairs_list += [np.stack([a, d], 1), np.stack([a, cc], 1), np.stack([b, d], 1)]
                tris += [np.stack([a, d, cc], 1), np.stack([a, cc, b], 1)]
        pairs, triangles = np.concatenate(pairs_list), np.concatenate(tris)
        outline = ring[-1]
    k_, d_ = _spring_defaults(m, stiffness, damping)
    particles = _particles(pos, m, particle_radius, "center, radius, segments", pairs)
    sources = _sources(stiffness, damping, amount, "center, radius")
    if amount is None:
        amount = _default_amount(mass, abs(signed_area(rim)), sources.gas)
    return _finish(world, particles, outline, pairs, models, k_, d_, amount,
                   (match_stiffness, match_damping), wobble_damping, triangles, compliance=compliance,
                   body=body, max_strain=tear, skin=_skin(models, m, stiffness, damping),
                   sources=sources)


def ball(world: World, center: Sequence[float] = (0.0, 2.0), radius: float = 0.5,
         segments: int = 20, mass: float = 1.0, stiffness: float | None = None,
         damping: float | None = None, amount: float | None = None, inflation: float = 0.05,
         wobble_damping: float = 16.0, particle_radius: float = 0.0,
        *, category: int = 1, mask: int = 0xFFFFFFFF, self_collision: bool = False,
        max_strain: float | None = None,
        friction: float = 0.5, restitution: float = 0.0,
        rolling_resistance: float = ROLLING_RESISTANCE) -> int:
    """A pressurised ring (seed 004): edge springs and gas inside.

    Defaults: the gas pressure P = 2 m g / radius (the ball carries about four
    times its weight before it flattens); the edge springs are prestressed so the
    ball rests at its built size without gravity, and are as stiff as it takes for
    the gas to stretch them by ``inflation`` (never stiffer than the world's substep
    keeps stable: a firmer ball's skin stretches more, and more gas than it can hold
    is refused, naming ``amount``).
    """
    body = _body(category, mask, self_collision, friction, restitution, rolling_resistance)
    tear = _tear(max_strain, {"pressure"})
    _optional(stiffness=stiffness, damping=damping, amount=amount)
    _check(wobble_damping=wobble_damping, particle_radius=particle_radius)
    if validate.integer("segments", segments, 3) < 6:
        raise ValueError(f"segments must be >= 6 for a ball, got {segments}")
    s = validate.positive("inflation", inflation)
    if not s < MAX_INFLATION:
        raise ValueError(f"inflation must be < {MAX_INFLATION} (the gas would stretch the skin to "
                         f"more than twice its rest length), got {s}")
    pos, m = _ring(center, radius, segments, mass)
    i = np.arange(len(pos))
    k, d = _spring_defaults(m, stiffness, damping)
    particles = _particles(pos, m, particle_radius, "center, radius, segments",
                           np.stack([i, np.roll(i, -1)], 1))
    sources = _sources(stiffness, damping, amount, "center, radius")
    if amount is None:
        amount = _default_amount(mass, abs(signed_area(pos)), sources.gas)
    return _finish(world, particles, i, np.zeros((0, 2), dtype=np.int64), {"pressure"}, k, d, amount,
                   (0.0, 0.0), wobble_damping, body=body, max_strain=tear,
                   skin=(m, s, damping) if stiffness is None else None, sources=sources)


def blob(world: World, center: Sequence[float] = (0.0, 2.0), radius: float = 0.4,
         segments: int = 10, mass: float = 1.0, stiffness: float | None = None,
         damping: float | None = None, particle_radius: float = 0.0,
        *, category: int = 1, mask: int = 0xFFFFFFFF, self_collision: bool = False,
        max_strain: float | None = None,
        friction: float = 0.5, restitution: float = 0.0,
        rolling_resistance: float = ROLLING_RESISTANCE) -> int:
    """A ring plus a centre particle, every pair joined by a spring (seed 003)."""
    body = _body(category, mask, self_collision, friction, restitution, rolling_resistance)
    tear = _tear(max_strain, {"springs"})
    _optional(stiffness=stiffness, damping=damping)
    _check(particle_radius=particle_radius)
    pos, _ = _ring(center, radius, segments, mass)
    n = len(pos) + 1
    _count("segments", n, n * (n - 1) // 2)
    m = float(mass) / n
    k, d = _spring_defaults(m, stiffness, damping)
    pairs = np.stack(np.triu_indices(n, 1), 1)
    particles = _particles(np.concatenate([pos, validate.vector("center", center, 2)[None]]), m,
                           particle_radius, "center, radius, segments", pairs)
    k_each = k * 4.0 / (n - 1)  # many springs per particle: keep the total stiffness stable
    ring = np.arange(n - 1)
    fan = np.stack([np.full(n - 1, n - 1), ring, np.roll(ring, -1)], 1)
    areas = _orient(particles.pos[fan], k, d, names=_sources(stiffness, damping))
    entities = _add(world, particles)
    with _or_undo(world, entities):
        world.add_springs(entities[pairs], stiffness=k_each, damping=d * 4.0 / (n - 1), max_strain=tear)
        if areas is not None:
            world.add_area_springs(entities[fan], *areas)
        return world.add_body(entities[:-1].tolist(), particles=entities.tolist(), **body)


def rope(world: World, start: Sequence[float] = (0.0, 2.0), end: Sequence[float] = (1.0, 2.0),
         segments: int = 10, mass: float = 1.0, stiffness: float | None = None,
         damping: float | None = None, bending: float = 0.0, pin: str | Sequence[str] | None = ("start",),
         model: str = "springs", compliance: float = 0.0, particle_radius: float = 0.0,
        *, category: int = 1, mask: int = 0xFFFFFFFF, self_collision: bool = False,
        max_strain: float | None = None,
        friction: float = 0.5, restitution: float = 0.0,
        rolling_resistance: float = ROLLING_RESISTANCE) -> int:
    """A chain from ``start`` to ``end`` of springs (``model="springs"``) or XPBD distance
    constraints (``model="xpbd"``, ``compliance`` m/N, 0: inextensible); ``bending`` (N/m)
    adds springs that skip one particle. ``pin``: the ends held in place: "start", "end",
    both as a sequence (``("start", "end")``), or None (or ``()``) for a free rope."""
    body = _body(category, mask, self_collision, friction, restitution, rolling_resistance)
    if not isinstance(model, str) or model not in ("springs", "xpbd"):
        raise ValueError(f"model must be 'springs' or 'xpbd' for a rope, got {model!r}")
    _optional(stiffness=stiffness, damping=damping)
    _check(bending=bending, compliance=compliance, particle_radius=particle_radius)
    tear = _tear(max_strain, {model} if bending == 0 else {model, "springs"})
    dim = world.dim if isinstance(world, World) else 2
    a = validate.vector("start", start, dim)
    b = validate.vector("end", end, dim)
    n = validate.integer("segments", segments, 1) + 1
    _count("segments", n, 2 * n)
    ends = _rope_pins(pin)
    m = validate.positive("mass", mass) / n
    k, d = _spring_defaults(m, stiffness, damping)
    t = np.linspace(0.0, 1.0, n)[:, None]
    pinned = np.zeros(n, dtype=bool)
    pinned[0], pinned[-1] = "start" in ends, "end" in ends
    i = np.arange(n - 1)
    entities = _add(world, _particles(a + t * (b - a), m, particle_radius, "start, end, segments",
                                      np.stack([i, i + 1], 1), pinned))
    links = entities[np.stack([i, i + 1], 1)]
    with _or_undo(world, entities):
        if model == "xpbd":
            world.add_distance_constraints(links, validate.nonnegative("compliance", compliance))
        else:
            world.add_springs(links, stiffness=k, damping=d, max_strain=tear)
        if validate.nonnegative("bending", bending) > 0 and n > 2:
            j = np.arange(n - 2)
            world.add_springs(entities[np.stack([j, j + 2], 1)], stiffness=bending, damping=d,
                              max_strain=tear)
        if dim == 3:  # a rope has no surface
            return world.add_body(np.zeros((0, 3), np.int64), particles=entities.tolist(),
                                  **{**body, "rolling_resistance": 0.0})
        return world.add_body(entities.tolist(), **body)


def _rope_pins(pin: Any) -> set[str]:
    """A rope's ``pin``: None, "start", "end", or a sequence of those names."""
    if pin is None:
        return set()
    names = [pin] if isinstance(pin, str) else pin
    if not isinstance(names, (list, tuple)):
        raise ValueError(f"pin must be None, 'start', 'end' or a sequence of those, got {pin!r}")
    for name in names:
        if not isinstance(name, str) or name not in ("start", "end"):
            raise ValueError(f"pin may hold 'start' and 'end', got {name!r}")
    return set(names)


def cloth(world: World, center: Sequence[float] = (0.0, 2.0), size: Sequence[float] = (1.0, 1.0),
          cells: Sequence[int] = (10, 10), pin: str | Sequence[int] | None = "top corners",
          model: str = "xpbd", mass: float = 0.5, compliance: float = 1e-6,
          stiffness: float | None = None, damping: float | None = None,
          particle_radius: float = 0.0,
        *, category: int = 1, mask: int = 0xFFFFFFFF, self_collision: bool = False,
        max_strain: float | None = None,
        friction: float = 0.5, restitution: float = 0.0,
        rolling_resistance: float = ROLLING_RESISTANCE) -> int:
    """A net of (cells + 1)^2 particles with structural and shear links, hanging from pinned points.

    ``pin``: "top corners", "top" (the whole top row), "none" (or None), or particle indices
    (row-major, x fastest, row 0 at the bottom). ``model``: "xpbd" (distance
    constraints of ``compliance``) or "springs". ``mass`` is the whole cloth's (kg), shared
    equally. 2D only. In 2D a net of inextensible XPBD links with shear braces is a rigid
    plate: pinned along a row or at two corners it neither sags nor billows (``"springs"``
    does).
    """
    body = _body(category, mask, self_collision, friction, restitution, rolling_resistance)
    if not isinstance(model, str) or model not in ("springs", "xpbd"):
        raise ValueError(f"model must be 'springs' or 'xpbd' for a cloth, got {model!r}")
    tear = _tear(max_strain, {model})
    _optional(stiffness=stiffness, damping=damping)
    _check(compliance=compliance, particle_radius=particle_radius)
    c = validate.vector("center", center, 2)
    w, h = validate.vector("size", size, 2)
    if not (w > 0 and h > 0):
        raise ValueError("size must be > 0 in both directions")
    nx, ny = _cells(cells)
    _count("cells", nx * ny, 4 * nx * ny)
    idx = np.arange(nx * ny).reshape(ny, nx)
    pinned_rows = cloth_pins(pin, idx)
    m = validate.positive("mass", mass) / (nx * ny)
    k, d = _spring_defaults(m, stiffness, damping)
    gx, gy = np.linspace(-w / 2, w / 2, nx), np.linspace(-h / 2, h / 2, ny)
    pos = np.stack(np.meshgrid(gx, gy), axis=-1).reshape(-1, 2) + c
    pinned = np.zeros(nx * ny, dtype=bool)
    pinned[pinned_rows] = True
    pairs = grid_pairs(nx, ny, by_particle=model == "springs")  # (see _GRID_ORDER)
    particles = _particles(pos, m, particle_radius, "center, size", pairs, pinned)
    outline = np.concatenate([idx[0, :], idx[1:, -1], idx[-1, -2::-1], idx[-2:0:-1, 0]])
    return _finish(world, particles, outline, pairs, {model}, k, d, None, (0.0, 0.0),
                   compliance=compliance, body=body, max_strain=tear,
                   sources=_sources(stiffness, damping))


def cloth_pins(pin: Any, idx: np.ndarray) -> np.ndarray:
    """A cloth's pinned particles: ``pin`` "top corners", "top", "none" (or None) or indices
    into the (ny, nx) grid ``idx`` (row-major, row 0 at the bottom)."""
    pin = "none" if pin is None else pin
    if isinstance(pin, str):
        chosen = {"top corners": [idx[-1, 0], idx[-1, -1]], "top": list(idx[-1]), "none": []}
        if pin not in chosen:
            raise ValueError(f"pin must be 'top corners', 'top', 'none' or indices, got {pin!r}")
        return np.array(chosen[pin], dtype=np.int64)
    rows = validate.array("pin", pin, (None,), integral=True)
    if len(rows) and (rows.min() < 0 or rows.max() >= idx.size):
        raise ValueError(f"pin indices must be in [0, {idx.size})")
    return rows


def polygon(world: World, vertices: Any, model: str | Sequence[str] = "springs",
            mass: float = 1.0, segment: float | None = None, spacing: float | None = None,
            stiffness: float | None = None, damping: float | None = None, amount: float | None = None,
            match_stiffness: float = 2000.0, match_damping: float = 20.0,
            wobble_damping: float = 8.0, compliance: float = 1e-5, area_compliance: float = 0.0,
            particle_radius: float = 0.0,
        *, category: int = 1, mask: int = 0xFFFFFFFF, self_collision: bool = False,
        max_strain: float | None = None,
        friction: float = 0.5, restitution: float = 0.0,
        rolling_resistance: float = ROLLING_RESISTANCE) -> int:
    """Any simple polygon outline (counter-clockwise or not), filled with a mesh.

    Edges longer than ``segment`` (m) are subdivided first (None: they are not). Inside,
    particles on a triangular lattice ``spacing`` apart (None, the default: the outline's
    mean edge length; none nearer the outline than half that) are joined to the outline by a
    constrained Delaunay triangulation (pythoncdt), so the triangles are well shaped
    and tile the outline exactly. The triangles' edges and the outline's become
    springs (``"springs"``) or distance constraints (``"xpbd"``, which also keeps
    every triangle's area); ``"pressure"`` alone is the outline (a gas bag),
    and ``"shape_matching"`` works as for the other builders. Mass is shared
    equally by the particles.
    """
    body = _body(category, mask, self_collision, friction, restitution, rolling_resistance)
    models = _framed(_models(model))
    tear = _tear(max_strain, models)
    _optional(stiffness=stiffness, damping=damping, amount=amount)
    _check(match_stiffness=match_stiffness, match_damping=match_damping, wobble_damping=wobble_damping,
           compliance=compliance, area_compliance=area_compliance, particle_radius=particle_radius)
    v = validate.array("vertices", vertices, (None, 2))
    if len(v) < 3:
        raise ValueError(f"vertices must have at least 3 points, got {len(v)}")
    if segment is not None:
        step = validate.positive("segment", segment)
        with np.errstate(over="ignore"):  # (inf pieces: refused)
            pieces = np.ceil(np.linalg.norm(np.roll(v, -1, axis=0) - v, axis=1) / step).sum()
        if not pieces <= MAX_OUTLINE_POINTS:
            raise ValueError(f"segment {step:g} m would give the outline {pieces:.3g} points "
                             f"(at most {MAX_OUTLINE_POINTS:,}): choose a longer segment")
        v = _subdivide(v, step)
    if len(v) > MAX_OUTLINE_POINTS:
        raise ValueError(f"vertices must be at most {MAX_OUTLINE_POINTS:,} points, got {len(v)}")
    validate.extent("vertices", v)
    area = signed_area(v)
    if not abs(area) > 0.0:
        raise ValueError("vertices enclose no area")
    if area < 0.0:
        v = v[::-1].copy()
    if _self_intersects(v):
        raise ValueError("vertices must form a simple polygon (its edges cross)")
    ring = np.arange(len(v))
    outline_edges = np.stack([ring, np.roll(ring, -1)], axis=1)
    if spacing is None:
        spacing = float(np.linalg.norm(v - np.roll(v, -1, axis=0), axis=1).mean())
    inner = _lattice(v, validate.positive("spacing", spacing))
    pos = np.concatenate([v, inner])
    tri = _triangulate(pos, outline_edges, "vertices, segment, spacing")
    edges = np.unique(np.sort(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]],
                                              outline_edges, _braces(tri)]), axis=1), axis=0)
    m = validate.positive("mass", mass) / len(pos)
    k, d = _spring_defaults(m, stiffness, damping)
    particles = _particles(pos, m, particle_radius, "vertices, segment, spacing", edges)
    sources = _sources(stiffness, damping, amount, "vertices")
    if amount is None:
        amount = _default_amount(mass, abs(area), sources.gas)
    return _finish(world, particles, ring, edges, models, k, d, amount,
                   (match_stiffness, match_damping), wobble_damping, tri, compliance, area_compliance,
                   body, tear, _skin(models, m, stiffness, damping), sources)


def _inside(v: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """Which of ``pts`` lie inside the closed outline ``v`` (crossing number)."""
    a, b = v[None, :, :], np.roll(v, -1, axis=0)[None, :, :]
    x, y = pts[:, None, 0], pts[:, None, 1]
    straddle = (a[..., 1] > y) != (b[..., 1] > y)
    with np.errstate(divide="ignore", invalid="ignore"):
        cross_x = a[..., 0] + (y - a[..., 1]) * (b[..., 0] - a[..., 0]) / (b[..., 1] - a[..., 1])
    out: np.ndarray = ((straddle & (x < cross_x)).sum(axis=1) % 2) == 1
    return out


def _clear_of(v: np.ndarray, pts: np.ndarray, distance: float) -> np.ndarray:
    """Which of ``pts`` are at least ``distance`` from every edge of the outline ``v``."""
    a, e = v[None, :, :], (np.roll(v, -1, axis=0) - v)[None, :, :]
    t = np.clip((((pts[:, None, :] - a) * e).sum(axis=2)) / (e * e).sum(axis=2), 0.0, 1.0)
    out: np.ndarray = np.linalg.norm(pts[:, None, :] - (a + t[..., None] * e), axis=2).min(axis=1) >= distance
    return out


def _lattice(v: np.ndarray, spacing: float) -> np.ndarray:
    """Points of a triangular lattice ``spacing`` apart inside the outline ``v``, none nearer
    it than half the spacing (tested a block of points at a time)."""
    lo, hi = v.min(axis=0), v.max(axis=0)
    dy = spacing * math.sqrt(3.0) / 2.0
    estimate = abs(signed_area(v)) / spacing / dy  # (spacing * dy underflows to 0 for a tiny spacing)
    if estimate > MAX_MESH_POINTS:
        raise ValueError(f"spacing {spacing:g} m would fill the polygon with about {estimate:.3g} "
                         f"particles (at most {MAX_MESH_POINTS:,}): choose a larger spacing")
    rows = np.arange(lo[1] + dy / 2, hi[1], dy)
    xs = np.arange(lo[0] + spacing / 2, hi[0], spacing)
    gx, gy = np.meshgrid(xs, rows)
    gx = gx + np.where(np.arange(len(rows)) % 2 == 1, spacing / 2, 0.0)[:, None]
    pts = np.stack([gx.ravel(), gy.ravel()], axis=1)
    block = max(1, 1_000_000 // len(v))
    keep = [p[_clear_of(v, p, spacing / 2)] for p in
            (q[_inside(v, q)] for q in (pts[i : i + block] for i in range(0, len(pts), block)))]
    return np.concatenate([np.zeros((0, 2)), *keep])


def _triangulate(pos: np.ndarray, outline_edges: np.ndarray, names: str) -> np.ndarray:
    """Counter-clockwise triangles of the constrained Delaunay triangulation of ``pos`` with
    the outline's edges kept, inside the outline only; ValueError naming the arguments
    ``names`` that set ``pos`` if pythoncdt refuses it (points that round onto each other)."""
    import pythoncdt as cdt

    t = cdt.Triangulation(cdt.VertexInsertionOrder.AS_PROVIDED, cdt.IntersectingConstraintEdges.NOT_ALLOWED,
                          0.0)
    try:  # NumPy arrays are buffers; numpy's type stubs do not say so, hence the casts
        t.insert_vertices(cast(Any, np.ascontiguousarray(pos, dtype=np.float64)))
        t.insert_edges(cast(Any, np.ascontiguousarray(outline_edges, dtype=np.uintc)))
    except RuntimeError as exc:
        raise ValueError(f"{names}: the shape cannot be triangulated ({str(exc).splitlines()[0]})") from None
    t.erase_outer_triangles_and_holes()
    tri: np.ndarray = np.asarray(t.triangles_array()["vertices"], dtype=np.int64)
    return tri


def _braces(tri: np.ndarray) -> np.ndarray:
    """For every edge two triangles share, the pair of their opposite corners: a spring there
    must shrink for one triangle to fold over the other, so a mesh of springs resists turning
    inside out (as the diagonals of a box's cells do)."""
    sides = np.concatenate([tri[:, [0, 1, 2]], tri[:, [1, 2, 0]], tri[:, [2, 0, 1]]])  # edge + opposite
    key = np.sort(sides[:, :2], axis=1)
    order = np.lexsort((key[:, 1], key[:, 0]))
    key, opposite = key[order], sides[order, 2]
    shared = np.flatnonzero((key[1:] == key[:-1]).all(axis=1))
    return np.stack([opposite[shared], opposite[shared + 1]], axis=1)


def _subdivide(v: np.ndarray, segment: float) -> np.ndarray:
    """Insert points so that no edge is longer than ``segment``."""
    out = []
    for p, q in zip(v, np.roll(v, -1, axis=0), strict=True):
        pieces = max(1, math.ceil(float(np.linalg.norm(q - p)) / segment))
        t = np.arange(pieces)[:, None] / pieces
        out.append(p + t * (q - p))
    return np.concatenate(out)


def _self_intersects(v: np.ndarray) -> bool:
    """True if two non-adjacent edges of the closed outline ``v`` cross or touch."""
    n = len(v)
    p, q = v, np.roll(v, -1, axis=0)
    i, j = np.triu_indices(n, 2)
    keep = ~((i == 0) & (j == n - 1))  # the first and last edges share a vertex
    i, j = i[keep], j[keep]

    def orient(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.sign((b - a)[:, 0] * (c - a)[:, 1] - (b - a)[:, 1] * (c - a)[:, 0])
        return out

    o1, o2 = orient(p[i], q[i], p[j]), orient(p[i], q[i], q[j])
    o3, o4 = orient(p[j], q[j], p[i]), orient(p[j], q[j], q[i])
    collinear = (o1 == 0) & (o2 == 0)
    lo = np.maximum(np.minimum(p[i], q[i]), np.minimum(p[j], q[j]))
    hi = np.minimum(np.maximum(p[i], q[i]), np.maximum(p[j], q[j]))
    overlap = (lo <= hi).all(axis=1)  # collinear edges meet only if their extents overlap
    crossing = (o1 * o2 <= 0) & (o3 * o4 <= 0) & ~collinear
    return bool((crossing | (collinear & overlap)).any())
