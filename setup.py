"""The package list for setuptools; everything else is in pyproject.toml.

ibemu's own packages, found under ibemu/, plus the repository's top-level layers/ and
scenarios/ folders installed as ``ibemu.layers`` and ``ibemu.scenarios`` (mapped by
``package-dir`` in pyproject.toml).  They are named here rather than discovered because a
source distribution does not carry the checkout's symbolic links ibemu/layers and
ibemu/scenarios (docs/packaging.md).
"""
from setuptools import find_packages, setup

MAPPED = ["ibemu.layers", "ibemu.scenarios"]

setup(packages=find_packages(include=["ibemu", "ibemu.*"], exclude=MAPPED) + MAPPED)
