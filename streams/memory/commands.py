"""Explicit changes named by a `memory.commands` record: forget, delete, pin, unpin, restore,
edit — and, in their own modules, purge_user, block/unblock topic, consent
(`streams.memory.consent`) and proactivity feedback (`streams.memory.users`, read by
`streams.proactivity.policy`).

A command is applied once, by `command_id`: a replay returns the events of the first time —
except `purge_user`, which a replay applies again (`streams.memory.purge`).

An edit's new text passes the write policy as a turn's fact does (`admit_edit`,
`streams.write.write_policy`): refused (a secret, a blocked topic, sensitive data the memory did
not hold, a text the writing rules cannot repair), the command is inapplicable (`CommandError`:
dead-lettered `inapplicable`, the registry answers 422 with the reason) and nothing is stored;
repairable, it is stored repaired (trimmed, in the third person naming the memory's subject).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from streams.errors import MemstreamError
from streams.memory import applied, consent
from streams.memory.applied import Applied
from streams.memory.blocked_topics import set_topic_blocked
from streams.memory.model import Memory
from streams.memory.purge import purge_command
from streams.memory.state import MemoryState
from streams.memory.tables import command_key
from streams.memory.users import record_proactivity_feedback
from streams.memory.vector_index import encode_vector
from streams.write.write_policy import WritePolicy, count
from topics.commands import Command
from topics.events import EventKind, MemoryEvent


RESTORABLE = ("soft_deleted", "archived")
"""States a `restore` brings back (a soft-deleted memory only until its purge)."""


class CommandError(MemstreamError, ValueError):
    """A command that names a memory the user does not have, or is otherwise inapplicable."""


class RefusedByPolicy(CommandError):
    """A command whose new text the write policy refuses; the message names the reason only
    (never the text): "the write policy refuses the text: sensitive_health"."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"the write policy refuses the text: {reason}")
        self.reason = reason


DEFAULT_POLICY = WritePolicy()
"""The write policy of the default settings (a caller with its own passes `policy`)."""
_NOT_SUBJECTS = frozenset({"the", "a", "an", "on", "in", "at", "this", "that", "it", "he", "she",
                           "they", "we", "his", "her", "their", "after", "before", "when", "if"})


def subject_of(memory: Memory) -> str | None:
    """Whom a memory's summary is about, when it opens on a name ("Ana adopted …" → "Ana")."""
    first = memory.summary.split(" ", 1)[0].removesuffix("'s").removesuffix("’s")
    return first if first.isalpha() and first.istitle() and first.lower() not in _NOT_SUBJECTS else None


def admit_edit(state: MemoryState, cmd: Command, policy: WritePolicy = DEFAULT_POLICY) -> Command:
    """`cmd` as it may be applied: an edit's text through the write policy (repaired where the
    writing rules can); any other command, or a replay of one applied already, as it is. The
    memory's own sensitive kinds may stay in its new text (the user agreed to them when it was
    stored: "remember that …"); no other. Raises `CommandError` (`RefusedByPolicy`), counted in
    `metrics.POLICY_BLOCKS`, when the policy refuses it.

    Called before the new text is embedded (`streams.pipeline.commands.apply_command`), so the
    vector stored is the repaired text's, and by `apply_command` below."""
    if cmd.kind != "edit" or not cmd.text:
        return cmd
    if applied.prior(state.tables.applied, command_key(cmd.user_id, cmd.command_id)) is not None:
        return cmd
    memory = targets(state, cmd, None)[0]
    admission = policy.admit(cmd.text, memory.type, blocked_topics=state.blocked_topics(cmd.user_id),
                             consented=policy.sensitive_kinds(memory.summary),
                             subject=subject_of(memory))
    if not admission.admitted:
        raise RefusedByPolicy(count(admission.reason or "refused"))
    return cmd if admission.text == cmd.text else cmd.model_copy(update={"text": admission.text})


