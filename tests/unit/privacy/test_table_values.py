"""Sealed tables and `memory.candidates` records use a binary envelope of compressed JSON, and
still read the forms written before it (the JSON envelope; the binary one of JSON as it is,
deflated, deflated with the dictionary)
(`streams.privacy.table_values`): a worker upgraded over old tables and topics opens every
value."""
from __future__ import annotations

import os
import zlib
from datetime import datetime, timezone

import orjson
import pytest
import zstandard
from faust.serializers import codecs

from streams.privacy.crypto import SealError, new_key
from streams.privacy.payloads import open_record, seal_record
from streams.privacy import table_values
from streams.privacy.sealed import Sealer, SealedTable, user_first_in_key, user_in_value
from streams.privacy.binary_vectors import split
from streams.privacy.table_values import (COMPRESSED, DEFLATED, DICTIONARY_DEFLATED, FORMAT, VECTORS_COMPRESSED,
                                          VECTORS_DEFLATED, pack, unpack)
from streams.privacy.user_keys import UserKeys
from streams.privacy.value_dictionary import VALUE_DICTIONARY

DOC = {"id": "m1", "user_id": "ana", "summary": "Ana adopted a dog named Luna.",
       "embedding_b64": "h:" + "A" * 1024}


def old_value(sealer: Sealer, user_id: str, value: object) -> dict:
    """A table value as memstream wrote it before: the `Sealed` envelope, as a dict."""
    return sealer.seal(user_id, value).model_dump()


@pytest.fixture
def sealer() -> Sealer:
    return Sealer(UserKeys({}, new_key()))


def test_values_written_before_the_upgrade_open_and_are_rewritten_binary(sealer):
    raw: dict = {}
    old_dict = old_value(sealer, "ana", DOC)
    raw["m1"] = old_dict                                    # in process: the dict
    raw["m2"] = codecs.dumps("json", old_value(sealer, "ana", {**DOC, "id": "m2"}))  # a Faust table: the JSON text
    table = SealedTable(raw, sealer, user_in_value)

    assert table["m1"] == DOC and table["m2"]["id"] == "m2"
    assert dict(table.items()).keys() == {"m1", "m2"}

    table["m1"] = table["m1"]
    assert raw["m1"][:1] == VECTORS_COMPRESSED and table["m1"] == DOC
    assert len(raw["m1"]) < 0.8 * len(codecs.dumps("json", old_dict)), "a fifth smaller at least"


def test_a_value_deflated_without_the_dictionary_written_before_opens(sealer):
    body = zlib.compress(orjson.dumps(DOC), 1)
    raw = {"m1": DEFLATED + pack("ana", sealer.keys.seal_raw("ana", body))[1:]}
    table = SealedTable(raw, sealer, user_in_value)
    assert table["m1"] == DOC


def test_the_dictionary_shortens_a_memory_document_and_never_changes():
    """Values deflated with it inflate only with the same bytes: a new one is a new format."""
    import hashlib

    from streams.privacy.value_dictionary import VALUE_DICTIONARY, VALUE_DICTIONARY_SHA256
    assert hashlib.sha256(VALUE_DICTIONARY).hexdigest() == VALUE_DICTIONARY_SHA256 == \
        "9442a8f2a3866d8d78a2406697d9411552492f6a62718b9981cbf170222857e7"
    document = orjson.dumps({"$record": 2, "user_id": "bo", "memory": {
        "id": "3f1c", "user_id": "bo", "type": "semantic", "category": "Personal",
        "summary": "Bo plays the cello in a quartet on Fridays.", "tags": ["music", "hobby"],
        "created_at": "2024-02-01T09:00:00Z", "updated_at": "2024-02-01T09:00:00Z",
        "last_accessed": "2024-02-01T09:00:00Z", "source_turn_ids": ["s1:4"], "role": "user",
        "thread_id": "s1"}, "audit": [{"id": "9a0e", "memory_id": "3f1c", "user_id": "bo",
        "verb": "ADD", "actor": "system", "ts": "2024-02-01T09:00:00+00:00", "rev": 4,
        "thread_id": "s1", "old": None, "new": {"summary": "Bo plays the cello.",
        "state": "active", "pinned": False, "importance": 3, "category": "Personal"},
        "meta": {"similarity": 0.21, "reason": "below_bands", "source_turn_id": "s1:4"}}]})
    with_dictionary, form = table_values.compress(document)
    without = zstandard.ZstdCompressor(level=table_values.ZSTD_LEVEL).compress(document)
    assert form == COMPRESSED and len(with_dictionary) < 0.8 * len(without)
    assert table_values.decompress(with_dictionary, COMPRESSED) == document


