"""A whole-table read of the memories (the index rebuild after a start) is one scan through
every layer (memory records over held writes over sealed values), and reads what key-by-key
reads would: held writes over stored ones, nothing of a shredded user."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from streams.memory.memory_records import MemoryRecords
from streams.pipeline.write_cache import WriteCache
from streams.privacy.crypto import new_key
from streams.privacy.sealed import Sealer, SealedTable, user_in_value
from streams.privacy.user_keys import UserKeys
from streams.tables import ReadableItems


class CountingDict(dict):
    """A table that counts its single-key reads (a Faust table's are a lookup per partition)."""

    def __init__(self) -> None:
        super().__init__()
        self.lookups = 0

    def __getitem__(self, key: Any) -> Any:
        self.lookups += 1
        return super().__getitem__(key)


def doc(memory_id: str, user: str, summary: str) -> dict[str, Any]:
    return {"id": memory_id, "user_id": user, "summary": summary}


def test_the_documents_read_in_one_scan_are_those_read_key_by_key():
    raw = CountingDict()
    sealed = SealedTable(raw, Sealer(UserKeys({}, new_key())), user_in_value)
    writes = WriteCache()
    records = MemoryRecords(writes.table(sealed))
    for n, user in enumerate(["ana", "ana", "ben", "cy"]):
        records.docs[f"m{n}"] = doc(f"m{n}", user, f"fact {n}")
    writes.flush()
    sealed.sealer.keys.shred("cy", datetime(2024, 1, 1, tzinfo=timezone.utc))
    records.docs["m0"] = doc("m0", "ana", "fact 0, changed")  # held, not yet flushed
    del records.docs["m1"]  # a held delete
    records.docs["m9"] = doc("m9", "ben", "new")  # held, not stored yet
    sealed._opened.clear()
    raw.lookups = 0

    scanned = dict(records.docs.items())

    assert raw.lookups == 0, "one scan of the table, no read a key"
    assert not sealed._opened, "a whole-table read leaves the opened-value cache alone"
    assert scanned == dict(ReadableItems.items(records.docs))
    assert {key: value["summary"] for key, value in scanned.items()} == {
        "m0": "fact 0, changed", "m2": "fact 2", "m9": "new"}
