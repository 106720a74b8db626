"""The search alone (no TVM): ddmin finds a 1-minimal failing set, tries the hints first, takes
the first failing candidate of a wave in graph order, and stops at its budget."""

from __future__ import annotations

from tvm_explorer.reduce.search import Stopped, ddmin


def _oracle(needed: set, log: list, budget: int | None = None):
    def first_failing(candidates):
        if budget is not None and len(log) >= budget:
            raise Stopped(f"the probe budget ({budget}) ran out")
        log.extend(candidates)
        return next((i for i, c in enumerate(candidates) if needed <= c), None)

    return first_failing


def test_two_needed_operators_far_apart_are_found_and_the_result_is_1_minimal():
    log: list = []
    result = ddmin(list(range(40)), _oracle({3, 31}, log))
    assert result.kept == [3, 31] and result.minimal and not result.why
    assert result.history[-1] == 2 and len({frozenset(c) for c in log}) < 120


def test_a_hint_that_fails_ends_the_search_at_once():
    log: list = []
    result = ddmin(list(range(200)), _oracle({150}, log), hints=[[7], [150]])
    assert result.kept == [150] and result.minimal
    assert log[:2] == [frozenset({7}), frozenset({150})]
    assert len(log) == 2  # a single operator is 1-minimal by itself


def test_the_budget_stops_the_search_with_the_best_so_far():
    seen = []
    result = ddmin(list(range(64)), _oracle({5, 60}, [], budget=3), on_best=seen.append)
    assert not result.minimal and result.why == "the probe budget (3) ran out"
    assert result.kept == (seen[-1] if seen else list(range(64)))
