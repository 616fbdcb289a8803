"""The seek fixes for Faust's consumer (streams/app/faust_compat.py)."""
from __future__ import annotations

from faust.types import TP

from streams.app.faust_compat import ReadOffsets

CANDIDATES = TP("memory.candidates", 1)
CHANGELOG = TP("memstream-memories-changelog", 1)


def offsets() -> ReadOffsets:
    return ReadOffsets(lambda topic: topic.endswith("-changelog"))


def test_a_stale_record_cannot_make_a_stream_partition_drop_re_fetched_records():
    read = offsets()
    # A record fetched before the seek back to the committed offset passes the drain loop ...
    read[CANDIDATES] = 109
    # ... and the re-fetched records from the committed offset on are not taken as duplicates.
    assert read[CANDIDATES] is None


def test_changelog_partitions_keep_fausts_read_offsets():
    read = offsets()
    assert read[CHANGELOG] is None
    read[CHANGELOG] = 41
    assert read[CHANGELOG] == 41
    read.update({CHANGELOG: 7})
    assert read[CHANGELOG] == 7
    assert read.pop(CHANGELOG) == 7
    assert read[CHANGELOG] is None
