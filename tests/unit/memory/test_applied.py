"""A candidate's writes are made as one (streams/memory/applied.py): a worker killed between its
`applied` record and its writes, or a recovery that rolls a key back, ends as if nothing had
happened once the candidate is replayed; an old candidate re-sent later changes nothing."""
from __future__ import annotations

import random

import orjson
import pytest

from streams.memory import applied
from streams.memory.applied import WriteSet, patch_of, patched
from streams.memory.candidates import _apply, apply_candidate, carried_values
from streams.memory.documents import candidate_id
from streams.memory.state import MemoryState
from streams.memory.documents import applied_key
from streams.memory.vector_index import encode_vector
from tests.unit.memory.test_memory_records import full_document
from tests.unit.memory.test_memory_state import cand, state, vec

TABLES = ("memories", "users", "thread_revs", "audit", "applied")


def contents(s: MemoryState) -> dict[str, dict]:
    return {name: dict(getattr(s.tables, name).items()) for name in TABLES}


def test_patches_rebuild_every_value():
    rng = random.Random(3)
    for _ in range(2000):
        before = [rng.randint(0, 4) for _ in range(rng.randint(0, 6))]
        after = [rng.randint(0, 4) for _ in range(rng.randint(0, 6))]
        assert patched(before, patch_of(before, after)) == after
    doc = {"relations": {"a": 0.7}, "related_ids": ["a", "c"], "version": 1, "gone": True}
    new = {"relations": {"a": 0.7, "b": 0.8}, "related_ids": ["a", "b", "c"], "version": 2}
    patch = patch_of(doc, new)
    assert patched(doc, patch) == new
    assert patch["fields"]["related_ids"] == {"drop": 0, "insert": [[1, "b"]]}, "only what changed"
    assert patched(None, patch_of(None, new)) == new
    memory = full_document()
    assert set(patch_of(None, memory)) == {"document"} and patched(None, patch_of(None, memory)) == memory
    assert patched(None, patch_of(None, {**memory, "extra": 1})) == {**memory, "extra": 1}


CARRIED = {"vector_b64": "h:" + "A" * 40 + "==", "context_b64": "i8:" + "B" * 20}


def test_naming_replaces_carried_values_wherever_they_stand_but_never_a_key():
    as_key = {"fields": {CARRIED["vector_b64"]: {"value": CARRIED["vector_b64"]}}, "unset": []}
    assert applied.named(as_key, CARRIED) == {
        "fields": {CARRIED["vector_b64"]: {"value": {"$carried": "vector_b64"}}}, "unset": []}
    escaped = {"value": 'a "quoted" one'}
    assert applied.named(escaped, {"vector_b64": 'a "quoted" one'}) == {"value": {"$carried": "vector_b64"}}
    turn = {"text": "hi", "turn_id": "t1"}
    assert applied.named({"value": [turn]}, {"turn": turn}) == {"value": [{"$carried": "turn"}]}


def test_a_worker_killed_between_the_record_and_its_writes_ends_as_if_uninterrupted():
    first, second = cand("1", "Ana has a dog named Luna."), cand("2", "Ana lives in Lisbon.")
    whole = state()
    for c, v in ((first, vec(1, 0)), (second, vec(0.6, 0.8))):
        apply_candidate(whole, c, v)

    killed = state()
    apply_candidate(killed, first, vec(1, 0))
    writes = WriteSet(killed.tables)  # the second candidate, killed right after its record
    result = _apply(killed.over(writes.tables), second, vec(0.6, 0.8), None, candidate_id(second))
    applied.remember(killed.tables.applied, applied_key(second), result,
                     writes.listed())
    assert candidate_id(second) not in killed.tables.memories
    again = apply_candidate(killed, second, vec(0.6, 0.8))

    assert again.replayed and again.events == result.events
    assert contents(killed) == contents(whole)
    assert [m.id for m, _ in killed.index.user("u").search(vec(0.6, 0.8), 2)] == \
        [m.id for m, _ in whole.index.user("u").search(vec(0.6, 0.8), 2)], "the index shows it"


