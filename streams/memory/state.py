"""The memory state of the users one worker owns, and how a candidate changes it.

Pure logic over `MutableMapping`s: in the worker these are Faust tables (every write is
changelogged and lands on the partition of the event being processed); offline and in tests
they are plain dicts. Sending the resulting events is the caller's job.
"""
from __future__ import annotations

import fnmatch

from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from streams.memory import dedup, ids
from streams.providers.embedder import EmbedderProfile
from streams.write.episodic import time_bucket, user_zone
from streams.memory.model import Memory
from streams.memory.vector_index import VectorIndex, encode_vector
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
    link_min: float = 0.6


@dataclass
class Applied:
    """What a candidate did: its outcome, the memory it touched, the events to send."""

    outcome: str  # created | updated | duplicate
    memory_id: str
    events: list[MemoryEvent] = field(default_factory=list)
    similarity: float | None = None
    replayed: bool = False


def keys_match(a: str, b: str) -> bool:
    """Entity keys name the same slot; `*` in either stands for one unknown part
    (`profile:*:luna:age` matches `profile:pet:luna:age`)."""
    return a == b or fnmatch.fnmatchcase(a, b) or fnmatch.fnmatchcase(b, a)


def candidate_id(candidate: Candidate) -> str:
    """Deterministic id of a candidate, and of the memory it creates."""
    return ids.memory_id(candidate.turn.user_id, candidate.turn.ref, candidate.fact_index)


