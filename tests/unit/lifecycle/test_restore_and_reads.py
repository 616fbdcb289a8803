"""What the rest of memstream sees of forgetting: restore, the delta header, the ranking."""
from __future__ import annotations

from datetime import timedelta

import pytest

from streams.memory.commands import CommandError, apply_command
from streams.read.delta import render_delta
from streams.read.ranking import score
from tests.unit.lifecycle.test_forgetting import T0, memory, run, seeded
from topics.commands import Command
from tests import defaults


def restore(memory_id: str, days: float) -> Command:
    return Command(command_id=f"restore-{memory_id}-{days}", kind="restore", user_id="u",  # type: ignore[arg-type]
                   memory_id=memory_id, ts=T0 + timedelta(days=days), thread_id="t1")


async def test_restore_within_the_window_is_a_use_and_after_the_purge_an_error():
    s = seeded(memory("a"), memory("b"))
    await run(s, 61)
    apply_command(s, restore("a", 70), None)
    a = s.memory("a")
    assert a is not None and a.state == "active" and a.purge_at is None
    assert a.last_accessed == T0 + timedelta(days=70), "restored is used: not forgotten at once"
    assert await run(s, 71) == []
    await run(s, 91)
    assert s.memory("b").state == "purged"  # type: ignore[union-attr]
    with pytest.raises(CommandError):
        apply_command(s, restore("b", 92), None)


async def test_the_delta_header_shows_each_transition_once_and_a_purge_without_content():
    s = seeded(memory("a"))
    await run(s, 61)
    rev = s.current_rev("u", "t1")
    header = render_delta(0, s.changes_since("u", "t1", 0))
    assert "-deleted: [Other] Ana fact a." in header
    await run(s, 91)
    later = s.changes_since("u", "t1", rev)
    assert [c["kind"] for c in later] == ["purged"]
    assert "Ana fact a" not in render_delta(rev, later)
    assert "Ana fact a" not in render_delta(0, s.changes_since("u", "t1", 0))


def test_the_ranking_decays_by_the_half_life_of_the_importance():
    weights = defaults.weights(importance=0.20, recency=0.15)
    year_ago = T0 - timedelta(days=365)
    important = score(memory("i", importance=5, accessed=year_ago), 0.5, T0, weights)
    trivial = score(memory("t", importance=1, accessed=year_ago), 0.5, T0, weights)
    assert abs(important - (0.55 * 0.5 + 0.20 + 0.15 * 0.5)) < 1e-9, "365-day half-life"
    assert abs(trivial - (0.55 * 0.5 + 0.15 * 0.5 ** (365 / 30))) < 1e-9, "30-day half-life"
