"""Documentation that runs: every Python block of the README and docs/ on its own, links that
stay in the repository, a docstring for every public name, the benchmark table in the
generator's format, and the docstring examples."""

from __future__ import annotations

import doctest
import importlib
import inspect
import json
import os
import pathlib
import re
import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

import pysoft
from pysoft import bench

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text()
PAGES = sorted(DOCS.rglob("*.md"))
MARKDOWN = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", *PAGES]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", flags=re.S | re.M)


def _blocks(path: pathlib.Path, lang: str = "python") -> list[tuple[int, str]]:
    """(line, code) of every fenced block of ``lang`` in ``path``."""
    text = path.read_text()
    return [(text.count("\n", 0, m.start()) + 1, m.group(2)) for m in FENCE.finditer(text)
            if m.group(1) == lang]


def _python_blocks() -> Iterator[Any]:
    for path in (ROOT / "README.md", *PAGES):
        for line, code in _blocks(path):
            name = f"{path.relative_to(ROOT)}:{line}"
            yield pytest.param(path, line, code, id=name)


def test_quick_start_is_exactly_two_commands() -> None:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [line for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S)
                for line in block.splitlines() if line.strip()]
    assert commands == ['pip install -e ".[dev]" && python -m pysoft demo', "python -m pytest"]


def test_ci_runs_the_readme_commands_and_builds_the_docs() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'pip install -e ".[dev]" && python -m pysoft demo' in ci
    assert "\npython -m pytest" in ci
    assert "PYSOFT_REQUIRE_C=1" in ci
    assert "mkdocs build --strict" in ci


def test_the_readme_is_a_front_page() -> None:
    assert len(README.splitlines()) <= 250
    assert len(_blocks(ROOT / "README.md")) >= 1


def test_every_page_is_in_the_site_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    missing = [str(p.relative_to(DOCS)) for p in PAGES if f" {p.relative_to(DOCS).as_posix()}\n" not in nav]
    assert not missing, f"pages missing from mkdocs.yml's nav: {missing}"


