"""Builders: a few arguments in, a stable soft body out (``pysoft.build.box(world, ...)``).

Every builder returns the body entity. ``model`` picks how the body holds
its shape: ``"springs"`` (a spring lattice), ``"pressure"`` (gas inside the
outline), ``"shape_matching"`` (pull toward the best-fit rest shape), or
several of them as a tuple or ``"springs+pressure"``. Defaults are stable at
the World's default dt (1/60 s) and substeps (8): spring stiffness scales with
particle mass (k/m = 5000 s^-2) and damping gives a damping ratio of about 0.2.
A gas body bounces almost elastically (its edge springs barely change length
as it flattens), so pressure bodies without shape matching also get
``wobble_damping`` (1/s): ShapeMatching with stiffness 0, which damps motion
relative to the body's rigid motion and leaves its flight and spin alone.
``"xpbd"`` bodies need XPBD constraints, which are not implemented yet: asking
for them raises ValueError rather than building something else.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from pysoft import validate
from pysoft.components import Pressure, ShapeMatching
from pysoft.scenes import grid_pairs
from pysoft.world import World

MODELS = ("springs", "pressure", "shape_matching")
STIFFNESS_PER_KG = 5000.0  # N/m per kg of particle mass: stable at h = 1/480 s


def _models(model: str | Sequence[str]) -> set[str]:
    names = model.split("+") if isinstance(model, str) else list(model)
    for name in names:
        if name == "xpbd":
            raise ValueError("model 'xpbd' needs XPBD constraints, which pysoft does not have yet")
        if name not in MODELS:
            raise ValueError(f"model must be one or more of {MODELS}, got {name!r}")
    if not names:
        raise ValueError("model must name at least one model")
    return set(names)


def _spring_defaults(mass: float, stiffness: float | None, damping: float | None) -> tuple[float, float]:
    k = STIFFNESS_PER_KG * mass if stiffness is None else validate.nonnegative("stiffness", stiffness)
    c = 0.4 * math.sqrt(k * mass) if damping is None else validate.nonnegative("damping", damping)
    return k, c


def _finish(world: World, entities: np.ndarray, outline: np.ndarray, pairs: np.ndarray,
            models: set[str], k: float, c: float, amount: float | None, match: tuple[float, float],
            wobble_damping: float = 0.0) -> int:
    """Springs (the lattice if asked for; outline edges always, for pressure bodies) and the body."""
    lattice = pairs if "springs" in models else np.zeros((0, 2), dtype=np.int64)
    if "pressure" in models and "springs" not in models:  # a gas bag still needs a skin
        lattice = np.stack([outline, np.roll(outline, -1)], axis=1)
    if len(lattice):
        world.add_springs(entities[lattice], stiffness=k, damping=c)
    chosen: list[Any] = []
    if "pressure" in models:
        chosen.append(Pressure(0.0 if amount is None else amount))
    if "shape_matching" in models:
        chosen.append(ShapeMatching(*match))
    elif "pressure" in models and validate.nonnegative("wobble_damping", wobble_damping) > 0:
        chosen.append(ShapeMatching(stiffness=0.0, damping=wobble_damping))
    return world.add_body(entities[outline].tolist(), *chosen, particles=entities.tolist())


def box(world: World, center: Sequence[float] = (0.0, 2.0), size: Sequence[float] = (1.0, 1.0),
        cells: Sequence[int] = (4, 4), model: str | Sequence[str] = "springs", mass: float = 1.0,
        stiffness: float | None = None, damping: float | None = None, amount: float | None = None,
        match_stiffness: float = 2000.0, match_damping: float = 20.0, wobble_damping: float = 8.0,
        radius: float = 0.0) -> int:
    """A box of (cells + 1) particles per side with structural and diagonal springs (seed 002).

    ``mass`` is the whole body's (kg); ``amount`` (pressure, N m) defaults to
    4 * mass * g * height, so the gas holds the box up against its own weight.
    A pressure-only box is its outline alone (interior particles would float).
    """
    models = _models(model)
    c = validate.vector("center", center, 2)
    w, h = validate.vector("size", size, 2)
    if not (w > 0 and h > 0):
        raise ValueError("size must be > 0 in both directions")
    nx, ny = (validate.integer("cells", n, 1) + 1 for n in cells)
    m = validate.positive("mass", mass) / (nx * ny)
    k, d = _spring_defaults(m, stiffness, damping)
    gx, gy = np.linspace(-w / 2, w / 2, nx), np.linspace(-h / 2, h / 2, ny)
    pos = np.stack(np.meshgrid(gx, gy), axis=-1).reshape(-1, 2) + c
    idx = np.arange(nx * ny).reshape(ny, nx)
    outline = np.concatenate([idx[0, :], idx[1:, -1], idx[-1, -2::-1], idx[-2:0:-1, 0]])
    pairs = grid_pairs(nx, ny)
    if models == {"pressure"}:  # a gas bag: only the outline carries mass
        pos, pairs, outline = pos[outline], np.zeros((0, 2), dtype=np.int64), np.arange(len(outline))
        m = mass / len(outline)
        k, d = _spring_defaults(m, stiffness, damping)
    entities = np.asarray(world.add_particles(pos, masses=m, radii=radius), dtype=np.int64)
    if amount is None:
        amount = 4.0 * mass * 9.81 * h
    return _finish(world, entities, outline, pairs, models, k, d, amount,
                   (match_stiffness, match_damping), wobble_damping)


def _ring(world: World, center: Sequence[float], radius: float, segments: int, mass: float,
          particle_radius: float) -> tuple[np.ndarray, float, float]:
    c = validate.vector("center", center, 2)
    r = validate.positive("radius", radius)
    n = validate.integer("segments", segments, 3)
    m = validate.positive("mass", mass) / n
    t = 2 * np.pi * np.arange(n) / n
    pos = c + r * np.stack([np.cos(t), np.sin(t)], axis=1)
    return np.asarray(world.add_particles(pos, masses=m, radii=particle_radius), dtype=np.int64), m, r


def circle(world: World, center: Sequence[float] = (0.0, 2.0), radius: float = 0.5,
           segments: int = 16, model: str | Sequence[str] = "springs", mass: float = 1.0,
           stiffness: float | None = None, damping: float | None = None, amount: float | None = None,
           match_stiffness: float = 2000.0, match_damping: float = 20.0, wobble_damping: float = 8.0,
           particle_radius: float = 0.0) -> int:
    """A ring with criss-cross springs (seed 002): each particle to its neighbours at 1 and 2
    steps and to the opposite one."""
    models = _models(model)
    if segments < 4:
        raise ValueError(f"segments must be >= 4 for a circle, got {segments}")
    entities, m, r = _ring(world, center, radius, segments, mass, particle_radius)
    k, d = _spring_defaults(m, stiffness, damping)
    n = len(entities)
    i = np.arange(n)
    pairs = np.concatenate([np.stack([i, (i + 1) % n], 1), np.stack([i, (i + 2) % n], 1),
                            np.stack([i[: n // 2], i[: n // 2] + n // 2], 1)])
    if amount is None:
        amount = 4.0 * mass * 9.81 * 2 * r
    return _finish(world, entities, i, pairs, models, k, d, amount, (match_stiffness, match_damping),
                   wobble_damping)


def ball(world: World, center: Sequence[float] = (0.0, 2.0), radius: float = 0.5,
         segments: int = 20, mass: float = 1.0, stiffness: float | None = None,
         damping: float | None = None, amount: float | None = None, inflation: float = 0.05,
         wobble_damping: float = 8.0, particle_radius: float = 0.0) -> int:
    """A pressurised ring (seed 004): edge springs and gas inside.

    Defaults: the gas pressure P = 2 m g / radius (the ball carries about four
    times its weight before it flattens), and the edge springs are as stiff as
    it takes for the ball to settle, without gravity, at ``(1 + inflation)``
    times ``radius``: pressure balances the springs' tension where
    P l cos(pi/N) = 2 k (l - L0) sin(pi/N).
    """
    if segments < 6:
        raise ValueError(f"segments must be >= 6 for a ball, got {segments}")
    s = validate.positive("inflation", inflation)
    entities, m, r = _ring(world, center, radius, segments, mass, particle_radius)
    n = len(entities)
    i = np.arange(n)
    rest_edge = 2 * r * math.sin(math.pi / n)
    edge = (1 + s) * rest_edge
    area = 0.5 * n * ((1 + s) * r) ** 2 * math.sin(2 * math.pi / n)
    pressure = 2.0 * mass * 9.81 / r if amount is None else validate.nonnegative("amount", amount) / area
    if stiffness is None:
        stiffness = pressure * edge * math.cos(math.pi / n) / (2 * (edge - rest_edge) * math.sin(math.pi / n))
    k, d = _spring_defaults(m, stiffness, damping)
    if amount is None:
        amount = pressure * area
    return _finish(world, entities, i, np.zeros((0, 2), dtype=np.int64), {"pressure"}, k, d, amount,
                   (0.0, 0.0), wobble_damping)


def blob(world: World, center: Sequence[float] = (0.0, 2.0), radius: float = 0.4,
         segments: int = 10, mass: float = 1.0, stiffness: float | None = None,
         damping: float | None = None, particle_radius: float = 0.0) -> int:
    """A ring plus a centre particle, every pair joined by a spring (seed 003)."""
    entities, m, _ = _ring(world, center, radius, segments, mass * segments / (segments + 1),
                           particle_radius)
    hub = world.add_particle(tuple(validate.vector("center", center, 2)), mass=m, radius=particle_radius)
    entities = np.append(entities, hub)
    k, d = _spring_defaults(m, stiffness, damping)
    n = len(entities)
    a, b = np.triu_indices(n, 1)
    k_each = k * 4.0 / (n - 1)  # many springs per particle: keep the total stiffness stable
    world.add_springs(entities[np.stack([a, b], 1)], stiffness=k_each, damping=d * 4.0 / (n - 1))
    return world.add_body(entities[:-1].tolist(), particles=entities.tolist())


def rope(world: World, start: Sequence[float] = (0.0, 2.0), end: Sequence[float] = (1.0, 2.0),
         segments: int = 10, mass: float = 1.0, stiffness: float | None = None,
         damping: float | None = None, bending: float = 0.0, pin: Sequence[str] = ("start",),
         particle_radius: float = 0.0) -> int:
    """A chain of springs from ``start`` to ``end``; ``bending`` (N/m) adds springs that skip one
    particle; ``pin`` may name "start" and/or "end"."""
    a = validate.vector("start", start, 2)
    b = validate.vector("end", end, 2)
    n = validate.integer("segments", segments, 1) + 1
    for p in pin:
        if p not in ("start", "end"):
            raise ValueError(f"pin may hold 'start' and 'end', got {p!r}")
    m = validate.positive("mass", mass) / n
    k, d = _spring_defaults(m, stiffness, damping)
    t = np.linspace(0.0, 1.0, n)[:, None]
    pinned = np.zeros(n, dtype=bool)
    pinned[0], pinned[-1] = "start" in pin, "end" in pin
    entities = np.asarray(world.add_particles(a + t * (b - a), masses=m, radii=particle_radius,
                                              pinned=pinned), dtype=np.int64)
    i = np.arange(n - 1)
    world.add_springs(entities[np.stack([i, i + 1], 1)], stiffness=k, damping=d)
    if validate.nonnegative("bending", bending) > 0 and n > 2:
        j = np.arange(n - 2)
        world.add_springs(entities[np.stack([j, j + 2], 1)], stiffness=bending, damping=d)
    return world.add_body(entities.tolist())
