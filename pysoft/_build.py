"""cffi build script for the C core (``pysoft._core``).

``setup.py`` names this file in ``cffi_modules``. The cdef is the region of
``csrc/pysoft.h`` between the cdef markers: the same text the C compiler
includes, so no declaration exists twice.
"""

from __future__ import annotations

import pathlib

from cffi import FFI

ROOT = pathlib.Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
HEADER = CSRC / "pysoft.h"
# One C file per pass, in step order.
SOURCES = ["forces.c", "bodies.c", "integrate.c", "constraints.c", "collide.c", "finish.c"]
# Determinism: no fused multiply-add, never -ffast-math (DESIGN.md).
COMPILE_FLAGS = ["-std=c99", "-O2", "-ffp-contract=off", "-Wall", "-Wextra"]


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
    sources=[f"csrc/{name}" for name in SOURCES],
    include_dirs=[str(CSRC)],
    extra_compile_args=COMPILE_FLAGS,
    define_macros=[("PS_COMPILE_FLAGS", '"' + " ".join(COMPILE_FLAGS) + '"')],
    libraries=["m"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
