"""How `MemstreamStore` (streams.client.langgraph_store) names LangGraph's items in memstream:
namespaces and keys as chat threads, values as the text a put remembers, TTLs in turn ids, and
LangGraph's filters as memory.query's or the registry list's.

A put of `(prefix, user, *tail)`/`key` is a chat turn of `user` in a thread that spells the
tail and the key (`thread_for`, reversible: `item_name` reads them back from a memory's
`thread_id`), so the key put is the key got, from any store, without a table of our own.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from langgraph.store.base import MatchCondition
from langgraph.store.base.embed import get_text_at_path

from streams.client.errors import ClientError

TEXT_FIELDS = ("summary", "text", "content", "memory")
"""Where `put` finds a value's text, the first that is set (unless `index` names fields)."""
THREAD_PREFIX = "lg."
"""A store thread: this, then the base64url JSON of `[tail, key]` (`thread_for`)."""
LEGACY_THREAD_PREFIX = "langgraph-"
"""The threads of the store before keys were kept (`legacy_thread_of`: a digest of the key)."""
TURN_PREFIX = "put-"
"""A put's turn id: this, a digest of namespace, key, value and TTL, then `~<minutes>` if any."""
TTL_MARK = "~"
MAX_ID = 200
"""The longest thread or turn id (`topics.turns.Identifier`)."""
EQUALITY_FILTERS = ("category", "pinned", "agent_id", "run_id", "actor_id", "role")
QUERY_FILTERS = (*EQUALITY_FILTERS, "importance", "updated_at")
"""Filters a search with a query takes: equality on EQUALITY_FILTERS; `importance` with $eq,
$gt, $gte, $lt, $lte; `updated_at` with $gte, $lte (ISO 8601 times or dates)."""
LIST_FILTERS = ("category", "pinned")
"""Filters a search without a query takes (the registry's list): equality."""


class StoreError(ClientError):
    """Root of the errors of `MemstreamStore` of its own (the API's are the client's `ApiError`s)."""


class UnsupportedNamespaceError(StoreError, ValueError):
    """The namespace does not start `(prefix, user_id)`."""


class UnsupportedFilterError(StoreError, ValueError):
    """The filter names a field or operator memstream cannot apply for this search."""


class MissingTextError(StoreError, ValueError):
    """A put's value has nothing to remember: no text at the fields `index` names, or (without
    `index`) neither text nor a field with a value (`{}`, every field None or empty)."""


class KeyTooLongError(StoreError, ValueError):
    """The namespace below the user and the key do not fit in a chat thread id (200 characters
    once encoded: about 140 bytes of JSON)."""


# --- namespaces and keys as threads ---------------------------------------------------------

def thread_for(tail: tuple[str, ...], key: str) -> str:
    """The chat thread of the puts of `key` in the namespace below the user, `tail`: one per
    (tail, key), so the turns of a store never make an episode together, and reversible."""
    spelled = json.dumps([list(tail), key], ensure_ascii=False, separators=(",", ":"))
    thread = THREAD_PREFIX + base64.urlsafe_b64encode(spelled.encode("utf-8")).decode().rstrip("=")
    if len(thread) > MAX_ID:
        raise KeyTooLongError(f"namespace {tail!r} and key {key[:40]!r}… do not fit in a thread id")
    return thread


def item_name(thread_id: str | None) -> tuple[tuple[str, ...], str] | None:
    """(tail, key) of a store thread; None for a thread no store wrote (a chat's own)."""
    if not thread_id or not thread_id.startswith(THREAD_PREFIX):
        return None
    encoded = thread_id[len(THREAD_PREFIX):]
    try:
        tail, key = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    except (binascii.Error, ValueError, TypeError):
        return None
    if not isinstance(key, str) or not isinstance(tail, list) or not all(isinstance(t, str) for t in tail):
        return None
    return tuple(tail), key


def legacy_thread_of(key: str) -> str:
    """The thread the store of an earlier version put `key` in (read, never written)."""
    return LEGACY_THREAD_PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


# --- turn ids: the value put, and its TTL ----------------------------------------------------

def turn_of(namespace: tuple[str, ...], key: str, value: Mapping[str, Any], index: Any = None,
            ttl: float | None = None) -> str:
    """The turn id of a put: a digest of the namespace, key, value (and `index`, TTL), then
    the TTL in minutes. A changed value is a new turn, which memstream processes; the same value
    put again is the same turn, which memstream applies once (a replay), and tells the store
    the value is the one its memory was made from."""
    canonical = json.dumps([list(namespace), key, value, index, ttl], sort_keys=True,
                           ensure_ascii=False, separators=(",", ":"), default=str)
    turn = TURN_PREFIX + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]
    return turn + (f"{TTL_MARK}{ttl:g}" if ttl is not None else "")


