"""Shared fixtures of the stage tests: outputs captured, in-memory tables emptied."""
from __future__ import annotations

import pytest

from streams.app.factory import applied_table, memories_table, thread_revs_table, users_table
from topics.turns import Turn


class Captured:
    def __init__(self) -> None:
        self.events: list = []
        self.progress: list = []
        self.candidates: list = []
        self.dead: list = []
        self.commands: list = []

    async def event(self, e) -> None:
        self.events.append(e)

    async def progress_(self, p) -> None:
        self.progress.append(p)

    async def candidate(self, c) -> None:
        self.candidates.append(c)

    async def dead_letter(self, letter, key) -> None:
        self.dead.append(letter)

    async def command(self, c) -> None:
        self.commands.append(c)


@pytest.fixture
def captured(monkeypatch) -> Captured:
    cap = Captured()
    import agents.commands as commands_stage
    import agents.dedup as dedup_stage
    import agents.ingest as ingest_stage

    for module in (ingest_stage, dedup_stage, commands_stage):
        monkeypatch.setattr(module, "send_event", cap.event)
        monkeypatch.setattr(module, "send_progress", cap.progress_)
        monkeypatch.setattr(module, "send_dead_letter", cap.dead_letter)
    monkeypatch.setattr(ingest_stage, "send_candidate", cap.candidate)
    monkeypatch.setattr(ingest_stage, "send_command", cap.command)
    for table in (memories_table, applied_table, users_table, thread_revs_table):
        table.data.clear()
    dedup_stage.index_cache.mark_stale()
    return cap


def turn(text: str, turn_id: str = "1", user: str = "u1") -> Turn:
    return Turn(user_id=user, thread_id="t1", turn_id=turn_id, role="user", speaker="Ana",
                text=text, ts="2024-05-01T10:00:00+00:00")  # type: ignore[arg-type]


