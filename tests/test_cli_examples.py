"""The CLI and every example run headless, for a few frames."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from pysoft import bench
from pysoft.__main__ import main

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def _load(path: pathlib.Path) -> object:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_info_reports_the_c_core(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "C core: loaded" in out
    assert "-ffp-contract=off" in out and "-ffast-math" not in out
    assert "threads: World(threads=N)" in out and f"{os.cpu_count()} CPUs" in out


def test_demo_draws_in_the_terminal_without_a_display(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--seconds", "2", "--frames", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("t = ") == 2
    assert "▔" in out  # the floor
    assert any(0x2800 < ord(ch) <= 0x28FF for ch in out)  # particles, in braille
    lowest = float(out.rsplit("lowest particle y = ", 1)[1].split()[0])
    assert -1e-9 <= lowest < 0.05  # the boxes landed on the floor, not through it


def test_demo_writes_a_gif_when_asked(tmp_path: pathlib.Path) -> None:
    from PIL import Image

    out = tmp_path / "demo.gif"
    assert main(["demo", "--seconds", "0.5", "--gif", str(out)]) == 0
    assert Image.open(out).n_frames == 10  # 20 frames a second
    with pytest.raises(SystemExit):
        main(["demo", "--gif", str(tmp_path / "demo.png")])


def test_demo_opens_a_window_only_where_one_can_open(monkeypatch: pytest.MonkeyPatch) -> None:
    from pysoft import __main__ as cli

    for name in ("DISPLAY", "WAYLAND_DISPLAY", "CI", "SDL_VIDEODRIVER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(cli.sys, "platform", "linux")
    assert not cli._has_display()  # no display server named
    monkeypatch.setenv("DISPLAY", ":0")
    assert cli._has_display()  # named, and pygame-ce is installed
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    assert not cli._has_display()


def test_demo_as_a_subprocess_without_a_tty() -> None:
    run = subprocess.run([sys.executable, "-m", "pysoft", "demo", "--seconds", "0.5"],
                         capture_output=True, text=True, timeout=120, env={"TERM": "dumb", "PATH": ""})
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("t = ") == 4


@pytest.mark.parametrize("scene", ["demo", "balls", "course"])
def test_render_writes_a_gif_with_the_frames_asked_for(scene: str, tmp_path: pathlib.Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from PIL import Image

    out = tmp_path / "run.gif"
    assert main(["render", scene, "--out", str(out), "--seconds", "0.5", "--fps", "10",
                 "--size", "160x120"]) == 0
    gif = Image.open(out)
    assert gif.n_frames == 5 and gif.size == (160, 120)
    assert "5 frames" in capsys.readouterr().out


def test_render_writes_a_png_of_the_last_frame(tmp_path: pathlib.Path) -> None:
    import numpy as np
    from PIL import Image

    out = tmp_path / "frame.png"
    assert main(["render", "demo", "--out", str(out), "--seconds", "0.5", "--size", "200x100"]) == 0
    img = np.asarray(Image.open(out).convert("RGB"))
    assert img.shape == (100, 200, 3) and len(np.unique(img.reshape(-1, 3), axis=0)) > 3  # drawn on
    with pytest.raises(SystemExit):
        main(["render", "demo", "--out", str(tmp_path / "x.bmp")])
    with pytest.raises(SystemExit):
        main(["render", "demo", "--out", str(out), "--size", "0x10"])


def test_bench_reports_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    results = bench.run(sizes=(200,), rounds=1)
    scene = results["scenes"][0]
    for key in ("steps_per_s", "particle_steps_per_s", "ns_per_spring", "overhead",
                "c_over_numpy", "build_s", "reference_ms", "vs_reference"):
        assert scene[key] > 0
    assert set(scene["passes_ms"]) == {"forces", "integrate", "constraints", "collide", "finish"}
    assert {k["kernel"] for k in results["kernels"]} == set(bench.kernels.REGISTRY)
    assert results["small_body"]["particles"] == 25
    out = capsys.readouterr().out
    assert "vs ref" in out and "binding" in out
    # the docs' table of targets (its rows need the 10k and 100k scenes: this one stands in)
    results["scenes"] = [dict(scene, particles=size) for size in (10_000, 100_000)]
    results["models"] = bench.bench_models(rounds=1, frames=1)
    table = bench.markdown(results)
    cloth = next(m for m in results["models"] if m["scene"] == "XPBD cloth")
    assert cloth["ns_per_constraint_iteration"] > 0
    for row in ("| World.step ≥ 1.0x the reference loop", "| 25-particle body, a frame of 8 substeps ≤ 20 µs",
                "| XPBD constraints ≤ 5 ns per constraint-iteration", "| spring pass ≤ 0.6x"):
        assert row in table, row


def _lands_on_the_floor(lowest: float) -> bool:
    return -1e-9 <= lowest < 0.05


# Each example's main() with a short run, and what its result must satisfy.
EXPECT = {
    "falling_boxes": ((3.0,), _lands_on_the_floor),
    "esper_game": ((60,), lambda heights: all(0.0 < y < 2.5 for y in heights)),
    "wind_system": ((60,), lambda tip: tip > 0.0),  # the wind pushed the rope downwind
    # the wind holds the cloth's centre of mass downwind of the calm cloth's (0.27 m measured)
    "cloth_wind": ((2.0,), lambda shift: shift > 0.1),
    "obstacle_rain": ((2.0,), lambda touching: touching > 100),  # the rain lands on something
    "piles": ((3.0,), lambda touching: touching > 20),  # the bodies lie on each other
    # three bodies resting on the planet: centroids 0.1-0.5 m above its surface (half sizes 0.25-0.4)
    "planets": ((4.0,), lambda heights: len(heights) == 3 and all(0.1 < h < 0.5 for h in heights)),
    "rope_bridge": ((3.0,), lambda lowest: 0.5 < lowest < 2.0),  # held by the sagging bridge
    "jelly_car": ((3.0,), lambda travelled: travelled > 1.0),  # the motor drives it along
    # the drag brought the box's centre 1.55 m (measured) nearer the drag's end; nothing went
    # through the floor or non-finite
    "tumbling": ((5.0,), lambda r: r[0] > 0.8 and r[1] >= -1e-3 and r[2]),
    # once landed (a quarter second on the floor), the gas ring's area within 10 % of its
    # built area (2.5 % measured); nan (never landed) fails
    "gas_ring": ((4.0,), lambda worst: worst < 0.10),
    "xpbd_star": ((3.0,), lambda ratio: abs(ratio - 1.0) < 0.05),  # its area kept (5 %)
    # the rope hangs from its pin (1.5 m long, the pin at 2.5 m), the blob lies on the floor
    "rope_and_blob": ((3.0,), lambda r: 0.9 < r[0] < 2.5 and _lands_on_the_floor(r[1])),
    # every room's box landed (its bottom within a few mm of the floor, not through it), and
    # step_many gave what a thread pool of step() gives (nan otherwise)
    "many_rooms": ((16, 2.0), _lands_on_the_floor),
    # every closed 3D body keeps its volume within 5 % once landed (3 s: 3.5 % measured)
    # one generation of 4 walker designs, evaluated here (test_evolve runs it on Ray): finite
    # distances, the default walker's first
    "evolve_walkers": ((1, 4, 0, True), lambda history: len(history) == 1 and len(history[0]) == 4
                       and bool(np.isfinite(history[0]).all())),
    "solids_3d": ((3.0,), lambda ratios: len(ratios) == 5
                  and all(abs(r - 1.0) < 0.05 for r in ratios.values())),
    # 3D: the rope hangs from its pin (1.5 m long, the pin at 2.5 m), the blob lies on the floor
    "rope_and_blob_3d": ((3.0,), lambda r: 0.9 < r[0] < 2.5 and _lands_on_the_floor(r[1])),
    # both bodies of the OBJ file keep their volume within 5 % (0.0 % and 2.3 % measured)
    "mesh_body": ((2.0,), lambda ratios: len(ratios) == 2
                  and all(abs(r - 1.0) < 0.05 for r in ratios.values())),
}


@pytest.mark.parametrize("name", ["rope_and_blob_3d", "mesh_body"])
def test_3d_examples_write_their_picture(name: str, tmp_path: pathlib.Path) -> None:
    import numpy as np
    from PIL import Image

    out = tmp_path / f"{name}.png"
    _load(ROOT / "examples" / f"{name}.py").main(0.5, str(out))  # type: ignore[attr-defined]
    img = np.asarray(Image.open(out).convert("RGB")).astype(int)
    assert img.shape == (400, 640, 3)
    coloured = (img.max(axis=2) - img.min(axis=2)) > 60  # the bodies: saturated, unlike floor and sky
    assert coloured.mean() > 0.005


def test_every_example_has_a_check() -> None:
    assert {p.stem for p in EXAMPLES} == set(EXPECT)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_headless(path: pathlib.Path) -> None:
    args, check = EXPECT[path.stem]
    result = _load(path).main(*args)  # type: ignore[attr-defined]
    assert check(result), result


# An editable install maps ``pysoft`` to the checkout from a meta-path finder; drop it so
# the subprocess imports the copy on PYTHONPATH.
UNMAP = "import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f)]\n"


def _source_tree_without_core(tmp_path: pathlib.Path) -> dict[str, str]:
    """A copy of the package without the compiled core, and an environment that imports it."""
    for source in (ROOT / "pysoft").rglob("*.py"):
        copy = tmp_path / source.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(source.read_text())
    return {"PYTHONPATH": str(tmp_path), "PATH": ""}


def test_info_says_when_the_c_core_is_missing(tmp_path: pathlib.Path) -> None:
    env = _source_tree_without_core(tmp_path)
    info = UNMAP + ("import runpy; sys.argv = ['pysoft', 'info']; "
                    "runpy.run_module('pysoft', run_name='__main__')")
    run = subprocess.run([sys.executable, "-c", info], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "C core: MISSING" in run.stdout
    assert "default backend: python" in run.stdout
    # Without the core worlds run on the NumPy twins (the default then), import warns once,
    # and asking for the C backend says why it cannot be had.
    code = (UNMAP + "import pysoft\nassert not pysoft.C_AVAILABLE\nw = pysoft.World()\n"
            "assert w.backend == 'python'\nw.step()\n"
            "try:\n    pysoft.World(backend='c')\nexcept RuntimeError as e:\n    print(e)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "C core pysoft._core is not built" in run.stdout
    assert run.stderr.count("the compiled C core is missing") == 1  # one warning, at import


def test_the_demo_runs_without_the_core(tmp_path: pathlib.Path) -> None:
    """No compiler, no core: the demo still runs (on the NumPy twins), never a traceback."""
    env = _source_tree_without_core(tmp_path)
    demo = UNMAP + ("import runpy; sys.argv = ['pysoft', 'demo', '--seconds', '0.25', '--frames', '1']; "
                    "runpy.run_module('pysoft', run_name='__main__')")
    run = subprocess.run([sys.executable, "-c", demo], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "(python backend)" in run.stdout and "Traceback" not in run.stderr
    assert "the compiled C core is missing" in run.stderr


def test_require_c_makes_import_fail_without_the_core(tmp_path: pathlib.Path) -> None:
    env = {**_source_tree_without_core(tmp_path), "PYSOFT_REQUIRE_C": "1"}
    run = subprocess.run([sys.executable, "-c", UNMAP + "import pysoft"], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=60)
    assert run.returncode != 0
    assert "PYSOFT_REQUIRE_C is set" in run.stderr
