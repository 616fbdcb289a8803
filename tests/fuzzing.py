"""Hypothesis settings and strategies shared by the fuzz tests (tests/unit/fuzz: every input
parser; tests/integration/test_fuzz_routes.py: every HTTP route).

Every generated string that could carry user content carries `MARKER`, a distinctive text that
must never come back in an error message: a parser that names what it rejected without echoing
it passes, one that quotes the input fails.

Reproducible: `derandomize=True` and no example database, so CI and a laptop draw the same
examples; `deadline=None`, so nothing depends on the machine's speed.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone
from typing import Any

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from pydantic import BaseModel

MARKER = "Zq7fuzzMarkerXw"
"""A distinctive piece of user content; no whitespace or slash, so it is also a valid id."""


def fuzz_settings(max_examples: int, shrink: bool = True) -> settings:
    """Bounded, reproducible and speed-independent settings for one property. Without `shrink`
    a failure is reported as found (shrinking against a live server costs many requests)."""
    phases = [Phase.explicit, Phase.generate, *([Phase.shrink] if shrink else [])]
    return settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
                    print_blob=False, phases=phases,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


# --- pieces of JSON that `json.dumps` cannot write --------------------------------------------
_SPLICES = {
    "\x00splice:bigint": "9" * 5000,  # above Python's int-from-str digit limit (4300)
    "\x00splice:deep_array": "[" * 50_000 + "]" * 50_000,
    "\x00splice:deep_object": '{"a":' * 50_000 + "1" + "}" * 50_000,
    "\x00splice:nan": "NaN",
    "\x00splice:infinity": "-Infinity",
    "\x00splice:huge_exponent": "1e999999",
}
SPLICES = st.sampled_from(sorted(_SPLICES))


def dumps(value: Any) -> str:
    """JSON text of `value`, with each splice placeholder replaced by its raw JSON."""
    text = json.dumps(value, ensure_ascii=True)  # a lone surrogate becomes a "\\ud800" escape
    for placeholder, raw in _SPLICES.items():
        text = text.replace(json.dumps(placeholder), raw)
    return text


# --- strings ----------------------------------------------------------------------------------
_EDGE_TEXT = [
    "", " ", "\t\n", "\x00", "\x1b[31m", "\r\n", "\u2028\u2029", "\u202e", "\ufeff", "\u200b",
    "\ud800", "\udfff", "\ud83d\ude00", "e\u0301", "\U0010ffff", "\ufffd", "a/b", "a|b", "a:b",
    "..", "%00", "%2F", "<script>", "' OR 1=1 --", "{{7*7}}", "${jndi:x}",
]
edge_text = st.sampled_from(_EDGE_TEXT)


def marked(inner: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[str]:
    """Text around `MARKER` (edge cases and arbitrary unicode, surrogates included)."""
    part = inner if inner is not None else (edge_text | st.text(max_size=8))
    return st.tuples(part, part).map(lambda ab: ab[0] + MARKER + ab[1])


marked_ids = st.one_of(
    st.just(MARKER),
    st.tuples(st.from_regex(r"\A[A-Za-z0-9_.:|-]{0,12}\Z"), st.just(MARKER)).map("".join),
    st.just(MARKER * 40),  # 600 chars: longer than any id may be
)
"""Ids that are valid as far as the characters go; one is too long."""

# --- times ------------------------------------------------------------------------------------
_OFFSETS = st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1).map(
    lambda m: timezone(timedelta(minutes=m)))
aware_times = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31),
                           timezones=_OFFSETS).map(datetime.isoformat)
plausible_times = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1),
                               timezones=st.just(timezone.utc)).map(datetime.isoformat)
_ABSURD_TIMES = st.sampled_from([
    "2024-05-01T10:00:00", "2024-05-01", "0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-23:59",
    "9999-12-31T23:59:59+00:00", "10000-01-01T00:00:00Z", "2024-13-45T25:61:61Z",
    "2024-05-01T10:00:00+24:00", "2024-02-30T00:00:00Z", "now", "-2024-05-01T10:00:00Z",
    "2024-05-01T10:00:00.1234567891Z", "1714557600",
])
hostile_times = st.one_of(
    _ABSURD_TIMES, _ABSURD_TIMES, aware_times,
    st.datetimes().map(datetime.isoformat),  # zone-less
    marked(),
)

# --- values -----------------------------------------------------------------------------------
huge_texts = st.sampled_from([MARKER * 20_000, ("\u00e9" + MARKER) * 15_000])
"""300 kB of text: more than any field or record limit allows."""

hostile_values: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=2**63, max_value=2**200),
    st.floats(allow_nan=False, allow_infinity=False), SPLICES, marked(), marked_ids, huge_texts,
    hostile_times, st.lists(marked(), max_size=3), st.dictionaries(marked(), marked(), max_size=2),
)
"""Whatever can replace a field: wrong types, NaN/Infinity, huge numbers and texts, unicode edge
cases, control characters, absurd or zone-less times, deep nesting."""

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | marked() | SPLICES,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        marked() | st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)
"""Arbitrary JSON documents (not only objects), with the marker in keys and strings."""


# --- records ----------------------------------------------------------------------------------
def _paths(value: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if isinstance(value, dict):
        for key, child in value.items():
            yield (*prefix, key)
            yield from _paths(child, (*prefix, key))


def _set(record: dict[str, Any], path: tuple[str, ...], value: Any, delete: bool = False) -> None:
    for key in path[:-1]:
        record = record[key]
    if delete:
        record.pop(path[-1], None)
    else:
        record[path[-1]] = value


@st.composite
def near_valid(draw: st.DrawFn, valid: st.SearchStrategy[dict[str, Any]]) -> Any:
    """A valid record (as JSON-ready data) with one thing wrong: a field missing, of the wrong
    type or value, a time that is not one, an unknown field (named with the marker), or the
    record inside an array."""
    record = json.loads(json.dumps(draw(valid)))
    paths = list(_paths(record))
    times = [p for p in paths if _is_time(_get(record, p))]
    how = draw(st.sampled_from(["replace", "replace", "delete", "extra", "array", "time"]))
    if how == "time" and times:  # the right type, the wrong value: zone-less, absurd, not a time
        _set(record, draw(st.sampled_from(times)), draw(hostile_times))
        return record
    if how == "array":
        return [record]
    if how == "extra" or not paths:
        target = draw(st.sampled_from([(), *[p for p in paths if isinstance(_get(record, p), dict)]]))
        _set(record, (*target, draw(marked())), draw(hostile_values))
        return record
    path = draw(st.sampled_from(paths))
    _set(record, path, draw(hostile_values), delete=how == "delete")
    return record


def _is_time(value: Any) -> bool:
    try:
        datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return False
    return True


def _get(record: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        record = record[key]
    return record


def encoded(texts: st.SearchStrategy[str]) -> st.SearchStrategy[bytes]:
    """JSON text as bytes the way a careless producer may send it: UTF-8 (mostly), with a BOM,
    as UTF-16, truncated, or with trailing garbage."""
    def encode(args: tuple[str, str, int]) -> bytes:
        text, how, cut = args
        raw = text.encode("utf-8", "surrogatepass")
        return {
            "utf8": raw,
            "bom": b"\xef\xbb\xbf" + raw,
            "utf16": text.encode("utf-16", "surrogatepass"),
            "truncated": raw[: cut % max(len(raw), 1)],
            "trailing": raw + b"\x00,}",
        }[how]

    hows = st.sampled_from(["utf8", "utf8", "utf8", "utf8", "bom", "utf16", "truncated", "trailing"])
    return st.tuples(texts, hows, st.integers(min_value=0, max_value=10**6)).map(encode)


def hostile_bytes(valid: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[bytes]:
    """Random bytes, arbitrary JSON, and near-valid records, each encoded in one of many ways."""
    return st.one_of(
        st.binary(max_size=64),
        st.binary(max_size=16).map(lambda b: b + MARKER.encode()),
        encoded(json_values.map(dumps)),
        encoded(near_valid(valid).map(dumps)),
        near_valid(valid).map(lambda record: dumps(record).encode()),
    )


def own_key(raw: bytes) -> bytes | None:
    """The key a well-behaved producer would set: the record's user_id, when it has one."""
    try:
        user_id = json.loads(raw)["user_id"]
    except Exception:  # noqa: BLE001 - not a record with a user_id: no key
        return None
    return user_id.encode("utf-8", "surrogatepass") if isinstance(user_id, str) else None


# --- what a parser returns ------------------------------------------------------------------
def _datetimes(value: Any) -> Iterator[datetime]:
    if isinstance(value, datetime):
        yield value
    elif isinstance(value, dict):
        for child in value.values():
            yield from _datetimes(child)
    elif isinstance(value, (list, tuple)):
        for child in value:
            yield from _datetimes(child)


def assert_usable(model: BaseModel) -> None:
    """What a parser returns can be written back to the wire and read again, and each of its
    aware times is a real instant (it converts to UTC, with a day to spare either side)."""
    model_type = type(model)
    model_type.model_validate_json(model.model_dump_json(by_alias=True))
    for value in _datetimes(model.model_dump()):
        if value.tzinfo is not None:
            utc = value.astimezone(timezone.utc)
            assert date.min < utc.date() < date.max, value


def assert_content_free(*messages: object) -> None:
    """No error message carries the marker (the input's content)."""
    for message in messages:
        assert MARKER not in str(message), message

