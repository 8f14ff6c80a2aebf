"""Snapshots: the integration state of a World as a versioned, checksummed blob.

Layout (little-endian)::

    magic    8 bytes  b"PYSOFT\\x00S"
    version  u32      FORMAT_VERSION
    head_len u32      length of the JSON head
    digest   16 bytes blake2b of head + payload
    head     JSON     dim, counts, time, array names/shapes/dtypes, entity order
    payload  the arrays' bytes, in head order

``restore`` parses and checks everything (magic, version, digest, dim,
counts, entity ids in row order, spring endpoints) before it writes one
value, so a corrupted or mismatched blob raises ValueError and leaves the
world unchanged. Restoring into a world of the same topology and settings
replays bit for bit.
"""

from __future__ import annotations

import hashlib
import json
import struct
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from pysoft.world import World

MAGIC = b"PYSOFT\x00S"
FORMAT_VERSION = 1
_HEADER = struct.Struct("<8sII16s")

# Everything the next step reads that a user or a step can change.
_TABLES = {
    "particles": ("pos", "vel", "mass", "inv_mass", "radius"),
    "springs": ("rest_length", "stiffness", "damping"),
    "colliders": ("center", "rotation", "angle", "velocity", "angular_velocity", "restitution",
                  "friction", "tangential_damping"),
    "wells": ("center", "strength", "falloff", "min_distance"),
    "distances": ("rest_length", "compliance"),
    "volumes": ("rest_volume", "compliance"),
    "bodies": ("amount", "min_area", "match_stiffness", "match_damping"),
}


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def _arrays(world: World) -> dict[str, np.ndarray]:
    s = world.store
    out: dict[str, np.ndarray] = {}
    for table_name, fields in _TABLES.items():
        table = getattr(s, table_name)
        for name, arr in table.snapshot_fields(("entity", *fields)).items():
            out[f"{table_name}.{name}"] = arr
    for table in ("springs", "distances", "volumes"):
        out[f"{table}.ends"] = getattr(s, table).view("ends").copy()
    return out


def pack(world: World) -> bytes:
    """Serialise ``world``'s state."""
    arrays = _arrays(world)
    head = json.dumps({
        "dim": world.dim,
        "time": world.time.hex(),
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


def unpack(world: World, blob: Any) -> None:
    """Check ``blob`` against ``world`` and, only if it matches, write it in."""
    head, arrays = _parse(blob)
    if head["dim"] != world.dim:
        raise ValueError(f"blob is of a dim={head['dim']} world, this world has dim={world.dim}")
    current = _arrays(world)
    if set(arrays) != set(current):
        raise ValueError("blob does not match this world's layout")
    for name, arr in current.items():
        if arrays[name].shape != arr.shape or arrays[name].dtype != arr.dtype:
            raise ValueError(f"blob does not match this world's topology ({name}: "
                             f"{arrays[name].shape} vs {arr.shape})")
    for name in ("particles.entity", "springs.entity", "colliders.entity", "wells.entity",
                 "distances.entity", "volumes.entity", "bodies.entity", "springs.ends",
                 "distances.ends", "volumes.ends"):
        if not np.array_equal(arrays[name], current[name]):
            raise ValueError(f"blob does not match this world's topology ({name} differ)")
    for table_name, fields in _TABLES.items():
        table = getattr(world.store, table_name)
        for name in fields:
            table.view(name)[...] = arrays[f"{table_name}.{name}"]
    world.time = head["time"]
