"""Building a worker's app: the Faust app with its topics and tables, and what its stages share.

Nothing here runs at import. `create_app(settings)` returns a `MemstreamApp`; the worker entry
point (`streams.worker.build_worker`) then adds the web routes and their state
(`streams.api.web`), the stages (`agents/`, as `streams.app.topology` declares them) and the
timers. Tests and tools build their own app with their own settings, and may route the stages'
output records elsewhere (`send=`, e.g. to in-process queues) or bring their own embedder or
LLM.

Follow a turn: `chat.turns` → `agents/ingest.py` → `streams/pipeline/ingest.py` (validate,
trigger, extract, policy) → `memory.candidates` → `agents/dedup.py` →
`streams/pipeline/dedup.py` (embed, neighbours, create/update/supersede) → `memory.events`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import faust
from faust.types import TopicT

from streams.app.batching_stream import BatchingStream
from streams.app.faust_compat import EVENT_CAPTURE, event_scope_of, use_transport_fixes
from streams.app.faust_slots import AppSlot
from streams.app.rocksdb_store import use_rocksdb_store
from streams.app.single_lookup_table import SingleLookupTable
from streams.kafka.security import faust_credentials
from streams.app.services import Services
from streams.settings import Settings
from streams.app.stage_kit import build_stage_kit
from streams.app.topology import ALL_TOPICS, DLQ_OF
from streams.privacy.crypto import MasterKeys, master_keys_of, new_key
from streams.privacy.user_keys import CHANGELOG_CONFIGS
from streams.pipeline.outputs import Sender
from streams.providers.embedders import Embedder
from streams.guarded.llm import GuardedLLM

log = logging.getLogger(__name__)


class Topics:
    """The worker's Faust topics, one per name of `streams.app.topology.ALL_TOPICS`, all raw
    bytes (docs/architecture.md#topics), so a bad record can be dead-lettered untouched and every
    producer's user_id key hashes alike."""

    def __init__(self, topics: dict[str, TopicT]) -> None:
        self._topics = topics

    def named(self, name: str) -> TopicT:
        """The topic called `name`."""
        return self._topics[name]


@dataclass(frozen=True)
class Tables:
    """The worker's Faust tables: RocksDB with changelog topics, partitioned like the topics."""

    memories: faust.Table
    users: faust.Table
    applied: faust.Table
    buffers: faust.Table
    turn_log: faust.Table
    audit: faust.Table
    thread_revs: faust.Table
    recent_events: faust.Table
    user_keys: faust.Table
    lifecycle: faust.Table


TABLES = {
    "memories": "memory_id -> its memory record: the Memory document (JSON) and its audit entries, one value "
                "(streams/memory/memory_records.py).",
    "users": "user_id -> {memories, clock, blocked_topics}; keyed by user_id so web requests "
             "route to the owner.",
    "applied": "turn key -> each candidate's, command key -> {outcome, memory_id, events}: a replayed record "
               "changes nothing and re-sends the identical events.",
    "buffers": "user_id|thread_id -> the thread's last BUFFER_TURNS turns (secrets redacted): the "
               "context an LLM trigger and classifier see (seed 004 buffer); user_id -> the user's episodes "
               "of the day (the daily cap is per user).",
    "turn_log": "user_id|thread_id:turn_id -> {episode, refs}: what ingest decided for a turn, so "
                "a replay of it decides the same however far back it is.",
    "audit": "memory_id -> audit entries (docs/architecture.md#memory-document verbs, actor, time, old and new value), "
             "as versions before the memory record wrote them: only read now.",
    "thread_revs": "user_id|thread_id -> {rev, turn, memories, changes}: the per-thread revision "
                   "(delta header) and the memories its latest turn wrote (\"don't remember this\").",
    "recent_events": "user_id|/head and user_id|/slot -> a ring of chunks of the user's last "
                     "SSE_REPLAY_EVENTS memory events (one chunk per batch), so an SSE client "
                     "reconnecting with Last-Event-ID resumes where it was.",
    "user_keys": "user_id -> the user's data key wrapped by the master key, and when the user was "
                 "purged; the values of every other table are sealed with these keys.",
    "lifecycle": "partition -> its event-time watermark and calendar; partition|hour|chunk -> the "
                 "user ids whose next lifecycle run falls in that hour; partition|offset -> the "
                 "lifecycle events a record made, sealed, re-sent if it is redelivered. Not "
                 "sealed itself: ids, times and sealed events only.",
}


TABLE_TOPIC_CONFIGS = {"user_keys": CHANGELOG_CONFIGS}
"""Changelog topic configs besides Faust's `cleanup.policy=compact`: a shredded key's old record
is compacted within a bounded time (`streams.privacy.user_keys.CHANGELOG_CONFIGS`)."""

UNSEALED = ("user_keys", "lifecycle")
"""Tables that hold no user content, so are not sealed (`streams.pipeline.tables`)."""
RAW_VALUES = {"value_type": bytes}
"""The sealed tables' values are bytes, stored as they are (Faust's raw serializer;
`streams.privacy.table_values`). Values the JSON serializer wrote before the upgrade read back
as their JSON text, which `unpack` reads too."""

_MEMSTREAM: AppSlot[MemstreamApp] = AppSlot("memstream")
"""Where a Faust app keeps the `MemstreamApp` it belongs to, for its views (`MemstreamApp.of`)."""


class MemstreamApp:
    """One worker's app: the Faust app, its topics and tables, and what the stages share.

    `faust` is the Faust app and `tables` its raw tables; `kit` what its stages are built from
    (`streams.app.stage_kit`): `sealed` the stages' view of the tables (every value sealed for
    its user) with the users' data keys, `outputs` how stages send, `store` the memory tables
    and the vector index, `services` the embedder and the LLM. The web layer keeps its own state
    (`streams.api.state`).
    """

    def __init__(self, settings: Settings, faust_app: faust.App, topics: Topics, tables: Tables,
                 services: Services, master_key: bytes | MasterKeys,
                 send: Sender | None = None) -> None:
        self.settings = settings
        self.faust = faust_app
        self.topics = topics
        self.tables = tables
        self.services = services
        raw = {name: getattr(tables, name) for name in TABLES if name not in UNSEALED}
        self.kit = build_stage_kit(settings, services, raw, tables.user_keys, tables.lifecycle,
                                   master_key, send or self._produce, dlq_of=DLQ_OF,
                                   record_scope=event_scope_of, capture=EVENT_CAPTURE)
        self.sealed = self.kit.sealed
        self.outputs = self.kit.outputs
        self.store = self.kit.store
        _MEMSTREAM.attach(faust_app, self)  # views find it from their app
        tables.memories.on_recover(self._memories_recovered)
        tables.user_keys.on_recover(self._keys_recovered)
        faust_app.on_partitions_assigned.connect(self._partitions_assigned)

    @staticmethod
    def of(faust_app: faust.App) -> MemstreamApp:
        """The `MemstreamApp` a Faust app (a web view's `self.app`) belongs to."""
        return _MEMSTREAM.of(faust_app)

    async def _produce(self, topic: str, key: bytes | None, value: bytes) -> None:
        await self.topics.named(topic).send(key=key, value=value)

    async def _memories_recovered(self) -> None:
        self.store.mark_stale()

    async def _partitions_assigned(self, sender: object, assigned: object, **kwargs: object) -> None:
        """A rebalance may hand this worker partitions whose memories reached its tables as a
        standby replica, with no recovery (and no recover callback) to follow: the index is
        rebuilt on its next use either way."""
        self.store.mark_stale()

    async def _keys_recovered(self) -> None:
        self.sealed.keys.forget_cache()

    def tables_ready(self) -> bool:
        """Tables recovered and no rebalance under way: the worker can answer from its tables."""
        return bool(self.faust.tables.recovery.completed.is_set()) and not self.faust.rebalancing


def create_faust_app(settings: Settings) -> faust.App:
    """A Faust app configured from `settings` (tables on `TABLE_STORE`, web server on, Kafka
    security from KAFKA_SECURITY_PROTOCOL and the rest: `streams.kafka.security`), consuming
    and producing through `streams.app.faust_compat.MemstreamTransport`."""
    one_record = 1 if settings.kafka.kafka_one_record_batches else 16384
    use_rocksdb_store(settings.kafka.table_memory_mb * 1024 * 1024)
    app = faust.App(
        settings.kafka.app_id,
        broker=f"kafka://{settings.kafka.broker_url}",
        broker_credentials=faust_credentials(settings.kafka),
        store=settings.kafka.table_store,
        datadir=str(settings.kafka.data_dir),
        topic_partitions=settings.kafka.topic_partitions,
        topic_allow_declare=True,
        topic_disable_leader=True,
        producer_max_batch_size=one_record,
        producer_linger_ms=settings.kafka.kafka_producer_linger_ms,
        # Every record it writes, changelogs too (aiokafka's zstd and lz4 need cramjam).
        producer_compression_type=(None if settings.kafka.kafka_producer_compression == "none"
                                   else settings.kafka.kafka_producer_compression),
        # Tansu holds a JoinGroup for about half the session timeout; keep both short so a
        # worker joins in seconds and a killed worker's partitions move on quickly.
        broker_session_timeout=10,
        broker_heartbeat_interval=1,
        broker_rebalance_timeout=10,
        broker_commit_every=100,
        broker_commit_interval=1.0,
        web_enabled=True,
        web_bind=settings.api.web_host,
        web_host=settings.api.web_host,
        web_port=settings.api.web_port,
        canonical_url=f"http://{settings.api.web_host}:{settings.api.web_port}",
        web_in_thread=False,
        logging_config=None,
        Stream=BatchingStream,
        Table=SingleLookupTable,
    )
    use_transport_fixes(app, settings.kafka.kafka_fetch_max_wait_ms)
    return app


def create_app(settings: Settings, *, send: Sender | None = None,
               embedder: Embedder | None = None, llm: GuardedLLM | None = None) -> MemstreamApp:
    """A worker's app without stages or routes (see `streams.worker.build_worker`)."""
    app = create_faust_app(settings)

    def topic(name: str) -> TopicT:
        return app.topic(name, key_type=bytes, value_type=bytes, key_serializer="raw",
                         value_serializer="raw")

    topics = Topics({name: topic(name) for name in ALL_TOPICS})
    # Raw UTF-8 keys (Faust would serialise them as JSON unless key_type is bytes) hash like the
    # producers' user_id keys, so `route_to_owner` sends a web request to the worker that holds
    # the user. Code indexes the tables with str keys (encoded as UTF-8); iteration yields bytes.
    tables = Tables(**{
        name: app.Table(name, partitions=settings.kafka.topic_partitions, help=help, key_type=bytes,
                        extra_topic_configs=TABLE_TOPIC_CONFIGS.get(name),
                        **({} if name in UNSEALED else RAW_VALUES))
        for name, help in TABLES.items()
    })
    master_key = master_keys_of(settings.privacy)
    if master_key is None:
        log.warning("no MEMSTREAM_MASTER_KEY: users' data keys are wrapped by a key that dies with "
                    "this process (fine for tests; a worker refuses to run so)")
        master_key = MasterKeys(new_key())
    return MemstreamApp(settings, app, topics, tables, Services(settings, embedder=embedder, llm=llm),
                        master_key, send)
