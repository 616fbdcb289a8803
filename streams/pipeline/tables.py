"""The stages' view of the tables: every value sealed for its user (`streams.privacy`).

The worker's app (`streams.app.factory`) passes its Faust tables, the in-process runner
(`streams.app.inprocess`) dicts; both get the same sealed wrappers.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from streams.memory.tables import MemoryTables, Table
from streams.pipeline.ingest import IngestTables
from streams.privacy.crypto import MasterKeys
from streams.privacy.sealed import TABLE_OWNERS, SealedTable, Sealer
from streams.privacy.user_keys import UserKeys


@dataclass(frozen=True)
class StageTables:
    """What the stages read and write, sealed, and the users' data keys."""

    memory: MemoryTables
    ingest: IngestTables
    recent_events: SealedTable
    keys: UserKeys
    sealer: Sealer


def stage_tables(raw: Mapping[str, Table], user_keys: Table,
                 master_key: bytes | MasterKeys) -> StageTables:
    """Sealed views of the `raw` tables (by name, see `TABLE_OWNERS`), keyed by `user_keys`
    wrapped with `master_key` (or the current of several, each of which unwraps)."""
    keys = UserKeys(user_keys, master_key)
    sealer = Sealer(keys)
    sealed = {name: SealedTable(raw[name], sealer, owner) for name, owner in TABLE_OWNERS.items()}
    memory = MemoryTables(memories=sealed["memories"], applied=sealed["applied"],
                          users=sealed["users"], thread_revs=sealed["thread_revs"],
                          audit=sealed["audit"], keys=keys)
    ingest = IngestTables(buffers=sealed["buffers"], turn_log=sealed["turn_log"],
                          users=sealed["users"], keys=keys)
    return StageTables(memory, ingest, sealed["recent_events"], keys, sealer)
