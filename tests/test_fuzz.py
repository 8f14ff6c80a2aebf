"""The fuzz targets (tests/fuzz/harness.py) replayed without atheris: the restore corpus
as it is and, for every target, 200 inputs of pseudo-random bytes from a fixed seed. The
targets raise harness.Finding when their contract fails (see the harness's docstring);
``python tests/fuzz/run.py`` drives the same targets with atheris."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "fuzz"))

import harness

import pysoft

pytestmark = pytest.mark.skipif(not pysoft.C_AVAILABLE, reason="the targets compare C with NumPy")
INPUTS = 200


def _inputs(seed: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, int(rng.integers(0, 64)), dtype=np.uint8).tobytes()
            for _ in range(INPUTS)]


@pytest.mark.parametrize("name", sorted(harness._kernels.REGISTRY))
def test_kernel_target_holds_on_fixed_inputs(name: str) -> None:
    target = harness.kernel_target(name)
    for data in _inputs(len(name)):
        target(data)


def test_restore_corpus_is_the_scenes_snapshots() -> None:
    """Each seed restores into its scene's world (the corpus is current with the format)."""
    seeds = harness.seeds()  # (puts the corpus folder on the path)
    from corpus_scenes import SCENES  # type: ignore[import-not-found]

    assert len(seeds) == len(SCENES) >= 4
    for blob, make in zip(seeds, SCENES.values(), strict=True):
        make().restore(blob)


def test_restore_target_holds_on_fixed_inputs() -> None:
    target = harness.restore_target(harness.seeds())
    for data in _inputs(7):
        target(data)


def test_a_kernel_target_finds_a_twin_that_disagrees(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness can fail: a twin that adds 1 ulp to its output is a finding."""
    import pysoft.twins.integrate as twin

    real = twin.symplectic_euler

    def off(pos: np.ndarray, vel: np.ndarray, *rest: object) -> None:
        real(pos, vel, *rest)
        pos[:] = np.nextafter(pos, np.inf)

    monkeypatch.setattr(twin, "symplectic_euler", off)
    target = harness.kernel_target("symplectic_euler")
    with pytest.raises(harness.Finding):
        for data in _inputs(1):
            target(data)


@pytest.mark.parametrize("path", sorted((harness.CORPUS / "regressions").iterdir()), ids=lambda p: p.name)
def test_saved_findings_hold_now(path: pathlib.Path) -> None:
    """Inputs the fuzzer once found (``corpus/regressions/<target>-<what>``) pass their target."""
    name = path.name.split("-")[0]
    target = (harness.restore_target(harness.seeds()) if name == "restore"
              else harness.kernel_target(name))
    target(path.read_bytes())