def test_the_record_names_the_candidates_vectors_and_a_replay_puts_them_back():
    second = cand("2", "Ana lives in Lisbon.").model_copy(update={
        "vector_b64": encode_vector(vec(0.6, 0.8)), "context_b64": encode_vector(vec(0.8, 0.6))})
    whole = state()
    apply_candidate(whole, second, vec(0.6, 0.8))

    killed = state()
    writes = WriteSet(killed.tables)
    result = _apply(killed.over(writes.tables), second, vec(0.6, 0.8), None, candidate_id(second))
    listed = writes.listed(carried_values(second))
    assert second.vector_b64 not in orjson.dumps(listed).decode(), "named, not repeated"
    document = listed[0][4]["document"]
    assert {"$carried": "vector_b64"} in document.values()
    assert "superseded_by" not in document, "listed compact, as the memory record stores it"
    applied.remember(killed.tables.applied, applied_key(second), result, listed)
    again = apply_candidate(killed, second, vec(0.6, 0.8))

    assert again.replayed
    assert contents(killed)["memories"] == contents(whole)["memories"], "vectors included"


def test_a_replay_writes_again_what_a_recovery_rolled_back():
    first, second = cand("1", "Ana has a dog named Luna."), cand("2", "Ana walks Luna every morning.")
    s = state()
    apply_candidate(s, first, vec(1, 0))
    after_first = dict(s.tables.memories.items())
    apply_candidate(s, second, vec(0.9, 0.436))  # links both memories
    whole = contents(s)
    for key, value in after_first.items():  # the changelog's older values, re-applied
        s.tables.memories[key] = value
    assert contents(s) != whole
    apply_candidate(s, first, vec(1, 0))
    apply_candidate(s, second, vec(0.9, 0.436))
    assert contents(s) == whole


@pytest.mark.parametrize("change", ["pinned", "summary"])
def test_an_old_candidate_re_sent_later_changes_nothing(change):
    first = cand("1", "Ana has a dog named Luna.")
    s = state()
    memory_id = apply_candidate(s, first, vec(1, 0)).memory_id
    doc = dict(s.tables.memories[memory_id])
    s.tables.memories[memory_id] = {**doc, change: True if change == "pinned" else "Ana has a cat."}
    later = contents(s)
    apply_candidate(s, first, vec(1, 0))
    assert contents(s) == later


def test_a_write_naming_a_vector_the_replayed_candidate_lacks_is_left_undone():
    second = cand("2", "Ana lives in Lisbon.").model_copy(update={
        "vector_b64": encode_vector(vec(0.6, 0.8)), "context_b64": encode_vector(vec(0.8, 0.6))})
    killed = state()
    writes = WriteSet(killed.tables)
    result = _apply(killed.over(writes.tables), second, vec(0.6, 0.8), None, candidate_id(second))
    applied.remember(killed.tables.applied, applied_key(second), result,
                     writes.listed(carried_values(second)))
    resent = second.model_copy(update={"vector_b64": None, "context_b64": None})
    again = apply_candidate(killed, resent, vec(0.6, 0.8))
    assert again.replayed
    assert candidate_id(second) not in killed.tables.memories, "not written without its vector"


def test_a_digest_is_the_sha256_of_the_values_sorted_json_whatever_its_length() -> None:
    """Its first 16 hex digits: a replay compares it with the digest of what a key holds now."""
    import hashlib

    from streams.memory.applied import digest
    for value in (None, {"b": 1, "a": [1, 2]}, {"summary": "x" * 5000, "ids": list(range(900))}):
        whole = hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()
        assert digest(value) == whole[:16]


def test_a_write_recorded_with_the_longer_digests_of_before_is_redone_by_them() -> None:
    """`applied`, `turn_log` and lifecycle records written before the upgrade hold 32 digits."""
    import hashlib

    def long_digest(value):
        return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]

    before, after = {"turns": ["a"]}, {"turns": ["a", "b"]}
    old_write = [long_digest(before), long_digest(after), patch_of(before, after)]
    rolled_back = {"k": before}
    assert applied.redo_change(rolled_back, "k", old_write) == after and rolled_back["k"] == after
    changed_since = {"k": {"turns": ["c"]}}
    assert applied.redo_change(changed_since, "k", old_write) is None
    assert changed_since["k"] == {"turns": ["c"]}, "a key changed since is left alone"
    assert applied.redo_change({"k": before}, "k", [long_digest(before)[:8], *old_write[1:]]) is None, \
        "too short a digest matches nothing"


