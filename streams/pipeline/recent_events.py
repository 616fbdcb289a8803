"""Each user's SSE replay buffer (the `recent_events` table): the last `SSE_REPLAY_EVENTS` memory
events, so a client reconnecting with Last-Event-ID resumes where it was.

What the buffer holds is `remember`'s list: replays dropped by event id, the newest `size` kept,
a purge leaving only content-free purged events. How it is stored is a ring of chunks, so that a
batch of new events costs its own size in the table's changelog, not the buffer's (the buffer
as one sealed list was rewritten whole on every batch: the largest share of a turn's bytes).

Keys (JSON arrays with the user first: `user_first_in_key` finds the owner, each value is sealed
for the user, so a user purge's shred makes all of them unreadable at once):
- `[user, "/head"]` -> `{"next": n, "size": s, "slots": runs}`: the live chunks are those of
  sequence numbers n-c .. n-1, in the c slots (of s) that `runs` lists, oldest first;
- `[user, "/<slot>"]` -> `[i, [event, ...]]`: chunk i, the events one batch added (the sequence
  number inside tells a chunk from one a lost write left behind). A chunk per batch rather than
  a key per event: the same bytes in a record per batch, not one per event.

The buffer is the newest `size` events of the live chunks. A batch that only adds writes one
chunk and the head; the oldest chunks whose events all fell out of the buffer leave, and the new
chunk takes the slot of the first of them (overwriting it, so no deletion: up to a chunk's worth
of events older than the buffer stays stored until the next chunk pushes it out). A batch whose
purge reaches a stored event (it must leave no readable copy, seen or not) also rewrites the
chunks it reaches, each keeping only what the buffer keeps (an emptied one stays, empty, until
it is the oldest). A write that finds the buffer unsound (a chunk missing or no longer opening,
the size changed, no head: a new user, or one whose purge shredded the key), or purges leaving
more chunks than slots, rewrites the buffer as one chunk and deletes every other slot; so does
the first write of a user in the format before the ring: one sealed list under the user id
itself, read as the buffer until then (a slash, which no user id holds, keeps the ring's keys
apart from those).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from streams.memory.tables import composite_key
from streams.privacy.sealed import SealedTable
from topics.events import MemoryEvent

Event = dict[str, Any]


def remember(buffer: list[Event], event: MemoryEvent, size: int) -> list[Event] | None:
    """The user's buffer with `event` added, or None when the event is already in it (a replay).

    A purge keeps only content-free purged events: of the whole user, or, for one memory purged
    by the lifecycle (reason `purge_at`), of that memory.
    """
    if any(e["event_id"] == event.event_id for e in buffer):
        return None
    return [*survivors(buffer, event), event.model_dump(mode="json")][-size:]


def survivors(buffer: list[Event], event: MemoryEvent) -> list[Event]:
    """The events of `buffer` that stay when `event` comes (all but what a purge removes)."""
    if event.kind == "purged" and event.meta.get("reason") == "purge_at":
        return [e for e in buffer if e["kind"] == "purged" or e["memory_id"] != event.memory_id]
    if event.kind == "purged":
        return [e for e in buffer if e["kind"] == "purged"]
    return buffer


def after(buffer: list[Event], last_event_id: str | None) -> tuple[list[Event], bool]:
    """The buffered events after `last_event_id`, and whether that id was found (None: none)."""
    if not last_event_id:
        return [], True
    for i, event in enumerate(buffer):
        if event["event_id"] == last_event_id:
            return buffer[i + 1:], True
    return list(buffer), False


def head_key(user_id: str) -> str:
    return composite_key(user_id, "/head")


def slot_key(user_id: str, slot: int) -> str:
    return composite_key(user_id, f"/{slot}")


Placed = tuple[int, int, int]
"""A live chunk: (sequence number, slot, how many events)."""


@dataclass
class Ring:
    """A user's buffer as read: its events and where they are stored."""

    events: list[Event] = field(default_factory=list)
    """The buffer: the newest `size` events stored."""
    stored: list[Event] = field(default_factory=list)
    """Every event of the live chunks (the oldest chunk may hold some older than the buffer)."""
    chunks: list[tuple[int, int, list[Event]]] = field(default_factory=list)
    """(sequence number, slot, events) of each live chunk, oldest first."""
    next: int = 0
    size: int = 0
    """The slots of the head (0: no readable head)."""
    sound: bool = False
    """Every chunk the head names was found, at this size, and nothing of the old format is
    left: a batch may add a chunk, and a purge rewrite the chunks it reaches."""


