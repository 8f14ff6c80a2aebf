"""The kernel registry and the thin wrappers over both backends.

One :class:`Kernel` entry per C kernel names its arguments (arrays with
symbolic shapes, then the counts derived from them, then scalars), the arrays
it writes, its parity tolerance, and how to generate sample arguments. The
parity tests and ``python -m pysoft bench`` iterate :data:`REGISTRY`.

:func:`bind` is the C boundary's middle layer: it checks dtype, shape and
contiguity once, turns the arrays into pointers once, and returns a call that
takes only the scalars, so a step's cost per kernel is one foreign call.
Systems and components never see cdata.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from pysoft import _native, twins

Shape = tuple[str | int, ...]
Sample = Callable[[np.random.Generator, int, int], dict[str, Any]]


@dataclass(frozen=True)
class Arg:
    """An array argument: name, dtype and symbolic shape."""

    name: str
    shape: Shape
    dtype: type = np.float64


@dataclass(frozen=True)
class Kernel:
    """One registry entry: the C symbol is ``ps_<name>``, the twin ``twins.<name>``."""

    name: str
    arrays: tuple[Arg, ...]
    counts: tuple[str, ...]
    scalars: tuple[str, ...]
    writes: tuple[str, ...]
    sample: Sample
    ulp: int = 0  # 0: bitwise parity; otherwise the documented ULP bound
    index_args: tuple[tuple[str, str], ...] = ()  # (index array, count it indexes)
    check: Callable[[dict[str, np.ndarray], dict[str, int]], None] | None = None  # extra checks

    @property
    def twin(self) -> Callable[..., Any]:
        fn: Callable[..., Any] = getattr(twins, self.name)
        return fn


def _vec(rng: np.random.Generator, n: int, dim: int, scale: float = 1.0) -> np.ndarray:
    return np.ascontiguousarray(rng.normal(0.0, scale, (n, dim)))


def _inv_mass(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    mass = rng.uniform(0.5, 2.0, n)
    inv = 1.0 / mass
    pinned = rng.random(n) < 0.2
    inv[pinned] = 0.0
    return mass, inv


def _particles(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    mass, inv = _inv_mass(rng, n)
    return {"pos": _vec(rng, n, dim), "vel": _vec(rng, n, dim), "force": _vec(rng, n, dim, 5.0),
            "mass": mass, "inv_mass": inv}


def _sample_gravity_drag(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    p = _particles(rng, n, dim)
    return {"force": p["force"], "vel": p["vel"], "mass": p["mass"], "inv_mass": p["inv_mass"],
            "gravity": rng.normal(0.0, 10.0, dim), "drag": float(rng.uniform(0.0, 0.5))}


def _sample_springs(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    p = _particles(rng, n, dim)
    m = 0 if n < 2 else 3 * n
    pairs = rng.integers(0, max(n, 1), (m, 2)).astype(np.int32)
    if m:
        pairs[pairs[:, 0] == pairs[:, 1], 1] = (pairs[pairs[:, 0] == pairs[:, 1], 0] + 1) % n
        # Coincident endpoints, exercised on purpose: copy a's position onto b.
        p["pos"][pairs[: m // 10, 1]] = p["pos"][pairs[: m // 10, 0]]
    rest = rng.uniform(0.0, 2.0, m)
    rest[: m // 7] = 0.0  # zero rest length (mouse springs)
    return {"force": p["force"], "pos": p["pos"], "vel": p["vel"], "pairs": pairs,
            "rest_length": rest, "stiffness": rng.uniform(1.0, 1e4, m),
            "damping": rng.uniform(0.0, 20.0, m)}


def _sample_step(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    p = _particles(rng, n, dim)
    return {"pos": p["pos"], "vel": p["vel"], "force": p["force"], "inv_mass": p["inv_mass"],
            "prev_pos": _vec(rng, n, dim), "h": 1.0 / 480.0}


def _sample_verlet_drift(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    return {**_sample_step(rng, n, dim), "vel_pred": _vec(rng, n, dim)}


def _sample_verlet_kick(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    s = _sample_step(rng, n, dim)
    return {"vel": s["vel"], "force0": s["force"], "force1": _vec(rng, n, dim, 5.0),
            "inv_mass": s["inv_mass"], "h": s["h"]}


def _sample_rk4_stage(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    s = _sample_step(rng, n, dim)
    return {"pos_out": _vec(rng, n, dim), "vel_out": _vec(rng, n, dim), "pos": s["pos"],
            "vel": s["vel"], "dpos": _vec(rng, n, dim), "force": s["force"],
            "inv_mass": s["inv_mass"], "c": 0.5 * s["h"]}


def _sample_rk4_combine(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    s = _sample_step(rng, n, dim)
    out = {"pos": s["pos"], "vel": s["vel"], "prev_pos": s["prev_pos"], "inv_mass": s["inv_mass"],
           "h": s["h"]}
    for i in range(1, 5):
        out[f"v{i}"] = _vec(rng, n, dim)
        out[f"f{i}"] = _vec(rng, n, dim, 5.0)
    return out


def _sample_xpbd_velocity(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    s = _sample_step(rng, n, dim)
    prev = s["pos"] + _vec(rng, n, dim, 0.01)
    return {"vel": s["vel"], "pos": s["pos"], "prev_pos": prev, "inv_mass": s["inv_mass"],
            "h": s["h"]}


def _sample_shapes(rng: np.random.Generator, dim: int) -> list[Any]:
    from pysoft import shapes

    out: list[Any] = [shapes.Plane((0.0, 1.0, 0.0)[:dim], -0.5)]
    out.append(shapes.Box(rng.normal(0.0, 0.5, dim), rng.uniform(0.05, 0.6, dim),
                          angle=float(rng.uniform(-3, 3))))
    out.append(shapes.Segment(rng.normal(0.0, 0.7, dim), rng.normal(0.0, 0.7, dim), 0.05))
    if dim == 2:
        t = np.sort(rng.uniform(0.0, 2 * np.pi, 24))
        out.append(shapes.Polygon(0.4 * np.stack([np.cos(t), np.sin(t)], axis=1) + rng.normal(0, 0.5, 2)))
        out.append(shapes.Disc(rng.normal(0.0, 0.5, 2), 0.3))
    else:
        out.append(shapes.Sphere(rng.normal(0.0, 0.5, 3), 0.3))
    return out


def collider_arrays(geometries: list[Any], dim: int) -> dict[str, np.ndarray]:
    """The collide kernel's collider arrays for a list of shape geometries (row order)."""
    k = len(geometries)
    counts = np.array([len(g.face_offset) for g in geometries], dtype=np.int32)
    caps = [(g.cap_a, g.cap_b) if g.cap_a is not None else (np.zeros(dim), np.zeros(dim))
            for g in geometries]
    return {
        "kind": np.array([g.kind for g in geometries], dtype=np.int32),
        "center": np.array([g.center for g in geometries]).reshape(k, dim),
        "rotation": np.array([g.rotation for g in geometries]).reshape(k, dim, dim),
        "face_start": (np.cumsum(counts) - counts).astype(np.int32), "face_count": counts,
        "face_normal": np.concatenate([np.zeros((0, dim))] + [g.face_normal for g in geometries]),
        "face_offset": np.concatenate([np.zeros(0)] + [g.face_offset for g in geometries]),
        "cap_a": np.array([c[0] for c in caps]).reshape(k, dim),
        "cap_b": np.array([c[1] for c in caps]).reshape(k, dim),
        "cap_radius": np.array([g.cap_radius for g in geometries]),
        "bound": np.array([g.bound for g in geometries]),
        "grow": np.array([g.grow for g in geometries]),
    }


