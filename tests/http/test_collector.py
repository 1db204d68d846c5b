"""A serving process's collector: start-up's objects frozen, the young generation collected
every 50,000 allocations rather than 700 (ADR 0048)."""

from __future__ import annotations

import gc

from entrypoints.composition.collector import YOUNG_THRESHOLD, tune_for_serving


def test_serving_freezes_start_up_and_widens_the_young_generation() -> None:
    before = gc.get_threshold()
    try:
        tune_for_serving()
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
