"""Purging: a whole user (the registry's `DELETE /v1/users/{id}`, a `purge_user` command), and
what must go with one memory when the lifecycle purges it (`scrub_memory`).

A user purge removes the user's memories from the tables and the index, and deletes the user's
data key (`streams.privacy.user_keys.UserKeys.shred`): everything else memstream keeps of the
user — audit history, change logs, turn buffers, applied records, recent events, and every copy
in the topics it writes — was sealed with that key and stops opening at once. Nothing of another
user is touched: every key written here is the user's own. The applied records stay (unreadable),
so a replay of the user's old turns brings nothing back; what is written after the purge (the
content-free tombstones below) is sealed with a new key.

A purge command is the one command a replay applies again (`purge_command`): a crash can land
its `applied` record and lose the shred (separate changelog topics; a local store ahead of its
changelog), and the old key would come back with the next recovery. So a replay never trusts the
record alone: it shreds whatever key the user has now, and removes whatever memories it finds.
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from streams.language.memo import clear_memos, forget_texts
from streams.memory import applied, ids
from streams.memory.applied import Applied
from streams.memory.model import Memory
from streams.memory.state import MemoryState
from streams.memory.tables import candidate_key, command_key, thread_key
from streams.privacy.placement import check_routed
from topics.candidates import FACT_INDEXES
from topics.commands import Command
from topics.events import MemoryEvent


def purge_command(state: MemoryState, cmd: Command, key: str) -> Applied:
    """Apply a `purge_user` command recorded under `key` in `applied`, the first time or again.

    A replay purges again (module doc) and returns the first time's events (if its record still
    opens) with those of whatever it purged now. It keeps the purge's epoch when the first time's
    shred landed (`UserKeys.purge_epoch`), so turns produced between the two stay accepted.
    Raises `MisroutedRecord` for a command on another partition than its user's: that purge
    would shred a key the user does not use and report the user purged.
    """
    check_routed(cmd.user_id)
    replay = applied.prior(state.tables.applied, key)
    shredded_at = _first_shred(state, cmd) if replay is not None else None
    events = purge_user(state, cmd.user_id, cmd.thread_id, cmd.ts, shredded_at)
    if replay is not None:
        return Applied(replay.outcome, replay.memory_id, [*replay.events, *events], replayed=True)
    result = Applied("applied", events[0].memory_id if events else "", events)
    applied.remember(state.tables.applied, key, result)
    return result


def _first_shred(state: MemoryState, cmd: Command) -> datetime | None:
    """When this purge first took effect, if its shred is on record."""
    epoch = state.tables.keys.purge_epoch(cmd.user_id) if state.tables.keys is not None else None
    return epoch.shredded_at if epoch is not None and epoch.purged_at == cmd.ts else None


def purge_user(state: MemoryState, user_id: str, thread_id: str, ts: datetime,
               shredded_at: datetime | None = None) -> list[MemoryEvent]:
    """Remove every memory of the user and delete the user's data key (the purge's epoch:
    `ts` and `shredded_at`, now unless given); return one content-free `purged` event per
    memory (their audit keeps a content-free tombstone)."""
    memories = list(state.index.user(user_id).docs.values())
    for memory in memories:
        state.tables.memories.pop(memory.id, None)
    state.index.drop_user(user_id)
    state.tables.users.pop(user_id, None)
    if state.tables.keys is not None:
        state.tables.keys.shred(user_id, ts, shredded_at)
    forget_texts(user_id)  # the write rules' memos may hold the user's recent sentences
    events = []
    for memory in memories:
        event = MemoryEvent(
            event_id=ids.event_id(memory.id, "purged", memory.version + 1), kind="purged",
            user_id=user_id, thread_id=thread_id, memory_id=memory.id,
            rev=state.revisions.next(user_id, thread_id), ts=ts, summary="", category="", meta={},
        )
        state.audit.record(event, memory, None, "user")
        events.append(event)
    return events


# --- one memory ---------------------------------------------------------------------------------
def scrub_memory(state: MemoryState, memory: Memory, history: list[dict[str, Any]],
                 threads: Iterable[str] = ()) -> None:
    """Clear what the tables keep of a purged memory besides its document and audit (which the
    purge replaces by tombstones): its lines in the change log of every thread a change of it
    was announced on (`threads`, and those its audit `history` names: a command's are on the
    commands thread), and its events and writes in the `applied` records of the candidates and
    commands that changed it. `history` is its audit trail from before the purge."""
    for thread_id in sorted({*threads, *(e["thread_id"] for e in history if e.get("thread_id"))}):
        scrub_change_log(state, memory.user_id, thread_id, memory.id)
    for key in sorted(applied_keys(memory, history)):
        record = state.tables.applied.get(key)
        if record and mentions(record, memory.id):
            state.tables.applied[key] = scrubbed(record, memory.id)
    clear_memos()  # the write rules' memos may hold its summary (the secret scan reads it)


def applied_keys(memory: Memory, history: list[dict[str, Any]]) -> set[str]:
    """The `applied` keys of what may hold the memory's summary: the candidates of its source
    turns (the one that made it, those merged into it), and the commands its audit names."""
    commands = {command_key(memory.user_id, str(entry["meta"]["command_id"]))
                for entry in history if (entry.get("meta") or {}).get("command_id")}
    return commands | candidate_keys(memory.user_id, memory.source_turn_ids)


def turn_splits(ref: str) -> set[tuple[str, str]]:
    """Every (thread id, turn id) a provenance ref `thread:turn` can stand for: ids are free
    text, so "a:b:c:d" is thread "a" and turn "b:c:d", or "a:b" and "c:d", or "a:b:c" and "d".
    The first and the last colon alone miss the middle ones; all of them are tried (an id is at
    most 200 characters, so at most 400 splits)."""
    return {(ref[:i], ref[i + 1:]) for i, char in enumerate(ref)
            if char == ":" and 0 < i < len(ref) - 1}


def candidate_keys(user_id: str, refs: Iterable[str]) -> set[str]:
    """The `applied` keys of every candidate the turns `refs` (`thread:turn`) can have made.

    Each split of a ref (`turn_splits`) names a turn; the key of each of its candidates holds the
    candidate's id, derived from the user, that thread and turn and the fact's index. Only the
    true split names records of this memory's turn; another split names nothing, or another
    turn, whose record is scrubbed only where it holds this memory (`mentions`)."""
    pairs = {pair for ref in refs for pair in turn_splits(ref)}
    return {candidate_key(user_id, thread_id, turn_id, ids.memory_id(user_id, thread_id, turn_id, index))
            for thread_id, turn_id in pairs for index in FACT_INDEXES}


def mentions(record: dict[str, Any], memory_id: str) -> bool:
    """Whether an `applied` record still holds anything of the memory: it is the record's
    memory with events or writes left, or one of its events is the memory's."""
    if record.get("memory_id") == memory_id and (record.get("events") or record.get("writes")):
        return True
    return any(e.get("memory_id") == memory_id for e in record.get("events", []))


def scrubbed(record: dict[str, Any], memory_id: str) -> dict[str, Any]:
    """The record without the memory's events and without its writes (they hold documents and
    audit entries; a replay this late has nothing to make again). The record stays: it keeps
    blocking a replay of its turn or command, which must not bring the memory back. Its outcome
    stays what the first application reported, so a replay after a crash (the purge inside the
    uncommitted window) reports the same progress as the run that was not interrupted."""
    return {"outcome": record.get("outcome", ""), "memory_id": record.get("memory_id", ""),
            "events": [e for e in record.get("events", []) if e.get("memory_id") != memory_id]}


def scrub_change_log(state: MemoryState, user_id: str, thread_id: str, memory_id: str) -> None:
    """Blank the summary and category of a purged memory's lines in a thread's change log (the
    delta header then shows that something was forgotten, never what)."""
    thread = state.revisions.thread(user_id, thread_id)
    changes = thread.get("changes", [])
    if not any(c.get("memory_id") == memory_id and c.get("summary") for c in changes):
        return
    thread["changes"] = [{**c, "summary": "", "category": ""} if c.get("memory_id") == memory_id
                         else c for c in changes]
    state.revisions.table[thread_key(user_id, thread_id)] = thread