@pytest.mark.parametrize(("path", "line", "code"), list(_python_blocks()))
def test_python_block_runs_on_its_own(path: pathlib.Path, line: int, code: str, tmp_path: pathlib.Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Each block as a fresh module of its own (dataclasses look their module up), from an
    empty folder (whatever it writes goes there)."""
    here = os.getcwd()
    module = types.ModuleType("__docs_block__")
    sys.modules[module.__name__] = module
    os.chdir(tmp_path)
    try:
        exec(compile(code, f"{path.relative_to(ROOT)}:{line}", "exec"), module.__dict__)
    finally:
        os.chdir(here)
        del sys.modules[module.__name__]


def test_docs_have_python_blocks_on_every_tutorial_and_guide() -> None:
    bare = [str(p.relative_to(ROOT)) for p in PAGES
            if p.parent.name in ("tutorials", "guides") and not _blocks(p)]
    assert not bare, f"tutorials and guides without a runnable block: {bare}"


# -- links and paths ---------------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
OUTSIDE = ("../shared", "yardstick", "/work/")


def bad_links(text: str, page: pathlib.Path, within: pathlib.Path) -> list[str]:
    """The links of ``text`` (the Markdown of ``page``) that leave ``within`` or name nothing
    there, and mentions of paths outside the repository."""
    bad = [f"mentions {word!r}" for word in OUTSIDE if word in text]
    for target in LINK.findall(text):
        if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith(("/", "//")):
            bad.append(f"{target}: leaves the repository")
            continue
        path = target.split("#", 1)[0]
        if not path:
            continue  # an anchor on the same page (mkdocs checks those)
        resolved = pathlib.Path(os.path.normpath(page.parent / path))  # docs/media: a link in docs/
        if not resolved.is_relative_to(within):
            bad.append(f"{target}: outside {within.name}/")
        elif not resolved.exists():
            bad.append(f"{target}: no such file")
    return bad


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_stay_in_the_repository(path: pathlib.Path) -> None:
    within = DOCS if path.is_relative_to(DOCS) else ROOT  # the site can link only its own pages
    assert bad_links(path.read_text(), path, within) == []


def test_the_link_check_finds_what_leaves() -> None:
    page = DOCS / "index.md"
    text = ("[a](https://example.org) [b](../README.md) [c](guides/nowhere.md) [d](/etc/passwd) "
            "[ok](guides/worlds.md#units) see ../shared/DESIGN.md")
    assert len(bad_links(text, page, DOCS)) == 5
    assert bad_links("[ok](guides/worlds.md) ![pic](guides/3d.md)", page, DOCS) == []


# -- docstrings --------------------------------------------------------------------------------

def _public(module: types.ModuleType) -> list[tuple[str, Any]]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    return [(f"{module.__name__}.{n}", getattr(module, n)) for n in names]


def undocumented(objects: list[tuple[str, Any]]) -> list[str]:
    """Names among ``objects`` (modules, classes, functions; and each class's public methods
    and properties, inherited from pysoft's own bases too) that have no docstring."""
    missing = []
    for name, obj in objects:
        if not (inspect.ismodule(obj) or inspect.isclass(obj) or inspect.isroutine(obj)):
            continue  # constants: documented where they are defined
        if not (obj.__doc__ or "").strip():
            missing.append(name)
        if not inspect.isclass(obj) or issubclass(obj, BaseException):
            continue
        for base in obj.__mro__:
            if not base.__module__.startswith(("pysoft", "__docs_probe__")):
                continue
            for attr, value in vars(base).items():
                if attr.startswith("_") or not (inspect.isroutine(value) or isinstance(value, property)):
                    continue
                doc = getattr(value, "__doc__", None) or ""
                if not doc.strip() and f"{name}.{attr}" not in missing:
                    missing.append(f"{name}.{attr}")
    return missing


def _api() -> list[tuple[str, Any]]:
    from pysoft import __main__ as cli
    from pysoft import build, draw

    return [*_public(pysoft), *_public(build), *_public(draw),
            ("pysoft.__main__.main", cli.main), ("pysoft.__main__", cli)]


def test_every_public_name_has_a_docstring() -> None:
    assert undocumented(_api()) == []


def test_the_docstring_check_finds_a_missing_one() -> None:
    probe = types.ModuleType("__docs_probe__")

    class Shape:
        """Documented."""

        __module__ = "__docs_probe__"

        def area(self) -> float:
            return 1.0

    def helper() -> None:
        pass

    probe.Shape, probe.helper = Shape, helper  # type: ignore[attr-defined]
    assert undocumented(_public(probe)) == ["__docs_probe__.Shape.area", "__docs_probe__.helper"]


def test_every_public_name_is_in_the_api_reference() -> None:
    from pysoft import build, draw

    reference = "".join(p.read_text() for p in (DOCS / "reference").glob("*.md"))
    wanted = ([f"pysoft.{n}" for n in pysoft.__all__ if n != "build"]
              + [f"pysoft.build.{n}" for n in build.__all__] + [f"pysoft.draw.{n}" for n in draw.__all__])
    assert [n for n in wanted if f"::: {n}\n" not in reference and f'heading: "{n}"' not in reference] == []
    world = [n for n in dir(pysoft.World) if not n.startswith("_")]
    assert [n for n in world if f'"World.{n}"' not in reference and f"`World.{n}`" not in reference] == []


# -- the benchmark table -----------------------------------------------------------------------

def test_the_docs_benchmark_tables_are_the_generators() -> None:
    """The quoted tables are ``bench.markdown`` of the run whose figures are kept beside them
    (``python -m pysoft bench --markdown --json docs/bench-results.json``), to the character."""
    page = (DOCS / "benchmarks.md").read_text()
    quoted = page.split("<!-- bench --markdown -->\n", 1)[1].split("\n<!-- end -->", 1)[0]
    results = json.loads((DOCS / "bench-results.json").read_text())
    assert quoted.strip() == bench.markdown(results).strip()
    assert re.match(r"Measured \d{4}-\d\d-\d\d on .+, `.+`:", quoted)


@pytest.mark.parametrize("module", ["pysoft", "pysoft.world", "pysoft.draw.camera3d"])
def test_docstring_examples(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
