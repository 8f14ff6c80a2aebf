"""The layout DESIGN.md asks for: features own their data, nothing imports the World back,
no import cycles, every module importable on its own, the World small."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pysoft"
OUTER = {"pysoft", "pysoft.__main__", "pysoft.build", "pysoft.build.planar", "pysoft.build.solid",
         "pysoft.build.voxels",
         "pysoft.scenes", "pysoft.bench", "pysoft.draw",
         "pysoft.draw.terminal", "pysoft.draw.image", "pysoft.peers", "pysoft.many",
         "pysoft.envs", "pysoft.envs._base", "pysoft.envs.walker",
         "pysoft.envs.jellycar", "pysoft.envs.vector"}


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(path: pathlib.Path, name: str, known: set[str]) -> set[str]:
    """pysoft modules ``path`` imports, anywhere in it (TYPE_CHECKING blocks and functions too)."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return {m for m in found if m in known and m != name}


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {name: _imports(path, name, set(mods)) for name, path in mods.items()}


def test_no_import_cycles() -> None:
    graph = _graph()
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            # A package's __init__ importing its own submodules is not a cycle back up.
            if nxt == "pysoft" or (node.startswith(nxt + ".") and nxt != "pysoft"):
                continue
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*path, node, nxt]))
            if nxt not in state:
                visit(nxt, [*path, node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])


def test_only_the_outer_ring_imports_the_world() -> None:
    importers = {m for m, deps in _graph().items() if "pysoft.world" in deps}
    assert importers <= OUTER, importers - OUTER


def test_features_never_import_the_world() -> None:
    graph = _graph()
    for name, deps in graph.items():
        if name.startswith(("pysoft.features", "pysoft._", "pysoft.twins")) and name not in OUTER:
            assert "pysoft.world" not in deps, name
            assert not any(d in OUTER - {"pysoft"} for d in deps), (name, deps)


@pytest.mark.parametrize("chunk", range(2))
def test_every_module_imports_alone(chunk: int) -> None:
    names = sorted(n for n in _modules() if n != "pysoft.__main__")[chunk::2]

    def run(name: str) -> tuple[str, int, str]:
        r = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True,
                           text=True, timeout=120)
        return name, r.returncode, r.stderr[-500:]

    with ThreadPoolExecutor(max_workers=2) as pool:
        for name, code, err in pool.map(run, names):
            assert code == 0, f"import {name} alone failed:\n{err}"


def test_world_stays_a_composition() -> None:
    lines = (PACKAGE / "world.py").read_text().count("\n")
    assert lines <= 300, f"world.py has {lines} lines"


def test_each_feature_owns_its_c_file_and_twin() -> None:
    import pysoft  # noqa: F401  (registers every feature's kernels)
    from pysoft._kernels import REGISTRY
    from pysoft.features import FEATURES

    sources = {k.source for k in REGISTRY.values()}
    for source in sources:
        assert (ROOT / "csrc" / "src" / f"{source}.c").exists()
        assert (PACKAGE / "twins" / f"{source}.py").exists()
    modules = {cls.__module__ for cls in FEATURES}
    assert len(modules) == len(FEATURES)  # one module per feature
