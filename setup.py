"""The C core is compiled by cffi at install time. Where no C compiler works, the install
still succeeds without it: pysoft then runs on its NumPy twins and says so at import
(``PYSOFT_REQUIRE_C=1`` turns that into an error; CI sets it)."""

from setuptools import setup
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
            self._skip(exc)

    def _skip(self, exc: Exception) -> None:
        self.warn(f"pysoft: the C core could not be compiled ({exc}); installing without it, "
                  "pysoft will run on its NumPy twins (install a C compiler and reinstall to build it)")


setup(cffi_modules=["pysoft/_build.py:ffibuilder"], cmdclass={"build_ext": OptionalBuildExt})
