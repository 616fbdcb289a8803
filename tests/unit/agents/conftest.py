"""Shared fixtures of the stage tests: a worker's app built for the test (in-memory tables, the
real local embedder), whose output records are captured in process instead of produced."""
from __future__ import annotations

from pathlib import Path

import pytest

from streams.app.factory import MemstreamApp
from streams.settings import Settings
from streams.worker import build_worker
from streams.app.inprocess import LocalTopics
from streams.privacy.crypto import decode_key, encode_key
from streams.privacy.payloads import open_events, open_record
from streams.privacy.sealed import TABLE_OWNERS, SealedTable, Sealer
from streams.privacy.user_keys import UserKeys
from topics import names
from topics.candidates import Candidate, ChatCommand, candidate_items
from topics.commands import Command
from topics.dlq import DeadLetter
from topics.events import MemoryEvent
from topics.events_wire import events_of
from topics.progress import parse_progress
from topics.turns import Turn


class Captured:
    """What an app's stages sent, parsed (and opened with the app's sealer), by kind."""

    def __init__(self, topics: LocalTopics, sealer: Sealer) -> None:
        self.topics = topics
        self.sealer = sealer

    def _parsed(self, model, *topics: str) -> list:  # type: ignore[no-untyped-def]
        return [model.model_validate_json(r.value) for t in topics for r in self.topics.sent[t]]

    @property
    def events(self) -> list[MemoryEvent]:
        return [e for r in self.topics.sent[names.MEMORY_EVENTS] for e in open_events(self.sealer, events_of(r.value))]

    progress = property(lambda self: [p for r in self.topics.sent[names.MEMORY_PROGRESS]
                                      for p in parse_progress(r.value)])
    commands = property(lambda self: self._parsed(Command, names.MEMORY_COMMANDS))

    @property
    def candidates(self) -> list[Candidate]:
        """The facts on `memory.candidates`."""
        return [c for c in self._on_candidates() if isinstance(c, Candidate)]

    @property
    def chat_commands(self) -> list[Command]:
        """The commands said in chat, on `memory.candidates`."""
        return [c.command for c in self._on_candidates() if isinstance(c, ChatCommand)]

    def _on_candidates(self) -> list[Candidate | ChatCommand]:
        return [item for r in self.topics.sent[names.MEMORY_CANDIDATES]
                for item in candidate_items(open_record(self.sealer, r.value or b""))]
    dead = property(lambda self: self._parsed(DeadLetter, names.CHAT_TURNS_DLQ,
                                              names.MEMORY_CANDIDATES_DLQ, names.MEMORY_COMMANDS_DLQ))


MASTER_KEY = encode_key(b"m" * 32)


def app_settings(tmp_path: Path, **overrides: object) -> Settings:
    """Settings of an in-process worker app: in-memory tables, a scratch data dir, a known
    master key (so a test can seal what it writes straight into a table: `data_view`)."""
    return Settings(table_store="memory://", data_dir=tmp_path,  # type: ignore[arg-type]
                    memstream_master_key=MASTER_KEY, **overrides)


def data_view(worker: MemstreamApp, table: str) -> SealedTable:
    """The sealed view of one of the worker's tables over its in-memory data, to seed it from a
    test (a Faust table refuses writes outside an agent)."""
    keys = UserKeys(worker.tables.user_keys.data, decode_key(MASTER_KEY))
    return SealedTable(getattr(worker.tables, table).data, Sealer(keys), TABLE_OWNERS[table])


@pytest.fixture
def local_topics() -> LocalTopics:
    return LocalTopics()


@pytest.fixture
def worker(tmp_path: Path, local_topics: LocalTopics, minilm_embedder) -> MemstreamApp:  # type: ignore[no-untyped-def]
    """A worker's app with every stage, its outputs captured in `local_topics`."""
    return build_worker(app_settings(tmp_path), send=local_topics.send, embedder=minilm_embedder)


@pytest.fixture
def captured(local_topics: LocalTopics, worker: MemstreamApp) -> Captured:
    return Captured(local_topics, worker.sealed.sealer)


def turn(text: str, turn_id: str = "1", user: str = "u1") -> Turn:
    return Turn(user_id=user, thread_id="t1", turn_id=turn_id, role="user", speaker="Ana",
                text=text, ts="2024-05-01T10:00:00+00:00")  # type: ignore[arg-type]
