"""Small bridges to Faust internals, kept in one place with the reason for each."""
from __future__ import annotations

import weakref
from contextlib import contextmanager
from typing import Iterator

from faust.streams import _current_event
from faust.types import EventT


@contextmanager
def event_scope(event: EventT) -> Iterator[None]:
    """Make `event` the stream's current event while processing it.

    A table write goes to the changelog partition of the *current* event. When an agent takes
    events in batches (`Stream.take_events`), the current event is the batch's last one, which
    may come from another partition; each event is processed inside its own scope instead.
    """
    token = _current_event.set(weakref.ref(event))
    try:
        yield
    finally:
        _current_event.reset(token)
