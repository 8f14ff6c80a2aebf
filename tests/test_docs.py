"""Documentation that runs: the README's quick start and code, and the docstring examples."""

from __future__ import annotations

import doctest
import importlib
import pathlib
import re

import numpy as np
import pytest

import pysoft

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_quick_start_is_exactly_two_commands() -> None:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [line for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S)
                for line in block.splitlines() if line.strip()]
    assert commands == ['pip install -e ".[dev]" && python -m pysoft demo', "python -m pytest"]


def test_ci_runs_the_readme_commands() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'pip install -e ".[dev]" && python -m pysoft demo' in ci
    assert "\npython -m pytest" in ci
    assert "PYSOFT_REQUIRE_C=1" in ci


def test_readme_python_blocks_run(capsys: pytest.CaptureFixture[str]) -> None:
    namespace: dict[str, object] = {}
    for block in _blocks("python"):
        exec(compile(block, "README.md", "exec"), namespace)
    w = namespace["w"]
    assert isinstance(w, pysoft.World)
    # The tour removed particle `a`: its spring went with it; the world still steps.
    assert w.store.springs.n == 49
    w.step()
    assert np.isfinite(w.positions).all()
    world = namespace["world"]
    assert isinstance(world, pysoft.World) and world.time == pytest.approx(1 / 60)
    scene = namespace["scene"]
    assert isinstance(scene, pysoft.World) and scene.store.colliders.n == 6
    assert namespace["ball"] in namespace["hits"].particles  # the ball rests on the tilted box
    assert "planet" in namespace
    arena = namespace["arena"]
    assert isinstance(arena, pysoft.World) and arena.store.bodies.n == 0 and arena.store.springs.n == 0
    assert len(arena.particles) == 1000  # the crate and the spark are gone
    space = namespace["space"]  # the 3D bodies: the XPBD cube kept its volume on the floor
    assert isinstance(space, pysoft.World) and space.dim == 3
    assert space.body(namespace["cube"]).volume == pytest.approx(0.125, rel=0.02)
    assert namespace["vertices"].shape == (len(pysoft.meshes.torus(0.3, 0.12)[0]), 3)
    pit = namespace["pit"]
    assert isinstance(pit, pysoft.World) and len(pit.body_contacts.particles) > 0
    top = max(pit.positions[pit.row(e), 1] for e in pit.body(namespace["stack"][-1]).particles)
    assert top > 1.4  # the stack of three 0.5 m boxes still stands
    play = namespace["play"]
    assert isinstance(play, pysoft.World) and play.store.tables["grabs"].n == 0  # released
    assert play.store.colliders.n == 2  # the floor and the pusher
    assert namespace["segments"].shape == (play.store.springs.n, 2, 2)  # type: ignore[attr-defined]
    builders = namespace["lab"]
    assert isinstance(builders, pysoft.World) and builders.store.bodies.n == 10
    assert np.isfinite(builders.positions).all()
    assert builders.body(namespace["gas"]).pressure is not None


@pytest.mark.parametrize("module", ["pysoft", "pysoft.world", "pysoft.draw.camera3d"])
def test_docstring_examples(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
