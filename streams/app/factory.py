"""The Faust app: topics, tables and the shared services of the worker.

Follow a turn: `chat.turns` -> agents/ingest.py (validate, trigger, extract, policy) ->
`memory.candidates` -> agents/dedup.py (embed, neighbours, create/update) -> `memory.events`.
"""
from __future__ import annotations

import faust

from streams.app.faust_compat import install_seek_fix
from streams.app.settings import Settings, get_settings
from topics import names


def create_app(settings: Settings) -> faust.App:
    """A Faust app configured from `settings` (tables on RocksDB, web server on)."""
    install_seek_fix()
    one_record = 1 if settings.kafka_one_record_batches else 16384
    return faust.App(
        settings.app_id,
        broker=f"kafka://{settings.broker_url}",
        store=settings.table_store,
        datadir=str(settings.data_dir),
        topic_partitions=settings.topic_partitions,
        topic_allow_declare=True,
        topic_disable_leader=True,
        producer_max_batch_size=one_record,
        producer_linger_ms=0,
        # Tansu holds a JoinGroup for about half the session timeout; keep both short so a
        # worker joins in seconds and a killed worker's partitions move on quickly.
        broker_session_timeout=10,
        broker_heartbeat_interval=1,
        broker_rebalance_timeout=10,
        broker_commit_every=100,
        broker_commit_interval=1.0,
        web_enabled=True,
        web_bind=settings.web_host,
        web_host=settings.web_host,
        web_port=settings.web_port,
        canonical_url=f"http://{settings.web_host}:{settings.web_port}",
        web_in_thread=False,
        logging_config=None,
    )


settings = get_settings()
app = create_app(settings)


def tables_ready() -> bool:
    """Tables recovered and no rebalance under way: the worker can answer from its tables."""
    return bool(app.tables.recovery.completed.is_set()) and not app.rebalancing

# Inputs arrive as raw bytes so that bad records can be dead-lettered untouched.
turns_topic = app.topic(
    names.CHAT_TURNS, key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw"
)
candidates_topic = app.topic(names.MEMORY_CANDIDATES, key_serializer="raw", value_serializer="raw")
events_topic = app.topic(names.MEMORY_EVENTS, key_serializer="raw", value_serializer="raw")
progress_topic = app.topic(names.MEMORY_PROGRESS, key_serializer="raw", value_serializer="raw")
commands_topic = app.topic(
    names.MEMORY_COMMANDS, key_type=bytes, value_type=bytes, key_serializer="raw",
    value_serializer="raw",
)
commands_dlq_topic = app.topic(names.MEMORY_COMMANDS_DLQ, key_serializer="raw", value_serializer="raw")
turns_dlq_topic = app.topic(names.CHAT_TURNS_DLQ, key_serializer="raw", value_serializer="raw")
candidates_dlq_topic = app.topic(
    names.MEMORY_CANDIDATES_DLQ, key_serializer="raw", value_serializer="raw"
)
sinks_dlq_topic = app.topic(names.MEMORY_SINKS_DLQ, key_serializer="raw", value_serializer="raw")


def _table(name: str, help: str, **kwargs: object) -> faust.Table:
    """A table with raw UTF-8 keys and JSON values.

    Faust serialises keys as JSON unless `key_type` is bytes. Raw keys hash like the producers'
    user_id keys, so `table_route` sends a web request to the worker that holds the user.
    Code indexes the tables with str keys (encoded as UTF-8); iteration yields bytes keys.
    """
    return app.Table(name, partitions=settings.topic_partitions, help=help, key_type=bytes, **kwargs)


memories_table = _table("memories", "memory_id -> Memory document (JSON).")
users_table = _table(
    "users", "user_id -> {memories, clock}; keyed by user_id so web requests route to the owner."
)
applied_table = _table(
    "applied",
    "candidate id -> {outcome, memory_id, event}: a replayed candidate changes nothing and "
    "re-sends the identical event.",
)
buffers_table = _table(
    "buffers",
    "user_id|thread_id -> the thread's last BUFFER_TURNS turns (secrets redacted): the context "
    "an LLM trigger and classifier see (seed 004 buffer).",
)
turn_log_table = _table(
    "turn_log",
    "user_id|thread_id|turn_id -> {episode, refs}: what ingest decided for a turn, so a replay "
    "of it decides the same however far back it is.",
)
audit_table = _table(
    "audit",
    "memory_id -> audit entries (SPEC §3 verbs, actor, time, old and new value); a purge leaves "
    "a content-free tombstone.",
)
thread_revs_table = _table(
    "thread_revs",
    "user_id|thread_id -> {rev, turn, memories}: the per-thread revision (delta header) and "
    "the memories its latest turn wrote (for \"don't remember this\").",
)
recent_events_table = _table(
    "recent_events",
    "user_id -> the user's last SSE_REPLAY_EVENTS memory events, so an SSE client reconnecting "
    "with Last-Event-ID resumes where it was, on whichever worker owns the user now; a purge "
    "leaves only the content-free purged events.",
)
