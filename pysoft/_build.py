"""cffi build script for the C core (``pysoft._core``).

``setup.py`` names this file in ``cffi_modules``. The cdef is the region of
``csrc/include/pysoft.h`` between the cdef markers: the same text the C
compiler includes, so no declaration exists twice. Every ``csrc/src/*.c``
is compiled (one file per feature or pass), with the shared constants of
``pysoft/_constants.py`` passed as macros, into ``pysoft._core`` and, on x86-64,
again for x86-64-v3 CPUs into ``pysoft._core_v3`` (``VARIANTS``).
"""

from __future__ import annotations

import os
import pathlib
import platform
import runpy
import shlex

from cffi import FFI

ROOT = pathlib.Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
HEADER = CSRC / "include" / "pysoft.h"
SOURCES = sorted(str(p.relative_to(ROOT)) for p in (CSRC / "src").glob("*.c"))
# The optimisation level: -O3 unless PYSOFT_OPT names another (CI builds an -O0 core too, to
# check that results do not depend on it).
OPT_LEVELS = ("-O0", "-O1", "-O2", "-O3", "-Os")
OPT = os.environ.get("PYSOFT_OPT", "-O3")
if OPT not in OPT_LEVELS:
    raise SystemExit(f"PYSOFT_OPT must be one of {', '.join(OPT_LEVELS)}, got {OPT!r}")
# Determinism: no fused multiply-add (-ffp-contract=off), never -ffast-math (DESIGN.md).
# -fno-math-errno lets sqrt compile to the instruction (errno is never read) and
# -fno-trapping-math lets loops with branches vectorise (no trap is ever enabled); neither
# changes a result.
COMPILE_FLAGS = ["-std=c99", OPT, "-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math",
                 "-Wall", "-Wextra"]
# Loaded by path: the build runs before the pysoft package is importable.
CONSTANTS: dict[str, float] = runpy.run_path(str(ROOT / "pysoft" / "_constants.py"))["C_MACROS"]


def cdef_text(header: pathlib.Path = HEADER) -> str:
    """The declarations between ``/* cdef-begin */`` and ``/* cdef-end */``."""
    text = header.read_text()
    start = text.index("/* cdef-begin */") + len("/* cdef-begin */")
    return text[start : text.index("/* cdef-end */")]


def toolchain() -> str:
    """The compiler command and flags setuptools compiles with on this machine: the compiler
    and flags the interpreter was built with (sysconfig), with the environment's CC, CFLAGS
    and CPPFLAGS applied. Our COMPILE_FLAGS come after them, so ours win where they overlap
    (the optimisation level)."""
    try:
        from distutils.ccompiler import new_compiler  # setuptools' copy where the stdlib has none
        from distutils.sysconfig import customize_compiler

        compiler = new_compiler()
        customize_compiler(compiler)
        return shlex.join(getattr(compiler, "compiler_so", []) or ["unknown"])
    except Exception:  # another platform's compiler class, or no distutils at all
        return "unknown"


def builder(module: str, extra: tuple[str, ...] = ()) -> FFI:
    """The core as the extension ``module``, compiled with COMPILE_FLAGS and ``extra``."""
    flags = [*COMPILE_FLAGS, *extra]
    text = f"{toolchain()} {' '.join(flags)}"
    ffi = FFI()
    ffi.cdef(cdef_text())
    ffi.set_source(
        module,
        '#include "pysoft.h"',
        sources=SOURCES,
        include_dirs=[str(CSRC / "include"), str(CSRC / "src")],
        extra_compile_args=flags,
        define_macros=[("PS_COMPILE_FLAGS", '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'),
                       *((name, repr(value)) for name, value in CONSTANTS.items())],
        libraries=["m", "pthread"] if os.name == "posix" else ["m"],  # pool.c's workers
    )
    return ffi


# The core twice on x86-64 (GCC or Clang): for every x86-64 CPU, and for x86-64-v3 (AVX2:
# the gathers and 64-bit lane compares the kernels' loops vectorise with). pysoft._native
# loads the second where the CPU has it; the results are the same bit for bit (no
# contraction: FMA is never used; a vector sqrt or divide rounds as the scalar one).
VARIANTS: dict[str, tuple[str, tuple[str, ...]]] = {"baseline": ("pysoft._core", ())}
if platform.machine().lower() in ("x86_64", "amd64") and os.name == "posix":
    VARIANTS["x86-64-v3"] = ("pysoft._core_v3", ("-march=x86-64-v3",))
ffibuilder = builder(*VARIANTS["baseline"])
CFFI_MODULES = ["pysoft/_build.py:ffibuilder"]  # what setup.py builds
if "x86-64-v3" in VARIANTS:
    ffibuilder_v3 = builder(*VARIANTS["x86-64-v3"])
    CFFI_MODULES.append("pysoft/_build.py:ffibuilder_v3")


if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
