"""Snapshots: the integration state of a World as a versioned, checksummed blob.

Layout (little-endian)::

    magic    8 bytes  b"PYSOFT\\x00S"
    version  u32      FORMAT_VERSION
    head_len u32      length of the JSON head
    digest   16 bytes blake2b of head + payload
    head     JSON     dim, time, array names/shapes/dtypes
    payload  the arrays' bytes, in head order

The arrays are each feature's snapshot fields (``Feature.snapshot``), in
feature order, plus every table's entity column and the ``ends`` of the
tables that name particles (the topology), as ids relative to the world's own
entity range (each World numbers its entities from its own base), so a blob
restores into any world built the same way. ``restore`` parses and checks
everything (magic, version, digest, dim, counts, entity ids in row order,
link endpoints, and every value by the public API's rules: ``RULES``) before it
writes one value, so a corrupted or mismatched
blob raises ValueError and leaves the world unchanged. Restoring into a
world of the same topology and settings replays bit for bit.
"""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any

import numpy as np

from pysoft import _validate
from pysoft.features import Features

MAGIC = b"PYSOFT\x00S"
# 2: arrays in feature order (pysoft.features.FEATURES); 3: bodies' rolling_resistance,
# area springs, grabs; 4: material constraints
FORMAT_VERSION = 6
_HEADER = struct.Struct("<8sII16s")


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def _state(features: Features) -> tuple[dict[str, np.ndarray], list[str]]:
    """The saved arrays, and the names of those that are topology (must match on restore).
    Entity ids are saved relative to the world's own id range (``Ecs.base``)."""
    out: dict[str, np.ndarray] = {}
    topology: list[str] = []
    base = features.ctx.ecs.base

    def relative(ids: np.ndarray) -> np.ndarray:
        return np.where(ids >= 0, ids - base, ids)  # negative: none (kept as it is)

    for name, table, fields in features.snapshot_tables():
        for field, arr in table.snapshot_fields(("entity", *fields)).items():
            out[f"{name}.{field}"] = relative(arr) if field == "entity" else arr
        topology.append(f"{name}.entity")
    for name, table in features.links():
        out[f"{name}.ends"] = relative(table.view("ends"))
        topology.append(f"{name}.ends")
    return out, topology


def pack(features: Features, time: float) -> bytes:
    """Serialise the state of a world's features and its time."""
    arrays, _ = _state(features)
    head = json.dumps({
        "dim": features.ctx.dim,
        "time": time.hex(),
        "arrays": [[k, list(a.shape), a.dtype.str] for k, a in arrays.items()],
    }).encode()
    payload = b"".join(np.ascontiguousarray(a).tobytes() for a in arrays.values())
    return _HEADER.pack(MAGIC, FORMAT_VERSION, len(head), _digest(head + payload)) + head + payload


