"""The one place that imports the compiled C core (``pysoft._core``, or on an x86-64-v3
CPU its build for it, ``pysoft._core_v3``: :data:`VARIANT`).

If the core is missing (installed where no C compiler was found, or imported
from a source tree that was never built), :data:`AVAILABLE` is False, importing
pysoft warns once (a RuntimeWarning saying how to get the core), ``python -m
pysoft info`` says so, and worlds run on the NumPy twins (``backend="python"``,
the default then; ``backend="c"`` raises). With ``PYSOFT_REQUIRE_C=1`` in the
environment, importing pysoft raises instead: CI uses it so that a build
failure can never fall back to NumPy silently.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

VARIANT = ""  # the build of the core in use: "baseline" or "x86-64-v3" ("" when missing)
MODULE = ""  # the module it was imported from: "pysoft._core" or "pysoft._core_v3"
try:
    from pysoft._core import ffi, lib

    AVAILABLE = True
    IMPORT_ERROR: str | None = None
    VARIANT, MODULE = "baseline", "pysoft._core"
    # the x86-64-v3 build where this CPU has it, unless PYSOFT_VARIANT=baseline asks for the
    # other (results are the same bit for bit: tests/test_determinism.py runs both)
    if lib.ps_cpu_has_x86_64_v3() and os.environ.get("PYSOFT_VARIANT", "") != "baseline":
        try:
            from pysoft._core_v3 import ffi, lib

            VARIANT, MODULE = "x86-64-v3", "pysoft._core_v3"
        except ImportError:  # built where the compiler had no -march=x86-64-v3
            pass
except ImportError as exc:  # pragma: no cover - exercised only without a build
    ffi = lib = None
    AVAILABLE = False
    IMPORT_ERROR = str(exc)
    if os.environ.get("PYSOFT_REQUIRE_C", "") not in ("", "0"):
        raise ImportError(
            f"PYSOFT_REQUIRE_C is set but the compiled core pysoft._core is missing: {exc}"
        ) from exc
    warnings.warn(
        "pysoft: the compiled C core is missing, so pysoft runs on its NumPy twins (the demo "
        "about 140x slower a frame). Install a C compiler (gcc, clang or MSVC) and reinstall pysoft "
        "(pip install --force-reinstall pysoft, or pip install -e . in a checkout) to build it.",
        RuntimeWarning, stacklevel=2)


def default_backend() -> str:
    """"c" when the core is built, else "python"."""
    return "c" if AVAILABLE else "python"


def require() -> tuple[Any, Any]:
    """``(ffi, lib)`` of the compiled core, or a clear error if it was not built."""
    if not AVAILABLE:
        raise RuntimeError(
            "the C core pysoft._core is not built (reinstall with `pip install -e .`) "
            f"({IMPORT_ERROR}); use backend='python' for the NumPy twins"
        )
    return ffi, lib


def compile_flags() -> str:
    """The flags the C core was compiled with, as the core reports them."""
    if not AVAILABLE:
        return "(C core not built)"
    return str(ffi.string(lib.ps_compile_flags()).decode())
