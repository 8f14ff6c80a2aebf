"""Fuzz targets: every C kernel of the registry, and ``World.restore``.

Each target takes the fuzzer's bytes and either returns (the contract held) or
raises :class:`Finding` (or crashes: the C core under a sanitizer aborts). The
bytes are read by :class:`Reader`, not by atheris, so the suite replays the
targets without atheris (``tests/test_fuzz.py``) and ``tests/fuzz/run.py`` drives
them with atheris (coverage of the Python side; this machine has no clang to
instrument the C side, so run the targets against a core built with
``-fsanitize=address,undefined`` to catch memory errors there).

Kernels: a sampler of the parity tests (``tests/samplers.py``) makes valid
arguments for a size the bytes choose; the bytes then overwrite entries of the
arrays and the scalars with hostile values (NaN, infinities, +-1e308, subnormals,
signed zeros, out-of-range indices). The contract of the checked call
(``_kernels.call``): both backends refuse the arguments alike with ValueError,
TypeError or KeyError, or both run without crashing; when both run on finite
inputs they return the same value and write the same arrays bit for bit (a NaN
that finite inputs overflow to matches any NaN). On
non-finite inputs (a world that has gone unstable within a frame, which the
instability scan reports at its end) only the first part holds: the twins
define the kernels' meaning on finite states, and where NaN meets a comparison
the two may take different branches (body contacts did: C found 2 contacts
for a NaN position where the twin found none).

Restore: a valid snapshot from the corpus (``corpus/restore``) is mutated by the
bytes: bytes flipped, inserted, cut, or a value of one of its arrays edited and
the checksum recomputed (so the value checks are fuzzed, not only the digest).
The contract: ValueError and the world exactly as before, or success and a world
that steps 10 frames (an InstabilityError is allowed: values the public API accepts,
such as a particle at 1e300 m, can be unstable) with no other exception.
"""

from __future__ import annotations

import math
import pathlib
import struct
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/: the samplers

from samplers import SAMPLERS, arrays_of, scalars_of  # noqa: E402
from test_determinism import _joined, _split  # noqa: E402

import pysoft  # noqa: E402
from pysoft import _kernels  # noqa: E402

CORPUS = HERE / "corpus"
SPECIAL = (math.nan, -math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -5e-324, 0.0, -0.0,
           1e-300, 1e300, 1.0, -1.0, 2.0**31, -(2.0**31))
REFUSED = (ValueError, TypeError, KeyError)


class Finding(AssertionError):
    """The contract did not hold."""