def test_a_binary_value_of_json_as_it_is_written_before_deflating_opens(sealer):
    raw = {"m1": pack("ana", sealer.keys.seal_raw("ana", orjson.dumps(DOC)))}
    table = SealedTable(raw, sealer, user_in_value)
    assert raw["m1"][:1] == FORMAT and table["m1"] == DOC


def test_a_value_is_compressed_only_when_that_makes_it_shorter(sealer):
    table = SealedTable({}, sealer, user_in_value)
    table["short"] = {"user_id": "ana", "n": 1}
    table["doc"] = DOC
    assert table.table["short"][:1] == FORMAT, "too short to gain"
    assert table.table["doc"][:1] == VECTORS_COMPRESSED and len(table.table["doc"]) < 300
    assert table["doc"] == DOC and table["short"]["n"] == 1
    noise = os.urandom(3000)
    assert table_values.compress(noise) == (noise, FORMAT), "compressing would make it longer"


def old_zlib_value(plaintext: bytes) -> tuple[bytes, bytes]:
    """`plaintext` as the last release wrote it: deflated with the dictionary (zlib level 3, a
    16 KB window), its vectors split out in blocks of their own (format 4) when it has any."""
    deflater = zlib.compressobj(3, zlib.DEFLATED, 14, zdict=VALUE_DICTIONARY)
    parts = split(plaintext)
    if parts is None:
        return deflater.compress(plaintext) + deflater.flush(), DICTIONARY_DEFLATED
    blocks = [part for part in parts if part]
    out = [piece for block in blocks[:-1] for piece in (deflater.compress(block), deflater.flush(zlib.Z_BLOCK))]
    return b"".join([*out, deflater.compress(blocks[-1]), deflater.flush()]), VECTORS_DEFLATED


def test_values_deflated_with_the_dictionary_before_open(sealer):
    from streams.memory.vector_index import encode_vector
    import numpy as np
    with_vectors = {**DOC, "embedding_b64": encode_vector(np.ones(384, np.float32) / 20)}
    raw = {}
    for key, value in (("plain", {**DOC, "embedding_b64": "", "text": "Ana " * 50}), ("vectors", with_vectors)):
        body, form = old_zlib_value(orjson.dumps(value))
        raw[key] = pack("ana", sealer.keys.seal_raw("ana", body), form)
    assert raw["plain"][:1] == DICTIONARY_DEFLATED and raw["vectors"][:1] == VECTORS_DEFLATED
    table = SealedTable(raw, sealer, user_in_value)
    assert table["plain"]["text"] == "Ana " * 50 and table["vectors"] == with_vectors


