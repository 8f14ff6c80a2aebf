"""cffi build script for the C core (``pysoft._core``).

``setup.py`` names this file in ``cffi_modules``. The cdef is the region of
``csrc/include/pysoft.h`` between the cdef markers: the same text the C
compiler includes, so no declaration exists twice. Every ``csrc/src/*.c``
is compiled (one file per feature or pass), with the shared constants of
``pysoft/_constants.py`` passed as macros.
"""

from __future__ import annotations

import pathlib
import runpy

from cffi import FFI

ROOT = pathlib.Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
HEADER = CSRC / "include" / "pysoft.h"
SOURCES = sorted(str(p.relative_to(ROOT)) for p in (CSRC / "src").glob("*.c"))
# Determinism: no fused multiply-add, never -ffast-math (DESIGN.md).
COMPILE_FLAGS = ["-std=c99", "-O3", "-ffp-contract=off", "-Wall", "-Wextra"]
# Loaded by path: the build runs before the pysoft package is importable.
CONSTANTS: dict[str, float] = runpy.run_path(str(ROOT / "pysoft" / "_constants.py"))["C_MACROS"]


def cdef_text(header: pathlib.Path = HEADER) -> str:
    """The declarations between ``/* cdef-begin */`` and ``/* cdef-end */``."""
    text = header.read_text()
    start = text.index("/* cdef-begin */") + len("/* cdef-begin */")
    return text[start : text.index("/* cdef-end */")]


ffibuilder = FFI()
ffibuilder.cdef(cdef_text())
ffibuilder.set_source(
    "pysoft._core",
    '#include "pysoft.h"',
    sources=SOURCES,
    include_dirs=[str(CSRC / "include"), str(CSRC / "src")],
    extra_compile_args=COMPILE_FLAGS,
    define_macros=[("PS_COMPILE_FLAGS", '"' + " ".join(COMPILE_FLAGS) + '"'),
                   *((name, repr(value)) for name, value in CONSTANTS.items())],
    libraries=["m"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
