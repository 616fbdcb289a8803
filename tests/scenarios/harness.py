"""Replay a scripted conversation (one JSON file in `cases/`) through a worker's own stages, then
check the final memories, their audit history and the delta header.

The worker's app is built for the case (`streams.worker.build_worker`: in-memory tables,
the real local embedder) and its Faust agents run under `test_context`: every turn and command
goes in as the raw record a producer would send, and the records the stages send each other
(`memory.candidates`, `memory.commands`) are routed between the agents by
`streams.app.inprocess.LocalTopics`, in the order a worker that keeps up sees them: a
command after every candidate sent before it. A case with `"commands_first": true` replays the
other order a worker can see, a candidate backlog that a command overtakes (the two topics are
consumed independently).

A scenario file::

    {"name": "...", "why": "one line: what behaviour it pins down",
     "speaker": "Ana",                      # display name of the user (default "Ana")
     "xfail": "reason",                     # optional: a known pipeline defect (strict xfail)
     "commands_first": false,               # optional: commands overtake queued candidates
     "settings": {"memory_cap": 2},         # optional: settings of the worker (env names, lower case)
     "steps": [
        {"user": "My dog Luna is 3.", "thread": "s1"},     # a user turn (thread default "s1")
        {"assistant": "Noted!"},                            # an assistant turn
        {"advance": {"days": 2}},                           # move the event clock
        {"mark": "before"},                                 # remember the revision of a thread
        {"command": {"kind": "pin", "query": "Luna"}},      # a memory.commands record; a
                                                            # "target": {"contains": [...]} names
                                                            # the memory by its summary
        {"replay": true},                                   # send every turn so far again
        {"hold": true}                                      # from here, send without delivering
     ],                                                     # (delivered at the next mark or the end)
     "expect": {
        "count_active": 1, "count_all": 2, "count_active_range": [1, 3],
        "active_contains": [["Luna", "4"]],   # each entry: some active summary has all of them
        "active_not_contains": ["3"],         # no active summary has any of them
        "nowhere_contains": ["hunter2"],      # not in any memory, audit entry or change log
        "memories": [{"contains": ["Luna", "3"], "state": "superseded",
                      "verbs": ["ADD", "SUPERSEDE"]}],   # exactly one memory matches
        "delta": {"thread": "s1", "since": "before", "contains": ["superseded"], "max_bullets": 3},
        "query": {"text": "How old is Luna?", "top_contains": ["4"], "none_contains": ["3."]},
        "proposals": {"pending": 1, "fields": ["city"], "proposed_contains": ["Berlin"],
                      "decisions": ["CONSENT_PROPOSED", "CONSENT_APPLIED"]},  # pending consent
        "proactivity": {"count": 1, "memory_contains": ["job"], "tone": "soft_check_in"},
        "pending_change": {"on": ["Lisbon"], "proposed_contains": ["Berlin"]}  # or null: none
     }}

`proposals.decisions`: the audit verbs of the user's (one) consent proposal, pending or decided.
`pending_change`: the one memory that carries a change waiting for consent (`Memory.pending_change`):
it is active, contains `on`, names a pending proposal, and the proposed summary contains
`proposed_contains`; null: no memory carries one.
`proactivity`: the `memory.proactivity` records sent; each must name active memories and carry
their provenance (`source_turn_ids`).

Substring checks ignore case. `verbs` are the audit verbs of the memory, oldest first, without
LINK entries (linking is incidental); `verbs_with_links` compares them all.
"""
from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from streams.app.factory import MemstreamApp
from streams.settings import Settings
from streams.worker import build_worker
from streams.memory.consent import pending_proposals
from streams.memory.model import Memory
from streams.memory.state import MemoryState
from streams.app.inprocess import Consumers, LocalTopics
from streams.pipeline.records import Record
from streams.read import ranking
from streams.read.delta import render_delta
from streams.read.query import QueryHit, rank
from topics import names
from topics.commands import Command
from topics.dlq import DeadLetter
from topics.proactivity import ProactivityCandidate
from topics.turns import Turn

CASES = Path(__file__).parent / "cases"
T0 = datetime.fromisoformat("2024-05-06T09:00:00+00:00")
STEP = timedelta(minutes=2)
USER = "scenario-user"


