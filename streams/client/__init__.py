"""memstream's client, for a chat backend and its agents: add conversations (and wait until
they are applied), query, search, list, read, edit, pin, delete, forget and export memories,
watch memory events, consume proactivity candidates. `MemstreamClient` blocks;
`AsyncMemstreamClient` is the same on asyncio.

    from streams.client import MemstreamClient

    with MemstreamClient.from_settings() as memory:   # or broker=, api_url=, api_key=
        added = memory.add([{"role": "user", "content": "I adopted a dog named Luna."}],
                           user_id="ana", thread_id="t1", speaker="Ana")
        print([m.summary for m in added.memories])     # applied: read-your-writes
        for item in memory.search("ana", "What pet does Ana have?"):
            print(item.score, item.summary)

Turns go to `chat.turns` keyed by `user_id` through an idempotent producer (`acks=all`);
answers are typed with the wire schemas of `topics/`; every failure is a `ClientError`.
See examples/chat_backend.py.
"""
from __future__ import annotations

from streams.client.aio import AsyncMemstreamClient
from streams.api.registry_models import AuditEntry, Export, MemoryView, WriteResult
from streams.client.errors import (
    ApiError,
    ApiUnreachable,
    ApplyTimeout,
    AuthenticationError,
    ClientError,
    ConfigurationError,
    Conflict,
    ConsumeError,
    InvalidRequest,
    NotFound,
    PermissionDenied,
    ProduceError,
    RateLimited,
    Rejected,
    Unavailable,
)
from streams.client.messages import UnsupportedMessage
from streams.client.models import AddResult, Delivery, MemoryPage, QueryResult, StreamReset, TurnResult
from streams.client.sync import MemstreamClient
from topics.progress import TurnProgress
from topics.events import MemoryEvent
from topics.proactivity import ProactivityCandidate
from topics.query import BulletItem, FullItem
from topics.turns import Role, Turn

__all__ = [
    "AddResult", "ApiError", "ApiUnreachable", "ApplyTimeout", "AsyncMemstreamClient", "AuditEntry",
    "AuthenticationError", "BulletItem", "ClientError", "ConfigurationError", "Conflict",
    "ConsumeError", "Delivery", "Export", "FullItem", "InvalidRequest", "MemoryEvent",
    "MemoryPage", "MemoryView", "MemstreamClient", "NotFound", "PermissionDenied",
    "ProactivityCandidate", "ProduceError", "QueryResult", "RateLimited", "Rejected", "Role",
    "StreamReset", "Turn", "TurnProgress", "TurnResult", "Unavailable", "UnsupportedMessage",
    "WriteResult",
]
