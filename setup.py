from setuptools import setup

setup(cffi_modules=["pysoft/_build.py:ffibuilder"])
