"""Input checks for the public API: each raises ValueError naming the argument.

They run before anything is written, so a rejected call leaves the world as
it was and nothing invalid ever reaches a kernel.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import numpy as np


def real(name: str, value: Any) -> float:
    """A real number (not a bool) as a float: NaN and inf pass, the callers decide; a number
    beyond the float range (an int such as 10**400, for which float() raises OverflowError)
    is a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {_short(value)}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{name} must be a number within the float range (|x| < 1.8e308), "
                         f"got {_short(value)}") from None


def _short(value: Any) -> str:
    """``repr(value)``, cut short (an int of 10**5 digits has no repr at all, by default)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and abs(int(value)) >= 10**30:
        return f"an int of {int(value).bit_length()} bits"
    try:
        text = repr(value)
    except ValueError:  # (a container of ints too long to print)
        return f"a {type(value).__name__}"
    return text if len(text) <= 80 else text[:77] + "..."


def finite(name: str, value: Any) -> float:
    """A real, finite number."""
    out = real(name, value)
    if not math.isfinite(out):
        raise ValueError(f"{name} must be finite, got {out}")
    return out


def nonnegative(name: str, value: Any) -> float:
    """A finite number >= 0."""
    out = finite(name, value)
    if out < 0.0:
        raise ValueError(f"{name} must be >= 0, got {out}")
    return out


def positive(name: str, value: Any) -> float:
    """A finite number > 0."""
    out = finite(name, value)
    if not out > 0.0:
        raise ValueError(f"{name} must be > 0, got {out}")
    return out


def at_least(name: str, value: Any, low: float) -> float:
    """A finite number >= low (> 0)."""
    out = finite(name, value)
    if not out >= low:
        raise ValueError(f"{name} must be >= {low:g}, got {out}")
    return out


def reach(name: str, value: Any) -> float:
    """A distance limit: >= 0, and ``inf`` allowed (no limit)."""
    out = real(name, value)
    if math.isnan(out) or out < 0.0:
        raise ValueError(f"{name} must be >= 0 (inf for no limit), got {out}")
    return out


def extent(name: str, points: np.ndarray) -> float:
    """The largest span of ``points`` (n, dim) along an axis; ValueError naming ``name`` if
    its square overflows (a shape's kernels square its sizes: beyond about 1e154 m they
    would get inf and NaN)."""
    with np.errstate(over="ignore", invalid="ignore"):
        span = float(np.max(np.ptp(points, axis=0))) if len(points) else 0.0
        if not math.isfinite(span * span):
            raise ValueError(f"{name}: the shape is too large ({span:.3g} m across)")
    return span


# m: the smallest size a shape may have (a radius, a half extent, a segment's length): the
# kernels square sizes, and below this the square is not a normal float (about 1.5e-154 m;
# a disc of radius 1e-200 m had r^2 = 0 and nothing ever touched it)
MIN_SIZE = math.sqrt(sys.float_info.min)
MAX_RADIUS = math.sqrt(sys.float_info.max) / 4  # m: two radii added and squared stay finite


def size(name: str, value: Any) -> float:
    """A shape's size: finite and >= MIN_SIZE (its square a normal float)."""
    out = positive(name, value)
    if not out >= MIN_SIZE:
        raise ValueError(f"{name} must be >= {MIN_SIZE:.3g} m (its square underflows), got {out}")
    return out


def unit_interval(name: str, value: Any) -> float:
    """A number in [0, 1]."""
    out = finite(name, value)
    if not 0.0 <= out <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {out}")
    return out


# kg: the lightest particle; 1 / mass is then finite (below about 5.6e-309 it is inf, and a
# subnormal mass gave its particle an infinite acceleration)
MIN_MASS = 1e-300


def mass(name: str, value: Any) -> float:
    """A mass: >= MIN_MASS, and ``inf`` allowed (an immovable particle)."""
    out = real(name, value)
    if math.isnan(out) or not out >= MIN_MASS:
        raise ValueError(f"{name} must be >= {MIN_MASS:g} kg (inf for immovable), got {out}")
    return out


