"""`memory.candidates` (`streams.pipeline.dedup.parse_candidate`) under hostile input: a usable
`Candidate` or None (the stage dead-letters it), never an exception."""
from __future__ import annotations

import json

from hypothesis import given

from streams.pipeline.dedup import parse_candidate
from streams.pipeline.records import Record
from tests.fuzzing import assert_usable, fuzz_settings, hostile_bytes
from tests.unit.fuzz.records import candidates


def record(raw: bytes | None) -> Record:
    return Record(topic="memory.candidates", partition=0, offset=0, key=b"u1", value=raw)


@fuzz_settings(250)
@given(raw=hostile_bytes(candidates))
def test_any_record_gives_a_usable_candidate_or_none(raw):
    candidate = parse_candidate(record(raw))
    if candidate is not None:
        assert_usable(candidate)


@fuzz_settings(100)
@given(data=candidates)
def test_valid_candidates_parse(data):
    candidate = parse_candidate(record(json.dumps(data).encode()))
    assert candidate is not None and candidate.fact.summary == data["fact"]["summary"]
