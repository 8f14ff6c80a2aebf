"""The C core is compiled by cffi at install time. Where no C compiler works, the install
still succeeds without it: pysoft then runs on its NumPy twins and says so at import
(``PYSOFT_REQUIRE_C=1`` turns that into an error; CI sets it).

``python -m build`` makes a wheel holding the compiled core. cffi compiles it with the
limited API (``Py_LIMITED_API``, the stable ABI) on CPython builds that are neither debug nor
free-threaded, so the wheel is tagged ``cp310-abi3``: one wheel per platform for every
CPython from 3.10 on."""

import pathlib
import runpy

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """build_ext that warns, rather than fails, when the C core cannot be compiled."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler at all: the platform error comes from here
            self._skip(exc)

    def build_extension(self, ext) -> None:  # type: ignore[no-untyped-def]
        try:
            super().build_extension(ext)
        except Exception as exc:  # the compiler failed
            if ext.name.endswith("_v3"):  # a compiler without -march=x86-64-v3: the baseline serves
                self.warn(f"pysoft: the x86-64-v3 variant of the core could not be compiled ({exc}); "
                          "the baseline core serves every CPU")
            else:
                self._skip(exc)

    def _skip(self, exc: Exception) -> None:
        self.warn(f"pysoft: the C core could not be compiled ({exc}); installing without it, "
                  "pysoft will run on its NumPy twins (install a C compiler and reinstall to build it)")


class Abi3Wheel(bdist_wheel):
    """Tags the wheel ``cp310-abi3`` when cffi builds the core with the limited API.

    cffi decides that per interpreter (it sets ``py_limited_api`` on the Extension and
    ``Py_LIMITED_API`` in the generated C, except on debug and free-threaded builds); the
    tag follows the Extension, so a core built without the limited API keeps the
    interpreter's own tag. A ``--py-limited-api`` given to bdist_wheel is kept.
    """

    def finalize_options(self) -> None:
        exts = self.distribution.ext_modules or []
        if not self.py_limited_api and exts and all(getattr(e, "py_limited_api", False) for e in exts):
            self.py_limited_api = "cp310"  # requires-python's floor
        super().finalize_options()


# The core for every CPU and, on x86-64, a second build of it for x86-64-v3 CPUs (AVX2), which
# pysoft loads where the CPU has it (pysoft/_build.py: VARIANTS).
BUILD = pathlib.Path(__file__).resolve().parent / "pysoft" / "_build.py"
MODULES = runpy.run_path(str(BUILD))["CFFI_MODULES"]

setup(cffi_modules=MODULES,
      cmdclass={"build_ext": OptionalBuildExt, "bdist_wheel": Abi3Wheel})
