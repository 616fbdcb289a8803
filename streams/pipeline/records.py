"""A consumed record as a stage sees it: where it came from, its key and its raw bytes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Record:
    """One record of an input topic.

    `source` is the transport's own handle of it (the Faust event in the worker), for a stage
    that must process a record inside the transport's scope; stages never look into it.
    """

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    source: Any = field(default=None, compare=False, repr=False)
