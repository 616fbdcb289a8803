"""`memory.candidates` (`streams.pipeline.dedup.parse_candidates`) under hostile input: usable
`Candidate`s and `ChatCommand`s, or the named reason the stage dead-letters the record with —
never an exception."""
from __future__ import annotations

import json

import orjson
from hypothesis import assume, given

from streams.errors import InvalidRecord
from streams.pipeline.dedup import parse_candidates
from streams.pipeline.records import Record
from streams.privacy.crypto import new_key
from streams.privacy.payloads import seal_record
from streams.privacy.sealed import Sealer
from streams.privacy.user_keys import UserKeys
from tests.fuzzing import assert_usable, fuzz_settings, hostile_bytes
from tests.unit.fuzz.records import candidates

SEALER = Sealer(UserKeys({}, new_key()))


def fits_64_bits(data: object) -> bool:
    try:
        orjson.dumps(data)
    except TypeError:
        return False
    return True


def record(raw: bytes | None) -> Record:
    return Record(topic="memory.candidates", partition=0, offset=0, key=b"u1", value=raw)


@fuzz_settings(250)
@given(raw=hostile_bytes(candidates))
def test_any_record_gives_a_usable_candidate_or_a_named_reason(raw):
    parsed = parse_candidates(record(raw), SEALER)
    if isinstance(parsed, InvalidRecord):
        assert parsed.reason in ("invalid_candidate", "sealed_unreadable")
    else:
        assert parsed, "a record that parses holds an item at least"
        for item in parsed:
            assert_usable(item)


@fuzz_settings(100)
@given(data=candidates)
def test_valid_candidates_parse_in_clear_and_sealed(data):
    assume(fits_64_bits(data))  # ingest refuses a turn with a larger integer (parse_turn)
    clear = parse_candidates(record(json.dumps(data).encode()), SEALER)
    sealed = parse_candidates(record(seal_record(SEALER, "u1", data)), SEALER)
    several = parse_candidates(record(seal_record(SEALER, "u1", [data, data])), SEALER)
    assert clear == sealed == several[:1] and len(several) == 2
    assert clear[0].fact.summary == data["fact"]["summary"]