class CachingEmbedder:
    """The real embedder with a per-text cache: identical vectors, far fewer model calls."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.profile = inner.profile
        self._cache: dict[str, np.ndarray] = {}

    def embed(self, texts):
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing)):
                self._cache[text] = vector
        if not texts:
            return self.inner.embed([])
        return np.stack([self._cache[t] for t in texts])


def load_cases() -> list[dict[str, Any]]:
    cases = []
    for path in sorted(CASES.glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        case.setdefault("name", path.stem)
        cases.append(case)
    return cases


async def put_all(agent: Any, records: Sequence[Record]) -> None:
    """Put `records` into an agent under `test_context` and wait until it has processed them
    (each of memstream's agents yields once per record)."""
    target = agent.processed_offset + len(records)
    for record in records:
        await agent.put(record.value, key=record.key, wait=False)
    async with agent.new_value_processed:
        await agent.new_value_processed.wait_for(
            lambda: agent.processed_offset >= target or agent._crash_reason is not None)
    if agent._crash_reason is not None:
        raise agent._crash_reason


@dataclass
class Replay:
    app: MemstreamApp
    topics: LocalTopics
    user_id: str
    marks: dict[str, tuple[str, int]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    @property
    def state(self) -> MemoryState:
        return self.app.store.state()

    @property
    def docs(self) -> list[Memory]:
        return self.app.store.user_memories(self.user_id)

    @property
    def active(self) -> list[Memory]:
        return [m for m in self.docs if m.state == "active"]

    async def query(self, text: str, top_k: int) -> list[QueryHit]:
        """The user's best memories for `text` by the docs/architecture.md#read-path ranking."""
        settings = self.app.settings
        vector = (await self.app.services.embed([text]))[0]
        return rank(self.app.store.user_index(self.user_id), vector, top_k=top_k,
                    candidates=settings.read.memory_context_topk,
                    weights=ranking.weights_of(settings.read))


def _has_all(text: str, parts: list[str] | str) -> bool:
    parts = [parts] if isinstance(parts, str) else parts
    return all(p.lower() in text.lower() for p in parts)


def _find(docs: list[Memory], contains: list[str] | str, state: str | None = None) -> list[Memory]:
    return [m for m in docs if _has_all(m.summary, contains) and (state is None or m.state == state)]


async def replay(case: dict[str, Any], embedder: Any, settings: Settings | None = None) -> Replay:
    """Run the steps of `case` through a worker's agents; commands that are dead-lettered are
    collected as errors, not raised."""
    settings = settings or Settings(table_store="memory://", data_dir=Path(tempfile.mkdtemp()),
                                    **case.get("settings", {}))
    topics = LocalTopics()
    app = build_worker(settings, send=topics.send, embedder=embedder)
    agents = app.faust.agents
    async with (agents["ingest"].test_context() as ingest,
                agents["dedup"].test_context() as dedup,
                agents["commands"].test_context() as commands):
        consumers = Consumers(turn=lambda r: put_all(ingest, [r]),
                              candidates=lambda rs: put_all(dedup, rs),
                              command=lambda r: put_all(commands, [r]))
        run = Replay(app, topics, case.get("user_id", USER))
        await _run_steps(case, run, consumers)
    return run


async def _run_steps(case: dict[str, Any], run: Replay, consumers: Consumers) -> None:
    topics, user_id = run.topics, run.user_id
    speaker = case.get("speaker", "Ana")
    clock = T0
    turns: list[Turn] = []
    counters: dict[str, int] = {}
    holding = False

    async def deliver() -> None:
        await topics.deliver(consumers, batch=run.app.settings.dedup.dedup_batch_size,
                             commands_first=bool(case.get("commands_first")))

    async def send(topic: str, value: str) -> None:
        await topics.send(topic, user_id.encode(), value.encode())
        if not holding:
            await deliver()

    for i, step in enumerate(case["steps"]):
        thread = step.get("thread", "s1")
        if "advance" in step:
            clock += timedelta(**step["advance"])
            continue
        if "mark" in step:
            await deliver()
            run.marks[step["mark"]] = (thread, run.state.current_rev(user_id, thread))
            continue
        if step.get("hold"):
            holding = True
            continue
        if step.get("replay"):
            for turn in turns:
                await send(names.CHAT_TURNS, turn.model_dump_json())
            continue
        clock += STEP
        if "user" in step or "assistant" in step:
            role = "user" if "user" in step else "assistant"
            counters[thread] = counters.get(thread, 0) + 1
            turn = Turn(user_id=user_id, thread_id=thread, turn_id=f"D{counters[thread]}",
                        role=role, speaker=speaker if role == "user" else None,
                        text=step[role], ts=clock, timezone=case.get("timezone"))
            turns.append(turn)
            await send(names.CHAT_TURNS, turn.model_dump_json())
        elif "command" in step:
            spec = dict(step["command"])
            target = spec.pop("target", None)
            if target is not None:
                found = _find(run.docs, target["contains"], target.get("state"))
                if len(found) != 1:
                    run.errors.append(f"step {i}: target {target} matched {len(found)} memories")
                    continue
                spec["memory_id"] = found[0].id
            if spec.pop("proposal", None):  # the user's oldest pending consent proposal
                pending = pending_proposals(run.state, user_id, None)
                if not pending:
                    run.errors.append(f"step {i}: no pending proposal")
                    continue
                spec["proposal_id"] = pending[0]["id"]
            spec.setdefault("thread_id", thread if "thread" in step else "commands")
            command = Command(command_id=f"cmd-{i}", user_id=user_id, ts=clock, **spec)
            await send(names.MEMORY_COMMANDS, command.model_dump_json())
        else:
            raise ValueError(f"step {i} of {case['name']}: unknown step {step}")
    await deliver()
    for record in topics.sent[names.MEMORY_COMMANDS_DLQ]:
        letter = DeadLetter.model_validate_json(record.value or b"")
        command = Command.model_validate_json(letter.raw)
        run.errors.append(f"{command.command_id}: {command.kind}: {letter.error}")


def _verbs(run: Replay, memory: Memory, links: bool) -> list[str]:
    verbs = [e["verb"] for e in run.state.history(memory.id)]
    return verbs if links else [v for v in verbs if v != "LINK"]


def _describe(run: Replay) -> str:
    lines = [f"  [{m.state}] {m.summary!r} verbs={_verbs(run, m, False)} pinned={m.pinned} "
             f"imp={m.importance} src={m.source_turn_ids}" for m in run.docs]
    return "\n".join(lines) or "  (no memories)"


async def check(case: dict[str, Any], run: Replay) -> list[str]:
    """Every unmet expectation of `case`, as readable lines (empty when all hold)."""
    exp = case.get("expect", {})
    problems: list[str] = []
    if run.errors and not exp.get("allow_errors"):
        problems += run.errors
    active = run.active
    if "count_active" in exp and len(active) != exp["count_active"]:
        problems.append(f"count_active: {len(active)} != {exp['count_active']}")
    if "count_active_range" in exp:
        low, high = exp["count_active_range"]
        if not low <= len(active) <= high:
            problems.append(f"count_active: {len(active)} not in [{low}, {high}]")
    if "count_all" in exp and len(run.docs) != exp["count_all"]:
        problems.append(f"count_all: {len(run.docs)} != {exp['count_all']}")
    for parts in exp.get("active_contains", []):
        if not _find(active, parts):
            problems.append(f"no active memory contains {parts}")
    for part in exp.get("active_not_contains", []):
        for m in _find(active, part):
            problems.append(f"active memory {m.summary!r} contains {part!r}")
    for part in exp.get("nowhere_contains", []):
        problems += _nowhere(run, part)
    for spec in exp.get("memories", []):
        problems += _check_memory(run, spec)
    if "delta" in exp:
        problems += _check_delta(run, exp["delta"])
    if "query" in exp:
        problems += await _check_query(run, exp["query"])
    if "proposals" in exp:
        problems += _check_proposals(run, exp["proposals"])
    if "proactivity" in exp:
        problems += _check_proactivity(run, exp["proactivity"])
    if "pending_change" in exp:
        problems += _check_pending_change(run, exp["pending_change"])
    if problems:
        problems.append("memories:\n" + _describe(run))
    return problems


def _dump(table: Any) -> str:
    """A table's entries as JSON text (Faust tables iterate bytes keys)."""
    return json.dumps({str(k): v for k, v in table.items()}, default=str).lower()


def _nowhere(run: Replay, part: str) -> list[str]:
    tables = run.state.tables
    needle = part.lower()
    found = []
    if any(needle in m.summary.lower() or needle in json.dumps(m.tags).lower() for m in run.docs):
        found.append("memories")
    if needle in _dump(tables.audit).lower():
        found.append("audit")
    if needle in _dump(tables.thread_revs).lower():
        found.append("change log")
    if needle in _dump(tables.applied).lower():
        found.append("applied records")
    return [f"{part!r} found in {', '.join(found)}"] if found else []


def _check_memory(run: Replay, spec: dict[str, Any]) -> list[str]:
    found = _find(run.docs, spec["contains"], spec.get("state"))
    want = spec.get("count", 1)
    if len(found) != want:
        return [(f"memories containing {spec['contains']} (state {spec.get('state', 'any')}): "
                 f"{len(found)} != {want}")]
    problems = []
    for m in found:
        label = f"{m.summary!r}"
        if "verbs" in spec and _verbs(run, m, False) != spec["verbs"]:
            problems.append(f"{label}: verbs {_verbs(run, m, False)} != {spec['verbs']}")
        if "verbs_with_links" in spec and _verbs(run, m, True) != spec["verbs_with_links"]:
            problems.append(f"{label}: verbs {_verbs(run, m, True)} != {spec['verbs_with_links']}")
        if "pinned" in spec and m.pinned != spec["pinned"]:
            problems.append(f"{label}: pinned {m.pinned} != {spec['pinned']}")
        if "importance_min" in spec and m.importance < spec["importance_min"]:
            problems.append(f"{label}: importance {m.importance} < {spec['importance_min']}")
        if "importance_max" in spec and m.importance > spec["importance_max"]:
            problems.append(f"{label}: importance {m.importance} > {spec['importance_max']}")
        if "type" in spec and m.type != spec["type"]:
            problems.append(f"{label}: type {m.type} != {spec['type']}")
        if "sources" in spec and len(m.source_turn_ids) != spec["sources"]:
            problems.append(f"{label}: {len(m.source_turn_ids)} source turns != {spec['sources']}")
        if "source_threads" in spec:
            threads = sorted({ref.split(":", 1)[0] for ref in m.source_turn_ids})
            if threads != sorted(spec["source_threads"]):
                problems.append(f"{label}: source threads {threads} != {spec['source_threads']}")
        if spec.get("valid_to_set") and m.valid_to is None:
            problems.append(f"{label}: valid_to not set")
        if "superseded_by" in spec:
            new = run.state.memory(m.superseded_by) if m.superseded_by else None
            if new is None or not _has_all(new.summary, spec["superseded_by"]):
                problems.append(f"{label}: superseded_by {new.summary if new else None!r} "
                                f"lacks {spec['superseded_by']}")
        if "tags_include" in spec and not set(spec["tags_include"]) <= set(m.tags):
            problems.append(f"{label}: tags {m.tags} lack {spec['tags_include']}")
    return problems


def _check_delta(run: Replay, spec: dict[str, Any]) -> list[str]:
    thread = spec.get("thread", "s1")
    since = spec.get("since", 0)
    if isinstance(since, str):
        mark_thread, since = run.marks[since]
        thread = spec.get("thread", mark_thread)
    header = render_delta(since, run.state.changes_since(run.user_id, thread, since))
    bullets = [line for line in header.splitlines() if line.startswith("- ")]
    problems = []
    if spec.get("empty"):
        return [f"delta not empty: {header!r}"] if header else []
    if not header:
        return [f"delta since rev {since} of {thread} is empty"]
    if len(bullets) > spec.get("max_bullets", 3):
        problems.append(f"delta has {len(bullets)} bullets: {header!r}")
    if len(bullets) < spec.get("min_bullets", 1):
        problems.append(f"delta has {len(bullets)} bullets: {header!r}")
    for part in spec.get("contains", []):
        if part.lower() not in header.lower():
            problems.append(f"delta lacks {part!r}: {header!r}")
    for part in spec.get("not_contains", []):
        if part.lower() in header.lower():
            problems.append(f"delta has {part!r}: {header!r}")
    if "first_bullet_contains" in spec and bullets and not _has_all(bullets[0], spec["first_bullet_contains"]):
        problems.append(f"first bullet {bullets[0]!r} lacks {spec['first_bullet_contains']}")
    return problems


async def _check_query(run: Replay, spec: dict[str, Any]) -> list[str]:
    hits = await run.query(spec["text"], spec.get("top_k", 5))
    summaries = [h.memory.summary for h in hits]
    problems = []
    if "top_contains" in spec and (not hits or not _has_all(summaries[0], spec["top_contains"])):
        problems.append(f"query {spec['text']!r}: top hit {summaries[:1]} lacks {spec['top_contains']}")
    for part in spec.get("none_contains", []):
        if any(re.search(re.escape(part), s, re.IGNORECASE) for s in summaries):
            problems.append(f"query {spec['text']!r} returned {part!r}: {summaries}")
    if any(h.memory.state != "active" for h in hits):
        problems.append(f"query {spec['text']!r} returned a memory that is not active")
    return problems


def _check_proposals(run: Replay, spec: dict[str, Any]) -> list[str]:
    pending = pending_proposals(run.state, run.user_id, None)
    problems = []
    if "pending" in spec and len(pending) != spec["pending"]:
        problems.append(f"pending proposals: {len(pending)} != {spec['pending']}")
    if "fields" in spec and sorted(p["field"] for p in pending) != sorted(spec["fields"]):
        problems.append(f"pending fields {[p['field'] for p in pending]} != {spec['fields']}")
    for part in spec.get("proposed_contains", []):
        if not any(part.lower() in p["proposed_summary"].lower() for p in pending):
            problems.append(f"no pending proposal contains {part!r}")
    if "decisions" in spec:
        markers = {e["memory_id"] for entries in run.state.tables.audit.values()
                   for e in entries if e["verb"].startswith("CONSENT_")}
        verbs = [[e["verb"] for e in run.state.history(m)] for m in sorted(markers)]
        if verbs != [spec["decisions"]]:
            problems.append(f"consent decisions {verbs} != [{spec['decisions']}]")
    return problems


def _check_pending_change(run: Replay, spec: dict[str, Any] | None) -> list[str]:
    marked = [m for m in run.docs if m.pending_change is not None]
    if spec is None:
        return [f"{m.summary!r} ({m.state}) carries {m.pending_change}" for m in marked]
    if len(marked) != 1:
        return [f"memories with a pending change: {[m.summary for m in marked]} (want one)"]
    [memory] = marked
    change = memory.pending_change
    assert change is not None
    pending = {p["id"] for p in pending_proposals(run.state, run.user_id, None)}
    problems = []
    if memory.state != "active" or not _has_all(memory.summary, spec["on"]):
        problems.append(f"pending change on {memory.summary!r} ({memory.state}), want an active "
                        f"memory with {spec['on']}")
    if change.proposal_id not in pending:
        problems.append(f"pending change names {change.proposal_id}, not a pending proposal")
    if not _has_all(change.proposed_summary, spec.get("proposed_contains", [])):
        problems.append(f"pending change {change.proposed_summary!r} lacks {spec['proposed_contains']}")
    return problems


def _check_proactivity(run: Replay, spec: dict[str, Any]) -> list[str]:
    records = [ProactivityCandidate.model_validate_json(r.value or b"")
               for r in run.topics.sent[names.MEMORY_PROACTIVITY]]
    problems = []
    if "count" in spec and len(records) != spec["count"]:
        problems.append(f"proactivity records: {len(records)} != {spec['count']}")
    for record in records:
        for memory_id in record.memory_ids:
            memory = run.state.memory(memory_id)
            if memory is None or memory.user_id != run.user_id:
                problems.append(f"proactivity record names an unknown memory {memory_id}")
            elif not set(memory.source_turn_ids) <= set(record.source_turn_ids):
                problems.append(f"proactivity record lacks the provenance {memory.source_turn_ids}")
            elif "memory_contains" in spec and not _has_all(memory.summary, spec["memory_contains"]):
                problems.append(f"proactivity memory {memory.summary!r} lacks {spec['memory_contains']}")
        if "tone" in spec and record.tone != spec["tone"]:
            problems.append(f"proactivity tone {record.tone} != {spec['tone']}")
        if not record.source_turn_ids or not record.reason:
            problems.append("proactivity record without provenance or reason")
    return problems
