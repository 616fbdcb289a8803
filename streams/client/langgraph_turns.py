"""Feeding a LangGraph graph's conversation into `chat.turns`, which is how memstream learns:
`memory_node` makes a graph node that sends the state's latest exchange through the client's
`add` (streams.client.messages reads LangChain's messages), as the user and thread the run's
config names.

    graph.add_node("remember", memory_node(client))        # after the model's reply
    graph.add_edge("agent", "remember")
    graph.invoke({"messages": [...]}, {"configurable": {"user_id": "ana", "thread_id": "t1"}})

Each message's own id (LangGraph's `add_messages` gives every message one) is its turn id, so a
message sent twice is applied once.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig

from streams.client.aio import AsyncMemstreamClient
from streams.client.errors import ConfigurationError
from streams.client.messages import role_of
from streams.client.models import AddResult
from streams.client.sync import MemstreamClient
from topics.turns import Role

Node = Callable[[Mapping[str, Any], Mapping[str, Any]], Any]


class MissingRunIdentity(ConfigurationError):
    """The run's config names no user (or thread): `configurable.user_id` / `thread_id`."""


def latest_exchange(messages: Sequence[Any]) -> list[Any]:
    """The messages from the last user message on (that message, the replies and tool calls
    after it): what a node run after each reply has not sent yet."""
    for position in range(len(messages) - 1, -1, -1):
        if role_of(messages[position]) is Role.user:
            return list(messages[position:])
    return list(messages)


def run_identity(config: Mapping[str, Any], user_key: str, thread_key: str) -> tuple[str, str]:
    configurable = config.get("configurable") or {}
    user, thread = configurable.get(user_key), configurable.get(thread_key)
    if not user or not thread:
        raise MissingRunIdentity(f"the run's config needs configurable.{user_key} and "
                                 f"configurable.{thread_key} to send its messages to memstream")
    return str(user), str(thread)


def memory_node(client: AsyncMemstreamClient | MemstreamClient, *, messages_key: str = "messages",
                user_key: str = "user_id", thread_key: str = "thread_id",
                speaker: str | None = None, wait: bool = False,
                every_message: bool = False) -> Node:
    """A node sending the state's latest exchange (`every_message`: all its messages) to
    memstream; it changes no state. With `wait`, it returns once the worker applied them (the
    next node's reads see them). An async client makes an async node, a blocking one a sync node.
    (`config` is annotated `RunnableConfig`: how LangGraph knows to pass the run's config.)"""

    def picked(state: Mapping[str, Any], config: Mapping[str, Any]) -> tuple[list[Any], str, str]:
        messages = list(state.get(messages_key) or [])
        user, thread = run_identity(config, user_key, thread_key)
        return (messages if every_message else latest_exchange(messages)), user, thread

    if isinstance(client, MemstreamClient):
        def remember(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
            messages, user, thread = picked(state, config)
            client.add(messages, user, thread, speaker=speaker, wait=wait)
            return {}
        return remember

    async def aremember(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        messages, user, thread = picked(state, config)
        result: Awaitable[AddResult] = client.add(messages, user, thread, speaker=speaker, wait=wait)
        await result
        return {}
    return aremember
