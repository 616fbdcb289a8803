"""Master-key rotation: every user's data key re-wrapped under a new master key.

The data keys themselves do not change (so nothing sealed with them is touched); only their
wrapping in the `user_keys` table does. This module decides the records to write
(`rotate_records`); the run against Kafka is `streams.tools.key_rotation`. The table's truth is
its changelog topic (`<APP_ID>-user_keys-changelog`): `rotate_changelog` (there) reads the
latest record of every user, re-wraps each key that is not wrapped by the new master key yet,
and writes the record again to the same partition, after the old one. A worker recovering the
table then holds only keys the new master key unwraps.

It runs with the workers stopped (`streams.tools.key_rotation.WorkersRunning` while the app's
consumer group lists members; the embedded broker, Tansu, never drops a member that left, so
there the operator says so): a running worker keeps its own copy of the table, and may write a
user's record (a shred!) between the read and the write, which the rotation would then undo. The workers are started again with `NEW,OLD` as master keys
(`streams.privacy.crypto.decode_keys`: the first wraps, each unwraps), so a key still wrapped by
the old one (a rotation stopped half-way) and a command sealed in transit with it still open;
once the rotation has run to the end and those commands are consumed, `NEW` alone. The steps are
in docs/privacy.md.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from streams.errors import MemstreamError
from streams.privacy.crypto import MasterKeys, SealError
from streams.privacy.user_keys import rewrapped

Latest = dict[tuple[int, bytes], bytes | None]
"""The latest value of every (partition, key) of a topic (None: a tombstone)."""


class UnwrappableKeys(MemstreamError):
    """Some users' keys open with none of the accepted master keys: nothing was written."""


@dataclass(frozen=True)
class RotationReport:
    """What a rotation found: keys re-wrapped now, keys wrapped by the new master key already,
    and users without a key (purged)."""

    rewrapped: int
    current: int
    without_key: int


def rotate_records(latest: Latest, masters: MasterKeys) -> tuple[Latest, RotationReport]:
    """The records to write so that every key in `latest` is wrapped by `masters.current`, and
    the report. Raises `UnwrappableKeys` (before anything is written) when a key opens with none
    of `masters.accepted`: rotating the rest and dropping the old master key would lose those
    users' data."""
    writes: Latest = {}
    current = without_key = unwrappable = 0
    for (partition, key), value in latest.items():
        record = json.loads(value) if value else None
        if not isinstance(record, dict) or not record.get("key"):
            without_key += 1
            continue
        try:
            changed = rewrapped(masters, key.decode("utf-8"), record)
        except SealError:
            unwrappable += 1
            continue
        if changed is None:
            current += 1
        else:
            writes[(partition, key)] = json.dumps(changed).encode("utf-8")
    if unwrappable:
        raise UnwrappableKeys(f"{unwrappable} users' keys open with none of the master keys given")
    return writes, RotationReport(len(writes), current, without_key)
