"""`memory.candidates` (`streams.pipeline.dedup.parse_candidate`) under hostile input: a usable
`Candidate` or `ChatCommand`, or the named reason the stage dead-letters it with — never an
exception."""
from __future__ import annotations

import json

from hypothesis import given

from streams.errors import InvalidRecord
from streams.pipeline.dedup import parse_candidate
from streams.pipeline.records import Record
from streams.privacy.crypto import new_key
from streams.privacy.payloads import seal_record
from streams.privacy.sealed import Sealer
from streams.privacy.user_keys import UserKeys
from tests.fuzzing import assert_usable, fuzz_settings, hostile_bytes
from tests.unit.fuzz.records import candidates

SEALER = Sealer(UserKeys({}, new_key()))


def record(raw: bytes | None) -> Record:
    return Record(topic="memory.candidates", partition=0, offset=0, key=b"u1", value=raw)


@fuzz_settings(250)
@given(raw=hostile_bytes(candidates))
def test_any_record_gives_a_usable_candidate_or_a_named_reason(raw):
    parsed = parse_candidate(record(raw), SEALER)
    if isinstance(parsed, InvalidRecord):
        assert parsed.reason in ("invalid_candidate", "sealed_unreadable")
    else:
        assert_usable(parsed)


@fuzz_settings(100)
@given(data=candidates)
def test_valid_candidates_parse_in_clear_and_sealed(data):
    clear = parse_candidate(record(json.dumps(data).encode()), SEALER)
    sealed = parse_candidate(record(seal_record(SEALER, "u1", data)), SEALER)
    assert clear == sealed and clear.fact.summary == data["fact"]["summary"]