def integer(name: str, value: Any, low: int, high: int | None = None) -> int:
    """An int >= low (and <= high)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {_short(value)}")
    if int(value) < low:
        raise ValueError(f"{name} must be >= {low}, got {_short(value)}")
    if high is not None and int(value) > high:
        raise ValueError(f"{name} must be <= {high}, got {_short(value)}")
    return int(value)


def array(name: str, value: Any, shape: tuple[int | None, ...], *, finite_only: bool = True,
          integral: bool = False) -> np.ndarray:
    """An array of the given shape (None = any length) as float64 (or int64).

    Accepts lists, tuples and arrays of real numbers; rejects other dtypes
    (strings, complex, objects, booleans) and NaN/inf where ``finite_only``.
    """
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name} must be an array of shape {_fmt(shape)}: {exc}") from None
    kind = arr.dtype.kind
    allowed = "iu" if integral else "iuf"
    if kind not in allowed or (arr.size == 0 and kind not in "iuf"):
        want = "integers" if integral else "real numbers"
        hint = " (numbers beyond the float range, or not numbers)" if kind == "O" else ""
        raise ValueError(f"{name} must hold {want}, got dtype {arr.dtype}{hint}")
    if arr.ndim != len(shape) or any(
        want is not None and got != want for got, want in zip(arr.shape, shape, strict=True)
    ):
        raise ValueError(f"{name} must have shape {_fmt(shape)}, got {arr.shape}")
    if integral:
        if kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
            raise ValueError(f"{name} must hold integers below 2**63, got {int(arr.max())}")
        return np.array(arr, dtype=np.int64, order="C")
    out = np.array(arr, dtype=np.float64, order="C")
    if finite_only and not np.isfinite(out).all():
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return out


def vector(name: str, value: Any, dim: int) -> np.ndarray:
    """One finite point or vector of length ``dim``."""
    return array(name, value, (dim,))


def per_row(name: str, value: Any, count: int) -> np.ndarray:
    """A scalar broadcast to ``count`` rows, or an array of ``count`` values (not yet range-checked)."""
    if np.ndim(value) == 0:
        return np.full(count, float(array(name, value, (), finite_only=False)))
    return array(name, value, (count,), finite_only=False)


def _fmt(shape: tuple[int | None, ...]) -> str:
    inner = ", ".join("N" if s is None else str(s) for s in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def choice(options: tuple[str, ...]) -> Callable[[str, Any], str]:
    """A check that accepts one of ``options``."""

    def check(name: str, value: Any) -> str:
        if value not in options:
            raise ValueError(f"{name} must be one of {options}, got {_short(value)}")
        return str(value)

    return check


T = TypeVar("T")


class Checked(Generic[T]):
    """An attribute whose every assignment goes through ``check(name, value)``.

    The checked value is kept in ``obj._<name>``, where hot code may read it; ``obj._changes``
    counts the assignments (a frame's plan holds while it stays: pysoft._frame).
    """

    def __init__(self, check: Callable[[str, Any], T], doc: str) -> None:
        self.check = check
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.slot = "_" + name

    def __get__(self, obj: Any, objtype: Any = None) -> T:
        if obj is None:
            return self  # type: ignore[return-value]  # the descriptor, for help()
        value: T = getattr(obj, self.slot)
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        setattr(obj, self.slot, self.check(self.name, value))
        obj._changes = getattr(obj, "_changes", 0) + 1


def flag(name: str, value: Any) -> bool:
    """A bool (Python or NumPy)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a bool, got {_short(value)}")
    return bool(value)


def nonnegative_rows(name: str, value: Any, count: int) -> np.ndarray:
    """A scalar or ``count`` values, each finite and >= 0."""
    out = per_row(name, value, count)
    if not np.isfinite(out).all() or (out < 0).any():
        raise ValueError(f"{name} must be finite and >= 0")
    return out


def radius_rows(name: str, value: Any, count: int) -> np.ndarray:
    """A scalar or ``count`` particle radii, each in [0, MAX_RADIUS] (the kernels square the
    sum of two)."""
    out = nonnegative_rows(name, value, count)
    if (out > MAX_RADIUS).any():
        raise ValueError(f"{name} must be <= {MAX_RADIUS:.3g} m (the square of two added overflows)")
    return out


def bits(name: str, value: Any) -> int:
    """A 32-bit mask (an int in [0, 2**32)), returned as the int32 the Store keeps."""
    out = integer(name, value, 0)
    if out >= 1 << 32:
        raise ValueError(f"{name} must be a 32-bit mask (< 2**32), got {out}")
    return out - (1 << 32) if out >= 1 << 31 else out


def bits_rows(name: str, value: Any, count: int) -> np.ndarray:
    """A 32-bit mask or ``count`` of them, as int32."""
    if np.ndim(value) == 0:
        return np.full(count, bits(name, value), dtype=np.int32)
    arr = array(name, value, (count,), integral=True)
    if (arr < 0).any() or (arr >= 1 << 32).any():
        raise ValueError(f"{name} must hold 32-bit masks (ints in [0, 2**32))")
    return arr.astype(np.uint32).view(np.int32)
