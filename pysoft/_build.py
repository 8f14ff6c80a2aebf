"""cffi build script for the C core (``pysoft._core``).

``setup.py`` names this file in ``cffi_modules``. The cdef is the region of
``csrc/include/pysoft.h`` between the cdef markers: the same text the C
compiler includes, so no declaration exists twice. Every ``csrc/src/*.c``
is compiled (one file per feature or pass), with the shared constants of
``pysoft/_constants.py`` passed as macros.
"""

from __future__ import annotations

import os
import pathlib
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


def flags_text() -> str:
    """Every flag the core is compiled with, for ``python -m pysoft info``."""
    return f"{toolchain()} {' '.join(COMPILE_FLAGS)}"


ffibuilder = FFI()
ffibuilder.cdef(cdef_text())
ffibuilder.set_source(
    "pysoft._core",
    '#include "pysoft.h"',
    sources=SOURCES,
    include_dirs=[str(CSRC / "include"), str(CSRC / "src")],
    extra_compile_args=COMPILE_FLAGS,
    define_macros=[("PS_COMPILE_FLAGS", '"' + flags_text().replace("\\", "\\\\").replace('"', '\\"') + '"'),
                   *((name, repr(value)) for name, value in CONSTANTS.items())],
    libraries=["m"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