def zstd_frame(data: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(data)


@pytest.mark.parametrize("form,body", [
    *((form, body) for form in (DEFLATED, DICTIONARY_DEFLATED, VECTORS_DEFLATED)
      for body in (b"not deflate", zlib.compress(b"x" * 5000)[:-6])),
    *((form, body) for form in (COMPRESSED, VECTORS_COMPRESSED)
      for body in (b"not zstd", zstd_frame(b"x" * 5000)[:-3], zlib.compress(b"x" * 5000),
                   zstandard.ZstdCompressor(write_content_size=False).compress(b"x" * 5000))),
], ids=lambda part: part.hex()[:8] if isinstance(part, bytes) else None)
def test_a_compressed_value_that_does_not_decompress_reads_as_absent(sealer, body, form):
    raw = {"k": pack("ana", sealer.keys.seal_raw("ana", body), form)}
    table = SealedTable(raw, sealer, user_in_value)
    assert table.get("k") is None and "k" in table


def test_a_value_that_would_inflate_past_the_limit_is_refused(sealer, monkeypatch):
    monkeypatch.setattr(table_values, "MAX_INFLATED", 1000)
    table = SealedTable({}, sealer, user_in_value)
    table["big"] = {"user_id": "ana", "text": "a" * 2000}
    assert table.table["big"][:1] == COMPRESSED
    assert SealedTable(table.table, sealer, user_in_value).get("big") is None  # opened afresh


def test_a_binary_value_names_its_user_and_opens_only_with_their_key(sealer):
    table = SealedTable({}, sealer, user_first_in_key)
    table['["ana","t"]'] = {"n": 1}
    stored = unpack(table.table['["ana","t"]'])
    assert stored.user_id == "ana" and stored.by == "user"
    assert sealer.open_stored(stored) == b'{"n":1}'
    with pytest.raises(SealError):
        sealer.keys.open_raw("bo", stored.sealed)


@pytest.mark.parametrize("value", [b"", b"\x01", b"\x01\x00\x00\x05ana", b"\x01\x07\x00\x03anaXXXX",
                                   b"not json", b'{"user_id": "ana"}', {"sealed": "x"}, 42])
def test_anything_else_is_not_a_sealed_value(value):
    with pytest.raises(SealError):
        unpack(value)


def test_a_damaged_stored_value_reads_as_absent(sealer):
    table = SealedTable({"k": b"\x01garbage"}, sealer, user_first_in_key)
    assert table.get("k") is None and "k" in table


def test_pack_round_trips_any_user_id():
    user = "ü" * 300
    assert unpack(pack(user, b"\x01" + b"s" * 40)).user_id == user


def test_a_sealed_record_is_binary_and_one_sealed_before_as_json_still_opens(sealer):
    candidate = {"kind": "fact", "summary": "Ana adopted a dog named Luna.", "vector_b64": "h:" + "A" * 1024}
    record = seal_record(sealer, "ana", candidate)
    before = sealer.seal("ana", candidate).model_dump_json().encode()  # as memory.candidates held it
    assert record[:1] == VECTORS_COMPRESSED and len(record) < 0.8 * len(before)
    assert open_record(sealer, record) == candidate == open_record(sealer, before)
    assert open_record(sealer, b'{"in": "clear"}') == {"in": "clear"}


@pytest.mark.parametrize("raw", [b"\x01", b"\x01\x00\x00\x09ana", b"not json"])
def test_a_record_that_is_no_sealed_record_is_refused_as_invalid(sealer, raw):
    with pytest.raises(ValueError):
        open_record(sealer, raw)


def test_a_record_sealed_for_a_purged_user_does_not_open(sealer):
    record = seal_record(sealer, "ana", {"n": 1})
    sealer.keys.shred("ana", datetime(2026, 1, 1, tzinfo=timezone.utc))
    with pytest.raises(SealError):
        open_record(sealer, record)


def test_a_documents_vectors_are_compressed_as_bytes_and_read_back_as_they_were(sealer):
    """Base64 hides the float16 values' redundancy from the compressor; as bytes, in blocks of
    their own, a memory record's vectors take less (`streams.privacy.binary_vectors`)."""
    import numpy as np

    from streams.memory.vector_index import encode_context_vector, encode_vector
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(2, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    doc = {**DOC, "embedding_b64": encode_vector(vectors[0]),
           "context_b64": encode_context_vector(vectors[1]),
           "note": 'a summary that quotes \"h:AAAA\" stays text'}
    plaintext = orjson.dumps(doc)
    body, form = table_values.compress(plaintext)
    assert form == VECTORS_COMPRESSED and table_values.decompress(body, form) == plaintext
    dictionary = zstandard.ZstdCompressionDict(VALUE_DICTIONARY, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    as_text = zstandard.ZstdCompressor(level=table_values.ZSTD_LEVEL, dict_data=dictionary).compress(plaintext)
    assert len(body) < len(as_text) - 60
    table = SealedTable({}, sealer, user_in_value)
    table["m1"] = doc
    assert SealedTable(table.table, sealer, user_in_value)["m1"] == doc  # opened afresh


@pytest.mark.parametrize("form", [VECTORS_DEFLATED, VECTORS_COMPRESSED])
@pytest.mark.parametrize("cut", [1, 5, 200])
def test_a_value_whose_vectors_do_not_fit_back_reads_as_absent(sealer, cut, form):
    from streams.memory.vector_index import encode_vector
    import numpy as np
    plaintext = orjson.dumps({**DOC, "embedding_b64": encode_vector(np.ones(384, np.float32) / 20)})
    inflated = b"".join(split(plaintext))[:-cut]
    body = zlib.compress(inflated) if form == VECTORS_DEFLATED else zstd_frame(inflated)
    raw = {"k": pack("ana", sealer.keys.seal_raw("ana", body), form)}
    assert SealedTable(raw, sealer, user_in_value).get("k") is None


def test_a_split_value_with_an_odd_float16_length_does_not_join():
    from streams.privacy.binary_vectors import SplitValueError, joined
    json_text = b'{"e":\x00,"f":\x00}'  # two float16 vectors of 3 and 1 bytes: 4 in all
    table = b"\x01" + (3).to_bytes(4, "big") + b"\x01" + (1).to_bytes(4, "big")
    value = len(json_text).to_bytes(4, "big") + json_text + table + b"abcd"
    with pytest.raises(SplitValueError):
        joined(value)