@dataclass
class Known:
    """What this worker knows of a user's ring since it last wrote or read it: enough to add a
    batch without reading the chunks back, while the head is stored as it was then (`stamp`)."""

    stamp: Any
    ids: list[str]
    """The buffer's event ids, oldest first (`remember`'s replay check needs nothing else)."""
    chunks: list[Placed]
    next: int


REMEMBERED_USERS = 4096
"""Users whose ring each worker knows (the oldest forgotten first): a few KB each."""


class RecentEvents:
    """The replay buffers of the users in a sealed table (`recent_events`), `size` events each.

    Adding a batch reads the user's chunks back (up to `size` small sealed values) only when
    this worker does not know the ring as stored (`Known`) or the batch holds a purge, whose
    rules need the events themselves: most batches of a user's turns then cost one read.
    """

    def __init__(self, table: SealedTable, size: int) -> None:
        self.table = table
        self.size = size
        self._known: dict[str, Known] = {}

    def events(self, user_id: str) -> list[Event]:
        """The user's buffered events, oldest first."""
        return self.read(user_id).events

    def add(self, user_id: str, events: Iterable[MemoryEvent]) -> list[Event]:
        """Add a user's events of one batch (in order); return those that were new."""
        events = list(events)
        known = self._known.pop(user_id, None)
        done = None
        if known is not None and not any(e.kind == "purged" for e in events) \
                and known.stamp == self.table.stamp(head_key(user_id)):
            done = self._add_known(user_id, known, events)
        added, known = done if done is not None else self._add_read(user_id, events)
        if known is not None:
            if len(self._known) >= REMEMBERED_USERS:
                self._known.pop(next(iter(self._known)))
            self._known[user_id] = known
        return added

    def _add_known(self, user_id: str, known: Known,
                   events: list[MemoryEvent]) -> tuple[list[Event], Known] | None:
        """`remember` for a batch with no purge, on the buffer's ids alone (None: the chunk
        does not fit, read the ring)."""
        ids, added = known.ids, []
        for event in events:
            if event.event_id not in ids:
                ids = [*ids, event.event_id][-self.size:]
                added.append(event.model_dump(mode="json"))
        if not added:
            return [], known
        fitted = self._fit(known.chunks, known.next, len(added))
        if fitted is None:
            return None
        return added, self._add_chunk(user_id, *fitted, added, ids)

    def _add_read(self, user_id: str,
                  events: list[MemoryEvent]) -> tuple[list[Event], Known | None]:
        """`remember` on the ring read back; then a chunk added, the chunks a purge reached
        rewritten in place, or (when that cannot be) the whole ring rewritten."""
        ring = self.read(user_id)
        buffer, stored, added = ring.events, ring.stored, []
        for event in events:
            updated = remember(buffer, event, self.size)
            if updated is not None:
                stored = survivors(stored, event)  # a purge reaches what is stored, seen or not
                buffer = updated
                added.append(buffer[-1])
        ids = [e["event_id"] for e in buffer]
        if not added:
            placed = [(seq, slot, len(events)) for seq, slot, events in ring.chunks]
            return [], self._known_now(user_id, ids, placed, ring.next) if ring.sound else None
        kept = {id(e) for e in buffer}  # the very events (a purged one may come back replayed)
        chunk = [e for e in added if id(e) in kept]  # not those the batch purged itself
        if not ring.sound:
            return added, self._rewrite(user_id, ring, buffer)
        chunks = ring.chunks
        if len(stored) != len(ring.stored) or [*ring.stored, *chunk][-self.size:] != buffer:
            # A purge reached stored events: each chunk keeps only what the buffer keeps.
            chunks = [(seq, slot, [e for e in events if id(e) in kept])
                      for seq, slot, events in chunks]
        fitted = self._fit([(seq, slot, len(events)) for seq, slot, events in chunks],
                           ring.next, len(chunk))
        if fitted is None:
            return added, self._rewrite(user_id, ring, buffer)
        live = {seq for seq, _, _ in fitted[0]}
        for (seq, slot, events), (_, _, before) in zip(chunks, ring.chunks):
            if seq in live and len(events) != len(before):
                self.table[slot_key(user_id, slot)] = [seq, events]
        return added, self._add_chunk(user_id, *fitted, chunk, ids)

    def read(self, user_id: str) -> Ring:
        """The user's buffer as stored (the old format's, if the user has no head)."""
        head = self.table.get(head_key(user_id))
        legacy = user_id in self.table
        slots = _slots_of(head)
        if slots is None:
            old = self.table.get(user_id) if legacy else None
            events = [e for e in old if isinstance(e, dict)] if isinstance(old, list) else []
            return Ring(events=events[-self.size:], stored=events)
        ring = Ring(next=head["next"], size=head["size"],
                    sound=head["size"] == self.size and not legacy)
        events: list[Event] = []
        for seq, slot in enumerate(slots, start=ring.next - len(slots)):
            chunk = self.table.get(slot_key(user_id, slot))
            if isinstance(chunk, list) and len(chunk) == 2 and chunk[0] == seq \
                    and isinstance(chunk[1], list):
                ring.chunks.append((seq, slot, chunk[1]))
                events += chunk[1]
            else:  # lost, overwritten by a write whose head was lost, or no longer opening
                ring.sound = False
        ring.stored, ring.events = events, events[-self.size:]
        return ring

    def _fit(self, chunks: list[Placed], seq: int,
             added: int) -> tuple[list[Placed], list[int]] | None:
        """The live chunks once chunk `seq` (of `added` events) joins them, and the slots of
        those that leave: the oldest leave while empty (a purge emptied them) or while the
        newer ones hold the whole buffer. The new chunk takes the slot of the first to leave
        (one record both writes it and drops that one), else a free one. None when more than
        `size` chunks would stay (chunks emptied in the middle): no slot is free."""
        live, gone = list(chunks), []
        total = sum(n for _, _, n in live) + added
        while live and (live[0][2] == 0 or total - live[0][2] >= self.size):
            total -= live[0][2]
            gone.append(live.pop(0)[1])
        if len(live) >= self.size:
            return None
        used = {slot for _, slot, _ in live}
        slot = gone.pop(0) if gone else min(set(range(self.size)) - used)
        return [*live, (seq, slot, added)], gone

    def _add_chunk(self, user_id: str, chunks: list[Placed], gone: list[int], added: list[Event],
                   ids: list[str]) -> Known:
        """Write the batch's events as the newest of `chunks`, delete the slots of the chunks
        that left and are not reused, and write the head."""
        seq, slot, _ = chunks[-1]
        self.table[slot_key(user_id, slot)] = [seq, added]
        for other in gone:
            self._delete(slot_key(user_id, other))
        self._write_head(user_id, seq + 1, chunks)
        return self._known_now(user_id, ids, chunks, seq + 1)

    def _rewrite(self, user_id: str, ring: Ring, buffer: list[Event]) -> Known:
        """Store `buffer` as one chunk, in slot 0, and delete everything else the user has in
        the table: the old format's list, and every other slot (readable or not)."""
        self._delete(user_id)
        for other in range(1, max(self.size, ring.size)):
            self._delete(slot_key(user_id, other))
        chunks = [(ring.next, 0, len(buffer))]
        self.table[slot_key(user_id, 0)] = [ring.next, buffer]
        self._write_head(user_id, ring.next + 1, chunks)
        return self._known_now(user_id, [e["event_id"] for e in buffer], chunks, ring.next + 1)

    def _write_head(self, user_id: str, next_: int, chunks: list[Placed]) -> None:
        slots = [slot for _, slot, _ in chunks]
        self.table[head_key(user_id)] = {"next": next_, "size": self.size, "slots": _runs(slots)}

    def _known_now(self, user_id: str, ids: list[str], chunks: list[Placed], next_: int) -> Known:
        return Known(self.table.stamp(head_key(user_id)), ids, chunks, next_)

    def _delete(self, key: str) -> None:
        """Delete a key if stored, readable or not (a sealed table's `in` sees both)."""
        if key in self.table:
            del self.table[key]


def _runs(slots: list[int]) -> list[list[int]]:
    """Slots as runs `[first, how many]` of consecutive ones: a new chunk mostly takes the
    slot of the oldest, so the slots go round and the head stays a few bytes."""
    runs: list[list[int]] = []
    for slot in slots:
        if runs and runs[-1][0] + runs[-1][1] == slot:
            runs[-1][1] += 1
        else:
            runs.append([slot, 1])
    return runs


def _slots_of(head: Any) -> list[int] | None:
    """The live chunks' slots, oldest first, of a head as stored (None: not a head)."""
    if not (isinstance(head, dict) and isinstance(head.get("next"), int)
            and isinstance(head.get("size"), int) and head["size"] > 0
            and isinstance(head.get("slots"), list)):
        return None
    try:
        slots = [first + i for first, count in head["slots"] for i in range(count)]
    except (TypeError, ValueError):
        return None
    valid = all(isinstance(s, int) and 0 <= s < head["size"] for s in slots)
    if not valid or len(set(slots)) != len(slots) or len(slots) > head["next"]:
        return None
    return slots