class Reader:
    """Numbers from fuzzer bytes; zeros once they run out."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def byte(self) -> int:
        if self.at >= len(self.data):
            return 0
        self.at += 1
        return self.data[self.at - 1]

    def int(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi]."""
        span = hi - lo + 1
        value = 0
        for _ in range(max(1, (span.bit_length() + 7) // 8)):
            value = value * 256 + self.byte()
        return lo + value % span

    def real(self) -> float:
        """A special value, or any double the next 8 bytes spell."""
        k = self.byte()
        if k < 128:
            return SPECIAL[k % len(SPECIAL)]
        raw = bytes(self.byte() for _ in range(8))
        return float(struct.unpack("<d", raw)[0])


def _same(a: Any, b: Any) -> bool:
    """Bit for bit, except that a NaN matches any NaN (finite inputs can overflow to NaN, and
    its sign and payload are not specified)."""
    if isinstance(a, np.ndarray):
        if a.dtype.kind == "f":
            nan = np.isnan(a)
            return bool((nan == np.isnan(b)).all()) and a[~nan].tobytes() == b[~nan].tobytes()
        return a.tobytes() == b.tobytes()
    return bool(a == b)


def kernel_target(name: str) -> Callable[[bytes], None]:
    """The fuzz target of kernel ``name``."""
    kernel = _kernels.REGISTRY[name]

    def target(data: bytes) -> None:
        r = Reader(data)
        n, dim, seed = r.int(0, 12), (2, 3)[r.int(0, 1)], r.int(0, 65535)
        try:
            args = SAMPLERS[name](np.random.default_rng(seed), n, dim)
        except (ValueError, IndexError):
            return  # no valid arguments of this size to start from
        for key in sorted(args):
            value = args[key]
            for _ in range(r.int(0, 3)):
                if isinstance(value, np.ndarray) and value.size:
                    i = r.int(0, value.size - 1)
                    value.flat[i] = r.real() if value.dtype.kind == "f" else r.int(-3, n + 3)
                elif isinstance(value, float):
                    args[key] = value = r.real()
        runs = []
        for backend in ("c", "python"):
            mine = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = _kernels.call(name, backend, *scalars_of(name, mine), **arrays_of(name, mine))
            except REFUSED as exc:
                runs.append(("refused", f"{type(exc).__name__}: {exc}", mine))
                continue
            runs.append(("ran", out, mine))
        (c_kind, c_out, c_args), (p_kind, p_out, p_args) = runs
        if c_kind != p_kind:
            raise Finding(f"{name}: C {c_kind}, NumPy {p_kind} ({c_out!r} / {p_out!r})")
        finite = all(np.isfinite(v).all() for v in args.values()
                     if isinstance(v, float) or (isinstance(v, np.ndarray) and v.dtype.kind == "f"))
        if c_kind == "refused" or not finite:
            return  # (non-finite input: neither crashes; the values need not agree, see above)
        if not _same(c_out, p_out):
            raise Finding(f"{name}: returns C {c_out!r}, NumPy {p_out!r}")
        for written in kernel.writes:
            if not _same(c_args[written], p_args[written]):
                raise Finding(f"{name}: {written} differs between C and NumPy")

    return target


def restore_target(seeds: list[bytes]) -> Callable[[bytes], None]:
    """The fuzz target of ``World.restore``, mutating the corpus ``seeds``."""
    sys.path.insert(0, str(CORPUS))
    from corpus_scenes import SCENES

    def target(data: bytes) -> None:
        r = Reader(data)
        if not seeds:
            return
        k = r.int(0, len(seeds) - 1)
        blob = bytearray(seeds[k])
        w = list(SCENES.values())[k]()
        how = r.int(0, 3)
        if how == 0:  # flip bytes
            for _ in range(r.int(1, 8)):
                blob[r.int(0, len(blob) - 1)] ^= 1 << r.int(0, 7)
        elif how == 1:  # insert bytes
            at = r.int(0, len(blob))
            blob[at:at] = bytes(r.byte() for _ in range(r.int(1, 16)))
        elif how == 2:  # cut
            del blob[r.int(0, len(blob) - 1):]
        else:  # edit one value of one array and re-checksum: the value checks, not the digest
            try:
                head, payload = _split(bytes(blob))
            except Exception:
                return
            offset, fields = 0, []
            for _, shape, dtype in head["arrays"]:
                size = int(np.prod(shape)) * np.dtype(dtype).itemsize
                fields.append((offset, int(np.prod(shape)), np.dtype(dtype)))
                offset += size
            at, count, dtype = fields[r.int(0, len(fields) - 1)]
            if count:
                pos = at + r.int(0, count - 1) * dtype.itemsize
                value = (np.array(r.real(), dtype=dtype) if dtype.kind == "f"
                         else np.array(r.int(-(2**31), 2**31 - 1)).astype(dtype))
                payload[pos:pos + dtype.itemsize] = value.tobytes()
            blob = bytearray(_joined(bytes(blob), head, bytes(payload)))
        before = w.snapshot()
        try:
            w.restore(bytes(blob))
        except ValueError:
            if w.snapshot() != before:
                raise Finding("restore refused a blob but changed the world") from None
            return
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                for _ in range(10):
                    w.step()
            except pysoft.InstabilityError:
                pass  # values the public API accepts can be unstable (a particle at 1e300 m)

    return target


def seeds() -> list[bytes]:
    """The restore corpus, in the order of corpus_scenes.SCENES."""
    sys.path.insert(0, str(CORPUS))
    from corpus_scenes import SCENES

    return [(CORPUS / "restore" / f"{name}.snap").read_bytes() for name in SCENES]
