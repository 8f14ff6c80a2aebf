"""Shared fixtures: every backend; leave esper's default context as each test found it."""

from __future__ import annotations

from collections.abc import Iterator

import esper
import pytest


@pytest.fixture(autouse=True)
def clean_default_esper_context() -> Iterator[None]:
    """Tests that share the game's context (``context="default"``) start and end clean."""
    esper.switch_world("default")
    esper.clear_database()
    for processor in list(esper._processors):
        esper.remove_processor(type(processor))
    yield
    esper.switch_world("default")
    esper.clear_database()
    for processor in list(esper._processors):
        esper.remove_processor(type(processor))


@pytest.fixture(params=("c", "python"))
def backend(request: pytest.FixtureRequest) -> str:
    """A test that takes ``backend`` runs on the C core and on the NumPy twins."""
    name: str = request.param
    return name