def apply_command(state: MemoryState, cmd: Command, vector: np.ndarray | None,
                  policy: WritePolicy = DEFAULT_POLICY) -> Applied:
    """Apply a command once (by `command_id`); a replay returns the events of the first time.

    `vector` embeds `cmd.query` (or, for edit, the new summary as `admit_edit` leaves it). Raises
    `CommandError`: an edit the write policy refuses included, nothing stored.
    """
    key = command_key(cmd.user_id, cmd.command_id)
    if cmd.kind == "purge_user":  # a replay purges again (`streams.memory.purge`)
        return purge_command(state, cmd, key)
    replay = applied.prior(state.tables.applied, key)
    if replay is not None:
        return replay
    cmd = admit_edit(state, cmd, policy)
    events = _command_events(state, cmd, vector)
    memory_id = events[0].memory_id if events else (cmd.memory_id or "")
    result = Applied("applied", memory_id, events)
    applied.remember(state.tables.applied, key, result)
    return result


def _command_events(state: MemoryState, cmd: Command, vector: np.ndarray | None) -> list[MemoryEvent]:
    if cmd.kind in ("block_topic", "unblock_topic"):
        return [set_topic_blocked(state, cmd, cmd.kind == "block_topic")]
    if cmd.kind == "consent":
        try:
            return consent.decide(state, cmd)
        except consent.ConsentError as exc:
            raise CommandError(str(exc)) from None
    if cmd.kind == "proactivity_feedback":
        record_proactivity_feedback(state.tables.users, cmd.user_id, cmd.feedback == "acted")
        return []
    events: list[MemoryEvent] = []
    # command_id: a purge of the memory finds this command's `applied` record by it
    meta = {"command": cmd.kind, "actor": cmd.actor, "command_id": cmd.command_id}

    def change(memory: Memory, kind: EventKind, vector: np.ndarray | None = None, **update: Any) -> Memory:
        changed = memory.model_copy(
            update={**update, "version": memory.version + 1, "updated_at": cmd.ts})
        state.store(changed, vector)
        events.append(state.announce(kind, changed, cmd.thread_id, cmd.ts, meta, old=memory,
                                     actor=cmd.actor))
        return changed

    found = targets(state, cmd, vector)
    if cmd.kind in ("forget", "delete", "dont_remember"):
        for memory in found:
            if memory.state == "active":
                change(memory, "soft_deleted", state="soft_deleted")
        if cmd.kind == "dont_remember" and not cmd.memory_id:  # and what the turn proposed
            events += consent.take_back(state, cmd, last_turn_writes(state, cmd))
    elif cmd.kind in ("pin", "unpin"):
        for memory in found[:1]:
            change(memory, "updated", pinned=cmd.kind == "pin")
    elif cmd.kind == "restore":
        for memory in found:
            if memory.state in RESTORABLE:
                # Restored is used: without a fresh `last_accessed` the next lifecycle run
                # would forget it again at once.
                change(memory, "restored", state="active", purge_at=None,
                       last_accessed=max(memory.last_accessed, cmd.ts))
            elif memory.state == "purged" and cmd.memory_id:
                raise CommandError("the memory was purged: nothing of it is left to restore")
    elif cmd.kind == "edit":
        if vector is None or not found:
            raise CommandError("edit needs a memory and the new summary's embedding")
        change(found[0], "updated", vector, summary=cmd.text, embedding_b64=encode_vector(vector))
    return events


def last_turn_writes(state: MemoryState, cmd: Command) -> list[str]:
    """What the thread's turn before `cmd` wrote: memory ids, and the ids of the consent
    proposals it made."""
    return state.revisions.last_turn_memories(cmd.user_id, cmd.thread_id, cmd.turn_id)


def targets(state: MemoryState, cmd: Command, vector: np.ndarray | None) -> list[Memory]:
    """The memories a command applies to: by id, the thread's last turn, or by description."""
    if cmd.memory_id:
        memory = state.memory(cmd.memory_id)
        if memory is None or memory.user_id != cmd.user_id:
            raise CommandError("no such memory for this user")
        return [memory]
    found: list[Memory] = []
    if cmd.kind == "dont_remember":
        for memory_id in last_turn_writes(state, cmd):
            if (memory := state.memory(memory_id)) is not None:  # not a consent proposal's id
                found.append(memory)
    if cmd.query and vector is not None:
        hits = state.index.user(cmd.user_id).search(vector, state.commands.match_max)
        found += [m for m, score in hits if score >= state.commands.match_min and m not in found]
    return found
