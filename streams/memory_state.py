"""The memory state of the users one worker owns, and how a candidate changes it.

Pure logic over `MutableMapping`s: in the worker these are Faust tables (every write is
changelogged and lands on the partition of the event being processed); offline and in tests
they are plain dicts. Sending the resulting events is the caller's job.
"""
from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from streams import dedup, ids
from streams.embedder import EmbedderProfile
from streams.memory import Memory
from streams.vector_index import VectorIndex, encode_vector
from topics.candidates import Candidate
from topics.commands import Command
from topics.events import MemoryEvent

Table = MutableMapping[Any, Any]


@dataclass(frozen=True)
class DedupConfig:
    profile: EmbedderProfile
    neighbours_k: int = 10
    episodic_merge_window: timedelta = timedelta(hours=72)
    use_heuristics: bool = True


@dataclass
class Applied:
    """What a candidate did: its outcome, the memory it touched, the events to send."""

    outcome: str  # created | updated | duplicate
    memory_id: str
    events: list[MemoryEvent] = field(default_factory=list)
    similarity: float | None = None
    replayed: bool = False


def candidate_id(candidate: Candidate) -> str:
    """Deterministic id of a candidate, and of the memory it creates."""
    return ids.memory_id(candidate.turn.user_id, candidate.turn.ref, candidate.fact_index)


def new_memory(candidate: Candidate, memory_id: str, vector: np.ndarray) -> Memory:
    turn, fact = candidate.turn, candidate.fact
    return Memory(
        id=memory_id, user_id=turn.user_id, type=fact.type, category=fact.category,
        summary=fact.summary, tags=fact.tags, entities=fact.entities, entity_key=fact.entity_key,
        source=turn.source, importance=fact.importance, pinned=fact.pinned, created_at=turn.ts, updated_at=turn.ts,
        last_accessed=turn.ts, valid_from=turn.ts, source_turn_ids=[turn.ref],
        agent_id=turn.agent_id, run_id=turn.run_id, actor_id=turn.actor_id, role=turn.role.value,
        thread_id=turn.thread_id, embedding_b64=encode_vector(vector),
    )


def merged_memory(target: Memory, candidate: Candidate) -> Memory:
    """Seed 002 merge: union tags, max importance, extend provenance, refresh last_accessed."""
    turn, fact = candidate.turn, candidate.fact
    return target.model_copy(
        update={
            "tags": sorted(set(target.tags) | set(fact.tags)),
            "entities": sorted(set(target.entities) | set(fact.entities)),
            "importance": max(target.importance, fact.importance),
            "pinned": target.pinned or fact.pinned,
            "source_turn_ids": [*target.source_turn_ids, turn.ref],
            "last_accessed": max(target.last_accessed, turn.ts),
            "updated_at": max(target.updated_at, turn.ts),
            "last_verified_at": turn.ts,
            "version": target.version + 1,
        }
    )


@dataclass(frozen=True)
class CommandConfig:
    """How a described memory ("forget my old address") is matched to stored ones."""

    match_min: float = 0.5
    match_max: int = 3


class CommandError(ValueError):
    """A command that names a memory the user does not have, or is otherwise inapplicable."""


