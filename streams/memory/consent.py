"""Consent for profile changes (seed 001 §10): no sensitive field changes without the user's yes.

A change of a *sensitive* profile field (preferred name, pronouns, home city, language — told
by its entity key) that the user states in the first person in chat ("I moved to Lisbon", "call
me Sam") applies at once: their own words are the explicit chat acknowledgement seed 001 §10
asks for (`streams.write.statements`). Any other change of one — inferred by a model, reported
("my friend says I live in …"), or in the assistant's words — is not applied: it is kept as a
proposal, pending for `ConsentConfig.proposal_ttl` of event time, and applied only by a
`consent` command (the registry's accept route, or an acknowledgement said in chat right after
it, "yes, update it"). While it waits, the current memory carries it as `pending_change`, so a
reader never serves the old value as settled. A change of a *benign* field (tone, goals)
applies once corroborated: said again in another turn, or said by a trusted source (an external
integration, an explicit "remember"). A field's first value is not a change and applies at once.

Every decision — proposed, applied, rejected, expired, and a benign change corroborated — is
announced and audited like a memory change, under a marker id `consent:<uuid>` made from the
candidate (the id carries none of the user's words). Pending proposals live in the `users`
table under the user, sealed like the rest of the user's record.
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

import numpy as np

from streams.errors import MemstreamError
from streams.language.answers import consent_answer
from streams.memory.applied import Applied
from streams.memory.documents import keys_match, new_memory, same_text
from streams.memory.linking import link
from streams.memory.model import Memory, PendingChange
from streams.memory.state import MemoryState
from streams.memory.supersede import supersede
from streams.memory.tables import composite_key
from streams.memory.users import note_turn, user_info
from streams.memory.vector_index import decode_vector, encode_vector
from streams.write.statements import first_person_keys
from topics.candidates import Candidate
from topics.commands import Command
from topics.events import EventKind, MemoryEvent
from topics.turns import Role, Turn

Decision = Literal["proposed", "applied", "rejected", "expired", "replaced", "corroborated"]


class ConsentError(MemstreamError, ValueError):
    """A consent command for a proposal the user does not have (or no longer has)."""


@dataclass
class Review:
    """What consent made of a change: `held` (the candidate's outcome) when it waits, else the
    decision events to send along with the change itself."""

    held: Applied | None = None
    events: list[MemoryEvent] = field(default_factory=list)


def proposal_id(user_id: str, candidate_memory_id: str) -> str:
    """The id of the proposal (and its audit marker) made from one candidate."""
    return "consent:" + str(uuid.uuid5(uuid.NAMESPACE_URL,
                                       composite_key("consent", user_id, candidate_memory_id)))


# --- the hook of the candidate path --------------------------------------------------------
def review(state: MemoryState, candidate: Candidate, memory_id: str, vector: np.ndarray,
           target: Memory) -> Review:
    """Consent's say on a candidate that would supersede `target` (a changed value).

    Sensitive field: applied when the user states it in the first person (audited as applied),
    else held as a proposal. Benign field: held until corroborated (a pending proposal of the
    same value from another turn) unless from a trusted source. Other facts: not consent's
    business (an empty review)."""
    config = state.config.consent
    governed = config.field_of(candidate.fact.entity_key or target.entity_key)
    if governed is None:
        return Review()
    name, kind = governed
    turn = candidate.turn
    pending = _proposals(state, turn.user_id)
    if kind == "benign":
        if turn.source in config.trusted_sources or candidate.confidence >= config.trusted_confidence:
            return Review()
        for pid, proposal in pending.items():
            if (proposal["entity_key"] == (candidate.fact.entity_key or target.entity_key)
                    and same_text(proposal["candidate"]["fact"]["summary"], candidate.fact.summary)
                    and turn.ref not in proposal["source_turn_ids"]):
                _drop(state, turn.user_id, pid)
                return Review(events=[_announce(state, proposal, "corroborated", turn.thread_id,
                                                turn.ts, "system", {"by_turn": turn.ref})])
    events = []
    entity_key = candidate.fact.entity_key or target.entity_key or ""
    for pid, proposal in pending.items():  # one pending change per field: the newest
        if keys_match(proposal["entity_key"], entity_key):
            _drop(state, turn.user_id, pid)
            events.append(_announce(state, proposal, "replaced", turn.thread_id, turn.ts, "system", {}))
    proposal = _proposal(state, candidate, memory_id, vector, target, name, kind, entity_key)
    if kind == "sensitive" and stated_by_the_user(candidate):
        events.append(_announce(state, proposal, "applied", turn.thread_id, turn.ts, _speaker(turn),
                                {"acknowledged_by": "own_statement", "by_turn": turn.ref}))
        return Review(events=events)
    kept = _proposals(state, turn.user_id)  # without the ones replaced above
    _save(state, turn.user_id, {**kept, proposal["id"]: proposal}, turn.ts)
    _mark(state, target.id, proposal)
    # What the turn wrote, so that "don't remember this" said next withdraws it (`take_back`).
    state.revisions.note_turn_memory(turn, proposal["id"])
    events.append(_announce(state, proposal, "proposed", turn.thread_id, turn.ts, "system", {}))
    return Review(held=Applied("proposed", proposal["id"], events))


def stated_by_the_user(candidate: Candidate) -> bool:
    """Whether the candidate's fact is the user's own first-person statement of its profile
    field in chat ("I moved to Lisbon"), their explicit acknowledgement of the change; not
    when it comes from an episode's window, the assistant, or words that do not state it."""
    key = candidate.fact.entity_key
    return (key is not None and not candidate.source_refs
            and any(keys_match(stated, key) for stated in first_person_keys(candidate.turn)))


def _proposal(state: MemoryState, candidate: Candidate, memory_id: str, vector: np.ndarray,
              target: Memory, name: str, kind: str, entity_key: str) -> dict[str, Any]:
    """The proposal of the change `candidate` makes to `target` (as the users table keeps it)."""
    turn = candidate.turn
    return {
        "id": proposal_id(turn.user_id, memory_id), "field": name, "kind": kind,
        "entity_key": entity_key, "memory_id": memory_id, "current_id": target.id,
        "current_summary": target.summary, "thread_id": turn.thread_id,
        "source_turn_ids": list(candidate.refs), "proposed_at": turn.ts.isoformat(),
        "expires_at": (turn.ts + state.config.consent.proposal_ttl).isoformat(),
        # the fact and the turn's ids, not its words: the rest of the turn is not needed to apply it
        "candidate": candidate.model_copy(update={"turn": turn.model_copy(update={"text": ""})})
        .model_dump(mode="json", exclude={"vector_b64"}),
        "vector_b64": encode_vector(vector),
    }


def _speaker(turn: Turn) -> str:
    """Who said `turn`, as an audit entry names its actor."""
    return turn.actor_id or turn.speaker or "user"


def expire_due(state: MemoryState, user_id: str, now: datetime, thread_id: str) -> list[MemoryEvent]:
    """Expire the user's proposals whose time ran out by event time `now`; their events."""
    events = []
    for pid, proposal in sorted(_proposals(state, user_id).items()):
        if datetime.fromisoformat(proposal["expires_at"]) <= now:
            _drop(state, user_id, pid)
            events.append(_announce(state, proposal, "expired", thread_id, now, "system", {}))
    return events


# --- the consent command ---------------------------------------------------------------------
def decide(state: MemoryState, cmd: Command) -> list[MemoryEvent]:
    """Apply a `consent` command: accept or reject a pending proposal.

    Raises `ConsentError` for a named proposal the user does not have pending. An unnamed one
    (said in chat) with no recent proposal in its thread changes nothing."""
    events = expire_due(state, cmd.user_id, cmd.ts, cmd.thread_id)
    pending = _proposals(state, cmd.user_id)
    if cmd.proposal_id:
        proposal = pending.get(cmd.proposal_id)
        if proposal is None:
            raise ConsentError("no such pending proposal for this user")
    else:
        proposal = _acknowledged(pending, cmd, state.config.consent.ack_window)
        if proposal is None:
            return events
    _drop(state, cmd.user_id, proposal["id"])
    meta = {"command_id": cmd.command_id}
    if cmd.decision == "reject":
        return [*events, _announce(state, proposal, "rejected", cmd.thread_id, cmd.ts, cmd.actor, meta)]
    changes = _apply_proposal(state, proposal, cmd)
    return [*events, *changes,
            _announce(state, proposal, "applied", cmd.thread_id, cmd.ts, cmd.actor, meta)]


def take_back(state: MemoryState, cmd: Command, written: list[str]) -> list[MemoryEvent]:
    """Withdraw the pending proposals among `written`, what the turn before a "don't remember
    this" wrote: audited as rejected by the user, the current value left as it is."""
    pending = _proposals(state, cmd.user_id)
    events = []
    for pid in written:
        if (proposal := pending.get(pid)) is not None:
            _drop(state, cmd.user_id, pid)
            events.append(_announce(state, proposal, "rejected", cmd.thread_id, cmd.ts, cmd.actor,
                                    {"command_id": cmd.command_id, "taken_back": True}))
    return events


def _acknowledged(pending: Mapping[str, dict[str, Any]], cmd: Command,
                  window: timedelta) -> dict[str, Any] | None:
    """The proposal a chat acknowledgement answers: the thread's newest, made within `window`."""
    recent = [p for p in pending.values() if p["thread_id"] == cmd.thread_id
              and timedelta(0) <= cmd.ts - datetime.fromisoformat(p["proposed_at"]) <= window]
    return max(recent, key=lambda p: p["proposed_at"], default=None)


def _apply_proposal(state: MemoryState, proposal: dict[str, Any], cmd: Command) -> list[MemoryEvent]:
    """Make the change the proposal held back: the new value current, the old one superseded."""
    candidate = Candidate.model_validate(proposal["candidate"])
    vector = decode_vector(proposal["vector_b64"])
    if state.memory(proposal["memory_id"]) is not None:
        return []  # applied before (a command replayed past its `applied` record)
    memory = new_memory(candidate, proposal["memory_id"], vector)
    current = [m for m in state.index.user(cmd.user_id).with_entity_key(
        lambda key: keys_match(key, proposal["entity_key"])) if m.id != memory.id]
    if current and same_text(current[0].summary, memory.summary):
        return []  # the field already holds the proposed value
    memory = memory.model_copy(update={
        "entity_key": current[0].entity_key if current else memory.entity_key,
        "related_ids": [current[0].id] if current else [], "updated_at": cmd.ts,
        "last_verified_at": cmd.ts})
    state.store(memory, vector)
    meta = {"reason": "consent_applied", "proposal_id": proposal["id"],
            "source_turn_id": candidate.turn.ref}
    events = [state.announce("created", memory, cmd.thread_id, cmd.ts, meta, actor=cmd.actor)]
    if current:
        events.append(supersede(state, current[0], memory, cmd.thread_id, cmd.ts))
    state.revisions.note_turn_memory(candidate.turn, memory.id)
    note_turn(state.tables.users, cmd.user_id, cmd.ts, created=True)
    if memory.type == "semantic":  # linked like any fact the candidate stage stores
        neighbours = state.index.user(cmd.user_id).search(vector, state.config.neighbours_k, "semantic")
        link(state, state.memory(memory.id) or memory, neighbours, cmd.ts)
    return events


# --- what the registry lists -------------------------------------------------------------
def pending_proposals(state: MemoryState, user_id: str, now: datetime | None) -> list[dict[str, Any]]:
    """The user's pending proposals (not expired by `now`, the user's clock), oldest first, as
    the registry shows them."""
    out = []
    for proposal in _proposals(state, user_id).values():
        if now is not None and datetime.fromisoformat(proposal["expires_at"]) <= now:
            continue
        out.append({k: proposal[k] for k in (
            "id", "field", "kind", "entity_key", "current_id", "current_summary", "thread_id",
            "source_turn_ids", "proposed_at", "expires_at")}
            | {"proposed_summary": proposal["candidate"]["fact"]["summary"],
               "category": proposal["candidate"]["fact"].get("category", "Other")})
    return sorted(out, key=lambda p: (p["proposed_at"], p["id"]))


def pending_note(memory: Memory) -> str:
    """What a bullet of `memory` adds while a change of it waits for consent: " (change
    pending: <the proposed value>)"; "" when none waits."""
    pending = memory.pending_change
    return f" (change pending: {pending.proposed_summary})" if pending is not None else ""


# --- acknowledgements said in chat ---------------------------------------------------------

def acknowledgement(turn: Turn) -> Literal["accept", "reject"] | None:
    """A user's short answer to a proposal ("yes, update it" / "no, keep the old one"), or None.

    Only whole short answers count, so a fact that happens to start with "yes" is not one; it
    applies only if a proposal was made in the thread just before (`decide`)."""
    if turn.role != Role.user or len(turn.text) > 80:
        return None
    return consent_answer(turn.text)


def acknowledgement_command(turn: Turn, decision: Literal["accept", "reject"]) -> Command:
    """The `consent` command of an acknowledgement said in `turn`."""
    return Command(command_id=f"{turn.ref}:consent", kind="consent", user_id=turn.user_id,
                   ts=turn.ts, thread_id=turn.thread_id, turn_id=turn.turn_id, decision=decision,
                   actor=_speaker(turn))


# --- the proposals in the users table --------------------------------------------------------
def _proposals(state: MemoryState, user_id: str) -> dict[str, dict[str, Any]]:
    return dict((state.tables.users.get(user_id) or {}).get("consent_proposals", {}))


def _save(state: MemoryState, user_id: str, proposals: dict[str, dict[str, Any]],
          clock: datetime) -> None:
    info = user_info(state.tables.users, user_id, clock)
    info["consent_proposals"] = proposals
    state.tables.users[user_id] = info


def _drop(state: MemoryState, user_id: str, pid: str) -> None:
    """Remove a decided proposal, and its mark from the memory it would have changed."""
    proposals = _proposals(state, user_id)
    proposal = proposals.pop(pid, None)
    info = dict(state.tables.users.get(user_id) or {})
    info["consent_proposals"] = proposals
    state.tables.users[user_id] = info
    if proposal is not None:
        _unmark(state, proposal["current_id"], pid)


def _mark(state: MemoryState, memory_id: str, proposal: dict[str, Any]) -> None:
    """Show `proposal` on the memory it would change (`Memory.pending_change`). The mark is
    not a change of the memory (no version, event or audit entry of its own): the proposal's
    decisions are audited under its marker id."""
    memory = state.memory(memory_id)
    if memory is not None:
        state.store(memory.model_copy(update={"pending_change": PendingChange(
            proposal_id=proposal["id"], field=proposal["field"],
            proposed_summary=proposal["candidate"]["fact"]["summary"],
            expires_at=datetime.fromisoformat(proposal["expires_at"]))}))


def _unmark(state: MemoryState, memory_id: str, pid: str) -> None:
    """Take the mark of proposal `pid` off the memory it would have changed."""
    memory = state.memory(memory_id)
    if memory is not None and memory.pending_change is not None \
            and memory.pending_change.proposal_id == pid:
        state.store(memory.model_copy(update={"pending_change": None}))


def _announce(state: MemoryState, proposal: dict[str, Any], decision: Decision, thread_id: str,
              ts: datetime, actor: str, meta: dict[str, Any]) -> MemoryEvent:
    """The event and audit entry of one decision, under the proposal's marker id."""
    fact = proposal["candidate"]["fact"]
    marker = Memory(
        id=proposal["id"], user_id=proposal["candidate"]["turn"]["user_id"], type=fact["type"],
        category=fact.get("category", "Other"),
        summary=f"Proposed change of {proposal['field'].replace('_', ' ')}: {fact['summary']}"[:280],
        created_at=ts, updated_at=ts, last_accessed=ts,
        version=len(state.history(proposal["id"])) + 1,
    )
    kind: EventKind = "candidate" if decision == "proposed" else "updated"
    return state.announce(kind, marker, thread_id, ts, {
        "subject": "consent", "reason": f"consent_{decision}", "decision": decision,
        "proposal_id": proposal["id"], "field": proposal["field"],
        "entity_key": proposal["entity_key"], "memory_id": proposal["memory_id"],
        "current_id": proposal["current_id"], "expires_at": proposal["expires_at"], **meta,
    }, actor=actor)
