"""The scheduler process's collector settings: a larger young generation, and the cache's
objects kept out of traversals once loaded."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from scheduler import gc_policy


@pytest.fixture
def restored() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.set_threshold(*threshold)
    gc.unfreeze()


@pytest.mark.usefixtures("restored")
def test_tune_enlarges_the_young_generation_only() -> None:
    gc.set_threshold(700, 10, 10)

    gc_policy.tune()

    assert gc.get_threshold() == (gc_policy.YOUNG_THRESHOLD, 10, 10)


@pytest.mark.usefixtures("restored")
def test_settle_keeps_what_the_cache_loaded_out_of_traversals() -> None:
    cache = [{"pod": index} for index in range(1000)]

    gc_policy.settle()

    assert gc.get_freeze_count() >= len(cache)
    assert not any(obj is cache for obj in gc.get_objects())
