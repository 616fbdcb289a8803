"""A chat backend on memstream: before answering, it asks memory what it knows about the user
(the context a model would get in its prompt); after, it produces both turns to `chat.turns`.
The "model" here is a stub.

With `./dev run` in another terminal (the client finds the broker, the API and its key in
memstream's settings, as the CLI does):

    ./dev python examples/chat_backend.py ana "I adopted a dog named Luna last year."
    ./dev python examples/chat_backend.py ana "What pet do I have?"
    ./dev python examples/chat_backend.py ana          # chat on stdin (an empty line ends)

Memories form a moment after a turn is sent (`./dev memstream watch --user ana` shows them).
"""
from __future__ import annotations

import sys
import uuid
from collections.abc import Iterable
from datetime import datetime, timezone

from streams.client import ClientError, MemstreamClient, Turn


def lines(args: list[str]) -> Iterable[str]:
    """The messages given as arguments, else those typed on stdin until an empty line."""
    yield from args
    if not args:
        while (line := input("> ").strip()):
            yield line


def reply(message: str, context: str) -> str:
    """Stands in for the model, which would get `context` in its prompt."""
    return "Thanks, I'll keep that in mind." if not message.endswith("?") else "Let me think."


def chat(user: str, messages: Iterable[str]) -> None:
    thread = f"chat-{uuid.uuid4().hex[:8]}"
    with MemstreamClient.from_settings() as memory:
        for n, message in enumerate(messages):
            answer = memory.query(user, message, agent="supervisor", budget_tokens=200)
            print(f"[memory] {answer.context or '(nothing yet)'}")
            text = reply(message, answer.context)
            print(text)
            now = datetime.now(timezone.utc)
            memory.send_turns([
                Turn(user_id=user, thread_id=thread, turn_id=f"{n}-user", role="user",  # type: ignore[arg-type]
                     text=message, ts=now),
                Turn(user_id=user, thread_id=thread, turn_id=f"{n}-assistant", role="assistant",  # type: ignore[arg-type]
                     text=text, ts=now),
            ])


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    try:
        chat(sys.argv[1], lines(sys.argv[2:]))
    except ClientError as exc:
        sys.exit(f"memstream: {exc}")
