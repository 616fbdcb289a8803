"""Each user's SSE replay buffer (the `recent_events` table): the last `SSE_REPLAY_EVENTS` memory
events, so a client reconnecting with Last-Event-ID resumes where it was.

What the buffer holds is `remember`'s list: replays dropped by event id, the newest `size` kept,
a purge leaving only content-free purged events. How it is stored is a ring of chunks, so that a
batch of new events costs its own size in the table's changelog, not the buffer's (the buffer
as one sealed list was rewritten whole on every batch: the largest share of a turn's bytes).

Keys (JSON arrays with the user first: `user_first_in_key` finds the owner, each value is sealed
for the user, so a user purge's shred makes all of them unreadable at once):
- `[user, "/head"]` -> `{"next": n, "count": c, "size": s}`: the live chunks are those of
  sequence numbers n-c .. n-1, chunk i in slot i % s;
- `[user, "/<slot>"]` -> `[i, [event, ...]]`: chunk i, the events one batch added (the sequence
  number inside tells a chunk left behind by a lost write from a live one). A chunk per batch
  rather than a key per event: the same bytes in a record per batch, not one per event.

The buffer is the newest `size` events of the live chunks. A batch that only adds writes one
chunk and the head, and deletes the oldest chunks whose events all fell out of the buffer (so up
to a chunk's worth of events older than the buffer stays stored, until the next chunk pushes it
out). A batch whose purge reaches a stored event (it must leave no readable copy, seen or not)
also rewrites the chunks it reaches, each keeping only what the buffer keeps (an emptied one
stays, empty, until it is the oldest). A write that finds the buffer unsound (a chunk missing or
no longer opening, the size changed, no head: a new user, or one whose purge shredded the key),
or purges leaving more chunks than slots, rewrites the buffer as one chunk and deletes every
other slot; so does the first write of a user in the format before the ring: one sealed list
under the user id itself, read as the buffer until then (a slash, which no user id holds, keeps
the ring's keys apart from those).
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


@dataclass
class Ring:
    """A user's buffer as read: its events and where they are stored."""

    events: list[Event] = field(default_factory=list)
    """The buffer: the newest `size` events stored."""
    stored: list[Event] = field(default_factory=list)
    """Every event of the live chunks (the oldest chunk may hold some older than the buffer)."""
    chunks: list[tuple[int, list[Event]]] = field(default_factory=list)
    """(sequence number, events) of each live chunk, oldest first."""
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
    chunks: list[tuple[int, int]]
    """(sequence number, how many events) of each live chunk, oldest first."""
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
        chunks = self._fit(known.chunks, known.next, len(added))
        if chunks is None:
            return None
        return added, self._add_chunk(user_id, known.chunks, chunks, added, ids)

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
            counts = [(seq, len(events)) for seq, events in ring.chunks]
            return [], self._known_now(user_id, ids, counts, ring.next) if ring.sound else None
        kept = set(ids)
        chunk = [e for e in added if e["event_id"] in kept]  # not those the batch purged itself
        if not ring.sound:
            return added, self._rewrite(user_id, ring, buffer)
        chunks = ring.chunks
        if len(stored) != len(ring.stored) or [*ring.stored, *chunk][-self.size:] != buffer:
            # A purge reached stored events: each chunk keeps only what the buffer keeps.
            chunks = [(seq, [e for e in events if e["event_id"] in kept]) for seq, events in chunks]
        counts = [(seq, len(events)) for seq, events in chunks]
        fitted = self._fit(counts, ring.next, len(chunk))
        if fitted is None:
            return added, self._rewrite(user_id, ring, buffer)
        live = {seq for seq, _ in fitted}
        for (seq, events), (_, before) in zip(chunks, ring.chunks):
            if seq in live and len(events) != len(before):
                self.table[slot_key(user_id, seq % self.size)] = [seq, events]
        return added, self._add_chunk(user_id, counts, fitted, chunk, ids)

    def read(self, user_id: str) -> Ring:
        """The user's buffer as stored (the old format's, if the user has no head)."""
        head = self.table.get(head_key(user_id))
        legacy = user_id in self.table
        if not _is_head(head):
            old = self.table.get(user_id) if legacy else None
            events = [e for e in old if isinstance(e, dict)] if isinstance(old, list) else []
            return Ring(events=events[-self.size:], stored=events)
        ring = Ring(next=head["next"], size=head["size"],
                    sound=head["size"] == self.size and not legacy)
        events: list[Event] = []
        for seq in range(head["next"] - head["count"], head["next"]):
            chunk = self.table.get(slot_key(user_id, seq % ring.size))
            if isinstance(chunk, list) and len(chunk) == 2 and chunk[0] == seq \
                    and isinstance(chunk[1], list):
                ring.chunks.append((seq, chunk[1]))
                events += chunk[1]
            else:  # lost, left by a lost write, or no longer opening
                ring.sound = False
        ring.stored, ring.events = events, events[-self.size:]
        return ring

    def _fit(self, chunks: list[tuple[int, int]], seq: int,
             added: int) -> list[tuple[int, int]] | None:
        """The live chunks once chunk `seq` (of `added` events) joins them: the oldest leave
        while empty (a purge emptied them) or while the newer ones hold the whole buffer. None
        when more than `size` would stay (chunks emptied in the middle): their slots would meet.
        """
        chunks = [*chunks, (seq, added)]
        while len(chunks) > 1 and (chunks[0][1] == 0 or sum(n for _, n in chunks[1:]) >= self.size):
            chunks.pop(0)
        return chunks if len(chunks) <= self.size else None

    def _add_chunk(self, user_id: str, before: list[tuple[int, int]], chunks: list[tuple[int, int]],
                   added: list[Event], ids: list[str]) -> Known:
        """Write the batch's events as the next chunk, delete the chunks that left (`_fit`) and
        write the head."""
        seq = chunks[-1][0]
        self.table[slot_key(user_id, seq % self.size)] = [seq, added]
        live = {s for s, _ in chunks}
        for dropped, _ in before:
            if dropped not in live and dropped % self.size != seq % self.size:
                self._delete(slot_key(user_id, dropped % self.size))
        self.table[head_key(user_id)] = {"next": seq + 1, "count": len(chunks), "size": self.size}
        return self._known_now(user_id, ids, chunks, seq + 1)

    def _rewrite(self, user_id: str, ring: Ring, buffer: list[Event]) -> Known:
        """Store `buffer` as one chunk and delete everything else the user has in the table:
        the old format's list, and every other slot (readable or not)."""
        self._delete(user_id)
        seq, slot = ring.next, ring.next % self.size
        for other in range(max(self.size, ring.size)):
            if other != slot:
                self._delete(slot_key(user_id, other))
        self.table[slot_key(user_id, slot)] = [seq, buffer]
        self.table[head_key(user_id)] = {"next": seq + 1, "count": 1, "size": self.size}
        ids = [e["event_id"] for e in buffer]
        return self._known_now(user_id, ids, [(seq, len(buffer))], seq + 1)

    def _known_now(self, user_id: str, ids: list[str], chunks: list[tuple[int, int]],
                   next_: int) -> Known:
        return Known(self.table.stamp(head_key(user_id)), ids, chunks, next_)

    def _delete(self, key: str) -> None:
        """Delete a key if stored, readable or not (a sealed table's `in` sees both)."""
        if key in self.table:
            del self.table[key]


def _is_head(value: Any) -> bool:
    return (isinstance(value, dict)
            and all(isinstance(value.get(k), int) for k in ("next", "count", "size"))
            and value["size"] > 0 and 0 <= value["count"] <= min(value["size"], value["next"]))
