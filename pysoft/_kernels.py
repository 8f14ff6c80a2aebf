"""The kernel registry and the thin layer over both backends.

One :class:`Kernel` entry per C kernel names its C file (``csrc/src/<source>.c``,
whose twin is ``pysoft/twins/<source>.py``), its array arguments with
symbolic shapes, the counts that follow them, its scalars, the arrays it
writes and its parity tolerance. Each feature registers its kernels when it
is imported; the parity tests and ``python -m pysoft bench`` iterate
:data:`REGISTRY`.

:class:`Bound` is the C boundary's middle layer: it checks dtype, shape and
contiguity once and turns the arrays into pointers once. The Store's
buffers never move, so a feature binds each kernel once for the life of its
world and makes calls with the live counts (:meth:`Bound.with_counts`)
whenever its tables change. Systems and components never see cdata.
"""

from __future__ import annotations

import functools
import importlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from pysoft import _native

Shape = tuple[str | int, ...]
Check = Callable[[dict[str, np.ndarray], dict[str, int]], None]


@dataclass(frozen=True)
class Arg:
    """An array argument: name, symbolic shape and dtype."""

    name: str
    shape: Shape
    dtype: type = np.float64


@dataclass(frozen=True)
class Kernel:
    """One registry entry: the C symbol is ``ps_<name>``, the twin ``twins.<source>.<name>``."""

    name: str
    source: str
    arrays: tuple[Arg, ...]
    counts: tuple[str, ...]
    scalars: tuple[str, ...]
    writes: tuple[str, ...]
    ulp: int = 0  # 0: bitwise parity; otherwise the documented ULP bound
    scratch: tuple[str, ...] = ()  # arrays it may overwrite freely (workspace, not results)
    index_args: tuple[tuple[str, str], ...] = ()  # (index array, count it indexes)
    check: Check | None = None  # extra checks of a one-off call's arguments
    # each particle row on its own (no row reads or writes another's): how the results of
    # calls over ranges of the rows make the result of one call over all ("void", "sum", or
    # "first": the first row found); "" if rows depend on each other. pysoft._frame runs
    # such kernels range by range on several threads.
    rows: str = ""

    @property
    def twin(self) -> Callable[..., Any]:
        fn: Callable[..., Any] = getattr(importlib.import_module(f"pysoft.twins.{self.source}"), self.name)
        return fn


REGISTRY: dict[str, Kernel] = {}


def register(*kernels: Kernel) -> None:
    """Add kernels to the registry (each feature module does this for its own)."""
    for k in kernels:
        if k.name in REGISTRY and REGISTRY[k.name] != k:
            raise ValueError(f"kernel {k.name!r} is registered twice")
        REGISTRY[k.name] = k


# -- counting foreign calls (tests and the benchmark) ----------------------------

# the counter of the innermost counting() block of this thread (a context variable: a world
# bound in another thread at the same time is not counted)
_counter: ContextVar[Counter[str] | None] = ContextVar("pysoft_kernel_counter", default=None)


@contextmanager
def counting() -> Iterator[Counter[str]]:
    """Count, by kernel name, the calls made through kernels bound inside this block (in this
    thread), and (as ``"bind:<name>"``) the bindings made in it."""
    counter: Counter[str] = Counter()
    token = _counter.set(counter)
    try:
        yield counter
    finally:
        _counter.reset(token)


