"""Argument samplers for the parity tests: one per registered kernel.

Each returns arrays and scalars for ``n`` particles in ``dim`` dimensions,
with the edge cases the kernel must survive on purpose: pinned particles,
zero rest length, coincident endpoints, particles exactly on a face or a
corner, a collapsed simplex, a crushed body, non-finite values for the
instability scan.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pysoft import shapes
from pysoft._coloring import batches
from pysoft._kernels import REGISTRY
from pysoft.twins.constraints import _simplex


def vec(rng: np.random.Generator, n: int, dim: int, scale: float = 1.0) -> np.ndarray:
    return np.ascontiguousarray(rng.normal(0.0, scale, (n, dim)))


def inv_mass(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    mass = rng.uniform(0.5, 2.0, n)
    inv = 1.0 / mass
    pinned = rng.random(n) < 0.2
    inv[pinned] = 0.0
    return mass, inv


def particles(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    mass, inv = inv_mass(rng, n)
    return {"pos": vec(rng, n, dim), "vel": vec(rng, n, dim), "force": vec(rng, n, dim, 5.0),
            "mass": mass, "inv_mass": inv}


def sample_gravity_drag(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    p = particles(rng, n, dim)
    return {"force": p["force"], "vel": p["vel"], "start_vel": vec(rng, n, dim),
            "mass": p["mass"], "inv_mass": p["inv_mass"], "gravity": rng.normal(0.0, 10.0, dim),
            "drag": float(rng.uniform(0.0, 0.5)), "record": int(rng.integers(0, 2))}


def sample_springs(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    p = particles(rng, n, dim)
    m = 0 if n < 2 else 3 * n
    pairs = rng.integers(0, max(n, 1), (m, 2)).astype(np.int32)
    if m:
        pairs[m // 5: m // 5 + n // 2, 0] = 0  # a hub of many springs (a wheel's): a long list
        pairs[pairs[:, 0] == pairs[:, 1], 1] = (pairs[pairs[:, 0] == pairs[:, 1], 0] + 1) % n
        # Coincident endpoints, exercised on purpose: copy a's position onto b.
        p["pos"][pairs[: m // 10, 1]] = p["pos"][pairs[: m // 10, 0]]
    rest = rng.uniform(0.0, 2.0, m)
    rest[: m // 7] = 0.0  # zero rest length (mouse springs)
    return {"force": p["force"], "pos": p["pos"], "vel": p["vel"], "pairs": pairs,
            "rest_length": rest, "stiffness": rng.uniform(1.0, 1e4, m),
            "damping": rng.uniform(0.0, 20.0, m), **spring_workspace(n, m, dim),
            "threads": int(rng.integers(1, 4))}


def spring_workspace(n: int, m: int, dim: int) -> dict[str, np.ndarray]:
    """The spring kernel's workspace for n particles and m springs, its lists not built."""
    return {"spring_end": np.zeros(n, np.int32), "incidence": np.zeros((m, 2), np.int32),
            "spring_force": np.zeros((m, dim)), "incidence_state": np.zeros(3, np.int32)}


