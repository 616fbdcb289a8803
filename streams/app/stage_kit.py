"""What a worker's stages share, built one way for the worker's app and the in-process runner.

The worker's app (`streams.app.factory`) passes its Faust tables and its producer, the
in-process runner (`streams.app.inprocess`) dicts and its queues; both get the same sealed
tables, `Outputs`, `MemoryStore` and lifecycle runner from `build_stage_kit`, and build their
stages from the kit by the declaration (`streams.app.topology.STAGES`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from streams.app.services import Services
from streams.settings import Settings
from streams.lifecycle.passes import LifecyclePass
from streams.lifecycle.runner import LifecycleRunner, service_passes
from streams.memory.store import MemoryStore
from streams.memory.tables import Table
from streams.pipeline.commands import CommandObserver
from streams.pipeline.outputs import Outputs, Sender
from streams.pipeline.records import RecordScope, no_scope
from streams.pipeline.retries import RetryPolicy
from streams.pipeline.sse import EventListener
from streams.pipeline.tables import StageTables, stage_tables
from streams.pipeline.write_cache import NO_CAPTURE, ScopeCapture
from streams.privacy.crypto import MasterKeys


@dataclass(frozen=True)
class StageKit:
    """What the stages are built from: the settings, the sealed tables, how they send, the
    memory store, the embedder and LLM, the lifecycle runner, and the scope each record is
    processed in (`record_scope`: the worker's makes its Faust event the current one)."""

    settings: Settings
    sealed: StageTables
    outputs: Outputs
    store: MemoryStore
    services: Services
    lifecycle: LifecycleRunner
    record_scope: RecordScope = no_scope


@dataclass(frozen=True)
class StageListeners:
    """Who outside the stages hears what they did: the registry's `?wait=1` requests (each
    command's outcome) and the worker's SSE clients (each new memory event). Built by the web
    layer (`streams.api.state.WebState.listeners`); none in process."""

    commands: CommandObserver | None = None
    events: EventListener | None = None


NO_LISTENERS = StageListeners()


def build_stage_kit(settings: Settings, services: Services, raw_tables: Mapping[str, Table],
                    user_keys: Table, lifecycle_table: Table, master_key: bytes | MasterKeys,
                    send: Sender, *, dlq_of: Mapping[str, str],
                    passes: Sequence[LifecyclePass] = (),
                    record_scope: RecordScope = no_scope,
                    capture: ScopeCapture = NO_CAPTURE) -> StageKit:
    """The kit over `raw_tables` (the sealed ones by name: `streams.privacy.sealed.TABLE_OWNERS`),
    `user_keys` wrapped with `master_key`, and the lifecycle's `lifecycle_table`; stages send
    with `send`, dead letters to the topics of `dlq_of`. The lifecycle runs the service's
    passes (`service_passes`) and `passes`; a held table write is made in the scope `capture`
    remembers (`streams.pipeline.write_cache`)."""
    sealed = stage_tables(raw_tables, user_keys, master_key, capture)
    outputs = Outputs(send, sealed.sealer, settings.input.dlq_max_raw_bytes, dlq_of,
                      RetryPolicy.of(settings.input))
    store = MemoryStore(sealed.memory, services.dedup_config)
    lifecycle = LifecycleRunner.of(settings.lifecycle, store, lifecycle_table,
                                   [*service_passes(settings.lifecycle, services), *passes], outputs)
    return StageKit(settings, sealed, outputs, store, services, lifecycle, record_scope)