def test_a_carried_object_is_named_and_a_replay_puts_it_back() -> None:
    turn = {"turn_id": "2", "text": "I adopted a dog named Luna last year."}
    before, after = {"turns": [{"turn_id": "1", "text": "hi"}]}, None
    after = {"turns": [*before["turns"], dict(turn)]}
    write = applied.change_naming(before, after, {"turn": turn})
    assert turn["text"] not in orjson.dumps(write).decode(), "named, not repeated"
    rolled_back = {"k": before}
    assert applied.redo_naming(rolled_back, "k", write, {"turn": turn}, "buffers") == after
    assert rolled_back["k"] == after
    untouched = {"k": before}
    assert applied.redo_naming(untouched, "k", write, {}, "buffers") is None and untouched["k"] == before, \
        "not made without the value it names"


# --- a memory's two views, listed and made as one record -----------------------------------
class _CountingDict(dict):
    """A raw table that counts its reads and writes."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        self.reads = self.writes = 0

    def __getitem__(self, key: object) -> object:
        self.reads += 1
        return super().__getitem__(key)

    def __setitem__(self, key: object, value: object) -> None:
        self.writes += 1
        super().__setitem__(key, value)


def _views(raw: dict, legacy: dict | None = None) -> "applied.MemoryTables":
    from streams.memory.memory_records import MemoryRecords
    from streams.memory.tables import MemoryTables

    records = MemoryRecords(raw, legacy_audit=legacy)
    return MemoryTables(memories=records.docs, audit=records.audit)


DOC = {"id": "m1", "user_id": "ana", "summary": "Ana has a dog."}
ENTRY = {"id": "e1", "memory_id": "m1", "user_id": "ana", "verb": "ADD"}


@pytest.mark.parametrize("doc, audit", [
    ("write", "write"), ("delete", "write"), ("write", "delete"), ("delete", "delete"),
])
@pytest.mark.parametrize("stored", [None, "record", "legacy"])
def test_a_memorys_document_and_audit_list_written_together_are_one_write(doc, audit, stored):
    def setup() -> tuple[_CountingDict, dict]:
        raw, legacy = _CountingDict(), {}
        if stored == "record":
            _views(raw).memories["m1"] = DOC
            _views(raw).audit["m1"] = [ENTRY]
        elif stored == "legacy":  # written before memory records: a bare document, its list apart
            dict.__setitem__(raw, "m1", DOC)
            legacy["m1"] = [ENTRY]
        raw.reads = raw.writes = 0
        return raw, legacy

    def change(tables) -> None:  # type: ignore[no-untyped-def]
        new_doc, new_audit = {**DOC, "summary": "Ana has two dogs."}, [ENTRY, {**ENTRY, "id": "e2"}]
        if doc == "write":
            tables.memories["m1"] = new_doc
        elif "m1" in tables.memories:
            del tables.memories["m1"]
        if audit == "write":
            tables.audit["m1"] = new_audit
        elif "m1" in tables.audit:
            del tables.audit["m1"]

    raw, legacy = setup()
    writes = WriteSet(_views(raw, legacy), ("memories", "audit"))
    change(writes.tables)
    reads_before = raw.reads
    listed = writes.listed()
    reads_listing = raw.reads - reads_before
    writes.make()
    # what the two views' writes made one after the other leave (the way before)
    one_by_one_raw, one_by_one_legacy = setup()
    one_by_one = _views(one_by_one_raw, one_by_one_legacy)
    change(one_by_one)
    assert dict(raw) == dict(one_by_one_raw) and legacy == one_by_one_legacy
    assert listed == [[name, key, *applied.change(before, after)]
                      for name, key, _, _, _ in listed
                      for before, after in [(getattr(_views(*setup()), name).get(key),
                                             getattr(_views(raw, legacy), name).get(key))]]
    if stored is not None:
        assert reads_listing == 1, "the record is read once for both views"
    assert raw.writes <= 1, "and written once"