def ttl_of(source_turn_ids: list[str], thread_id: str) -> float | None:
    """The TTL (minutes) of the latest put of the thread a memory holds; None: it never expires."""
    for ref in reversed(source_turn_ids):
        thread, _, turn = ref.rpartition(":")
        if thread == thread_id and turn.startswith(TURN_PREFIX):
            _, mark, minutes = turn.partition(TTL_MARK)
            try:
                return float(minutes) if mark else None
            except ValueError:
                return None
    return None


def expires_at(doc: Mapping[str, Any], ttl: float | None) -> datetime | None:
    """When a memory put with `ttl` minutes expires: that long after its last write or read
    (the later of `updated_at` and `last_accessed`, which memstream's reads refresh)."""
    if ttl is None:
        return None
    times = [datetime.fromisoformat(str(doc[f]).replace("Z", "+00:00"))
             for f in ("updated_at", "last_accessed") if doc.get(f)]
    return max(times) + timedelta(minutes=ttl) if times else None


# --- values as text ---------------------------------------------------------------------------

def text_of(value: Mapping[str, Any], index: Any) -> str:
    """The text a put remembers: at the fields `index` names; else the first of TEXT_FIELDS;
    else, for a value without prose (`{"theme": "dark"}`), its fields said in the first
    person ("my theme is dark"), which memstream stores as a profile fact of the user."""
    if isinstance(index, list):
        texts = [t.strip() for f in index for t in get_text_at_path(value, f) if t.strip()]
        if not texts:
            raise MissingTextError(f"no text to remember at {index}")
        return " ".join(texts)
    for field in TEXT_FIELDS:
        if isinstance(value.get(field), str) and value[field].strip():
            return value[field].strip()
    said = [f"my {label} is {text}" for label, text in _fields(value, ())]
    if not said:
        raise MissingTextError(f"no text to remember: none of {list(TEXT_FIELDS)} is set, and no "
                               "field has a value")
    return (", ".join(said[:-1]) + " and " + said[-1] if len(said) > 1 else said[0]) + "."


def _fields(value: Any, path: tuple[str, ...]) -> list[tuple[str, str]]:
    """(label, text) of each field with a value: nested fields' labels joined ("ui theme"),
    lists of plain values said as one ("red, blue")."""
    if isinstance(value, Mapping):
        return [said for k, v in value.items() for said in _fields(v, (*path, str(k)))]
    label = " ".join(path).replace("_", " ").strip()
    if isinstance(value, list):
        plain = [_plain(v) for v in value if not isinstance(v, (Mapping, list))]
        plain = [p for p in plain if p]
        nested = [s for v in value if isinstance(v, (Mapping, list)) for s in _fields(v, path)]
        return ([(label, ", ".join(plain))] if plain and label else []) + nested
    text = _plain(value)
    return [(label, text)] if text and label else []


def _plain(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value).strip()


# --- filters ------------------------------------------------------------------------------

def query_filters(filter: Mapping[str, Any] | None) -> dict[str, Any]:
    """A LangGraph filter as memory.query's `filters` (QUERY_FILTERS), or UnsupportedFilterError."""
    out: dict[str, Any] = {}
    for name, condition in (filter or {}).items():
        for op, value in _conditions(condition):
            if name in EQUALITY_FILTERS and op == "$eq":
                out[name] = value
            elif name == "importance" and op in ("$eq", "$gte", "$gt") and isinstance(value, int):
                out["importance_min"] = value + (op == "$gt")
                if op == "$eq":
                    out["importance_max"] = value
            elif name == "importance" and op in ("$lte", "$lt") and isinstance(value, int):
                out["importance_max"] = value - (op == "$lt")
            elif name == "updated_at" and op in ("$gte", "$lte"):
                out["updated_after" if op == "$gte" else "updated_before"] = value
            else:
                raise UnsupportedFilterError(
                    f"memory.query cannot filter {name!r} with {op}; it takes {', '.join(QUERY_FILTERS)}")
    return out


def list_params(filter: Mapping[str, Any] | None) -> dict[str, Any]:
    """A LangGraph filter as the registry list's arguments (LIST_FILTERS), as the client's
    `memories` takes them."""
    out: dict[str, Any] = {}
    for name, condition in (filter or {}).items():
        for op, value in _conditions(condition):
            if name == "category" and op == "$eq" and isinstance(value, str):
                out["category"] = value
            elif name == "pinned" and op == "$eq" and isinstance(value, bool):
                out["pinned"] = value
            else:
                raise UnsupportedFilterError(
                    f"a search without a query filters on {', '.join(LIST_FILTERS)} only "
                    f"(equality); give a query to filter {name!r}")
    return out


def _conditions(condition: Any) -> list[tuple[str, Any]]:
    """`{"$op": value, ...}`, or a bare value for $eq."""
    if isinstance(condition, Mapping):
        return list(condition.items())
    return [("$eq", condition)]


def matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """LangGraph's prefix/suffix match, with "*" matching any one label."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    labels = namespace[:len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(p == "*" or p == label for p, label in zip(path, labels))
