"""Shared fixtures: every backend; leave esper's default context as each test found it. The
``slow`` marker: ``python -m pytest -m "not slow"`` is the quick subset for the edit-test loop
(CI runs everything)."""

from __future__ import annotations

from collections.abc import Iterator

import esper
import pytest

# The test files that take most of the suite's time (long runs of frames, subprocesses, the
# examples, the benchmarks, the docs' blocks, threads, the fuzz corpus): marked ``slow``
SLOW = {
    "test_bench", "test_bodies_3d", "test_body_contacts_3d", "test_cli_examples", "test_defaults",
    "test_contact_3d", "test_determinism", "test_docs", "test_edge_contact", "test_envs", "test_evolve",
    "test_fuzz", "test_layout",
    "test_material", "test_momentum", "test_recovery", "test_sandbox", "test_threads",
}


# ... and the slowest tests of the others (the builders' rest on the NumPy backend, piles, the
# steady frames' kernel counts, the bitwise comparisons of long runs)
SLOW_TESTS = {
    "test_xpbd_builders_come_to_rest", "test_builder_defaults_come_to_rest_on_floor",
    "test_memory_returns_to_its_start_after_many_add_remove_cycles",
    "test_a_pile_of_200_mixed_bodies_settles",
    "test_steady_state_frames_rebind_nothing_and_call_a_fixed_number_of_kernels",
    "test_the_tiled_solve_plan_gives_the_batch_orders_bits",
    "test_the_pile_on_obstacles_is_bitwise_equal_on_both_backends",
    "test_backends_agree_bitwise_with_edge_contacts",
    "test_moving_colliders_replay_bit_identically_after_restore",
    "test_a_pyramid_of_six_boxes_stands_for_10_s",
    "test_a_builder_names_the_argument_the_caller_passed", "test_the_3d_solve_gives_its_twins_bits",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.stem in SLOW or getattr(item, "originalname", item.name) in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


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
