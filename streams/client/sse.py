"""Server-sent events as the worker writes them: `id:`, `event:` and `data:` lines, a blank
line ending each message, `:` lines (keep-alive comments) skipped."""
from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass, field


@dataclass
class SseMessage:
    """One message: its `event` name (`message` when unnamed), `data` and `id`."""

    event: str = "message"
    data: str = ""
    id: str | None = None


@dataclass
class SseParser:
    """Turns lines into messages: `feed` returns a message when a line completes one."""

    _event: str = ""
    _data: list[str] = field(default_factory=list)
    _id: str | None = None

    def feed(self, line: str) -> SseMessage | None:
        line = line.rstrip("\r\n")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            self._id = value
        return None

    def _dispatch(self) -> SseMessage | None:
        if not self._data and not self._event:
            return None
        message = SseMessage(self._event or "message", "\n".join(self._data), self._id)
        self._event, self._data = "", []
        return message


async def sse_messages(lines: AsyncIterable[bytes]) -> AsyncIterator[SseMessage]:
    """The messages of a stream of lines (an aiohttp response's `content`)."""
    parser = SseParser()
    async for raw in lines:
        message = parser.feed(raw.decode("utf-8", "replace"))
        if message is not None:
            yield message