def new_memory(candidate: Candidate, memory_id: str, vector: np.ndarray) -> Memory:
    turn, fact = candidate.turn, candidate.fact
    buckets: dict[str, Any] = {}
    if fact.type == "episodic":
        date_iso, week, year = time_bucket(turn.ts, user_zone(turn))
        buckets = {"date_iso": date_iso, "week": week, "year": year}
    return Memory(
        **buckets,
        id=memory_id, user_id=turn.user_id, type=fact.type, category=fact.category,
        summary=fact.summary, tags=fact.tags, entities=fact.entities, entity_key=fact.entity_key,
        source=turn.source, importance=fact.importance, pinned=fact.pinned, created_at=turn.ts, updated_at=turn.ts,
        last_accessed=turn.ts, valid_from=turn.ts, source_turn_ids=list(candidate.refs),
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
            "source_turn_ids": [*target.source_turn_ids,
                                *(r for r in candidate.refs if r not in target.source_turn_ids)],
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


# (event kind, reason) -> audit verb of SPEC §3; reason "" is the kind's default.
AUDIT_VERBS = {
    ("created", ""): "ADD", ("updated", ""): "UPDATE", ("merged", ""): "MERGE",
    ("updated", "auto_update_band"): "MERGE", ("updated", "check_band_same_fact"): "MERGE",
    ("superseded", ""): "SUPERSEDE", ("linked", ""): "LINK", ("soft_deleted", ""): "SOFT_DELETE",
    ("restored", ""): "RESTORE", ("deleted", ""): "DELETE", ("purged", ""): "PURGE",
}


def _text(key: Any) -> str:
    """Table keys come back as bytes from Faust tables, as str from dicts."""
    return key.decode() if isinstance(key, bytes) else str(key)


def _normal(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".")


def _audit_value(memory: Memory) -> dict[str, Any]:
    return {"summary": memory.summary, "state": memory.state, "pinned": memory.pinned,
            "importance": memory.importance, "category": memory.category}


class CommandError(ValueError):
    """A command that names a memory the user does not have, or is otherwise inapplicable."""


class MemoryState:
    """Memories, applied candidates, users and per-thread revisions of the owned partitions."""

    def __init__(self, *, memories: Table, applied: Table, users: Table, thread_revs: Table,
                 index: VectorIndex, config: DedupConfig,
                 commands: CommandConfig = CommandConfig(), audit: Table | None = None,
                 change_log_size: int = 20) -> None:
        self.audit = audit if audit is not None else {}
        self.change_log_size = change_log_size
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
        return dict(self.thread_revs.get(f"{user_id}|{thread_id}")
                    or {"rev": 0, "turn": None, "memories": [], "changes": []})

    def changes_since(self, user_id: str, thread_id: str, rev: int) -> list[dict[str, Any]]:
        """The thread's logged changes after revision `rev`, newest first."""
        changes = self._thread(user_id, thread_id).get("changes", [])
        return sorted((c for c in changes if c["rev"] > rev), key=lambda c: -c["rev"])

    def current_rev(self, user_id: str, thread_id: str) -> int:
        return int(self._thread(user_id, thread_id)["rev"])

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """Audit entries of one memory, oldest first."""
        return list(self.audit.get(memory_id) or [])

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

    def _event(self, kind: str, memory: Memory, thread_id: str, ts: datetime, meta: dict,
               old: Memory | None = None, actor: str = "system") -> MemoryEvent:
        """Announce a change: the event, its audit entry, and its line in the thread's change log."""
        rev = self.next_rev(memory.user_id, thread_id)
        event = MemoryEvent(
            event_id=ids.event_id(memory.id, kind, memory.version), kind=kind,  # type: ignore[arg-type]
            user_id=memory.user_id, thread_id=thread_id, memory_id=memory.id, rev=rev, ts=ts,
            summary=memory.summary, category=memory.category, meta={"type": memory.type, **meta},
        )
        self._audit(event, memory, old, actor)
        thread = self._thread(memory.user_id, thread_id)
        thread["changes"] = [*thread.get("changes", []), {
            "rev": rev, "kind": kind, "memory_id": memory.id, "summary": memory.summary,
            "category": memory.category, "importance": memory.importance,
        }][-self.change_log_size:]
        self.thread_revs[f"{memory.user_id}|{thread_id}"] = thread
        return event

    def _audit(self, event: MemoryEvent, memory: Memory, old: Memory | None, actor: str) -> None:
        verb = AUDIT_VERBS.get((event.kind, event.meta.get("reason", "")), AUDIT_VERBS.get(
            (event.kind, ""), event.kind.upper()))
        purge = event.kind == "purged"
        entry = {
            "id": event.event_id, "memory_id": memory.id, "user_id": memory.user_id, "verb": verb,
            "actor": actor, "ts": event.ts.isoformat(), "rev": event.rev,
            "thread_id": event.thread_id,
            # A purge keeps a content-free tombstone only.
            "old": None if purge or old is None else _audit_value(old),
            "new": None if purge else _audit_value(memory),
            "meta": {} if purge else {k: v for k, v in event.meta.items() if k != "type"},
        }
        history = [] if purge else list(self.audit.get(memory.id) or [])
        self.audit[memory.id] = [*history, entry]

    def check_band(self, candidate: Candidate, vector: np.ndarray) -> list[Memory]:
        """Neighbours in the check band of the dedup bands: those a same-fact check decides."""
        fact = candidate.fact
        bands = dedup.bands_for(fact.type, self.config.profile)
        hits = self.index.user(candidate.turn.user_id).search(
            vector, self.config.neighbours_k, accept=lambda m: m.is_visible and m.type == fact.type)
        return [m for m, score in hits if bands.check_low <= score < bands.auto]

    def apply(self, candidate: Candidate, vector: np.ndarray,
              same_fact: Mapping[str, bool] | None = None) -> Applied:
        """Create or update a memory from `candidate` (embedding `vector`).

        `same_fact`: an LLM's same-fact answers for check-band neighbours, by memory id.

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
        if fact.type == "episodic" and not candidate.source_refs:
            correction = self._as_correction(candidate, vector)
            if correction is not None:  # seed 003: fact corrections are never episodic inserts
                candidate, fact = correction, correction.fact
        neighbours = user_index.search(
            vector, self.config.neighbours_k, accept=lambda m: m.is_visible and m.type == fact.type
        )
        decision = self._keyed_decision(candidate, user_index) or dedup.decide(
            memory_type=fact.type, summary=fact.summary, entities=fact.entities,
            event_time=turn.ts, neighbours=neighbours, profile=self.config.profile,
            merge_window=self.config.episodic_merge_window, use_heuristics=self.config.use_heuristics,
            same_fact=same_fact,
        )
        meta = {"similarity": round(decision.score, 4), "reason": decision.reason,
                "source_turn_id": turn.ref}
        events: list[MemoryEvent] = []
        if decision.action is dedup.Action.update and decision.target is not None:
            target = decision.target
            if set(candidate.refs) <= set(target.source_turn_ids):
                outcome, memory = "duplicate", target
            else:
                outcome, memory = "updated", merged_memory(target, candidate)
                self._store(memory)
                user_index.update_doc(memory)
                events.append(self._event("updated", memory, turn.thread_id, turn.ts, meta, old=target))
        else:
            existing = self.memory(cid)
            if existing is not None:  # written before a crash, `applied` not yet: keep it
                outcome, memory = "duplicate", existing
            else:
                outcome, memory = "created", new_memory(candidate, cid, vector)
                if decision.action is dedup.Action.supersede and decision.target is not None:
                    outcome = "superseded"
                    memory = memory.model_copy(update={
                        "related_ids": [decision.target.id],
                        # the slot keeps its concrete key: "Luna turned 4" replaces profile:pet:luna:age
                        "entity_key": decision.target.entity_key or memory.entity_key})
                self._store(memory)
                user_index.upsert(memory, vector)
                events.append(self._event("created", memory, turn.thread_id, turn.ts, meta))
                if decision.action is dedup.Action.supersede and decision.target is not None:
                    events.append(self._supersede(decision.target, memory, turn.thread_id, turn.ts))
        self._touch_user(turn.user_id, turn.ts, created=outcome in ("created", "superseded"))
        if events:
            self._note_turn_memory(candidate, memory.id)
            if memory.type == "semantic":
                self._link(memory, neighbours, turn.ts)
        self.applied[cid] = {
            "outcome": outcome, "memory_id": memory.id,
            "events": [e.model_dump(mode="json") for e in events],
        }
        best = neighbours[0][1] if neighbours else None
        return Applied(outcome, memory.id, events, similarity=best)


    def _link(self, memory: Memory, neighbours: Sequence[tuple[Memory, float]], ts: datetime) -> None:
        """`related_to` edges to neighbours scoring at least `link_min`, on both ends, strength =
        score. Edges are keyed by memory id, so a link is never stored twice."""
        fresh = {m.id: round(score, 4) for m, score in neighbours
                 if m.id != memory.id and score >= self.config.link_min
                 and memory.relations.get(m.id) != round(score, 4)}
        if not fresh:
            return
        current = {i: self.memory(i) for i in fresh}
        fresh = {i: v for i, v in fresh.items() if (doc := current[i]) is not None and doc.is_visible}
        if not fresh:
            return
        for other_id, strength in [(memory.id, None), *fresh.items()]:
            doc = self.memory(other_id)
            if doc is None:
                continue
            relations = ({**doc.relations, **fresh} if strength is None
                         else {**doc.relations, memory.id: strength})
            linked = doc.model_copy(update={
                "relations": relations, "related_ids": sorted({*doc.related_ids, *relations})})
            self._store(linked)
            self.index.user(doc.user_id).update_doc(linked)
            self._audit_link(linked, ts, fresh if strength is None else {memory.id: strength})

    def _audit_link(self, memory: Memory, ts: datetime, edges: dict[str, float]) -> None:
        entry = {"id": ids.event_id(memory.id, "linked", len(memory.relations)), "memory_id": memory.id,
                 "user_id": memory.user_id, "verb": "LINK", "actor": "system", "ts": ts.isoformat(),
                 "rev": None, "thread_id": memory.thread_id, "old": None, "new": None,
                 "meta": {"edges": edges}}
        self.audit[memory.id] = [*(self.audit.get(memory.id) or []), entry]

    def _as_correction(self, candidate: Candidate, vector: np.ndarray) -> Candidate | None:
        """An "episodic" fact that changes a value of a semantic memory ("Luna turned 4 last
        week" after "Luna is 3") is a correction: it is handled as a semantic fact."""
        semantic = candidate.model_copy(
            update={"fact": candidate.fact.model_copy(update={"type": "semantic"})})
        if self._keyed_decision(semantic, self.index.user(candidate.turn.user_id)) is not None:
            return semantic
        neighbours = self.index.user(candidate.turn.user_id).search(
            vector, self.config.neighbours_k, accept=lambda m: m.is_visible and m.type == "semantic")
        decision = dedup.decide(
            memory_type="semantic", summary=candidate.fact.summary, entities=candidate.fact.entities,
            event_time=candidate.turn.ts, neighbours=neighbours, profile=self.config.profile,
            merge_window=self.config.episodic_merge_window, use_heuristics=self.config.use_heuristics,
        )
        return semantic if decision.action is dedup.Action.supersede else None

    def _keyed_decision(self, candidate: Candidate, user_index: Any) -> dedup.DedupDecision | None:
        """A fact with a deterministic entity key (`profile:pet:luna:age`) is the same fact as the
        active memory with that key: unchanged -> update, changed -> supersede."""
        fact = candidate.fact
        if not fact.entity_key:
            return None
        for memory in user_index.docs.values():
            if memory.is_visible and memory.entity_key and keys_match(memory.entity_key, fact.entity_key):
                if _normal(memory.summary) == _normal(fact.summary):
                    return dedup.DedupDecision(dedup.Action.update, memory, 1.0, "same_entity_key")
                return dedup.DedupDecision(dedup.Action.supersede, memory, 1.0, "entity_key_changed")
        return None

    def _supersede(self, old: Memory, new: Memory, thread_id: str, ts: datetime) -> MemoryEvent:
        """Never overwrite silently: the old memory stays, superseded, with `valid_to`, linked."""
        changed = old.model_copy(update={
            "state": "superseded", "valid_to": ts, "superseded_by": new.id, "updated_at": ts,
            "related_ids": sorted({*old.related_ids, new.id}), "version": old.version + 1,
        })
        self._store(changed)
        self.index.user(old.user_id).update_doc(changed)
        return self._event("superseded", changed, thread_id, ts, {"superseded_by": new.id}, old=old)

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
            return [self.set_topic_blocked(cmd, cmd.kind == "block_topic")]
        events: list[MemoryEvent] = []
        meta = {"command": cmd.kind, "actor": cmd.actor}

        def change(memory: Memory, kind: str, **update: Any) -> Memory:
            changed = memory.model_copy(
                update={**update, "version": memory.version + 1, "updated_at": cmd.ts})
            self._store(changed)
            self.index.user(memory.user_id).update_doc(changed)
            events.append(self._event(kind, changed, cmd.thread_id, cmd.ts, meta, old=memory,
                                      actor=cmd.actor))
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
            event = MemoryEvent(
                event_id=ids.event_id(memory.id, "purged", memory.version + 1), kind="purged",
                user_id=user_id, thread_id=thread_id, memory_id=memory.id,
                rev=self.next_rev(user_id, thread_id), ts=ts, summary="", category="", meta={},
            )
            self._audit(event, memory, None, "user")
            events.append(event)
        self.index.drop_user(user_id)
        self.users.pop(user_id, None)
        self._scrub_user(user_id)
        return events

    def _scrub_user(self, user_id: str) -> None:
        """Drop the content a purged user left in the thread logs and applied records.

        Revisions stay (they are content-free), and applied records stay as content-free
        markers, so a replay of the user's old turns does not bring the memories back.
        """
        for key in [k for k in self.thread_revs.keys() if _text(k).startswith(f"{user_id}|")]:
            thread = dict(self.thread_revs[key])
            thread.update(memories=[], changes=[])
            self.thread_revs[key] = thread
        for key in [k for k in self.audit.keys() if _text(k).startswith(f"topic:{user_id}:")]:
            del self.audit[key]
        for key, record in list(self.applied.items()):
            if not isinstance(record, dict):
                continue  # e.g. the touch command's list of seen ids (streams/access.py)
            if any(e.get("user_id") == user_id for e in record.get("events", [])):
                self.applied[key] = {"outcome": "purged", "memory_id": record["memory_id"], "events": []}

    def set_topic_blocked(self, cmd: Command, blocked: bool) -> MemoryEvent:
        """Block or unblock a topic; announced like a memory change (event, audit, delta) under
        the id `topic:<user>:<topic>`, which is not a memory."""
        topic = str(cmd.topic).strip().lower()
        info = dict(self.users.get(cmd.user_id) or {"memories": 0, "clock": cmd.ts.isoformat()})
        topics = set(info.get("blocked_topics", []))
        info["blocked_topics"] = sorted(topics | {topic} if blocked else topics - {topic})
        self.users[cmd.user_id] = info
        marker_id = f"topic:{cmd.user_id}:{topic}"
        marker = Memory(
            id=marker_id, user_id=cmd.user_id, type="semantic", category="Other",
            summary=f"{'Blocked' if blocked else 'Unblocked'} topic: {topic}", created_at=cmd.ts,
            updated_at=cmd.ts, last_accessed=cmd.ts, version=len(self.history(marker_id)) + 1,
        )
        return self._event("updated", marker, cmd.thread_id, cmd.ts,
                           {"subject": "blocked_topic", "action": cmd.kind, "topic": topic},
                           actor=cmd.actor)