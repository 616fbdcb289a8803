"""What the fault tests share: the reference run, the end state of a run, and the progress log
the kill points trigger on.

The reference is the in-process pipeline (`streams.app.inprocess.InProcessPipeline`): the
very stage objects a worker runs, fed the same turns in the same order, without Kafka, Faust,
RocksDB, offsets or changelogs — everything a fault can disturb. A second worker run as the
reference would share any defect of that machinery (a record a worker drops at start-up, say,
would be missing from both runs), and it is nondeterministic in its batching. A worker that
keeps up ends in exactly the reference's state (the same documents, histories and outcomes),
so any difference a test reports is the fault's doing.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.partitioner import DefaultPartitioner

from streams.app.services import settings_embedder
from streams.settings import Settings
from streams.api.registry_models import MemoryView
from streams.tools.stack import Completion
from streams.tools.locomo import load_conversation
from streams.app.inprocess import InProcessPipeline
from tests.integration.conftest import call
from topics import names
from topics.progress import progress_entries
from topics.turns import Turn

LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "locomo"

TurnKey = tuple[str, str, str]
FactKey = tuple[str, str, str, str, int]
"""(user, thread, turn, stage, fact index): one progress record's subject."""


def locomo_turns(stem: str, user_id: str | None = None, limit: int | None = None) -> list[Turn]:
    """The turns of LoCoMo conversation `stem` (e.g. "conv-30"), as `user_id` if given."""
    turns = load_conversation(LOCOMO / f"{stem}.json").turns[:limit]
    return [t.model_copy(update={"user_id": user_id}) for t in turns] if user_id else turns


@dataclass
class EndState:
    """What a run ends in: each user's memories as the registry exports them (document without
    its embedding, plus its audit history), and every distinct outcome each fact of each turn
    was given on `memory.progress` (a replay re-sends the same outcome; a second one is a
    difference)."""

    memories: dict[str, dict[str, Any]] = field(default_factory=dict)
    outcomes: dict[FactKey, set[tuple[str, str | None, int]]] = field(default_factory=dict)

    def add_progress(self, p: dict[str, Any]) -> None:
        key = (p["user_id"], p["thread_id"], p["turn_id"], p["stage"], p["fact_index"])
        self.outcomes.setdefault(key, set()).add((p["outcome"], p["memory_id"], p["fact_count"]))

    def dump(self, path: Path) -> None:
        """Write the state as JSON (a failing test's evidence)."""
        outcomes = {json.dumps(k): sorted(map(list, v)) for k, v in sorted(self.outcomes.items())}
        path.write_text(json.dumps({"memories": self.memories, "outcomes": outcomes}, indent=1))

    def counts(self) -> dict[str, int]:
        states: dict[str, int] = {}
        for memory in self.memories.values():
            states[memory["state"]] = states.get(memory["state"], 0) + 1
        return {"memories": len(self.memories), **states, "progress_subjects": len(self.outcomes)}


def _plain(value: Any) -> Any:
    """`value` as it reads back from JSON (the API's form), so both sides compare alike."""
    return json.loads(json.dumps(value, default=str))


def reference_state(turns: list[Turn], lifecycle: bool = False) -> EndState:
    """The end state of `turns` through the worker's stages in this process, uninterrupted (the
    lifecycle passes on or off, as in the workers it is compared with)."""
    settings = Settings(table_store="memory://", lifecycle_enabled=lifecycle)
    pipeline = InProcessPipeline(settings, settings_embedder(settings))
    asyncio.run(pipeline.ingest(turns))
    state, current = EndState(), pipeline.store.state()
    for user in sorted({t.user_id for t in turns}):
        for memory in pipeline.store.user_memories(user):
            state.memories[memory.id] = _plain({**MemoryView.of(memory),
                                                "history": current.history(memory.id)})
    for record in pipeline.topics.sent[names.MEMORY_PROGRESS]:
        for progress in progress_entries(record.value):
            state.add_progress(progress)
    return state


def user_on_partition(prefix: str, partition: int, partitions: int) -> str:
    """The first of `prefix`-0, `prefix`-1, … that the producers' partitioner puts on `partition`."""
    parts = list(range(partitions))
    return next(user for n in itertools.count() if DefaultPartitioner()(
        (user := f"{prefix}-{n}").encode(), parts, parts) == partition)


