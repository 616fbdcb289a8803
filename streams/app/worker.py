"""Running the Faust worker with every stage and the web server."""
from __future__ import annotations

import logging

from streams.app.settings import Settings

log = logging.getLogger(__name__)


def run_worker(settings: Settings) -> None:
    """Create the topics, then run the worker until it is stopped (SIGINT/SIGTERM)."""
    import faust

    from streams.tools.broker import ensure_topics
    from topics.names import ALL_TOPICS

    created = ensure_topics(settings.broker_url, ALL_TOPICS, settings.topic_partitions)
    if created:
        log.info("created topics: %s", ", ".join(created))
    # Importing the stage modules registers their agents, tables and views on the app.
    import agents.commands  # noqa: F401
    import agents.dedup  # noqa: F401
    import agents.ingest  # noqa: F401
    import agents.sinks  # noqa: F401  (registers its agent only when a sink is configured)
    import streams.api.web  # noqa: F401
    from streams.app.factory import app

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    worker = faust.Worker(app, loglevel=settings.log_level.upper(), quiet=True)
    worker.execute_from_commandline()