def _sample_collide(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    p = _particles(rng, n, dim)
    colliders = collider_arrays([s.geometry(dim) for s in _sample_shapes(rng, dim)], dim)
    k = len(colliders["kind"])
    h = 1.0 / 480.0
    # Fast particles (up to ~60 m/s): many cross thin shapes within one substep.
    prev = p["pos"] - h * rng.normal(0.0, 30.0, (n, dim))
    if n >= 8:
        # Exactly on a box face, on a box corner, on the floor, on the disc's axis.
        half, c, R = None, colliders["center"][1], colliders["rotation"][1]
        half = colliders["face_offset"][colliders["face_start"][1]:][:dim]
        p["pos"][0] = c + R @ np.concatenate([[half[0]], np.zeros(dim - 1)])
        p["pos"][1] = c + R @ half
        p["pos"][2, 1] = -0.5
        p["pos"][3] = colliders["center"][k - 1]
        prev[:4] = p["pos"][:4]
    angular = np.zeros((k, 3))
    angular[1, 2] = 1.5  # a spinning box
    return {"pos": p["pos"], "vel": p["vel"], "contact_collider": np.full(n, -1, dtype=np.int32),
            "contact_normal": np.zeros((n, dim)), "contact_impulse": np.zeros(n), "prev_pos": prev,
            "radius": rng.uniform(0.0, 0.05, n), "mass": p["mass"], "inv_mass": p["inv_mass"],
            **colliders, "velocity": rng.normal(0.0, 1.0, (k, dim)), "angular_velocity": angular,
            "restitution": rng.uniform(0.0, 1.0, k), "friction": rng.uniform(0.0, 1.5, k),
            "keep": np.exp(-rng.uniform(0.0, 5.0, k) * h), "iterations": dim, "h": h,
            "rest_speed": 0.25}


def _sample_radial_gravity(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    p = _particles(rng, n, dim)
    w = 4
    centers = rng.normal(0.0, 1.0, (w, dim))
    if n:
        p["pos"][0] = centers[0]  # a particle exactly at a well's centre
    return {"force": p["force"], "pos": p["pos"], "mass": p["mass"], "inv_mass": p["inv_mass"],
            "well_center": centers, "well_strength": rng.uniform(-5.0, 50.0, w),
            "well_falloff": np.arange(w, dtype=np.int32), "well_min_distance": rng.uniform(0.05, 0.5, w)}


def _check_collide(arrays: dict[str, np.ndarray], sizes: dict[str, int]) -> None:
    kind, start, count = arrays["kind"], arrays["face_start"], arrays["face_count"]
    if ((kind != 0) & (kind != 1)).any():
        raise ValueError("collide: kind must be 0 (polytope) or 1 (capsule)")
    if (start < 0).any() or (count < 0).any() or (start.astype(np.int64) + count > sizes["nfaces"]).any():
        raise ValueError("collide: face_start/face_count reach outside face_normal")


def _check_wells(arrays: dict[str, np.ndarray], sizes: dict[str, int]) -> None:
    falloff = arrays["well_falloff"]
    if ((falloff < 0) | (falloff > 3)).any():
        raise ValueError("radial_gravity: well_falloff must be 0..3")


def _bodies(rng: np.random.Generator, n: int, nb: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``nb`` bodies of 3..12 rows each from ``n`` particles (rows may be shared)."""
    counts = rng.integers(3, 13, nb).astype(np.int32) if n >= 3 else np.zeros(0, dtype=np.int32)
    starts = (np.cumsum(counts) - counts).astype(np.int32)
    rows = rng.integers(0, max(n, 1), int(counts.sum())).astype(np.int32)
    return rows, starts, counts


def _ring_positions(rng: np.random.Generator, p: dict[str, Any], rows: np.ndarray, starts: np.ndarray,
                    counts: np.ndarray) -> None:
    """Put each body's rows on a noisy counter-clockwise ring (distinct rows per body)."""
    for s, c in zip(starts, counts, strict=True):
        body = np.unique(rows[s : s + c])
        rows[s : s + c] = np.resize(body, c)
        t = np.linspace(0.0, 2 * np.pi, len(body), endpoint=False)
        ring = np.stack([np.cos(t), np.sin(t)], axis=1) * rng.uniform(0.3, 1.0) + rng.normal(0, 2, 2)
        p["pos"][body, :2] = ring + rng.normal(0.0, 0.02, ring.shape)


def _sample_pressure(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    p = _particles(rng, n, 2)
    rows, starts, counts = _bodies(rng, n, max(1, n // 8))
    _ring_positions(rng, p, rows, starts, counts)
    nb = len(counts)
    min_area = rng.uniform(0.0, 0.05, nb)
    if nb > 1:
        min_area[0] = 10.0  # a crushed body: the floor on the area decides
    return {"force": p["force"], "pos": p["pos"], "outline": rows, "body_start": starts,
            "body_count": counts, "amount": rng.uniform(0.0, 50.0, nb), "min_area": min_area}


def _sample_shape_match(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    p = _particles(rng, n, 2)
    rows, starts, counts = _bodies(rng, n, max(1, n // 8))
    _ring_positions(rng, p, rows, starts, counts)
    nb = len(counts)
    rest = rng.normal(0.0, 0.5, (len(rows), 2))
    if nb:
        rest[starts[0] : starts[0] + counts[0]] = 0.0  # a degenerate rest shape: no rotation
    return {"force": p["force"], "pos": p["pos"], "vel": p["vel"], "mass": p["mass"],
            "inv_mass": p["inv_mass"], "members": rows, "rest": rest, "body_start": starts,
            "body_count": counts, "stiffness": rng.uniform(0.0, 500.0, nb),
            "damping": rng.uniform(0.0, 10.0, nb)}


def _check_bodies(index: str) -> Callable[[dict[str, np.ndarray], dict[str, int]], None]:
    def check(arrays: dict[str, np.ndarray], sizes: dict[str, int]) -> None:
        start, count, idx = arrays["body_start"], arrays["body_count"], arrays[index]
        if (count < 0).any() or (start < 0).any() or (start.astype(np.int64) + count > len(idx)).any():
            raise ValueError(f"body_start/body_count reach outside {index}")
        if idx.size and (idx.min() < 0 or idx.max() >= sizes["n"]):
            raise ValueError(f"{index} holds rows outside [0, {sizes['n']})")
        if sizes.get("dim", 2) != 2 and count.any():
            raise ValueError("body models are 2D for now (dim must be 2)")

    return check


def _colored(rows: np.ndarray) -> dict[str, np.ndarray]:
    from pysoft.coloring import batches

    order, batch_start = batches(rows)
    return {"order": order, "batch_start": batch_start}


def _sample_xpbd_distance(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    s = _sample_step(rng, n, dim)
    m = 0 if n < 2 else 2 * n
    pairs = rng.integers(0, max(n, 1), (m, 2)).astype(np.int32)
    if m:
        same = pairs[:, 0] == pairs[:, 1]
        pairs[same, 1] = (pairs[same, 0] + 1) % n
        s["pos"][pairs[: m // 10, 1]] = s["pos"][pairs[: m // 10, 0]]  # coincident ends
    return {"pos": s["pos"], "vel": s["vel"], "lambda": rng.normal(0.0, 1e-3, m),
            "inv_mass": s["inv_mass"], "pairs": pairs,
            "rest_length": rng.uniform(0.0, 1.5, m), "compliance": np.where(
                rng.random(m) < 0.5, 0.0, rng.uniform(0.0, 1e-3, m)), **_colored(pairs), "h": s["h"]}


def _sample_xpbd_volume(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    s = _sample_step(rng, n, dim)
    k = dim + 1
    m = 0 if n < k else 2 * n
    simplices = np.array([rng.choice(n, k, replace=False) for _ in range(m)], dtype=np.int32).reshape(m, k)
    from pysoft.twins import _simplex

    rest = _simplex(s["pos"], simplices, dim)[0] * rng.uniform(0.8, 1.2, m)
    if m:
        s["pos"][simplices[0]] = s["pos"][simplices[0][0]]  # a collapsed simplex: no gradient
    return {"pos": s["pos"], "vel": s["vel"], "lambda": rng.normal(0.0, 1e-3, m),
            "inv_mass": s["inv_mass"], "simplices": simplices,
            "rest_volume": rest, "compliance": np.where(rng.random(m) < 0.5, 0.0, rng.uniform(0, 1e-3, m)),
            **_colored(simplices), "h": s["h"]}


def _check_batches(index: str) -> Callable[[dict[str, np.ndarray], dict[str, int]], None]:
    def check(arrays: dict[str, np.ndarray], sizes: dict[str, int]) -> None:
        order, start, m = arrays["order"], arrays["batch_start"], len(arrays[index])
        if len(order) != m or (m and not np.array_equal(np.sort(order), np.arange(m))):
            raise ValueError("order must be a permutation of the constraints")
        if len(start) < 1 or start[0] != 0 or start[-1] != m or (np.diff(start) < 0).any():
            raise ValueError("batch_start must rise from 0 to the constraint count")

    return check


def _sample_find_unstable(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    p = _particles(rng, n, dim)
    if n > 4:
        p["vel"][n // 2, 0] = np.nan
        p["pos"][n - 1, dim - 1] = np.inf
        p["vel"][n // 3] = 50.0
    return {"pos": p["pos"], "vel": p["vel"], "max_speed": 40.0}


_P = ("n", "dim")  # a per-particle vector array
_S = ("n",)  # a per-particle scalar array

REGISTRY: dict[str, Kernel] = {
    k.name: k
    for k in [
        Kernel("gravity_drag",
               (Arg("force", _P), Arg("vel", _P), Arg("mass", _S), Arg("inv_mass", _S),
                Arg("gravity", ("dim",))),
               ("n", "dim"), ("drag",), ("force",), _sample_gravity_drag),
        Kernel("springs",
               (Arg("force", _P), Arg("pos", _P), Arg("vel", _P),
                Arg("pairs", ("m", 2), np.int32), Arg("rest_length", ("m",)),
                Arg("stiffness", ("m",)), Arg("damping", ("m",))),
               ("m", "dim"), (), ("force",), _sample_springs, index_args=(("pairs", "n"),)),
        Kernel("pressure",
               (Arg("force", _P), Arg("pos", _P), Arg("outline", ("e",), np.int32),
                Arg("body_start", ("b",), np.int32), Arg("body_count", ("b",), np.int32),
                Arg("amount", ("b",)), Arg("min_area", ("b",))),
               ("b", "dim"), (), ("force",), _sample_pressure, check=_check_bodies("outline")),
        Kernel("shape_match",
               (Arg("force", _P), Arg("pos", _P), Arg("vel", _P), Arg("mass", _S), Arg("inv_mass", _S),
                Arg("members", ("e",), np.int32), Arg("rest", ("e", "dim")),
                Arg("body_start", ("b",), np.int32), Arg("body_count", ("b",), np.int32),
                Arg("stiffness", ("b",)), Arg("damping", ("b",))),
               ("b", "dim"), (), ("force",), _sample_shape_match, check=_check_bodies("members")),
        Kernel("symplectic_euler",
               (Arg("pos", _P), Arg("vel", _P), Arg("prev_pos", _P), Arg("force", _P),
                Arg("inv_mass", _S)),
               ("n", "dim"), ("h",), ("pos", "vel", "prev_pos"), _sample_step),
        Kernel("explicit_euler",
               (Arg("pos", _P), Arg("vel", _P), Arg("prev_pos", _P), Arg("force", _P),
                Arg("inv_mass", _S)),
               ("n", "dim"), ("h",), ("pos", "vel", "prev_pos"), _sample_step),
        Kernel("verlet_drift",
               (Arg("pos", _P), Arg("vel_pred", _P), Arg("prev_pos", _P), Arg("vel", _P),
                Arg("force", _P), Arg("inv_mass", _S)),
               ("n", "dim"), ("h",), ("pos", "vel_pred", "prev_pos"), _sample_verlet_drift),
        Kernel("verlet_kick",
               (Arg("vel", _P), Arg("force0", _P), Arg("force1", _P), Arg("inv_mass", _S)),
               ("n", "dim"), ("h",), ("vel",), _sample_verlet_kick),
        Kernel("rk4_stage",
               (Arg("pos_out", _P), Arg("vel_out", _P), Arg("pos", _P), Arg("vel", _P),
                Arg("dpos", _P), Arg("force", _P), Arg("inv_mass", _S)),
               ("n", "dim"), ("c",), ("pos_out", "vel_out"), _sample_rk4_stage),
        Kernel("rk4_combine",
               (Arg("pos", _P), Arg("vel", _P), Arg("prev_pos", _P), Arg("v1", _P), Arg("v2", _P),
                Arg("v3", _P), Arg("v4", _P), Arg("f1", _P), Arg("f2", _P), Arg("f3", _P), Arg("f4", _P),
                Arg("inv_mass", _S)),
               ("n", "dim"), ("h",), ("pos", "vel", "prev_pos"), _sample_rk4_combine),
        Kernel("xpbd_predict",
               (Arg("pos", _P), Arg("prev_pos", _P), Arg("vel", _P), Arg("force", _P),
                Arg("inv_mass", _S)),
               ("n", "dim"), ("h",), ("pos", "prev_pos", "vel"), _sample_step),
        Kernel("xpbd_velocity",
               (Arg("vel", _P), Arg("pos", _P), Arg("prev_pos", _P), Arg("inv_mass", _S)),
               ("n", "dim"), ("h",), ("vel",), _sample_xpbd_velocity),
        Kernel("xpbd_distance",
               (Arg("pos", _P), Arg("vel", _P), Arg("lambda", ("m",)), Arg("inv_mass", _S),
                Arg("pairs", ("m", 2), np.int32),
                Arg("rest_length", ("m",)), Arg("compliance", ("m",)),
                Arg("order", ("m",), np.int32), Arg("batch_start", ("nbatch+1",), np.int32)),
               ("m", "nbatch", "dim"), ("h",), ("pos", "vel", "lambda"), _sample_xpbd_distance,
               index_args=(("pairs", "n"),), check=_check_batches("pairs")),
        Kernel("xpbd_volume",
               (Arg("pos", _P), Arg("vel", _P), Arg("lambda", ("m",)), Arg("inv_mass", _S),
                Arg("simplices", ("m", "dim+1"), np.int32), Arg("rest_volume", ("m",)),
                Arg("compliance", ("m",)), Arg("order", ("m",), np.int32),
                Arg("batch_start", ("nbatch+1",), np.int32)),
               ("m", "nbatch", "dim"), ("h",), ("pos", "vel", "lambda"), _sample_xpbd_volume,
               index_args=(("simplices", "n"),), check=_check_batches("simplices")),
        Kernel("collide",
               (Arg("pos", _P), Arg("vel", _P), Arg("contact_collider", _S, np.int32),
                Arg("contact_normal", _P), Arg("contact_impulse", _S), Arg("prev_pos", _P),
                Arg("radius", _S), Arg("mass", _S), Arg("inv_mass", _S),
                Arg("kind", ("k",), np.int32), Arg("center", ("k", "dim")),
                Arg("rotation", ("k", "dim", "dim")), Arg("velocity", ("k", "dim")),
                Arg("angular_velocity", ("k", 3)), Arg("restitution", ("k",)),
                Arg("friction", ("k",)), Arg("keep", ("k",)),
                Arg("face_start", ("k",), np.int32), Arg("face_count", ("k",), np.int32),
                Arg("face_normal", ("nfaces", "dim")), Arg("face_offset", ("nfaces",)),
                Arg("cap_a", ("k", "dim")), Arg("cap_b", ("k", "dim")), Arg("cap_radius", ("k",)),
                Arg("bound", ("k",)), Arg("grow", ("k",))),
               ("n", "k", "nfaces", "dim"), ("iterations", "h", "rest_speed"),
               ("pos", "vel", "contact_collider", "contact_normal", "contact_impulse"),
               _sample_collide, check=_check_collide),
        Kernel("radial_gravity",
               (Arg("force", _P), Arg("pos", _P), Arg("mass", _S), Arg("inv_mass", _S),
                Arg("well_center", ("w", "dim")), Arg("well_strength", ("w",)),
                Arg("well_falloff", ("w",), np.int32), Arg("well_min_distance", ("w",))),
               ("n", "w", "dim"), (), ("force",), _sample_radial_gravity, check=_check_wells),
        Kernel("find_unstable",
               (Arg("pos", _P), Arg("vel", _P)),
               ("n", "dim"), ("max_speed",), (), _sample_find_unstable),
    ]
}


def _resolve(kernel: Kernel, arrays: dict[str, np.ndarray]) -> dict[str, int]:
    """Check every array against its spec; return the sizes of the shape symbols."""
    sizes: dict[str, int] = {}
    for arg in kernel.arrays:
        if arg.name not in arrays:
            raise ValueError(f"{kernel.name}: missing array argument {arg.name!r}")
        a = arrays[arg.name]
        if not isinstance(a, np.ndarray) or a.dtype != arg.dtype:
            got = getattr(a, "dtype", type(a).__name__)
            raise ValueError(f"{kernel.name}: {arg.name} must be a {np.dtype(arg.dtype)} array, "
                             f"got {got}")
        if not a.flags.c_contiguous:
            raise ValueError(f"{kernel.name}: {arg.name} must be C-contiguous")
        if a.ndim != len(arg.shape):
            raise ValueError(f"{kernel.name}: {arg.name} must have {len(arg.shape)} dimensions, "
                             f"got shape {a.shape}")
        if arg.name in kernel.writes and not a.flags.writeable:
            raise ValueError(f"{kernel.name}: {arg.name} is written and must be writeable")
        for sym, size in zip(arg.shape, a.shape, strict=True):
            if isinstance(sym, str) and sym.endswith("+1"):  # e.g. batch_start: nbatch + 1 rows
                base = sym[:-2]
                if base in sizes:
                    want = sizes[base] + 1
                else:
                    sizes[base] = size - 1
                    want = size
            else:
                want = sym if isinstance(sym, int) else sizes.setdefault(sym, size)
            if size != want:
                raise ValueError(f"{kernel.name}: {arg.name} has shape {a.shape}; "
                                 f"axis {sym!r} must be {want}")
    if sizes.get("dim", 2) not in (2, 3):
        raise ValueError(f"{kernel.name}: dim must be 2 or 3, got {sizes['dim']}")
    for index_name, count in kernel.index_args:
        idx = arrays[index_name]
        if idx.size and (idx.min() < 0 or idx.max() >= sizes[count]):
            raise ValueError(f"{kernel.name}: {index_name} holds rows outside [0, {sizes[count]})")
    if kernel.check is not None:
        kernel.check(arrays, sizes)
    return sizes


def bind(name: str, backend: str, **arrays: np.ndarray) -> Callable[..., Any]:
    """Validate ``arrays`` for kernel ``name`` once; return ``call(*scalars)``.

    The arrays must stay alive and unreallocated while the call is used (the
    World rebinds whenever the Store reallocates).
    """
    kernel = REGISTRY[name]
    sizes = _resolve(kernel, arrays)
    counts = [sizes[c] for c in kernel.counts]
    ordered = [arrays[a.name] for a in kernel.arrays]
    if backend == "python":
        return functools.partial(kernel.twin, *ordered, *counts)
    if backend != "c":
        raise ValueError(f"backend must be 'c' or 'python', got {backend!r}")
    ffi, lib = _native.require()
    ptrs = [ffi.from_buffer("int32_t[]" if a.dtype == np.int32 else "double[]", a)
            for a in ordered]
    return functools.partial(getattr(lib, "ps_" + name), *ptrs, *counts)


def call(name: str, backend: str, *scalars: float, **arrays: np.ndarray) -> Any:
    """Validate and run one kernel (tests and one-off use; the World binds)."""
    return bind(name, backend, **arrays)(*scalars)


def scalars_of(name: str, args: dict[str, Any]) -> list[Any]:
    """The scalar arguments of a sample, in signature order."""
    return [args[s] for s in REGISTRY[name].scalars]


def arrays_of(name: str, args: dict[str, Any]) -> dict[str, np.ndarray]:
    """The array arguments of a sample."""
    return {a.name: args[a.name] for a in REGISTRY[name].arrays}
