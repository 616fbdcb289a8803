"""Names of every topic (docs/architecture.md#topics). All are keyed by user_id and share one partition count;
what each holds, and which stage reads and writes it, is declared in `streams/app/topology.py`."""
from __future__ import annotations

CHAT_TURNS = "chat.turns"
CHAT_TURNS_DLQ = "chat.turns.dlq"
MEMORY_COMMANDS = "memory.commands"
MEMORY_COMMANDS_DLQ = "memory.commands.dlq"
MEMORY_CANDIDATES = "memory.candidates"  # internal: extraction -> dedup
MEMORY_CANDIDATES_DLQ = "memory.candidates.dlq"
MEMORY_EVENTS = "memory.events"
MEMORY_PROGRESS = "memory.progress"  # internal: one record per turn and stage outcome
MEMORY_PROACTIVITY = "memory.proactivity"
MEMORY_SINKS_DLQ = "memory.sinks.dlq"  # records a sink (OpenSearch, S3 Vectors) gave up on
