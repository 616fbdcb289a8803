"""The Faust app: topics, tables and the shared services of the worker.

Follow a turn: `chat.turns` -> agents/ingest.py (validate, trigger, extract, policy) ->
`memory.candidates` -> agents/dedup.py (embed, neighbours, create/update) -> `memory.events`.
"""
from __future__ import annotations

import faust

from streams.settings import Settings, get_settings
from topics import names


def create_app(settings: Settings) -> faust.App:
    """A Faust app configured from `settings` (tables on RocksDB, web server on)."""
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

# Inputs arrive as raw bytes so that bad records can be dead-lettered untouched.
turns_topic = app.topic(
    names.CHAT_TURNS, key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw"
)
candidates_topic = app.topic(names.MEMORY_CANDIDATES, key_serializer="raw", value_serializer="raw")
events_topic = app.topic(names.MEMORY_EVENTS, key_serializer="raw", value_serializer="raw")
progress_topic = app.topic(names.MEMORY_PROGRESS, key_serializer="raw", value_serializer="raw")
turns_dlq_topic = app.topic(names.CHAT_TURNS_DLQ, key_serializer="raw", value_serializer="raw")
candidates_dlq_topic = app.topic(
    names.MEMORY_CANDIDATES_DLQ, key_serializer="raw", value_serializer="raw"
)

# memory_id -> Memory (JSON). Changelogged, so it survives a lost worker.
memories_table = app.Table(
    "memories", key_type=str, value_type=bytes, key_serializer="raw", value_serializer="raw",
    partitions=settings.topic_partitions,
)
# user_id -> {"memories": n, "clock": latest event time}. Keyed by user_id, so web requests can
# be routed to the worker that owns the user's partition.
users_table = app.Table(
    "users", key_type=str, value_type=bytes, key_serializer="raw", value_serializer="raw",
    partitions=settings.topic_partitions,
)
# candidate id -> outcome and the event it produced: makes a replayed candidate a no-op that
# re-sends the same event (same event_id) instead of writing twice.
applied_table = app.Table(
    "applied", key_type=str, value_type=bytes, key_serializer="raw", value_serializer="raw",
    partitions=settings.topic_partitions,
)
# user_id|thread_id -> per-thread revision (SPEC §4 delta header).
thread_revs_table = app.Table(
    "thread_revs", key_type=str, value_type=int, default=int, key_serializer="raw",
    value_serializer="json", partitions=settings.topic_partitions,
)
