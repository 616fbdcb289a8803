"""memstream's client, for a chat backend and its agents: produce turns, query memory, watch
memory events, consume proactivity candidates. `MemstreamClient` blocks;
`AsyncMemstreamClient` is the same on asyncio.

    from streams.client import MemstreamClient, Turn

    with MemstreamClient(broker="127.0.0.1:9092", api_url="http://127.0.0.1:6066",
                         api_key="msk_...") as memory:
        memory.send_turn(Turn(user_id="ana", thread_id="t1", turn_id="1", role="user",
                              text="I adopted a dog named Luna.", ts=datetime.now(timezone.utc)))
        answer = memory.query("ana", "What pet does Ana have?")
        prompt_context = answer.context

Turns go to `chat.turns` keyed by `user_id` through an idempotent producer (`acks=all`);
answers are typed with the wire schemas of `topics/`; every failure is a `ClientError`.
See examples/chat_backend.py.
"""
from __future__ import annotations

from streams.client.aio import AsyncMemstreamClient
from streams.client.errors import (
    ApiError,
    ApiUnreachable,
    AuthenticationError,
    ClientError,
    ConfigurationError,
    ConsumeError,
    InvalidRequest,
    NotFound,
    PermissionDenied,
    ProduceError,
    RateLimited,
    Unavailable,
)
from streams.client.models import Delivery, QueryResult, StreamReset
from streams.client.sync import MemstreamClient
from topics.events import MemoryEvent
from topics.proactivity import ProactivityCandidate
from topics.query import BulletItem, FullItem
from topics.turns import Role, Turn

__all__ = [
    "ApiError", "ApiUnreachable", "AsyncMemstreamClient", "AuthenticationError", "BulletItem",
    "ClientError", "ConfigurationError", "ConsumeError", "Delivery", "FullItem", "InvalidRequest",
    "MemoryEvent", "MemstreamClient", "NotFound", "PermissionDenied", "ProactivityCandidate",
    "ProduceError", "QueryResult", "RateLimited", "Role", "StreamReset", "Turn", "Unavailable",
]
