"""The stages' view of the tables: every value sealed for its user (`streams.privacy`), and
every write but the SSE ring's held until the stage's batch ends (`streams.pipeline.write_cache`).

The worker's app (`streams.app.factory`) passes its Faust tables, the in-process runner
(`streams.app.inprocess`) dicts; both get the same wrappers.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from streams.memory.applied_by_turn import AppliedByTurn
from streams.memory.memory_records import MemoryRecords
from streams.memory.tables import MemoryTables, Table
from streams.pipeline.ingest import IngestTables
from streams.pipeline.write_cache import NO_CAPTURE, ScopeCapture, WriteCache
from streams.privacy.crypto import MasterKeys
from streams.privacy.sealed import TABLE_OWNERS, SealedTable, Sealer
from streams.privacy.user_keys import UserKeys


@dataclass(frozen=True)
class StageTables:
    """What the stages read and write, sealed, and the users' data keys; `writes` holds the
    writes of a batch (each stage flushes it when its batch ends)."""

    memory: MemoryTables
    ingest: IngestTables
    recent_events: SealedTable
    keys: UserKeys
    sealer: Sealer
    writes: WriteCache


CACHED = ("applied", "turn_log", "memories", "users", "thread_revs", "buffers")
"""The tables whose writes are held for a batch, in the order they are made: the outboxes first
(dedup's `applied` records and ingest's `turn_log`, each before the writes it lists, so a
replay finds what it must make again). The SSE ring (`recent_events`) writes each of its chunks
once already, and its readers compare stamps of the stored envelopes. The `audit` table is
only read: a memory's audit list is written into its memory record
(`streams.memory.memory_records`), and the old table holds the lists written before."""


def stage_tables(raw: Mapping[str, Table], user_keys: Table,
                 master_key: bytes | MasterKeys, capture: ScopeCapture = NO_CAPTURE) -> StageTables:
    """Sealed views of the `raw` tables (by name, see `TABLE_OWNERS`), keyed by `user_keys`
    wrapped with `master_key` (or the current of several, each of which unwraps); the writes
    of the `CACHED` ones are held in one `WriteCache`, whose writes remember their record's
    scope with `capture`."""
    keys = UserKeys(user_keys, master_key)
    sealer = Sealer(keys)
    sealed = {name: SealedTable(raw[name], sealer, owner) for name, owner in TABLE_OWNERS.items()}
    writes = WriteCache(capture)
    keys.before_shred.append(writes.flush)
    cached = {name: writes.table(sealed[name]) for name in CACHED}
    records = MemoryRecords(cached["memories"], legacy_audit=sealed["audit"])
    memory = MemoryTables(memories=records.docs, applied=AppliedByTurn(cached["applied"]),
                          users=cached["users"], thread_revs=cached["thread_revs"],
                          audit=records.audit, keys=keys, flush=writes.flush)
    ingest = IngestTables(buffers=cached["buffers"], turn_log=cached["turn_log"],
                          users=cached["users"], keys=keys, flush=writes.flush)
    return StageTables(memory, ingest, sealed["recent_events"], keys, sealer, writes)
