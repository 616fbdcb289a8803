"""The published JSON Schema of a `memory.events` record's value (`topics.events_wire`),
generated from `MemoryEvent` by pydantic, so the schema and the code cannot drift:
`tests/unit/test_event_schema.py` fails when the checked-in file differs from what this makes.

    python -m topics.event_schema > topics/schemas/memory-event.schema.json
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from topics.events import MemoryEvent

SCHEMA_PATH = Path(__file__).parent / "schemas" / "memory-event.schema.json"
"""Where the schema is checked in (and shipped with the package)."""
SCHEMA_ID = "https://memstream.dev/schemas/memory-event.schema.json"
"""The schema's `$id`: a name, not an address anything is fetched from."""

DESCRIPTION = (
    "One record of the Kafka topic `memory.events`: one memory event, keyed by `user_id` "
    "(UTF-8), the value this JSON. Producer compression (zstd by default) is undone by any "
    "Kafka client. `summary` and `meta` are sealed: on the topic they are \"\" and {} and "
    "travel encrypted for the user in `sealed` (null for a content-free event); only "
    "memstream, or a holder of its master key, opens them. Records written by releases "
    "before one event a record (a JSON array of a batch's events, or the byte 0x02 and a "
    "zlib stream) are not described here; memstream's readers still read them."
)


def memory_event_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a `memory.events` record's value."""
    generated = MemoryEvent.model_json_schema(mode="serialization")
    # memstream writes every field, defaulted ones too (`meta`, `sealed`): a consumer may count on them.
    generated["required"] = list(generated["properties"])
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            **generated, "description": DESCRIPTION}


def schema_text() -> str:
    """`memory_event_schema` as the checked-in file holds it."""
    return json.dumps(memory_event_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(schema_text(), end="")
