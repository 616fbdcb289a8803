"""/health's `assigned`: the input partitions a worker holds, by topic (changelogs left out)."""
from __future__ import annotations

from faust.types import TP

from streams.api.web import assigned_inputs


def test_assigned_inputs_by_topic_without_changelogs():
    assignment = {TP("chat.turns", 3), TP("chat.turns", 1), TP("memory.commands", 1),
                  TP("memory.commands", 3), TP("app-memories-changelog", 0),
                  TP("app-memories-changelog", 1)}
    assert assigned_inputs(assignment, {"app-memories-changelog"}) == {
        "chat.turns": [1, 3], "memory.commands": [1, 3]}
    assert assigned_inputs(set(), set()) == {}