def sample_muscles(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    m = max(n, 1)
    length = rng.uniform(0.0, 2.0, m)
    length[rng.random(m) < 0.3] = -1.0  # springs that are not muscles
    activation = rng.uniform(0.0, 2.0, m)
    activation[rng.random(m) < 0.1] = np.nan  # clamped to the low end
    return {"rest_length": rng.uniform(0.0, 2.0, m), "muscle_length": length, "activation": activation,
            "m": m, "low": 0.5, "high": 1.5}


def sample_area_springs(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    d = 3 if dim == 3 else 2  # 3D: volume springs on tetrahedra
    p = particles(rng, n, d)
    m = max(0, 3 * n // 2) if n >= d + 1 else 0
    tri = np.stack([rng.choice(n, d + 1, replace=False) for _ in range(m)]).astype(np.int32) if m \
        else np.zeros((0, d + 1), np.int32)
    rest = rng.normal(0.0, 0.5, m)
    # 3D: rest gradients from none (every spring capped to nothing) to above most springs' (some
    # capped, some not)
    gradient = rng.uniform(0.0, 2.0, m) * (rng.uniform(0.0, 1.0, m) > 0.1)
    return {"force": p["force"], "pos": p["pos"], "vel": p["vel"], "triangles": tri, "rest_area": rest,
            "rest_gradient": gradient, "stiffness": rng.uniform(0.0, 500.0, m),
            "damping": rng.uniform(0.0, 5.0, m)}


def sample_grab(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    p = particles(rng, n, dim)
    m = 0 if n == 0 else max(1, n // 4)
    return {"force": p["force"], "pos": p["pos"], "vel": p["vel"],
            "particle": rng.integers(0, max(n, 1), (m, 1)).astype(np.int32),  # some held twice
            "target": vec(rng, m, dim), "stiffness": rng.uniform(0.0, 100.0, m),
            "damping": rng.uniform(0.0, 5.0, m)}


def sample_step(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    p = particles(rng, n, dim)
    return {"pos": p["pos"], "vel": p["vel"], "force": p["force"], "inv_mass": p["inv_mass"],
            "prev_pos": vec(rng, n, dim), "h": 1.0 / 480.0}


def sample_verlet_drift(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    return {**sample_step(rng, n, dim), "vel_pred": vec(rng, n, dim)}


def sample_verlet_kick(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    s = sample_step(rng, n, dim)
    return {"vel": s["vel"], "force0": s["force"], "force1": vec(rng, n, dim, 5.0),
            "inv_mass": s["inv_mass"], "h": s["h"]}


def sample_rk4_stage(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    s = sample_step(rng, n, dim)
    return {"pos_out": vec(rng, n, dim), "vel_out": vec(rng, n, dim), "pos": s["pos"],
            "vel": s["vel"], "dpos": vec(rng, n, dim), "force": s["force"],
            "inv_mass": s["inv_mass"], "c": 0.5 * s["h"]}


def sample_rk4_combine(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    s = sample_step(rng, n, dim)
    out = {"pos": s["pos"], "vel": s["vel"], "prev_pos": s["prev_pos"], "inv_mass": s["inv_mass"],
           "h": s["h"]}
    for i in range(1, 5):
        out[f"v{i}"] = vec(rng, n, dim)
        out[f"f{i}"] = vec(rng, n, dim, 5.0)
    return out


def sample_xpbd_velocity(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    s = sample_step(rng, n, dim)
    prev = s["pos"] + vec(rng, n, dim, 0.01)
    # the corrections left half the velocities within 3 m/s of (x - p) / h, half far from it
    near = rng.random(n) < 0.5
    vel = np.where(near[:, None], (s["pos"] - prev) / s["h"] + vec(rng, n, dim, 1.0), s["vel"])
    # what the caps withheld: nothing for most, up to several m/s for some
    withheld = vec(rng, n, dim, 3.0) * (rng.random(n) < 0.3)[:, None]
    return {"vel": vel, "pos": s["pos"], "prev_pos": prev, "withheld": withheld,
            "inv_mass": s["inv_mass"], "h": s["h"]}


def sample_shapes(rng: np.random.Generator, dim: int) -> list[Any]:
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


def still_planes(rng: np.random.Generator, dim: int) -> list[Any]:
    """A floor and one or two tilted, offset walls: the collide pass's world-frame path (every
    collider a still plane)."""
    out: list[Any] = [shapes.Plane((0.0, 1.0, 0.0)[:dim], -0.5)]
    for _ in range(int(rng.integers(1, 3))):
        n = rng.normal(0.0, 1.0, dim)
        out.append(shapes.Plane(n / np.linalg.norm(n), float(rng.uniform(-1.5, -0.5))))
    return out


def sample_collide(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    if rng.random() < 0.3:  # a floor and walls only, none moving
        return _collide_args(rng, n, dim, still_planes(rng, dim), moving=False)
    return _collide_args(rng, n, dim, sample_shapes(rng, dim), moving=True)


def _collide_args(rng: np.random.Generator, n: int, dim: int, shapes_: list[Any],
                  moving: bool) -> dict[str, Any]:
    p = particles(rng, n, dim)
    colliders = collider_arrays([s.geometry(dim) for s in shapes_], dim)
    k = len(colliders["kind"])
    h = 1.0 / 480.0
    # Fast particles (up to ~60 m/s): many cross thin shapes within one substep.
    prev = p["pos"] - h * rng.normal(0.0, 30.0, (n, dim))
    if n >= 8 and moving:
        # Exactly on a box face, on a box corner, on the floor, on the disc's axis.
        half, c, R = None, colliders["center"][1], colliders["rotation"][1]
        half = colliders["face_offset"][colliders["face_start"][1]:][:dim]
        p["pos"][0] = c + R @ np.concatenate([[half[0]], np.zeros(dim - 1)])
        p["pos"][1] = c + R @ half
        p["pos"][2, 1] = -0.5
        p["pos"][3] = colliders["center"][k - 1]
        prev[:4] = p["pos"][:4]
    angular = np.zeros((k, 3))
    if moving:
        angular[1, 2] = 1.5  # a spinning box
    return {"pos": p["pos"], "vel": p["vel"],  # a report from earlier substeps, or a new one (clear)
            "contact_collider": rng.integers(-1, k, n).astype(np.int32),
            "contact_normal": np.zeros((n, dim)), "contact_impulse": rng.uniform(0.0, 0.1, n),
            "support": vec(rng, n, dim), "stuck": rng.integers(0, 2, n).astype(np.int32),
            "prev_pos": prev,
            "radius": rng.uniform(0.0, 0.05, n), "mass": p["mass"], "inv_mass": p["inv_mass"],
            **colliders, "angular_velocity": angular,
            "velocity": rng.normal(0.0, 1.0, (k, dim)) if moving else np.zeros((k, dim)),
            "restitution": rng.uniform(0.0, 1.0, k), "friction": frictions(rng, k),
            "keep": np.exp(-rng.uniform(0.0, 5.0, k) * h), "iterations": dim, "h": h,
            "rest_speed": 0.25, "threads": int(rng.integers(1, 4)), "clear": int(rng.integers(0, 2))}


def frictions(rng: np.random.Generator, k: int) -> np.ndarray:
    """Coulomb coefficients of ``k`` colliders, about a third of them frictionless."""
    return np.where(rng.random(k) < 0.3, 0.0, rng.uniform(0.0, 1.5, k))


def sample_radial_gravity(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    p = particles(rng, n, dim)
    w = 4
    centers = rng.normal(0.0, 1.0, (w, dim))
    if n:
        p["pos"][0] = centers[0]  # a particle exactly at a well's centre
    return {"force": p["force"], "pos": p["pos"], "mass": p["mass"], "inv_mass": p["inv_mass"],
            "well_center": centers, "well_strength": rng.uniform(-5.0, 50.0, w),
            "well_falloff": np.arange(w, dtype=np.int32), "well_min_distance": rng.uniform(0.05, 0.5, w)}






def bodies(rng: np.random.Generator, n: int, nb: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``nb`` bodies of 3..12 rows each from ``n`` particles (rows may be shared), laid out as
    the Store lays out ragged rows: ranges in no particular order, garbage rows between
    them, and some bodies with a count of 0 (bodies without the model)."""
    if n < 3:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
    counts = rng.integers(3, 13, nb).astype(np.int32)
    counts[1:][rng.random(nb - 1) < 0.15] = 0
    gaps = rng.integers(0, 3, nb)
    starts = np.zeros(nb, dtype=np.int32)
    top = 0
    for b in rng.permutation(nb):
        top += int(gaps[b])
        starts[b] = top
        top += int(counts[b])
    rows = rng.integers(0, n, top).astype(np.int32)
    return rows, starts, counts


def ring_positions(rng: np.random.Generator, p: dict[str, Any], rows: np.ndarray, starts: np.ndarray,
                    counts: np.ndarray) -> None:
    """Put each body's rows on a noisy counter-clockwise ring (distinct rows per body)."""
    for s, c in zip(starts, counts, strict=True):
        body = np.unique(rows[s : s + c])
        rows[s : s + c] = np.resize(body, c)
        t = np.linspace(0.0, 2 * np.pi, len(body), endpoint=False)
        ring = np.stack([np.cos(t), np.sin(t)], axis=1) * rng.uniform(0.3, 1.0) + rng.normal(0, 2, 2)
        p["pos"][body, :2] = ring + rng.normal(0.0, 0.02, ring.shape)


def surfaces(rng: np.random.Generator, p: dict[str, Any], n: int, nb: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """3D: ``nb`` bodies' surfaces, three rows a triangle (rows may be shared; some bodies
    without the model), each a noisy octahedron around its own centre (or random triangles
    when too few particles), laid out as bodies() lays out ranges."""
    rows, starts, counts = bodies(rng, n, nb)
    counts -= counts % 3
    octahedron = np.array([[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5],
                           [3, 1, 5], [0, 3, 5]])
    corners = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], float)
    for s, c in zip(starts, counts, strict=True):
        if c and n >= 6:
            body = rng.choice(n, 6, replace=False)
            tris = np.resize(octahedron, (c // 3, 3))
            rows[s : s + c] = body[tris].reshape(-1)
            p["pos"][body] = (corners * rng.uniform(0.3, 1.0) + rng.normal(0, 2, 3)
                              + rng.normal(0.0, 0.02, (6, 3)))
    return rows, starts, counts


def sample_pressure(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    p = particles(rng, n, 3 if dim == 3 else 2)
    if dim == 3:
        rows, starts, counts = surfaces(rng, p, n, max(1, n // 8))
    else:
        rows, starts, counts = bodies(rng, n, max(1, n // 8))
        ring_positions(rng, p, rows, starts, counts)
    nb = len(counts)
    min_area = rng.uniform(0.0, 0.05, nb)
    if nb > 1:
        min_area[0] = 10.0  # a crushed body: the floor on the area (3D: volume) decides
    return {"force": p["force"], "pos": p["pos"], "outline": rows, "body_start": starts,
            "body_count": counts, "amount": rng.uniform(0.0, 50.0, nb), "min_area": min_area}


def sample_shape_match(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    d = 3 if dim == 3 else 2
    p = particles(rng, n, d)
    rows, starts, counts = bodies(rng, n, max(1, n // 8))
    if d == 2:
        ring_positions(rng, p, rows, starts, counts)
    nb = len(counts)
    rest = rng.normal(0.0, 0.5, (len(rows), d))
    if nb:
        rest[starts[0] : starts[0] + counts[0]] = 0.0  # a degenerate rest shape: no rotation
    if d == 3 and nb > 3:  # flat, collinear and mirrored rest shapes
        rest[starts[1] : starts[1] + counts[1], 2] = 0.0
        rest[starts[2] : starts[2] + counts[2], 1:] = 0.0
        mirror = slice(starts[3], starts[3] + counts[3])
        members = rows[mirror]
        p["pos"][members] = rest[mirror] * [-1.0, 1.0, 1.0] + rng.normal(0.0, 0.01, (len(members), 3))
    stiffness = rng.uniform(0.0, 500.0, nb)
    stiffness[::3] = 0.0  # damping alone (the mirrored body 3 is pulled back all the same)
    return {"force": p["force"], "pos": p["pos"], "vel": p["vel"], "mass": p["mass"],
            "inv_mass": p["inv_mass"], "members": rows, "rest": rest, "body_start": starts,
            "body_count": counts, "stiffness": stiffness, "damping": rng.uniform(0.0, 10.0, nb)}


def sample_rolling_resistance(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    p = particles(rng, n, 2)
    rows, starts, counts = bodies(rng, n, max(1, n // 8))
    ring_positions(rng, p, rows, starts, counts)
    nb = len(counts)
    impulse = np.where(rng.random(n) < 0.5, rng.uniform(0.0, 0.2, n), 0.0)
    rolled = rng.uniform(0.0, 0.3, nb)
    if nb > 1:
        rolled[1] = 1e9  # no new load this substep: the body is left alone
    coefficient = np.where(rng.random(nb) < 0.2, 0.0, rng.uniform(0.0, 0.5, nb))
    p["inv_mass"] = 1.0 / p["mass"]
    if nb > 2 and counts[2]:
        p["inv_mass"][rows[starts[2]]] = 0.0  # a held body does not roll
    return {"vel": p["vel"], "rolled": rolled, "pos": p["pos"], "mass": p["mass"],
            "inv_mass": p["inv_mass"], "contact_impulse": impulse, "members": rows,
            "body_start": starts, "body_count": counts, "coefficient": coefficient}


def colored(rows: np.ndarray) -> dict[str, np.ndarray]:
    order, batch_start = batches(rows)
    return {"order": order, "batch_start": batch_start}


def sample_xpbd_distance(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    s = sample_step(rng, n, dim)
    m = 0 if n < 2 else 2 * n
    pairs = rng.integers(0, max(n, 1), (m, 2)).astype(np.int32)
    if m:
        same = pairs[:, 0] == pairs[:, 1]
        pairs[same, 1] = (pairs[same, 0] + 1) % n
        s["pos"][pairs[: m // 10, 1]] = s["pos"][pairs[: m // 10, 0]]  # coincident ends
    # prev_pos: where a step of the velocities (give or take 1 m/s) from it ends at pos, the
    # relative velocity the positions-only solve (follow 0) works out past the cap
    prev = s["pos"] - s["h"] * (s["vel"] + vec(rng, n, dim, 1.0))
    return {"pos": s["pos"], "vel": s["vel"], "withheld": vec(rng, n, dim, 0.1),
            "lambda": rng.normal(0.0, 1e-3, m), "inv_mass": s["inv_mass"], "prev_pos": prev,
            "pairs": pairs, "rest_length": rng.uniform(0.0, 1.5, m), "compliance": np.where(
                rng.random(m) < 0.5, 0.0, rng.uniform(0.0, 1e-3, m)), **colored(pairs),
            "follow": int(rng.integers(0, 2)), "h": s["h"]}


def sample_xpbd_volume(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    s = sample_step(rng, n, dim)
    k = dim + 1
    m = 0 if n < k else 2 * n
    simplices = np.array([rng.choice(n, k, replace=False) for _ in range(m)], dtype=np.int32).reshape(m, k)
    rest = _simplex(s["pos"], simplices, dim)[0] * rng.uniform(0.8, 1.2, m)
    if m:
        s["pos"][simplices[0]] = s["pos"][simplices[0][0]]  # a collapsed simplex: no gradient
    return {"pos": s["pos"], "vel": s["vel"], "withheld": vec(rng, n, dim, 0.1),
            "lambda": rng.normal(0.0, 1e-3, m), "inv_mass": s["inv_mass"], "simplices": simplices,
            "rest_volume": rest, "compliance": np.where(rng.random(m) < 0.5, 0.0, rng.uniform(0, 1e-3, m)),
            **colored(simplices), "follow": int(rng.integers(0, 2)), "h": s["h"]}




def sample_xpbd_material(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    """Tets whose rest shapes are their current ones stretched, sheared or mirrored (inverted
    tets), one at rest, one collapsed to a point, some with a compliance of 0 (skipped), the
    corrections large enough that some are capped; in 2D the kernel does nothing."""
    s = sample_step(rng, n, dim)
    m = 0 if n < 4 else 2 * n
    tets = np.array([rng.choice(n, 4, replace=False) for _ in range(m)], dtype=np.int32).reshape(m, 4)
    dm_inv = np.zeros((m, 9))
    if m and dim == 3:
        pos = s["pos"]
        ds = np.stack([pos[tets[:, k]] - pos[tets[:, 0]] for k in (1, 2, 3)], axis=2)
        scale = np.where(rng.random((m, 1, 1)) < 0.5, 1e-4, 0.3)  # near rest: uncapped
        warp = np.eye(3) + rng.normal(0.0, 1.0, (m, 3, 3)) * scale
        warp[: m // 5, :, 2] *= -1.0  # rest shapes mirrored: these tets are inverted
        warp[m // 5] = np.eye(3)  # at rest
        dm_inv = np.linalg.inv(warp @ ds).reshape(m, 9)
        pos[tets[1]] = pos[tets[1][0]]  # collapsed to a point: no gradient
    compliance = rng.uniform(1e-7, 1e-3, (m, 2)) * np.where(rng.random((m, 1)) < 0.1, 0.0, 1.0)
    return {"pos": s["pos"], "vel": s["vel"], "withheld": vec(rng, n, dim, 0.1),
            "lambda": rng.normal(0.0, 1e-3, (m, 2)), "inv_mass": s["inv_mass"], "tets": tets,
            "dm_inv": dm_inv, "compliance": compliance, **colored(tets), "h": s["h"]}


def sample_settle_mass(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    """Supports: zero (free) or unit normals of a few directions, so some bodies are held from
    one side only, some from opposite sides (opposed exactly at dot -1/2 too), some not held."""
    p = particles(rng, n, dim)
    rows, starts, counts = bodies(rng, n, max(1, n // 8))
    dirs = vec(rng, 4, dim)
    dirs /= np.linalg.norm(dirs, axis=1)[:, None]
    if dim == 2:  # two directions exactly 120 degrees apart: not opposed
        c, r = -0.5, np.sqrt(0.75)
        dirs[1] = [c * dirs[0, 0] - r * dirs[0, 1], r * dirs[0, 0] + c * dirs[0, 1]]
    dirs[2] = -dirs[0]
    support = dirs[rng.integers(0, 4, n)] * (rng.random(n) < 0.5)[:, None]
    support[rng.random(n) < 0.2] = dirs[0]  # many held from one side
    held = (support != 0.0).any(axis=1)
    stuck = (held & (rng.random(n) < 0.6)).astype(np.int32)  # static friction holds some
    if rng.random() < 0.3:
        stuck[:] = 0  # or none: no settle, nothing written
    return {"settle_inv_mass": rng.normal(0.0, 1.0, n), "support": support, "stuck": stuck,
            "inv_mass": p["inv_mass"], "members": rows, "body_start": starts, "body_count": counts}


def sample_settle_plan(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    """Constraints of 2, dim + 1 or 4 particles in independent batches; settle inverse masses
    of 0 for about half the particles (-0.0 for some), NaN and negative for a few, so some
    constraints have every particle immovable, some one, some all movable."""
    k = int(rng.choice([2, dim + 1, 4]))
    m = 0 if n < k else 2 * n
    rows = np.array([rng.choice(n, k, replace=False) for _ in range(m)], np.int32).reshape(m, k)
    mass = rng.uniform(0.1, 2.0, n) * (rng.random(n) < 0.5)
    mass[rng.random(n) < 0.1] = -0.0
    mass[rng.random(n) < 0.03] = np.nan
    mass[rng.random(n) < 0.03] = -1.0
    plan = colored(rows)
    return {"settle_order": rng.integers(-5, 5, m).astype(np.int32),
            "settle_start": rng.integers(-5, 5, len(plan["batch_start"])).astype(np.int32), **plan,
            "rows": rows, "settle_inv_mass": mass}


def sample_zero(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    """Values of every kind (NaN, infinities, -0.0 among them)."""
    values = rng.normal(0.0, 1.0, n * dim)
    values[rng.random(n * dim) < 0.1] = np.nan
    values[rng.random(n * dim) < 0.05] = -np.inf
    values[rng.random(n * dim) < 0.05] = -0.0
    return {"values": values}


def sample_untangle(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    """Bodies (rows may be shared, some empty) with owners partly out of range (-2, -1, b);
    triangles of one body's members, owned by it (about half inverted against their rest
    area, some of rest area 0), and of random rows; supports as in sample_settle_mass, so
    some tangled bodies are held from opposite sides and left alone; in 3D tetrahedra."""
    settle = sample_settle_mass(rng, n, dim)
    p = particles(rng, n, dim)
    rows, starts, counts = settle["members"], settle["body_start"], settle["body_count"]
    nb = len(counts)
    owner = rng.integers(-2, nb + 1, n).astype(np.int32)
    m = 0 if n < dim + 1 else 2 * n
    simplices = np.array([rng.choice(n, dim + 1, replace=False) for _ in range(m)],
                         dtype=np.int32).reshape(m, dim + 1)
    bodies3 = [j for j in range(nb) if len(set(rows[starts[j]:starts[j] + counts[j]].tolist())) >= dim + 1]
    for t in range(0, m, 2):  # every other triangle one body's
        if bodies3:
            j = bodies3[int(rng.integers(len(bodies3)))]
            own = np.unique(rows[starts[j]:starts[j] + counts[j]])
            simplices[t] = rng.choice(own, dim + 1, replace=False)
            owner[simplices[t]] = j
    rest = _simplex(p["pos"], simplices, dim)[0] * rng.uniform(0.5, 1.5, m) * rng.choice([-1.0, 1.0], m)
    rest[rng.random(m) < 0.1] = 0.0
    shape = rng.normal(0.0, 0.5, (len(rows), dim))
    if nb:
        shape[starts[0] : starts[0] + counts[0]] = 0.0  # a degenerate rest shape: no rotation
    return {"pos": p["pos"], "vel": p["vel"], "withheld": vec(rng, n, dim, 0.1),
            "tangled": rng.integers(-5, 5, nb).astype(np.int32),
            "inv_mass": p["inv_mass"], "support": settle["support"], "owner": owner,
            "simplices": simplices, "rest_volume": rest, "members": rows, "rest": shape,
            "body_start": starts, "body_count": counts, "h": float(rng.uniform(1e-4, 1e-2))}


def sample_spin_record(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    """Bodies (rows may be shared, some empty): about half of them own their rows (owner j,
    so their spin is kept unless one is pinned or the body is ``linked``), the others' owners
    anything in [-2, b]; a row listed twice in one body; masses of the movable particles."""
    p = particles(rng, n, dim)
    rows, starts, counts = bodies(rng, n, max(1, n // 8))
    nb = len(counts)
    owner = rng.integers(-2, nb + 1, n).astype(np.int32)
    for j in range(nb):
        own = rows[starts[j] : starts[j] + counts[j]]
        if rng.random() < 0.6:
            owner[own] = j
            if rng.random() < 0.7:  # most of them movable
                p["inv_mass"][own] = 1.0 / p["mass"][own]
    if nb and counts[0] >= 2:
        rows[starts[0] + 1] = rows[starts[0]]  # listed twice
    support = vec(rng, n, dim) * (rng.random((n, 1)) < 0.01)  # a collider holds a few
    return {"spin": rng.normal(0.0, 1.0, (nb, 3)), "pos": p["pos"], "vel": p["vel"], "mass": p["mass"],
            "inv_mass": p["inv_mass"], "support": support, "owner": owner,
            "linked": (rng.random(nb) < 0.2).astype(np.int32), "members": rows, "body_start": starts,
            "body_count": counts}


def sample_spin_keep(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    """sample_spin_record's bodies, positions before the substep, ``withheld``, h, and a body
    whose members lie on a line (3D: the inertia tensor's fallback) or at one point."""
    s = sample_spin_record(rng, n, dim)
    rows, starts, counts = s["members"], s["body_start"], s["body_count"]
    pos = s["pos"]
    for j, at in ((1, "line"), (2, "point")):
        if j < len(counts) and counts[j]:
            own = rows[starts[j] : starts[j] + counts[j]]
            pos[own] = pos[own[0]] + (rng.normal(0.0, 1.0, (len(own), 1)) * rng.normal(0.0, 1.0, dim)
                                      if at == "line" else 0.0)
    return {"vel": s["vel"], "withheld": vec(rng, n, dim, 0.1), "spin": s["spin"], "pos": pos,
            "prev_pos": pos - vec(rng, n, dim, 0.01), "mass": s["mass"], "inv_mass": s["inv_mass"],
            "support": s["support"],
            "owner": s["owner"], "linked": s["linked"],
            "tangled": (rng.random(len(counts)) < 0.3).astype(np.int32), "members": rows,
            "body_start": starts, "body_count": counts, "mode": int(rng.integers(0, 3)),
            "h": float(rng.uniform(1e-4, 1e-2))}


def sample_find_unstable(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    p = particles(rng, n, dim)
    if n > 4:
        p["vel"][n // 2, 0] = np.nan
        p["pos"][n - 1, dim - 1] = np.inf
        p["vel"][n // 3] = 50.0
    return {"pos": p["pos"], "vel": p["vel"], "max_speed": 40.0}


def sample_clamp_speeds(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    args = sample_find_unstable(rng, n, dim)
    prev = vec(rng, n, dim)
    if n > 4:
        prev[n - 1, 0] = np.nan  # a row whose start is not finite either
    return {**args, "prev_pos": prev}


_OCTAHEDRON = np.array([[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4],
                        [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]])  # +x -x +y -y +z -z, outward


def _body_contacts_3d(rng: np.random.Generator, n: int) -> dict[str, Any]:
    """3D: overlapping octahedra (closed surfaces, some self-colliding; some lined up over
    each other, so rays meet edges exactly), an open sheet, a particle shared by two bodies
    and free particles with radii, moving from where they were at the substep's start."""
    args = sample_body_contacts(rng, n, 2)  # the 2D case's particle columns, then 3D shapes
    p = particles(rng, n, 3)
    pos, owner = p["pos"], np.full(n, -1, dtype=np.int32)
    members: list[list[int]] = []
    surfaces: list[list[int]] = []
    flags: list[int] = []
    free = list(rng.permutation(n))
    grid = rng.random() < 0.5
    while len(free) >= 6 and len(members) < max(1, n // 8):
        ring, free = [int(i) for i in free[:6]], free[6:]
        centre = np.round(rng.normal(0.0, 0.5, 3), 1) if grid else rng.normal(0.0, 0.5, 3)
        size = 0.3 if grid else rng.uniform(0.2, 0.5)
        offsets = np.repeat(np.eye(3), 2, axis=0) * np.tile([1.0, -1.0], 3)[:, None]
        pos[ring] = centre + size * offsets + (0.0 if grid else rng.normal(0.0, 0.03, (6, 3)))
        if len(members) % 5 == 4:  # an open sheet: four triangles of the top half
            tris = _OCTAHEDRON[:4]
            flags.append(int(rng.integers(0, 2)) * 2)
        else:
            tris = _OCTAHEDRON
            flags.append(1 | int(rng.random() < 0.3) * 2)
        extra = [int(i) for i in free[:1]] if rng.random() < 0.5 else []
        free = free[len(extra):]
        members.append(ring + extra)
        surfaces.append([ring[k] for k in tris.ravel()])
    if len(members) >= 2:
        members[1].append(members[0][0])
    for b, mem in enumerate(members):
        for i in mem:
            owner[i] = b if owner[i] == -1 else -2
    prev = pos + rng.normal(0.0, 0.05, pos.shape)
    nb = len(members)
    flat = lambda lists: np.array([i for x in lists for i in x], dtype=np.int32)  # noqa: E731
    nentries = 8 * nb + 8
    return {
        **args, "pos": pos, "vel": p["vel"], "contact_point": np.zeros((n, 3)),
        "contact_normal": np.zeros((n, 3)), "snap": np.zeros((n, 3)), "aabb": np.zeros((nb, 10)),
        "bucket_body": np.zeros(nentries, dtype=np.int32), "edge": np.zeros((len(flat(surfaces)), 4)),
        "fat_pos": np.zeros((n, 3)), "fat_body": np.zeros(max(nb, 2 * n), dtype=np.int32),
        "fat_clear": np.zeros(max(nb, 2 * n)), "fat_kept": np.zeros((max(nb, 2 * n), 2)),
        "fat_drift": np.zeros((nb, 6)),
        "reacted": np.zeros((n, 3)),
        # where the frame's last pass left them: none yet (NaN) or near the substep's start
        "left_pos": np.full((n, 3), np.nan) if rng.random() < 0.25 else prev + rng.normal(0.0, 0.03, (n, 3)),
        "prev_pos": prev, "support": np.where(rng.random((n, 1)) < 0.3, [[0.0, 1.0, 0.0]], 0.0),
        "radius": np.where(rng.random(n) < 0.5, rng.uniform(0.0, 0.08, n), 0.0), "owner": owner,
        "inv_mass": p["inv_mass"], "rest_pos": rng.normal(0.0, 0.3, (n, 3)),
        "outline": flat(surfaces) if surfaces else np.zeros(0, np.int32),
        "outline_start": np.cumsum([0] + [len(o) for o in surfaces])[:-1].astype(np.int32),
        "outline_count": np.array([len(o) for o in surfaces], dtype=np.int32),
        "member": flat(members) if members else np.zeros(0, np.int32),
        "member_start": np.cumsum([0] + [len(m) for m in members])[:-1].astype(np.int32),
        "member_count": np.array([len(m) for m in members], dtype=np.int32),
        "body_flags": np.array(flags, dtype=np.int32),
        "body_category": rng.choice(np.array([1, 2], dtype=np.int32), nb),
        "body_mask": np.where(rng.random(nb) < 0.8, -1, 3).astype(np.int32),
        "body_friction": rng.uniform(0.0, 1.0, nb), "body_restitution": rng.uniform(0.0, 1.0, nb),
    }


def sample_body_contacts(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    """Overlapping rings (closed bodies, some self-colliding), an open chain, particles
    shared by two bodies and free particles with radii, moving from where they were at
    the substep's start; a small hash so that its cells must grow. (3D: _body_contacts_3d.)"""
    if dim == 3:
        return _body_contacts_3d(rng, n)
    p = particles(rng, n, 2)
    pos, prev = p["pos"], p["pos"].copy()
    radius = np.where(rng.random(n) < 0.5, rng.uniform(0.0, 0.08, n), 0.0)
    owner = np.full(n, -1, dtype=np.int32)
    rest_pos = rng.normal(0.0, 0.3, (n, 2))
    members: list[list[int]] = []
    outlines: list[list[int]] = []
    flags: list[int] = []
    free = list(rng.permutation(n))
    while len(free) >= 4 and len(members) < max(1, n // 10):
        k = min(int(rng.integers(4, 11)), len(free))
        ring, free = [int(i) for i in free[:k]], free[k:]
        t = np.linspace(0.0, 2 * np.pi, k, endpoint=False)
        centre = rng.normal(0.0, 0.6, 2)
        if len(members) % 5 == 4:  # an open chain (a rope): no area
            pos[ring] = centre + np.stack([np.linspace(-0.5, 0.5, k), np.zeros(k)], axis=1)
            flags.append(int(rng.integers(0, 2)) * 2)
        else:
            pos[ring] = centre + rng.uniform(0.2, 0.6) * np.stack([np.cos(t), np.sin(t)], axis=1)
            flags.append(1 | int(rng.random() < 0.3) * 2)
        extra = [int(i) for i in free[:1]] if rng.random() < 0.5 else []  # an interior member
        free = free[len(extra):]
        members.append(ring + extra)
        outlines.append(ring)
    if len(members) >= 2:  # a particle shared by two bodies
        members[1].append(members[0][0])
    for b, mem in enumerate(members):
        for i in mem:
            owner[i] = b if owner[i] == -1 else -2
    prev += rng.normal(0.0, 0.03, prev.shape)  # where they were at the substep's start
    nb = len(members)
    m_start = np.cumsum([0] + [len(m) for m in members])[:-1].astype(np.int32)
    o_start = np.cumsum([0] + [len(o) for o in outlines])[:-1].astype(np.int32)
    flat = lambda lists: np.array([i for x in lists for i in x], dtype=np.int32)  # noqa: E731
    nbuckets, nentries = 16, 4 * nb + 4
    return {
        "pos": pos, "vel": p["vel"], "contact_body": np.full(n, -1, dtype=np.int32),
        "contact_point": np.zeros((n, 2)), "contact_normal": np.zeros((n, 2)),
        "contact_impulse": np.zeros(n), "snap": np.zeros((n, 2)), "aabb": np.zeros((nb, 10)),
        "bucket_start": np.zeros(nbuckets + 1, dtype=np.int32),
        "bucket_body": np.zeros(nentries, dtype=np.int32),
        "cell_start": np.zeros(nbuckets + 1, dtype=np.int32),
        "cell_particle": np.zeros(n, dtype=np.int32), "near": np.zeros(n, dtype=np.int32),
        "edge": np.zeros((len(flat(outlines)), 4)), "fat_pos": np.zeros((n, 2)),
        "fat_first": np.zeros(n, dtype=np.int32), "fat_count": np.zeros(n, dtype=np.int32),
        "fat_body": np.zeros(max(nb, 2 * n), dtype=np.int32), "fat_state": np.zeros(8),
        "fat_clear": np.zeros(max(nb, 2 * n)), "fat_kept": np.zeros((max(nb, 2 * n), 2)),
        "fat_drift": np.zeros((nb, 6)), "reacted": np.zeros((n, 2)),
        "left_pos": np.full((n, 2), np.nan),  # read in 3D only
        "prev_pos": prev, "support": np.where(rng.random((n, 1)) < 0.3, [[0.0, 1.0]], 0.0),
        "radius": radius, "inv_mass": p["inv_mass"], "owner": owner,
        "category": rng.choice(np.array([1, 2, 3], dtype=np.int32), n),
        "mask": np.where(rng.random(n) < 0.8, -1, 1).astype(np.int32),
        "friction": rng.uniform(0.0, 1.0, n), "restitution": rng.uniform(0.0, 1.0, n),
        "rest_pos": rest_pos, "outline": flat(outlines) if outlines else np.zeros(0, np.int32),
        "outline_start": o_start, "outline_count": np.array([len(o) for o in outlines], dtype=np.int32),
        "member": flat(members) if members else np.zeros(0, np.int32), "member_start": m_start,
        "member_count": np.array([len(m) for m in members], dtype=np.int32),
        "body_flags": np.array(flags, dtype=np.int32),
        "body_category": rng.choice(np.array([1, 2], dtype=np.int32), nb),
        "body_mask": np.where(rng.random(nb) < 0.8, -1, 3).astype(np.int32),
        "body_friction": rng.uniform(0.0, 1.0, nb), "body_restitution": rng.uniform(0.0, 1.0, nb),
        "iterations": 2, "particle_collisions": 1, "h": 1.0 / 480.0, "rest_speed": 0.25,
    }


def _pokes(rng: np.random.Generator, pos: np.ndarray, prev: np.ndarray, ring: list[int]) -> list[Any]:
    """Small colliders poking into edges of the ring ``ring`` (counter-clockwise): a disc, a
    turned box's corner and a segment's end near edge midpoints, outside or just inside
    (with start positions that make some of them crossings and leave others deep)."""
    out: list[Any] = []
    for kind in range(3):
        e = int(rng.integers(0, len(ring)))
        a, b = pos[ring[e]], pos[ring[(e + 1) % len(ring)]]
        d = b - a
        n = np.array([d[1], -d[0]]) / max(float(np.linalg.norm(d)), 1e-12)
        q = a + rng.uniform(0.2, 0.8) * d + rng.uniform(-0.04, 0.02) * n
        if kind == 0:
            out.append(shapes.Disc(q + 0.0, float(rng.uniform(0.005, 0.04))))
        elif kind == 1:  # a diamond whose corner q points into the edge
            half = float(rng.uniform(0.01, 0.05))
            out.append(shapes.Box(q + n * half * np.sqrt(2.0), (half, half),
                                  angle=float(np.arctan2(n[1], n[0]) + np.pi / 4)))
        else:  # a segment ending at q, coming from outside
            out.append(shapes.Segment(q + n * rng.uniform(0.05, 0.3), q, float(rng.uniform(0.002, 0.02))))
        for i in (ring[e], ring[(e + 1) % len(ring)]):  # where the edge was at the start
            prev[i] = pos[i] + rng.normal(0.0, 0.02, 2)
    return out


def _toward(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """A proper rotation taking unit u to unit v (Rodrigues; a half turn when opposite)."""
    axis, c = np.cross(u, v), float(u @ v)
    if np.linalg.norm(axis) < 1e-9:
        if c > 0.0:
            return np.eye(3)
        side = np.cross(u, np.eye(3)[int(np.argmin(np.abs(u)))])
        side /= np.linalg.norm(side)
        return np.asarray(2.0 * np.outer(side, side) - np.eye(3))
    K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.asarray(np.eye(3) + K + K @ K / (1.0 + c))


def _pokes3(rng: np.random.Generator, pos: np.ndarray, prev: np.ndarray, tris: np.ndarray) -> list[Any]:
    """Small colliders poking into triangles of the surface ``tris`` (rows, counter-clockwise
    from outside): a sphere, a box's corner and a segment's end over a point inside a
    triangle, outside or just inside (with start positions that make some crossings)."""
    out: list[Any] = []
    for kind in range(3):
        a, b, c = tris[int(rng.integers(0, len(tris)))]
        nrm = np.cross(pos[b] - pos[a], pos[c] - pos[a])
        nrm = nrm / max(float(np.linalg.norm(nrm)), 1e-12)
        w = rng.dirichlet([2.0, 2.0, 2.0])
        q = w[0] * pos[a] + w[1] * pos[b] + w[2] * pos[c] + rng.uniform(-0.04, 0.02) * nrm
        if kind == 0:
            out.append(shapes.Sphere(q + 0.0, float(rng.uniform(0.005, 0.04))))
        elif kind == 1:  # a box whose corner (h, h, h) is q, pointing into the triangle
            half = float(rng.uniform(0.01, 0.05))
            R = _toward(np.ones(3) / np.sqrt(3.0), -nrm)
            out.append(shapes.Box(q - R @ np.full(3, half), (half, half, half), rotation=R))
        else:  # a segment ending at q, coming from outside
            out.append(shapes.Segment(q + nrm * rng.uniform(0.05, 0.3), q, float(rng.uniform(0.002, 0.02))))
        for i in (a, b, c):  # where the triangle was at the start
            prev[i] = pos[i] + rng.normal(0.0, 0.02, 3)
    return out


def _polytopes3(rng: np.random.Generator) -> list[Any]:
    """A tetrahedron (4 faces) and a square pyramid (5 faces: four meet at its apex, which one
    triple gives), turned, near the origin."""
    tet = np.array([[1.0, 1.0, 1.0], [1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]]) / np.sqrt(3.0)
    pyr = np.array([[0.0, -1.0, 0.0], [1.0, 1.0, 0.0], [-1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [0.0, 1.0, -1.0]])
    pyr = pyr / np.linalg.norm(pyr, axis=1)[:, None]
    out = []
    for normals, size in ((tet, 0.1), (pyr, 0.08)):
        R, upper = np.linalg.qr(rng.normal(0.0, 1.0, (3, 3)))  # a random rotation
        R = R * np.sign(np.diag(upper))
        if np.linalg.det(R) < 0.0:
            R[:, 0] = -R[:, 0]
        out.append(shapes._polytope(rng.normal(0.0, 0.5, 3), R, normals, np.full(len(normals), size),
                                    bound=4.0 * size))
    return out


def _sample_edge_collide_3d(rng: np.random.Generator, n: int) -> dict[str, Any]:
    """3D: octahedra (closed surfaces; some open sheets, some not flagged closed), small
    colliders poking into their triangles, a tetrahedron and a square pyramid, the sampler's
    other shapes and a large floor box under everything (its corners far: the corner cull);
    edge cases on purpose: a degenerate triangle (two corners at one point), a triangle with
    all corners pinned, spheres centred exactly on a surface particle and on an edge's
    midpoint, particles resting on colliders (support), spinning and moving colliders."""
    p = particles(rng, n, 3)
    pos = p["pos"]
    members: list[np.ndarray] = []
    surfaces: list[np.ndarray] = []
    flags: list[int] = []
    free = list(rng.permutation(n))
    while len(free) >= 6 and len(members) < max(1, n // 8):
        ring, free = np.array(free[:6]), free[6:]
        centre, size = rng.normal(0.0, 0.6, 3), rng.uniform(0.15, 0.4)
        offsets = np.repeat(np.eye(3), 2, axis=0) * np.tile([1.0, -1.0], 3)[:, None]
        pos[ring] = centre + size * offsets + rng.normal(0.0, 0.02, (6, 3))
        tris = _OCTAHEDRON[:4] if len(members) % 6 == 5 else _OCTAHEDRON
        closed_flag = (1 if rng.random() < 0.9 else 0) | int(rng.random() < 0.2) * 2
        flags.append(0 if len(members) % 6 == 5 else closed_flag)
        members.append(ring)
        surfaces.append(ring[tris])
    prev = pos + rng.normal(0.0, 0.005, pos.shape)
    geometries = [s.geometry(3) for s in sample_shapes(rng, 3)]
    geometries.append(shapes.Box((0.0, -2.0, 0.0), (5.0, 1.0, 5.0)).geometry(3))
    geometries += _polytopes3(rng)
    closed = [t for t, f in zip(surfaces, flags, strict=True) if f & 1]
    for tris in closed[:12]:
        geometries += [s.geometry(3) for s in _pokes3(rng, pos, prev, tris)]
    if len(closed) >= 2:
        t0, t1 = closed[0], closed[1]
        geometries.append(shapes.Sphere(pos[t0[0, 1]] + 0.0, 0.03).geometry(3))  # on a particle
        geometries.append(shapes.Sphere(0.5 * (pos[t1[0, 0]] + pos[t1[0, 1]]), 0.02).geometry(3))  # an edge
        prev[t0[0, 1]] = pos[t0[0, 1]]
    if len(closed) >= 3:
        t2 = closed[2][0]
        p["inv_mass"][t2] = 0.0  # a poked triangle with all corners pinned
        geometries.append(shapes.Sphere(pos[t2].mean(axis=0), 0.05).geometry(3))
    if len(closed) >= 4:
        t3 = closed[3][0]
        pos[t3[1]] = pos[t3[0]]  # a degenerate triangle, with a sphere on it
        geometries.append(shapes.Sphere(pos[t3[0]] + 0.01, 0.05).geometry(3))
    colliders = collider_arrays(geometries, 3)
    k = len(geometries)
    h = 1.0 / 480.0
    angular = np.zeros((k, 3))
    angular[1] = (0.5, 1.5, -0.7)  # a spinning box
    angular[len(geometries) - 1] = (0.0, 0.0, 2.0)
    velocity = np.zeros((k, 3))
    velocity[::3] = rng.normal(0.0, 1.0, (len(velocity[::3]), 3))  # some colliders move
    support = np.where(rng.random((n, 1)) < 0.2, rng.normal(0.0, 1.0, (n, 3)), 0.0)
    flat = [t.ravel() for t in surfaces]
    counts = np.array([len(f) for f in flat], dtype=np.int32)
    gaps = rng.integers(0, 3, len(flat))  # ranges with garbage rows between them
    starts = (np.cumsum(counts + gaps) - counts).astype(np.int32)
    outline = np.zeros(int(starts[-1] + counts[-1]) if len(flat) else 0, dtype=np.int32)
    for f, s0 in zip(flat, starts, strict=True):
        outline[s0:s0 + len(f)] = f
    return {"pos": pos, "vel": p["vel"], "contact_collider": np.full(n, -1, dtype=np.int32),
            "contact_normal": np.zeros((n, 3)), "contact_impulse": np.zeros(n), "support": support,
            "stuck": rng.integers(0, 2, n).astype(np.int32),
            "edge_near": np.zeros(len(outline), dtype=np.int32), "prev_pos": prev,
            "radius": np.where(rng.random(n) < 0.5, rng.uniform(0.0, 0.03, n), 0.0),
            "mass": p["mass"], "inv_mass": p["inv_mass"], "outline": outline,
            "outline_start": starts, "outline_count": counts, "body_flags": np.array(flags, dtype=np.int32),
            **{key: v for key, v in colliders.items() if key != "grow"}, "velocity": velocity,
            "angular_velocity": angular, "restitution": rng.uniform(0.0, 1.0, k),
            "friction": frictions(rng, k), "keep": np.exp(-rng.uniform(0.0, 5.0, k) * h),
            "iterations": 2, "reverse": int(rng.integers(0, 2)), "h": h, "rest_speed": 0.25}


def sample_edge_collide(rng: np.random.Generator, n: int, dim: int) -> dict[str, Any]:
    """Noisy rings (most closed, some open), small colliders poking into their edges, the
    sampler's other shapes; edge cases on purpose: a zero-length edge, an edge with both
    ends pinned, discs centred exactly on an outline particle (t = 0 of one edge, t = 1 of
    the one before) and exactly on an edge's midpoint, particles resting on colliders
    (support), a spinning and a moving collider. 3D: _sample_edge_collide_3d."""
    if dim == 3:
        return _sample_edge_collide_3d(rng, n)
    p = particles(rng, n, dim)
    pos, prev = p["pos"], p["pos"] + vec(rng, n, dim, 0.01)
    rows, starts, counts = bodies(rng, n, max(1, n // 8))
    ring_positions(rng, p, rows, starts, counts)
    prev[:, :2] = pos[:, :2] + rng.normal(0.0, 0.005, (n, 2))
    nb = len(counts)
    flags = np.where(rng.random(nb) < 0.85, 1, 0).astype(np.int32) | \
        np.where(rng.random(nb) < 0.2, 2, 0).astype(np.int32)
    geometries = [s.geometry(dim) for s in sample_shapes(rng, dim)]
    rings = [rows[s : s + c].tolist() for s, c in zip(starts, counts, strict=True) if c >= 3]
    if dim == 2:
        for ring in rings[:12]:
            geometries += [s.geometry(2) for s in _pokes(rng, pos, prev, ring)]
        if len(rings) >= 2:
            r0, r1 = rings[0], rings[1]
            geometries.append(shapes.Disc(pos[r0[1], :2] + 0.0, 0.03).geometry(2))  # t = 0 and 1
            geometries.append(shapes.Disc(0.5 * (pos[r1[0], :2] + pos[r1[1], :2]), 0.02).geometry(2))
            prev[r0[1]] = pos[r0[1]]
        if len(rings) >= 3:
            r2 = rings[2]
            p["inv_mass"][r2[0]] = p["inv_mass"][r2[1]] = 0.0  # both ends of a poked edge pinned
            geometries.append(shapes.Disc(0.5 * (pos[r2[0], :2] + pos[r2[1], :2]), 0.05).geometry(2))
        if len(rings) >= 4:
            r3 = rings[3]
            pos[r3[1]] = pos[r3[0]]  # a zero-length edge, with a disc on it
            geometries.append(shapes.Disc(pos[r3[0], :2] + 0.01, 0.05).geometry(2))
    colliders = collider_arrays(geometries, dim)
    k = len(geometries)
    h = 1.0 / 480.0
    angular = np.zeros((k, 3))
    angular[1, 2] = 1.5  # a spinning box
    velocity = np.zeros((k, dim))
    velocity[::3] = rng.normal(0.0, 1.0, (len(velocity[::3]), dim))  # some colliders move
    support = np.where(rng.random((n, 1)) < 0.2, rng.normal(0.0, 1.0, (n, dim)), 0.0)
    return {"pos": pos, "vel": p["vel"], "contact_collider": np.full(n, -1, dtype=np.int32),
            "contact_normal": np.zeros((n, dim)), "contact_impulse": np.zeros(n), "support": support,
            "stuck": rng.integers(0, 2, n).astype(np.int32),
            "edge_near": np.zeros(len(rows), dtype=np.int32), "prev_pos": prev,
            "radius": np.where(rng.random(n) < 0.5, rng.uniform(0.0, 0.03, n), 0.0),
            "mass": p["mass"], "inv_mass": p["inv_mass"], "outline": rows,
            "outline_start": starts, "outline_count": counts, "body_flags": flags,
            **{key: v for key, v in colliders.items() if key != "grow"}, "velocity": velocity,
            "angular_velocity": angular, "restitution": rng.uniform(0.0, 1.0, k),
            "friction": frictions(rng, k), "keep": np.exp(-rng.uniform(0.0, 5.0, k) * h),
            "iterations": 2, "reverse": int(rng.integers(0, 2)), "h": h, "rest_speed": 0.25}


Sampler = Callable[[np.random.Generator, int, int], dict[str, Any]]

SAMPLERS: dict[str, Sampler] = {
    "gravity_drag": sample_gravity_drag,
    "radial_gravity": sample_radial_gravity,
    "springs": sample_springs,
    "area_springs": sample_area_springs,
    "muscles": sample_muscles,
    "grab": sample_grab,
    "pressure": sample_pressure,
    "shape_match": sample_shape_match,
    "rolling_resistance": sample_rolling_resistance,
    "symplectic_euler": sample_step,
    "explicit_euler": sample_step,
    "verlet_drift": sample_verlet_drift,
    "verlet_kick": sample_verlet_kick,
    "rk4_stage": sample_rk4_stage,
    "rk4_combine": sample_rk4_combine,
    "xpbd_predict": sample_step,
    "xpbd_velocity": sample_xpbd_velocity,
    "xpbd_distance": sample_xpbd_distance,
    "xpbd_volume": sample_xpbd_volume,
    "xpbd_material": sample_xpbd_material,
    "settle_mass": sample_settle_mass,
    "settle_plan": sample_settle_plan,
    "zero": sample_zero,
    "untangle": sample_untangle,
    "spin_record": sample_spin_record,
    "spin_keep": sample_spin_keep,
    "collide": sample_collide,
    "find_unstable": sample_find_unstable,
    "clamp_speeds": sample_clamp_speeds,
    "body_contacts": sample_body_contacts,
    "edge_collide": sample_edge_collide,
}


def scalars_of(name: str, args: dict[str, Any]) -> list[Any]:
    """The scalar arguments of a sample, in signature order."""
    return [args[s] for s in REGISTRY[name].scalars]


def arrays_of(name: str, args: dict[str, Any]) -> dict[str, np.ndarray]:
    """The array arguments of a sample."""
    return {a.name: args[a.name] for a in REGISTRY[name].arrays}
