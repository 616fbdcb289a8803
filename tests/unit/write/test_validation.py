import json

import pytest

from streams.errors import InvalidRecord
from streams.write.validation import parse_turn

GOOD = {
    "user_id": "u1", "thread_id": "t1", "turn_id": "1", "role": "user", "speaker": "Ana",
    "text": "I adopted a dog named Luna.", "ts": "2024-05-01T10:00:00+00:00",
}


def parse(payload: bytes, key: bytes | None = b"u1", max_chars: int = 1000):
    return parse_turn(payload, key, max_bytes=10_000, max_chars=max_chars)


def test_valid_turn_parses():
    turn = parse(json.dumps(GOOD).encode())
    assert turn.ref == "t1:1"
    assert turn.speaker_name == "Ana"


@pytest.mark.parametrize(
    "payload,key,reason",
    [
        (b"", b"u1", "empty"),
        (b"x" * 10_001, b"u1", "oversized"),
        (b"\xff\xfe{", b"u1", "not_utf8"),
        (b"{not json", b"u1", "malformed_json"),
        (b"[1, 2]", b"u1", "invalid_schema"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "text"}).encode(), b"u1", "invalid_schema"),
        (json.dumps({**GOOD, "role": "robot"}).encode(), b"u1", "invalid_schema"),
        (json.dumps({**GOOD, "text": 42}).encode(), b"u1", "invalid_schema"),
        (json.dumps({**GOOD, "ts": "2024-05-01T10:00:00"}).encode(), b"u1", "invalid_schema"),
        (json.dumps({**GOOD, "text": "a" * 1001}).encode(), b"u1", "oversized_text"),
        # the stages write JSON with 64-bit integers: a turn they could not write is refused
        (json.dumps({**GOOD, "metadata": {"n": 2**70}}).encode(), b"u1", "invalid_schema"),
        (json.dumps(GOOD).encode(), None, "missing_key"),
        (json.dumps(GOOD).encode(), b"someone-else", "key_mismatch"),
    ],
)
def test_bad_records_name_their_reason(payload, key, reason):
    with pytest.raises(InvalidRecord) as info:
        parse(payload, key)
    assert info.value.reason == reason


def test_schema_error_does_not_leak_content():
    secret_text = "my password is hunter2"
    payload = json.dumps({**GOOD, "role": secret_text}).encode()
    with pytest.raises(InvalidRecord) as info:
        parse(payload)
    assert "hunter2" not in str(info.value)
