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
tables that name particles (the topology). ``restore`` parses and checks
everything (magic, version, digest, dim, counts, entity ids in row order,
link endpoints) before it writes one value, so a corrupted or mismatched
blob raises ValueError and leaves the world unchanged. Restoring into a
world of the same topology and settings replays bit for bit.
"""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any

import numpy as np

from pysoft.features import Features

MAGIC = b"PYSOFT\x00S"
# 2: arrays in feature order (pysoft.features.FEATURES); 3: bodies' rolling_resistance,
# area springs, grabs
FORMAT_VERSION = 3
_HEADER = struct.Struct("<8sII16s")


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def _state(features: Features) -> tuple[dict[str, np.ndarray], list[str]]:
    """The saved arrays, and the names of those that are topology (must match on restore)."""
    out: dict[str, np.ndarray] = {}
    topology: list[str] = []
    for name, table, fields in features.snapshot_tables():
        for field, arr in table.snapshot_fields(("entity", *fields)).items():
            out[f"{name}.{field}"] = arr
        topology.append(f"{name}.entity")
    for name, table in features.links():
        out[f"{name}.ends"] = table.view("ends").copy()
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
    for name, table, fields in features.snapshot_tables():
        for field in fields:
            table.view(field)[...] = arrays[f"{name}.{field}"]
    return float(head["time"])