class MemoryState:
    """Memories, applied candidates, users and per-thread revisions of the owned partitions."""

    def __init__(self, *, memories: Table, applied: Table, users: Table, thread_revs: Table,
                 index: VectorIndex, config: DedupConfig,
                 commands: CommandConfig = CommandConfig()) -> None:
        self.memories = memories
        self.applied = applied
        self.users = users
        self.thread_revs = thread_revs
        self.index = index
        self.config = config
        self.commands = commands

    # --- reads -------------------------------------------------------------------------
    def is_applied(self, candidate: Candidate) -> bool:
        return candidate_id(candidate) in self.applied

    def memory(self, memory_id: str) -> Memory | None:
        raw = self.memories.get(memory_id)
        return Memory.model_validate(raw) if raw is not None else None

    def blocked_topics(self, user_id: str) -> list[str]:
        return list((self.users.get(user_id) or {}).get("blocked_topics", []))

    # --- writes ------------------------------------------------------------------------
    def _store(self, memory: Memory) -> None:
        self.memories[memory.id] = memory.model_dump(mode="json")

    def _thread(self, user_id: str, thread_id: str) -> dict[str, Any]:
        return dict(self.thread_revs.get(f"{user_id}|{thread_id}") or {"rev": 0, "turn": None, "memories": []})

    def next_rev(self, user_id: str, thread_id: str) -> int:
        """Increment and return the thread's revision (one writer per partition: atomic)."""
        thread = self._thread(user_id, thread_id)
        thread["rev"] += 1
        self.thread_revs[f"{user_id}|{thread_id}"] = thread
        return int(thread["rev"])

    def _note_turn_memory(self, candidate: Candidate, memory_id: str) -> None:
        """Remember which memories the thread's latest turn wrote ("don't remember this")."""
        turn = candidate.turn
        thread = self._thread(turn.user_id, turn.thread_id)
        if thread["turn"] != turn.turn_id:
            thread["turn"], thread["memories"] = turn.turn_id, []
        if memory_id not in thread["memories"]:
            thread["memories"] = [*thread["memories"], memory_id]
        self.thread_revs[f"{turn.user_id}|{turn.thread_id}"] = thread

    def last_turn_memories(self, user_id: str, thread_id: str, before_turn: str | None) -> list[str]:
        """Memories written by the thread's latest turn (other than `before_turn`)."""
        thread = self._thread(user_id, thread_id)
        return [] if thread["turn"] == before_turn else list(thread["memories"])

    def _touch_user(self, user_id: str, clock: datetime, created: bool) -> None:
        info = dict(self.users.get(user_id) or {"memories": 0, "clock": clock.isoformat()})
        info["memories"] += 1 if created else 0
        info["clock"] = max(datetime.fromisoformat(info["clock"]), clock).isoformat()
        self.users[user_id] = info

    def _event(self, kind: str, memory: Memory, thread_id: str, ts: datetime, meta: dict) -> MemoryEvent:
        return MemoryEvent(
            event_id=ids.event_id(memory.id, kind, memory.version), kind=kind,  # type: ignore[arg-type]
            user_id=memory.user_id, thread_id=thread_id, memory_id=memory.id,
            rev=self.next_rev(memory.user_id, thread_id), ts=ts, summary=memory.summary,
            category=memory.category, meta={"type": memory.type, **meta},
        )

    def apply(self, candidate: Candidate, vector: np.ndarray) -> Applied:
        """Create or update a memory from `candidate` (embedding `vector`).

        A candidate seen before changes nothing and returns the events it produced then, so a
        replay re-sends identical events (same event_id).
        """
        turn, fact = candidate.turn, candidate.fact
        cid = candidate_id(candidate)
        prior = self.applied.get(cid)
        if prior is not None:
            events = [MemoryEvent.model_validate(e) for e in prior.get("events", [])]
            return Applied(prior["outcome"], prior["memory_id"], events, replayed=True)

        user_index = self.index.user(turn.user_id)
        neighbours = user_index.search(
            vector, self.config.neighbours_k, accept=lambda m: m.is_visible and m.type == fact.type
        )
        decision = dedup.decide(
            memory_type=fact.type, summary=fact.summary, entities=fact.entities,
            event_time=turn.ts, neighbours=neighbours, profile=self.config.profile,
            merge_window=self.config.episodic_merge_window, use_heuristics=self.config.use_heuristics,
        )
        meta = {"similarity": round(decision.score, 4), "reason": decision.reason,
                "source_turn_id": turn.ref}
        events: list[MemoryEvent] = []
        if decision.action is dedup.Action.update and decision.target is not None:
            target = decision.target
            if turn.ref in target.source_turn_ids:
                outcome, memory = "duplicate", target
            else:
                outcome, memory = "updated", merged_memory(target, candidate)
                self._store(memory)
                user_index.update_doc(memory)
                events.append(self._event("updated", memory, turn.thread_id, turn.ts, meta))
        else:
            existing = self.memory(cid)
            if existing is not None:  # written before a crash, `applied` not yet: keep it
                outcome, memory = "duplicate", existing
            else:
                outcome, memory = "created", new_memory(candidate, cid, vector)
                self._store(memory)
                user_index.upsert(memory, vector)
                events.append(self._event("created", memory, turn.thread_id, turn.ts, meta))
        self._touch_user(turn.user_id, turn.ts, created=outcome == "created")
        if events:
            self._note_turn_memory(candidate, memory.id)
        self.applied[cid] = {
            "outcome": outcome, "memory_id": memory.id,
            "events": [e.model_dump(mode="json") for e in events],
        }
        best = neighbours[0][1] if neighbours else None
        return Applied(outcome, memory.id, events, similarity=best)


    # --- commands ----------------------------------------------------------------------
    def apply_command(self, cmd: Command, vector: np.ndarray | None) -> Applied:
        """Apply a command once (by `command_id`); a replay returns the events of the first time.

        `vector` embeds `cmd.query` (or, for edit, the new summary). Raises `CommandError`.
        """
        key = f"command:{cmd.user_id}:{cmd.command_id}"
        prior = self.applied.get(key)
        if prior is not None:
            events = [MemoryEvent.model_validate(e) for e in prior.get("events", [])]
            return Applied(prior["outcome"], prior["memory_id"], events, replayed=True)
        events = self._command_events(cmd, vector)
        memory_id = events[0].memory_id if events else (cmd.memory_id or "")
        self.applied[key] = {"outcome": "applied", "memory_id": memory_id,
                             "events": [e.model_dump(mode="json") for e in events]}
        return Applied("applied", memory_id, events)

    def _command_events(self, cmd: Command, vector: np.ndarray | None) -> list[MemoryEvent]:
        if cmd.kind == "purge_user":
            return self.purge_user(cmd.user_id, cmd.thread_id, cmd.ts)
        if cmd.kind in ("block_topic", "unblock_topic"):
            self.set_topic_blocked(cmd.user_id, str(cmd.topic), cmd.kind == "block_topic", cmd.ts)
            return []
        events: list[MemoryEvent] = []
        meta = {"command": cmd.kind, "actor": cmd.actor}

        def change(memory: Memory, kind: str, **update: Any) -> Memory:
            changed = memory.model_copy(
                update={**update, "version": memory.version + 1, "updated_at": cmd.ts})
            self._store(changed)
            self.index.user(memory.user_id).update_doc(changed)
            events.append(self._event(kind, changed, cmd.thread_id, cmd.ts, meta))
            return changed

        targets = self.targets(cmd, vector)
        if cmd.kind in ("forget", "delete", "dont_remember"):
            for memory in targets:
                if memory.state == "active":
                    change(memory, "soft_deleted", state="soft_deleted")
        elif cmd.kind in ("pin", "unpin"):
            for memory in targets[:1]:
                change(memory, "updated", pinned=cmd.kind == "pin")
        elif cmd.kind == "restore":
            for memory in targets:
                if memory.state == "soft_deleted":
                    change(memory, "restored", state="active")
        elif cmd.kind == "edit":
            if vector is None or not targets:
                raise CommandError("edit needs a memory and the new summary's embedding")
            edited = change(targets[0], "updated", summary=cmd.text, embedding_b64=encode_vector(vector))
            self.index.user(edited.user_id).upsert(edited, vector)
        return events

    def targets(self, cmd: Command, vector: np.ndarray | None) -> list[Memory]:
        """The memories a command applies to: by id, the thread's last turn, or by description."""
        if cmd.memory_id:
            memory = self.memory(cmd.memory_id)
            if memory is None or memory.user_id != cmd.user_id:
                raise CommandError("no such memory for this user")
            return [memory]
        found: list[Memory] = []
        if cmd.kind == "dont_remember":
            for memory_id in self.last_turn_memories(cmd.user_id, cmd.thread_id, cmd.turn_id):
                if (memory := self.memory(memory_id)) is not None:
                    found.append(memory)
        if cmd.query and vector is not None:
            hits = self.index.user(cmd.user_id).search(vector, self.commands.match_max)
            found += [m for m, score in hits if score >= self.commands.match_min and m not in found]
        return found

    def purge_user(self, user_id: str, thread_id: str, ts: datetime) -> list[MemoryEvent]:
        """Remove every memory of the user; the events carry no content (SPEC §5 purge)."""
        events = []
        for memory in list(self.index.user(user_id).docs.values()):
            self.memories.pop(memory.id, None)
            events.append(MemoryEvent(
                event_id=ids.event_id(memory.id, "purged", memory.version + 1), kind="purged",
                user_id=user_id, thread_id=thread_id, memory_id=memory.id,
                rev=self.next_rev(user_id, thread_id), ts=ts, summary="", category="", meta={},
            ))
        self.index.drop_user(user_id)
        self.users.pop(user_id, None)
        return events

    def set_topic_blocked(self, user_id: str, topic: str, blocked: bool, ts: datetime) -> None:
        info = dict(self.users.get(user_id) or {"memories": 0, "clock": ts.isoformat()})
        topics, topic = set(info.get("blocked_topics", [])), topic.strip().lower()
        info["blocked_topics"] = sorted(topics | {topic} if blocked else topics - {topic})
        self.users[user_id] = info
