"""The worker's app can produce to every topic a stage sends to (`Outputs` names them)."""
import tempfile
from pathlib import Path

from streams.app.factory import create_app
from streams.settings import Settings
from topics import names


def test_every_output_topic_is_a_topic_of_the_app():
    settings = Settings(table_store="memory://", data_dir=Path(tempfile.mkdtemp()))
    app = create_app(settings)
    for name in (names.MEMORY_EVENTS, names.MEMORY_PROGRESS, names.MEMORY_CANDIDATES,
                 names.MEMORY_COMMANDS, names.MEMORY_PROACTIVITY, names.CHAT_TURNS_DLQ,
                 names.MEMORY_CANDIDATES_DLQ, names.MEMORY_COMMANDS_DLQ, names.MEMORY_SINKS_DLQ):
        assert name in app.topics.named(name).topics