def _parse(blob: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise ValueError(f"blob must be bytes, got {type(blob).__name__}")
    blob = bytes(blob)
    if len(blob) < _HEADER.size:
        raise ValueError("blob is too short to be a pysoft snapshot")
    magic, version, head_len, digest = _HEADER.unpack_from(blob)
    if magic != MAGIC:
        raise ValueError("blob is not a pysoft snapshot (bad magic)")
    if version != FORMAT_VERSION:
        raise ValueError(f"blob has snapshot format {version}; this pysoft reads {FORMAT_VERSION}")
    body = blob[_HEADER.size :]
    if _digest(body) != digest:
        raise ValueError("blob is corrupted (checksum mismatch)")
    try:
        head = json.loads(body[:head_len])
        offset = head_len
        arrays = {}
        for name, shape, dtype in head["arrays"]:
            count = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            arrays[name] = np.frombuffer(body, dtype=dtype, count=int(np.prod(shape)),
                                         offset=offset).reshape(shape)
            offset += count
        if offset != len(body):
            raise ValueError("trailing bytes")
        head["time"] = float.fromhex(head["time"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"blob is malformed: {exc}") from None
    return head, arrays


INF = float("inf")
# What each saved field may hold, by the rules of the public API that sets it:
# (low, high) for floats, inclusive, NaN never (inf only where a bound is inf); ints likewise.
# A field missing here must be finite. ``restore`` refuses a blob with anything else, so a blob
# edited and re-checksummed cannot bring NaN positions, negative masses or a gravity well's
# falloff of 2**31 - 1 into a world.
_ANY, _NONNEG, _UNIT = (-INF, INF), (0.0, INF), (0.0, 1.0)
_POSITIVE = (float(np.nextafter(0.0, 1.0)), INF)  # > 0: the smallest float above 0 and up
RULES: dict[str, tuple[float, float]] = {
    "particles.mass": (_validate.MIN_MASS, INF), "particles.inv_mass": _NONNEG, "particles.radius": _NONNEG,
    "particles.friction": _NONNEG, "particles.restitution": _UNIT,
    "springs.rest_length": _NONNEG, "springs.stiffness": _NONNEG, "springs.damping": _NONNEG,
    "area_springs.stiffness": _NONNEG, "area_springs.damping": _NONNEG,
    "distances.rest_length": _NONNEG, "distances.compliance": _NONNEG,
    "volumes.compliance": _NONNEG,
    "materials.young": _POSITIVE, "materials.rest_volume": _POSITIVE, "materials.compliance": _POSITIVE,
    "materials.poisson": (float(np.nextafter(-1.0, 0.0)), float(np.nextafter(0.5, 0.0))),
    "bodies.amount": _NONNEG, "bodies.min_area": _NONNEG, "bodies.match_stiffness": _NONNEG,
    "bodies.match_damping": _NONNEG, "bodies.friction": _NONNEG, "bodies.restitution": _UNIT,
    "bodies.rolling_resistance": _NONNEG,
    "colliders.restitution": _UNIT, "colliders.friction": _NONNEG,
    "colliders.tangential_damping": _NONNEG,
    "grabs.stiffness": _NONNEG, "grabs.damping": _NONNEG,
    "wells.falloff": (0, 3), "wells.min_distance": _POSITIVE,
}
_INFINITE_OK = {"particles.mass"}  # an infinite mass is an immovable particle
# How far a collider's rotation may be from orthonormal (|R R^T - I|, each entry): a spinning
# 3D collider's rotation drifts by rounding (about 1e-16 a substep), a tampered one is no
# rotation at all
ROTATION_TOLERANCE = 1e-6


def _check_values(arrays: dict[str, np.ndarray], time: float) -> None:
    """Every saved value within the public API's rules; raises ValueError naming the field."""
    if not (np.isfinite(time) and time >= 0.0):
        raise ValueError(f"blob has an invalid time {time!r}")
    for name, arr in arrays.items():
        if name.endswith((".entity", ".ends")) or arr.size == 0:
            continue
        low, high = RULES.get(name, _ANY)
        if arr.dtype.kind == "f":
            bad = np.isnan(arr) | (arr < low) | (arr > high)
            if name not in _INFINITE_OK:
                bad |= np.isinf(arr)
        else:
            bad = (arr < low) | (arr > high)
        if bad.any():
            where = int(np.flatnonzero(bad.reshape(len(arr), -1).any(axis=1))[0])
            raise ValueError(f"blob has an invalid {name} (row {where}: {arr[where]!r})")
    _check_rotations(arrays.get("colliders.rotation"))
    mass, inv = arrays.get("particles.mass"), arrays.get("particles.inv_mass")
    if mass is not None and inv is not None and mass.size:
        with np.errstate(divide="ignore"):
            expected = np.where(np.isinf(mass), 0.0, 1.0 / mass)
        if not ((inv == expected) | (inv == 0.0)).all():  # 0: pinned
            raise ValueError("blob has particles.inv_mass that is neither 1 / particles.mass nor 0")


def _check_rotations(rot: np.ndarray | None) -> None:
    """Every collider's rotation a proper rotation: orthonormal (within ROTATION_TOLERANCE)
    with determinant +1 (the collide kernel takes R^T for R's inverse)."""
    if rot is None or not len(rot):
        return
    eye = np.eye(rot.shape[-1])
    with np.errstate(over="ignore", invalid="ignore"):  # (huge entries: inf, refused)
        off = np.abs(rot @ np.swapaxes(rot, 1, 2) - eye).max(axis=(1, 2))
        bad = np.flatnonzero(~(off <= ROTATION_TOLERANCE) | ~(np.linalg.det(rot) > 0.0))
    if len(bad):
        raise ValueError(f"blob has an invalid colliders.rotation (row {int(bad[0])}: not a proper "
                         f"rotation, orthonormal with determinant +1: {rot[bad[0]].tolist()!r})")


def unpack(features: Features, blob: Any) -> float:
    """Check ``blob`` against the world and, only if it matches, write it in; returns the time."""
    head, arrays = _parse(blob)
    dim = features.ctx.dim
    if head["dim"] != dim:
        raise ValueError(f"blob is of a dim={head['dim']} world, this world has dim={dim}")
    current, topology = _state(features)
    if set(arrays) != set(current):
        raise ValueError("blob does not match this world's layout")
    for name, arr in current.items():
        if arrays[name].shape != arr.shape or arrays[name].dtype != arr.dtype:
            raise ValueError(f"blob does not match this world's topology ({name}: "
                             f"{arrays[name].shape} vs {arr.shape})")
    for name in topology:
        if not np.array_equal(arrays[name], current[name]):
            raise ValueError(f"blob does not match this world's topology ({name} differ)")
    _check_values(arrays, float(head["time"]))
    for name, table, fields in features.snapshot_tables():
        for field in fields:
            table.view(field)[...] = arrays[f"{name}.{field}"]
    return float(head["time"])