def _counted(name: str, fn: Callable[..., Any], counter: Counter[str]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        counter[name] += 1
        return fn(*args)

    return call


# -- binding ---------------------------------------------------------------------


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
        if (arg.name in kernel.writes or arg.name in kernel.scratch) and not a.flags.writeable:
            raise ValueError(f"{kernel.name}: {arg.name} is written and must be writeable")
        for sym, size in zip(arg.shape, a.shape, strict=True):
            if isinstance(sym, str) and sym.endswith("+1"):  # e.g. batch_start: nbatch + 1 rows
                base = sym[:-2]
                if base not in sizes:
                    sizes[base] = size - 1
                want = sizes[base] + 1
            else:
                want = sym if isinstance(sym, int) else sizes.setdefault(sym, size)
            if size != want:
                raise ValueError(f"{kernel.name}: {arg.name} has shape {a.shape}; "
                                 f"axis {sym!r} must be {want}")
    if sizes.get("dim", 2) not in (2, 3):
        raise ValueError(f"{kernel.name}: dim must be 2 or 3, got {sizes['dim']}")
    return sizes


def _check_indices(kernel: Kernel, arrays: dict[str, np.ndarray], sizes: dict[str, int]) -> None:
    for index_name, count in kernel.index_args:
        idx = arrays[index_name]
        if idx.size and (idx.min() < 0 or idx.max() >= sizes[count]):
            raise ValueError(f"{kernel.name}: {index_name} holds rows outside [0, {sizes[count]})")
    if kernel.check is not None:
        kernel.check(arrays, sizes)


def _row_bytes(a: np.ndarray, shape: Shape) -> int:
    """Bytes per particle row of an array whose first axis is the particles' ("n"), else 0."""
    return a.itemsize * int(np.prod(a.shape[1:], dtype=np.int64)) if shape[:1] == ("n",) else 0


class Bound:
    """A kernel whose arrays were checked and turned into pointers once.

    ``call(*counts, *scalars)`` runs it over the first ``counts`` rows: the
    Store's buffers never move, so a feature binds each kernel once for the
    life of its world and passes the live counts at each call. The counts
    never exceed the arrays' rows: the Store's tables raise CapacityError
    before that.
    """

    __slots__ = ("call", "kernel", "sizes")

    def __init__(self, name: str, backend: str, **arrays: np.ndarray) -> None:
        self.kernel = kernel = REGISTRY[name]
        self.sizes = _resolve(kernel, arrays)
        ordered = [arrays[a.name] for a in kernel.arrays]
        fn: Callable[..., Any]
        if backend == "python":
            fn, args = kernel.twin, ordered
        elif backend == "c":
            ffi, lib = _native.require()
            fn = getattr(lib, "ps_" + name)
            args = [ffi.from_buffer("int32_t[]" if a.dtype == np.int32 else "double[]", a)
                    for a in ordered]
        else:
            raise ValueError(f"backend must be 'c' or 'python', got {backend!r}")
        counter = _counter.get()
        if counter is not None:
            counter["bind:" + name] += 1
            fn = _counted(name, fn, counter)
        call: Any = functools.partial(fn, *args)
        call.kernel, call.counter = name, counter  # for pysoft._frame.Op
        call.row_bytes = [_row_bytes(a, arg.shape) for a, arg in zip(ordered, kernel.arrays, strict=True)]
        self.call: Callable[..., Any] = call


def bind(name: str, backend: str, **arrays: np.ndarray) -> Callable[..., Any]:
    """Check ``arrays`` (indices included) for kernel ``name`` and return ``call(*scalars)``
    over all their rows (tests and one-off use; a World binds through :class:`Bound`)."""
    bound = Bound(name, backend, **arrays)
    _check_indices(bound.kernel, arrays, bound.sizes)
    return functools.partial(bound.call, *(bound.sizes[c] for c in bound.kernel.counts))


def call(name: str, backend: str, *scalars: float, **arrays: np.ndarray) -> Any:
    """Check and run one kernel over whole arrays. Its scalars must be finite real numbers, and
    a substep ``h`` > 0 (a World passes nothing else)."""
    kernel = REGISTRY[name]
    if len(scalars) != len(kernel.scalars):
        raise ValueError(f"{name}: takes scalars {kernel.scalars}, got {len(scalars)}")
    for scalar, value in zip(kernel.scalars, scalars, strict=True):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not np.isfinite(value) or (scalar == "h" and not value > 0):
            raise ValueError(f"{name}: {scalar} must be a finite number{' > 0' if scalar == 'h' else ''}, "
                             f"got {value!r}")
    return bind(name, backend, **arrays)(*scalars)
