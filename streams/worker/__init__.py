"""The worker entry point: the app with every stage, web route and timer, and running it.

The one module of `streams` that imports `agents/` (besides the CLI, which calls it): the
stages depend on `streams`, never the reverse. It puts together the app (`streams.app`), the
web layer (`streams.api`) and the stages, so it is a package of its own, above all three: in
`streams.app` it closed a loop with the web layer, at the root of `streams` one with every
package that imports `streams.errors`.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from streams.api.auth import KeyEntry
from streams.app.factory import MemstreamApp, create_app
from streams.settings import Settings
from streams.observability.logs import worker_logging
from topics.names import CHAT_TURNS
from streams.pipeline.outputs import Sender
from streams.providers.embedders import Embedder
from streams.guarded.llm import GuardedLLM

log = logging.getLogger(__name__)
READY_POLL_S = 0.5
"""How often the ready announcement checks the worker's tables (a log line, not a probe)."""


def build_worker(settings: Settings, *, extra_keys: Sequence[KeyEntry] = (),
                 send: Sender | None = None, embedder: Embedder | None = None,
                 llm: GuardedLLM | None = None) -> MemstreamApp:
    """A worker's app with its web routes and their state (`streams.api.web`), its stages
    (`agents/`, told of what the routes wait for: `streams.api.state.WebState.listeners`) and
    its timers.

    `extra_keys` are API keys accepted besides the configured ones (`memstream run`'s dev
    key); `send`, `embedder` and `llm` replace the app's own (see `create_app`).
    """
    import agents
    from streams.api import web
    from streams.observability import consumer_lag

    app = create_app(settings, send=send, embedder=embedder, llm=llm)
    app.faust.task(app.services.warm_up)  # the model loads in a thread while the worker joins
    web_state = web.register(app, extra_keys)
    agents.register_all(app, web_state.listeners)
    consumer_lag.register(app.faust, settings.observability.metrics_lag_interval_seconds)
    return app


def run_worker(settings: Settings, extra_keys: Sequence[KeyEntry] = (), *,
               quiet_services: bool = False) -> None:
    """Create the topics, then run the worker until it is stopped (SIGINT/SIGTERM).
    `quiet_services`: Faust's services log their start at the libraries' level
    (`streams.observability.logs.SERVICE_MODULES`; `memstream run`).

    Raises `MasterKeyError` without a master key: every worker must wrap users' data keys with
    the same one, or a partition moving between workers would become unreadable.
    """
    import faust

    from streams.app.backends import pin_cpu_backends
    from streams.app.collector import tune_collector
    from streams.app.event_loop import use_uvloop
    from streams.privacy.crypto import MasterKeyError, master_key_of

    pin_cpu_backends()
    use_uvloop()

    if master_key_of(settings.privacy) is None:
        raise MasterKeyError("a worker needs the master key: set MEMSTREAM_MASTER_KEY (or "
                             "MASTER_KEY_FILE) to the same value on every worker; "
                             "`memstream keys master` makes one")
    from streams.app.topic_admin import ensure_topics
    from streams.app.topology import ALL_TOPICS

    created = ensure_topics(settings.kafka.broker_url, ALL_TOPICS, settings.kafka.topic_partitions, settings)
    if created:
        log.info("created topics: %s", ", ".join(created))
    app = build_worker(settings, extra_keys=extra_keys)
    app.faust.task(_announce_ready(app))
    settings.kafka.data_dir.mkdir(parents=True, exist_ok=True)
    worker = faust.Worker(app.faust, loglevel=settings.observability.log_level.upper(), quiet=True,
                          logging_config=worker_logging(settings.observability.log_level,
                                                        quiet_services))
    tune_collector()
    worker.execute_from_commandline()


def _announce_ready(app: MemstreamApp) -> Callable[[], Awaitable[None]]:
    """A task that says once, in one line, when the worker serves: its tables recovered, its
    partitions assigned and its model loaded."""
    async def announce() -> None:
        while not app.tables_ready():
            await asyncio.sleep(READY_POLL_S)
        await app.services.warm_up()  # returns at once when the model is loaded already
        turns = sorted(tp.partition for tp in app.faust.consumer.assignment()
                       if tp.topic == CHAT_TURNS)
        log.info("ready: consuming chat.turns partitions %s; the embedding model is loaded",
                 ", ".join(map(str, turns)) or "(none yet)")
    return announce
