"""Scripted conversations (`cases/*.json`) replayed through a worker's own agents (Faust
`test_context`, the real local embedder): final active memories, audit history, delta header
(see `harness.py`).

A case with an `xfail` reason documents a known pipeline defect against SPEC; it is a strict
xfail, so fixing the pipeline turns it into a failure until the marker is removed.
"""
from __future__ import annotations

import pytest

from tests.scenarios.harness import CachingEmbedder, check, load_cases, replay

CASES = load_cases()


def _param(case):
    marks = [pytest.mark.xfail(strict=True, reason=case["xfail"])] if case.get("xfail") else []
    return pytest.param(case, id=case["name"], marks=marks)


@pytest.fixture(scope="module")
def embedder(minilm_embedder):
    return CachingEmbedder(minilm_embedder)


def test_the_suite_is_complete():
    assert len(CASES) >= 30
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names))
    for case in CASES:
        assert case.get("why"), f"{case['name']} has no why"
        assert case.get("expect"), f"{case['name']} expects nothing"


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
async def test_scenario(case, embedder):
    run = await replay(case, embedder)
    problems = await check(case, run)
    assert not problems, f"{case['name']} ({case['why']}):\n" + "\n".join(problems)


async def test_the_checker_catches_a_wrong_expectation(embedder):
    """The harness itself: a case whose expectations are wrong reports every one of them."""
    case = {
        "name": "meta", "why": "harness self-check",
        "steps": [{"user": "My dog Luna is 3."}, {"mark": "m"}, {"user": "My dog Luna is 4 now."}],
        "expect": {
            "count_active": 2, "active_contains": [["Luna", "5"]], "active_not_contains": ["Luna"],
            "nowhere_contains": ["Luna"],
            "memories": [{"contains": ["Luna", "3"], "state": "active"},
                         {"contains": ["Luna", "4"], "verbs": ["ADD", "MERGE"]}],
            "delta": {"since": "m", "contains": ["restored"]},
            "query": {"text": "Luna", "top_contains": ["cat"]},
        },
    }
    problems = "\n".join(await check(case, await replay(case, embedder)))
    for expected in ("count_active: 1 != 2", "no active memory contains ['Luna', '5']",
                     "contains 'Luna'", "'Luna' found in memories", "(state active): 0 != 1",
                     "verbs ['ADD'] != ['ADD', 'MERGE']", "delta lacks 'restored'", "top hit"):
        assert expected in problems, expected
    case["expect"] = {"count_active": 1, "memories": [{"contains": ["Luna", "3"],
                                                       "state": "superseded"}],
                      "delta": {"since": "m", "contains": ["superseded"]}}
    assert await check(case, await replay(case, embedder)) == []