async def worker_state(api_url: str, users: Iterable[str], progress: list[dict[str, Any]],
                       timeout: float = 60.0) -> EndState:
    """The end state a worker (any worker: requests go to the owner) reports for `users`
    (waiting out a 503 while a rebalance settles)."""
    state = EndState()
    deadline = time.monotonic() + timeout
    for user in sorted(set(users)):
        while (answer := await call(api_url, "GET", f"/v1/users/{user}/export"))[0] == 503:
            assert time.monotonic() < deadline, f"still recovering after {timeout:.0f}s"
            await asyncio.sleep(0.25)
        status, body = answer
        assert status == 200, (status, body)
        for memory in body["memories"]:
            assert memory["id"] not in state.memories, f"memory {memory['id']} listed twice"
            state.memories[memory["id"]] = memory
    for p in progress:
        state.add_progress(p)
    return state


def differences(got: EndState, want: EndState, limit: int = 10) -> list[str]:
    """Every way `got` differs from `want` (at most `limit` of each kind), empty when none."""
    out: list[str] = []
    missing, extra = sorted(want.memories.keys() - got.memories.keys()), sorted(got.memories.keys() - want.memories.keys())
    out += [f"missing memory {i}: {want.memories[i]['summary']!r}" for i in missing[:limit]]
    out += [f"extra memory {i}: {got.memories[i]['summary']!r} from {got.memories[i]['source_turn_ids']}"
            for i in extra[:limit]]
    changed = [i for i in sorted(want.memories.keys() & got.memories.keys())
               if got.memories[i] != want.memories[i]]
    for i in changed[:limit]:
        g, w = got.memories[i], want.memories[i]
        fields = {k: (g.get(k), w.get(k)) for k in sorted(g.keys() | w.keys()) if g.get(k) != w.get(k)}
        out.append(f"memory {i} differs (got, want): {fields}")
    keys = sorted(want.outcomes.keys() | got.outcomes.keys())
    wrong = [k for k in keys if got.outcomes.get(k) != want.outcomes.get(k)]
    out += [f"outcomes of {k} (got, want): {got.outcomes.get(k)} {want.outcomes.get(k)}"
            for k in wrong[:limit]]
    if len(changed) > limit or len(wrong) > limit:
        out.append(f"... {len(changed)} memories and {len(wrong)} outcomes differ in all")
    return out


class ProgressLog:
    """Reads `memory.progress` from the start, keeping the records of `turns`' users and which
    of `turns` are complete (every fact has an outcome). Use `async with`."""

    def __init__(self, broker_url: str, turns: list[Turn]) -> None:
        self.wanted = {(t.user_id, t.thread_id, t.turn_id) for t in turns}
        self.users = {t.user_id for t in turns}
        self.records: list[dict[str, Any]] = []
        self.done: set[TurnKey] = set()
        self._completion = Completion()
        self._consumer = AIOKafkaConsumer(names.MEMORY_PROGRESS, bootstrap_servers=broker_url,
                                          auto_offset_reset="earliest", enable_auto_commit=False)

    async def __aenter__(self) -> ProgressLog:
        await self._consumer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._consumer.stop()

    async def until(self, count: int, timeout: float, check: Callable[[], None] = lambda: None) -> None:
        """Read until `count` of the turns are complete. A hang guard: fails after `timeout`
        seconds without a new progress record; `check` raises if what should make progress
        has died."""
        last = time.monotonic()
        while len(self.done) < count:
            check()
            if time.monotonic() - last > timeout:
                raise AssertionError(f"no progress for {timeout:.0f}s: {len(self.done)}/{count} turns "
                                     f"complete, e.g. missing {sorted(self.wanted - self.done)[:3]}")
            batch = await self._consumer.getmany(timeout_ms=500)
            for records in batch.values():
                for p in (p for record in records for p in progress_entries(record.value)):
                    key = (p["user_id"], p["thread_id"], p["turn_id"])
                    if key not in self.wanted:
                        continue
                    last = time.monotonic()
                    self.records.append(p)
                    if self._completion.record(p):
                        self.done.add(key)
