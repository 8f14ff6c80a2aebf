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
import re
import runpy
import shlex
from typing import Any

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


# The kernels ps_run_frame may call: every function of the header but these (the environments'
# kernels take per-world pointers: pysoft.envs calls them, tests/test_envs.py holds their twins)
NOT_OPS = ("compile_flags", "cpu_has_x86_64_v3", "reference_springs", "reference_steps", "run_frame",
           "run_worlds", "lane_worlds", "runner_post", "runner_wait", "runner_free", "walkers_drive",
           "walkers_observe", "walker_observed")
PROTOTYPE = re.compile(r"\b(void|int)\s+ps_(\w+)\(([^)]*)\);")


def op_dispatch(cdef: str) -> str:
    """C source of frame.c's dispatch, from the header's prototypes: per kernel a function
    unpacking a ps_op's pointers, ints and doubles into the kernel's arguments in order; the
    table of them; each kernel's name and its scalars' kinds ("i" int, "d" double, in order)."""
    funcs, names, kinds = [], [], []
    for ret, name, params in PROTOTYPE.findall(cdef):
        if name in NOT_OPS:
            continue
        args, np_, ni, nd, kind = [], 0, 0, 0, ""
        for param in (" ".join(p.split()) for p in params.split(",")):
            ctype = param[: param.rindex("*") + 1] if "*" in param else param.rsplit(" ", 1)[0]
            if "*" in ctype:
                args.append(f"({ctype})op->p[{np_}]")
                np_ += 1
            elif ctype == "int":
                args.append(f"(int)op->i[{ni}]")
                ni, kind = ni + 1, kind + "i"
            elif ctype == "double":
                args.append(f"op->d[{nd}]")
                nd, kind = nd + 1, kind + "d"
            else:
                raise SystemExit(f"ps_{name}: an argument of type {ctype!r} cannot be a ps_op's")
        call = f"ps_{name}({', '.join(args)})"
        body = f"return (int64_t){call};" if ret == "int" else f"{call};\n    return 0;"
        funcs.append(f"static int64_t op_{name}(const ps_op *op)\n{{\n    {body}\n}}")
        names.append(name)
        kinds.append(kind)
    quoted = ", ".join(f'"{n}"' for n in names)
    scalars = ", ".join(f'"{k}"' for k in kinds)
    return "\n".join([
        "typedef int64_t (*ps_op_fn)(const ps_op *op);", *funcs,
        f"const ps_op_fn ps_op_table[] = {{{', '.join('op_' + n for n in names)}}};",
        f"const char *const ps_op_names[] = {{{quoted}}};",
        f"const char *const ps_op_scalars[] = {{{scalars}}};",
        f"const int ps_op_count = {len(names)};"])


def _compiler() -> Any:
    """The compiler setuptools compiles with on this machine: the compiler and flags the
    interpreter was built with (sysconfig), with the environment's CC, CFLAGS and CPPFLAGS
    applied. Raises where there is no distutils or no compiler class for the platform."""
    from distutils.ccompiler import new_compiler  # setuptools' copy where the stdlib has none
    from distutils.sysconfig import customize_compiler

    compiler = new_compiler()
    customize_compiler(compiler)
    return compiler


def toolchain() -> str:
    """The compiler command and flags of ``_compiler``. Our COMPILE_FLAGS come after them, so
    ours win where they overlap (the optimisation level)."""
    try:
        return shlex.join(getattr(_compiler(), "compiler_so", []) or ["unknown"])
    except Exception:  # another platform's compiler class, or no distutils at all
        return "unknown"


def accepts(flag: str) -> bool:
    """Whether this machine's compiler (``_compiler``) compiles a C file with ``flag``."""
    import tempfile

    try:
        compiler = _compiler()
        with tempfile.TemporaryDirectory() as tmp:
            source = pathlib.Path(tmp) / "flag.c"
            source.write_text("int ps_flag(void) { return 0; }\n")
            compiler.compile([str(source)], output_dir=tmp, extra_postargs=[flag, "-Werror"])
        return True
    except Exception:  # the flag refused, or no compiler class to ask
        return False


def builder(module: str, extra: tuple[str, ...] = ()) -> FFI:
    """The core as the extension ``module``, compiled with COMPILE_FLAGS and ``extra``."""
    flags = [*COMPILE_FLAGS, *extra]
    text = f"{toolchain()} {' '.join(flags)}"
    ffi = FFI()
    ffi.cdef(cdef_text())
    ffi.set_source(
        module,
        '#include "pysoft.h"\n' + op_dispatch(cdef_text()),
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
    # Loops start on a 64-byte line where the compiler can (GCC; Clang from 13): the spring
    # pass's second loop (35 bytes, an iteration per spring end) ran at 0.59x or 0.64x of the
    # reference's spring loop as unrelated code moved it across a line (2026-11-26).
    ALIGN = ("-falign-loops=64",) if accepts("-falign-loops=64") else ()
    VARIANTS["x86-64-v3"] = ("pysoft._core_v3", ("-march=x86-64-v3", *ALIGN))
ffibuilder = builder(*VARIANTS["baseline"])
CFFI_MODULES = ["pysoft/_build.py:ffibuilder"]  # what setup.py builds
if "x86-64-v3" in VARIANTS:
    ffibuilder_v3 = builder(*VARIANTS["x86-64-v3"])
    CFFI_MODULES.append("pysoft/_build.py:ffibuilder_v3")


if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
