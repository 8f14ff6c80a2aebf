"""examples/evolve_walkers.py: two generations evaluated as Ray tasks on a local two-CPU Ray
instance give fitnesses equal bit for bit to the serial run's (a score means the same in every
process); skipped without ray (CI installs the ray extra)."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import numpy as np
import pytest

pytest.importorskip("gymnasium")
EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "evolve_walkers.py"


def _example() -> object:
    spec = importlib.util.spec_from_file_location("evolve_walkers", EXAMPLE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["evolve_walkers"] = module
    spec.loader.exec_module(module)
    return module


def test_ray_tasks_give_the_serial_fitnesses_bit_for_bit() -> None:
    ray = pytest.importorskip("ray")
    example = _example()
    serial = example.main(generations=2, population=6, seed=3, serial=True)  # type: ignore[attr-defined]
    assert not ray.is_initialized()
    spread = example.main(generations=2, population=6, seed=3, num_cpus=2)  # type: ignore[attr-defined]
    assert not ray.is_initialized()  # the example shut down the instance it started
    assert len(serial) == len(spread) == 2
    for a, b in zip(serial, spread, strict=True):
        assert a.dtype == b.dtype == np.float64 and a.tobytes() == b.tobytes()
    assert len(np.unique(np.concatenate(serial))) > 3  # designs differ, and so do their scores


def test_children_are_viable_and_bad_arguments_named() -> None:
    example = _example()
    rng = np.random.default_rng(0)
    base = np.array(example.WALKER)  # type: ignore[attr-defined]
    for _ in range(50):
        grid = example.child(base, base, rng)  # type: ignore[attr-defined]
        assert example.viable(grid) and grid.shape == base.shape  # type: ignore[attr-defined]
    assert not example.viable(np.array([[3, 0], [0, 3]]))  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="population"):
        example.main(generations=1, population=2, serial=True)  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="generations"):
        example.main(generations=0, serial=True)  # type: ignore[attr-defined]
